r"""`ebm.periodic_continuation`: the branch of periodic states through a parameter,
around its folds, stable and unstable alike.

A periodic state is a fixed point of the year's flow map $\Phi(v; \lambda)$ (the
state $v$ on 1 January, stepped one year by the fixed-step stepper of
`ebm.periodic_equilibrium`). The branch is walked as `ebm.continuation` walks
equilibria (pseudo-arclength, `continuation/walk.py`), on the shooting equations

$$G(v, \mu) = \Phi(v; \lambda_0 + s\mu) - v = 0$$

in the unknowns $y = (v, \mu)$, with the inner product that makes a step an RMS
change of the state (in its units) or of the parameter in units of $s$
(`parameter_scale`). The Jacobian $\partial G / \partial y$ is formed from $n + 1$
forward-mode products through the year (dense: the tangent's bordered system and
each Newton step of the corrector are LU solves), so a point costs a few times
$n + 1$ years of stepping. Each point's stability is its leading Floquet multiplier
$\rho$ (the leading eigenvalue of $\partial\Phi/\partial v$, by the power method):
the state is unstable where $\rho > 1$, and $\ln\rho$ (per year) changes sign at
each fold.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Float

from .._checks import check_count
from .._custom_types import Scalar
from .._model.protocol import AbstractModel
from .._numerics.implicit import ImplicitAdjoint
from .._progress import progress_meter
from .._results import RESULTS, with_result_names
from .._zonal.cycle import SeasonalCycle
from .._zonal.grid import Grid
from .continuation.arguments import _as_arrays, _check_bounds, _check_range
from .continuation.problem import AbstractBranchProblem
from .continuation.results import stability_segments
from .continuation.walk import NO_START, WalkSettings, walk_branch
from .periodic_models import PeriodicState
from .periodic_sweep import _start_of, check_scalar_parameter, leading_multiplier
from .seasonal import (
    STEPS_PER_YEAR,
    _cycle,
    _krylov,
    _periodic_equilibrium,
    _setup,
    _Year,
    default_shooting_solver,
)


class ShootingProblem(AbstractBranchProblem):
    """The shooting equations `Phi(v; lambda) - v` in the walk's unknowns
    `y = (v, mu)`."""

    year: _Year
    params: eqx.Module
    parameter: str = eqx.field(static=True)
    origin: Scalar
    scale: Scalar

    def residual(self, y):
        return self.year.flow(y[:-1], self.params_at(y[-1])) - y[:-1]

    def row_weights(self, y):
        # The equations are already changes of the state over a year, in its units.
        return jnp.ones_like(y[:-1])

    def leading_eigenvalue(self, y):
        """`ln rho`, per year, of the leading Floquet multiplier `rho`."""
        rho = leading_multiplier(self.year, y[:-1], self.params_at(y[-1]))
        return jnp.log(rho)


class PeriodicBranch(eqx.Module):
    """A branch of periodic states traced by `ebm.periodic_continuation`.

    Arrays have one entry per point, in the order walked.

    **Attributes:**

    - `parameter`: the name of the parameter continued.
    - `values`: the parameter's value at each point.
    - `cycles`: each point's year, an `ebm.SeasonalCycle` (the zonal model) or
        `ebm.PeriodicState` (another model of the protocol) whose every field has a
        leading axis over the points, as `ebm.periodic_sweep` returns.
    - `floquet_multiplier`: the modulus of each point's leading Floquet multiplier
        (the leading eigenvalue of the year's flow map's derivative,
        `POWER_ITERATIONS` of the power method).
    - `stable`: whether it is below 1.
    - `slope`: `d(value)/d(arclength)`: it changes sign at each fold.
    - `arclength`: distance walked (RMS change of the state, in its units, and of
        the parameter in units of `parameter_scale`).
    - `folds`: the parameter's value at each fold passed: the turning point of the
        parabola through the three points around the turn.
    - `result`: `RESULTS.successful` when the walk left `bounds`;
        `max_steps_reached` when it used up `max_points`; `step_too_small` when the
        corrector failed.
    - `num_points`: the number of points.
    """

    parameter: str = eqx.field(static=True)
    values: Float[Array, " points"]
    cycles: SeasonalCycle | PeriodicState
    floquet_multiplier: Float[Array, " points"]
    stable: Bool[Array, " points"]
    slope: Float[Array, " points"]
    arclength: Float[Array, " points"]
    folds: Float[Array, " folds"]
    result: RESULTS
    num_points: int = eqx.field(static=True)

    def __repr__(self) -> str:
        return with_result_names(self)

    def segments(self) -> list[slice]:
        """Slices of consecutive points with the same stability."""
        return stability_segments(self.stable)


CYCLE_BLOCK = 16
"""Points whose years are run together (one compiled program for any count)."""


def periodic_continuation(
    params,
    parameter: str,
    *,
    stop,
    model: AbstractModel | None = None,
    grid: Grid | None = None,
    bounds=None,
    start="present",
    steps_per_year: int = STEPS_PER_YEAR,
    spinup_years: int = 4,
    stepper=None,
    parameter_scale=None,
    step: float = 1.0,
    min_step: float = 1e-6,
    max_step: float = 5.0,
    target_turn: float = 0.05,
    max_turn: float = 0.3,
    corrector_steps: int = 12,
    max_points: int = 500,
    error_tolerance=None,
    throw: bool = True,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> PeriodicBranch:
    """Trace the branch of periodic states through `params` as `parameter` varies.

    Starts at the periodic state of `params` that `ebm.periodic_equilibrium` finds
    from `start`, and walks towards `stop` by pseudo-arclength continuation of the
    shooting equations, around any folds, until the parameter leaves `bounds`:
    unlike `ebm.periodic_sweep`, which follows the attracting state, the walk
    passes through the unstable periodic states between two folds. See
    `ebm._steady.periodic_continuation` for the method.

    **Arguments:**

    - `params`, `model`, `grid`, `start`, `steps_per_year`, `spinup_years`,
        `stepper`, `error_tolerance`: as for `ebm.periodic_equilibrium` (the start's
        solve).
    - `parameter`: the name of a scalar parameter of the model.
    - `stop`: the value to walk towards first.
    - `bounds`: `(low, high)`: the walk ends where the branch leaves this interval
        (default: from the start to `stop`); to walk around a loop, start at one end
        and give bounds wider than the start.
    - `parameter_scale`: the change of the parameter that counts as one unit of
        arclength, as a change of 1 (RMS, in the state's units) does (default: 1/100
        of `bounds`).
    - `step`, `min_step`, `max_step`, `target_turn`, `max_turn`,
        `corrector_steps`, `max_points`: the walk's settings, as for
        `ebm.continuation`.
    - `throw`: raise if the starting periodic state was not found or the walk
        failed (step too small); if `False`, return with `result` set.
    - `progress`: `True` for a progress bar on stderr (points walked out of
        `max_points`), or any `diffrax.AbstractProgressMeter`.

    **Returns:**

    An `ebm.PeriodicBranch`. Not traceable (the number of points is known only at
    the end); each point's state can be refined, and differentiated, by
    `ebm.periodic_equilibrium` started from it (with `segments` where the point is
    so unstable that single shooting leaves it).

    **Raises:**

    - `ValueError`: for a `parameter` that is not a scalar parameter of the model;
        `stop` not finite, equal to the start or out of the parameter's range;
        `bounds` that do not contain the start; a walk setting out of its range;
        and as `ebm.periodic_equilibrium` does for the other arguments.
    - `EquinoxRuntimeError` (with `throw=True`): the starting periodic state was
        not found, or the walk failed.
    """
    check_count("spinup_years", spinup_years, 0)
    year, params, v_start, limit, error_tolerance = _setup(
        params, model, grid, start, stepper, "none", steps_per_year,
        error_tolerance, True,
    )  # fmt: skip
    check_scalar_parameter(params, parameter)
    origin = getattr(params, parameter)
    _check_bounds(origin, stop, bounds, parameter_scale)
    _check_range(params, parameter, stop, bounds)
    stop, bounds, parameter_scale = _as_arrays(origin, stop, bounds, parameter_scale)
    shooting = default_shooting_solver(model)
    corrector = optx.Newton(
        rtol=shooting.rtol, atol=shooting.atol, linear_solver=lx.LU()
    )
    settings = WalkSettings(
        step, min_step, max_step, target_turn, max_turn, corrector, corrector_steps,
        max_points,
    )  # fmt: skip
    problem, walk = _walk(
        params, parameter, stop, bounds, parameter_scale, year, v_start,
        spinup_years, shooting, error_tolerance, limit, settings,
        progress_meter(progress),
    )  # fmt: skip
    result = walk.result(stop_at_fold=False)
    count = int(walk.count)
    y = np.asarray(walk.y)[:count]
    # On the host: an eager operation on `count` points would compile again for
    # every new number of points.
    values = float(problem.origin) + float(problem.scale) * y[:, -1]
    if throw and walk.status == NO_START:
        raise eqx.EquinoxRuntimeError(
            f"Periodic continuation in {parameter}: the starting periodic state at "
            f"{parameter} = {float(values[0])} was not found: {RESULTS[result]}"
        )
    if throw and result == RESULTS.step_too_small:
        raise eqx.EquinoxRuntimeError(
            f"Periodic continuation in {parameter} failed at {parameter} = "
            f"{float(values[-1])} after {count} points: {RESULTS[result]}"
        )
    slope = np.asarray(walk.tangent)[:count, -1] * float(problem.scale)
    arclength = np.cumsum(np.asarray(walk.step)[:count])
    multiplier = np.exp(np.asarray(walk.leading_eigenvalue)[:count])
    return PeriodicBranch(
        parameter=parameter,
        values=jax.device_put(values),
        cycles=_cycles(problem, y, error_tolerance),
        floquet_multiplier=jax.device_put(multiplier),
        stable=jax.device_put(multiplier < 1.0),
        slope=jax.device_put(slope),
        arclength=jax.device_put(arclength),
        folds=jax.device_put(_folds(values, slope, arclength)),
        result=result,
        num_points=count,
    )


@eqx.filter_jit
def _walk(
    params, parameter, stop, bounds, parameter_scale, year, v_start, spinup_years,
    shooting, error_tolerance, limit, settings, meter,
):  # fmt: skip
    params = jax.lax.stop_gradient(params)
    start = _periodic_equilibrium(
        params,
        year,
        v_start,
        spinup_years,
        shooting,
        ImplicitAdjoint(linear_solver=_krylov(1e-11, 1e-11)),
        64,
        error_tolerance,
        limit,
        diffrax.NoProgressMeter(),
    )
    origin = jnp.asarray(getattr(params, parameter), float)
    problem = ShootingProblem(year, params, parameter, origin, parameter_scale)
    v0 = _start_of(year, start)
    y0 = jnp.concatenate([v0, jnp.zeros(1, v0.dtype)])
    direction = jnp.where(stop >= origin, 1.0, -1.0)
    walk = walk_branch(
        problem, y0, direction, bounds, settings, stop_at_fold=False,
        start_result=start.result, meter=meter,
    )  # fmt: skip
    return problem, walk


def _cycles(problem: ShootingProblem, y: np.ndarray, error_tolerance):
    """Each point's year, run in blocks of `CYCLE_BLOCK` points (the last padded
    with copies of the last point), concatenated and cut to the points."""
    count = y.shape[0]
    padded = np.concatenate([y, np.repeat(y[-1:], -count % CYCLE_BLOCK, axis=0)])
    blocks = [
        _cycle_block(problem, jnp.asarray(block), error_tolerance)
        for block in np.split(padded, padded.shape[0] // CYCLE_BLOCK)
    ]
    joined = jax.tree.map(lambda *a: np.concatenate(a)[:count], *blocks)
    return jax.device_put(joined)


@eqx.filter_jit
def _cycle_block(problem: ShootingProblem, y, error_tolerance):
    def one(y):
        params = problem.params_at(y[-1])
        return _cycle(
            problem.year, y[None, :-1], params, RESULTS.successful, jnp.array(0),
            error_tolerance, jnp.array(False),
        )  # fmt: skip

    return jax.vmap(one)(y)


def _folds(values, slope, arclength) -> np.ndarray:
    """The parameter's extremum at each change of sign of `slope`: the turning
    point of the parabola through the three points around it (in arclength)."""
    signs = np.sign(slope)
    folds = []
    for i in np.flatnonzero(signs[1:] != signs[:-1]):
        j = min(max(i, 1), values.size - 2)
        s, v = arclength[j - 1 : j + 2], values[j - 1 : j + 2]
        a, b, c = np.polyfit(s - s[1], v, 2)
        folds.append(c - b * b / (4 * a) if a != 0 else v[1])
    return np.asarray(folds, dtype=float)
