r"""The seasonal cycle: the periodic steady state of the seasonal model, by shooting.

With `ebm.DailyInsolation` the model $\dot T = f(t, T;\theta)$ is forced with a
period of one year, and its steady state is a periodic orbit rather than a fixed
point. Let $\Phi(T_0;\theta)$ be the flow map: the state on 1 January of the next
year, starting from $T_0$ on 1 January. The seasonal cycle starts from a fixed point
of $\Phi$, a root of

$$G(T_0;\theta) = \Phi(T_0;\theta) - T_0 = 0,$$

found by Newton's method (`optimistix.Newton`) in which each Newton step solves
$(\partial\Phi/\partial T_0 - I)\,\delta = -G$ by GMRES (`lineax.GMRES`): the
Jacobian is never formed, only its products with vectors, each one year of the
tangent-linear model in forward mode (`jax.linearize` through the time steps). This is
Newton-Krylov shooting. It converges in a few Newton steps: the flow map damps every
mode by its decay over one year, so $\partial\Phi/\partial T_0$ has only a handful
of eigenvalues that are not close to zero and GMRES needs only a handful of products
per step. A spin-up, by contrast, iterates $\Phi$ and gains only the factor of its
slowest mode each year ($e^{-B/C}$ per year without feedbacks: 0.22 for a 10 m mixed
layer, 0.74 for 50 m).

Derivatives come from the implicit function theorem at the root,

$$\frac{\partial T_0^*}{\partial\theta} =
-\left(\frac{\partial\Phi}{\partial T_0} - I\right)^{-1}
\frac{\partial\Phi}{\partial\theta},$$

through an implicit adjoint (`optimistix.ImplicitAdjoint`'s, whose failed solve gives
NaN derivatives instead of raising inside the program) with the same matrix-free
GMRES: one linear solve, whatever a spin-up would have cost.

**Multiple shooting.** With `segments=K` the unknowns are the states $Z_k$ at the
ends of K equal parts of the year, and the equations $\phi_k(Z_{k-1}) - Z_k = 0$
(indices modulo K, $\phi_k$ the flow over part $k$): a part magnifies a change of
its start by about the $K$-th root of what the year does, for periodic states too
unstable for one year of shooting (`_shooting_residual`).

**Time stepping.** $\Phi$ takes `steps_per_year` equal steps of a fixed-step
stepper (default `ebm.Rosenbrock2`: L-stable, second order, no inner iteration) in a
`lax.scan`. Equal steps make $\Phi$ a smooth function of $T_0$ and $\theta$ (an
adaptive step sequence would change discontinuously with them) and make a spin-up of
$N$ years exactly $N$ applications of the same $\Phi$, so the two agree to the
root-finder's tolerance. A Rosenbrock step's derivatives cost a small multiple of
the step (O(n)), where an implicit Runge-Kutta step's pass through its stage
root-finds (diffrax's `Kvaerno5`) forms the stage Jacobian densely: a year's
Jacobian-vector product costs 2.3 and 5.2 times the year at 60 cells
(`benchmarks/seasonal_derivatives.py`), and O(n^2). The default 365 steps (one a
day) are within 0.03 K of the converged cycle, 146 within 0.08 K and 1460 within
0.003 K (see `benchmarks/seasonal.py`); the
seasonal model also runs under `ebm.integrate` with diffrax's adaptive solvers and
every adjoint.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx

from .._checks import check_count, known_value, refuse_if
from .._custom_types import Temperature
from .._model.protocol import AbstractModel
from .._numerics.counted import CountedRootFinder
from .._numerics.implicit import ImplicitAdjoint
from .._progress import progress_meter
from .._results import RESULTS, failure_message, raise_if_failed
from .._stepping.checkpoints import resolve_checkpoint, spellings
from .._stepping.fixed_model import (
    check_flat_stepper,
    default_fixed_stepper,
    stepped_model,
    stepped_problem,
)
from .._stepping.integrate import _fixed_step
from .._stepping.run import check_model_params
from .._stepping.steppers import resolve_stepper
from .._stepping.steppers.checks import (
    check_stability,
    fixed_step_result,
    resolve_error_tolerance,
    stability_limit,
    step_with_error,
)
from .._zonal.cycle import SeasonalCycle
from .._zonal.grid import Grid
from .._zonal.insolation.daily import DailyInsolation
from .._zonal.model import EnergyBalanceModel
from .._zonal.params import Params
from .._zonal.start import resolve_any_model
from .periodic_models import PeriodicState, check_repeating_forcing, periodic_state
from .shooting_failures import inaccurate_message, retriable


STEPS_PER_YEAR = 365


def seasonal_model(grid: Grid | None = None, **terms) -> EnergyBalanceModel:
    """The energy-balance model with daily insolation (`ebm.DailyInsolation`).

    **Arguments:**

    - `grid`: the latitude grid (default `ebm.Grid()`).
    - `terms`: other terms of `ebm.EnergyBalanceModel` (e.g. `heat_capacity=`).
    """
    return EnergyBalanceModel(
        grid=Grid() if grid is None else grid, insolation=DailyInsolation(), **terms
    )


def _resolve_year(stepper, checkpoint, steps_per_year):
    check_count("steps_per_year", steps_per_year, 4)
    checkpoint = resolve_checkpoint(checkpoint)
    if not checkpoint.supports_forward_mode:
        raise ValueError(
            f"checkpoint={type(checkpoint).__name__} supports reverse mode only; "
            "Newton-Krylov shooting needs the year's forward-mode derivative: use "
            f"{spellings(forward_mode=True)} ('none' is the default)."
        )
    return resolve_stepper(stepper), checkpoint


def _check_orbit(T, params: Params) -> Temperature:
    """Reject orbital parameters that construction could not check."""
    values = [params.eccentricity, params.obliquity, params.long_peri]
    known = [known_value(value) for value in values]
    # Values known now are checked in numpy, without compiling a program each.
    e, obliquity, long_peri = (
        values if any(v is None for v in known) else map(np.asarray, known)
    )
    isfinite = jnp.isfinite if isinstance(long_peri, jax.Array) else np.isfinite
    bad = ~((e >= 0) & (e < 1)) | ~((obliquity >= 0) & (obliquity <= 180))
    bad = bad | ~isfinite(long_peri)
    return refuse_if(
        T,
        bad,
        "`eccentricity` must be in [0, 1), `obliquity` in [0, 180] degrees and "
        "`long_peri` finite.",
    )


def _setup(
    params, model, grid, start, stepper, checkpoint, steps_per_year, error_tolerance,
    throw,
):  # fmt: skip
    """`(year, params, start, stability limit, error tolerance)` of the seasonal
    entry points, for any model of the protocol (the zonal one stepped as itself,
    another as a `FlatModel`; the default the zonal model with daily
    insolation)."""
    model = seasonal_model(grid) if model is None else resolve_any_model(model, grid)
    if stepper is None:
        stepper = default_fixed_stepper(model, split_default="rosenbrock")
    stepper, checkpoint = _resolve_year(stepper, checkpoint, steps_per_year)
    error_tolerance = resolve_error_tolerance(error_tolerance, stepper)
    check_repeating_forcing(model)
    check_flat_stepper(stepper, model)
    params = check_model_params(params, model)
    dt = 1.0 / steps_per_year
    # What the steppers advance: the zonal model itself, or any other model's state
    # as one flat vector.
    model, start = stepped_problem(params, model, start, dt, steps_per_year, "start")
    if hasattr(params, "eccentricity"):
        start = _check_orbit(start, params)
    limit = check_stability(stepper, model, params, start, dt, throw, steps_per_year)
    year = _Year(model, stepper, checkpoint, steps_per_year)
    return year, params, start, limit, error_tolerance


def _state_step(index, T, args):
    """`_fixed_step` of the state alone."""
    model, stepper, params, stepper_state, dt = args
    t = index.astype(T.dtype) * dt
    return step_with_error(stepper, model, stepper_state, t, T, params, dt)[0]


def _offset_step(index, T, args):
    """`_state_step` of a segment whose first step is `first`."""
    args, first = args
    return _state_step(first + index, T, args)


def _no_error(T0):
    """The carry of `_fixed_step` at the start of a year: no error yet."""
    return T0, jnp.zeros_like(T0), jnp.zeros((), T0.dtype)


class _Year(eqx.Module):
    """One year of equal steps: the flow map and its trajectory, each with the
    year's error estimate (K, not differentiated)."""

    model: EnergyBalanceModel
    stepper: eqx.Module
    checkpoint: eqx.Module
    steps: int

    @property
    def dt(self) -> float:
        return 1.0 / self.steps

    def _args(self, params, T0):
        state = self.stepper.init(self.model, params, T0, self.dt)
        return (self.model, self.stepper, params, state, self.dt)

    def unstable(self, T0, params, limit=None):
        """Whether the step is above the stepper's stability limit at `T0` (`limit`,
        when known)."""
        if limit is None:
            limit = stability_limit(self.stepper, self.model, params, T0)
        return self.dt > limit

    def flow_and_error(self, T0, params):
        """The state a year after `T0`, and the year's error estimate."""
        args = self._args(params, T0)
        T, _, error = self.checkpoint.loop(_fixed_step, _no_error(T0), args, self.steps)
        return T, error

    def flow(self, T0, params):
        """The state a year after `T0` (without the error estimate, which the
        compiled year then does not compute)."""
        args = self._args(params, T0)
        return self.checkpoint.loop(_state_step, T0, args, self.steps)

    def segment_ends(self, starts, params):
        """The state at the end of each segment, run from its start.

        The year is split into `K = starts.shape[0]` segments of equal steps;
        segment `k` covers the fractions `[k/K, (k+1)/K)` of the year from 1
        January and starts from `starts[k]`. The segments run side by side
        (`jax.vmap`); one segment is the year's `flow`.
        """
        segments = starts.shape[0]
        if segments == 1:
            return self.flow(starts[0], params)[None]
        length = self.steps // segments
        # The stepper's fixed part from the year's start, as a year's run has it.
        args = self._args(params, starts[0])

        def segment(T0, first):
            return self.checkpoint.loop(_offset_step, T0, (args, first), length)

        return jax.vmap(segment)(starts, jnp.arange(segments) * length)

    def trajectory(self, starts, params):
        """`(ends, states, error)`: each segment's end, the state at the start of
        every step and the year's error estimate, segment `k` of `K =
        starts.shape[0]` run from `starts[k]` (one segment: the year from
        `starts[0]`) and the error estimate carried through the year."""
        segments, length = starts.shape[0], self.steps // starts.shape[0]
        args = self._args(params, starts[0])

        def body(carry, index):
            return _fixed_step(index, carry, args), carry[0]

        def segment(carry, inputs):
            first, T0 = inputs
            _, error, worst = carry
            indices = first + jnp.arange(length)
            (T_end, error, worst), T = jax.lax.scan(body, (T0, error, worst), indices)
            return (T_end, error, worst), (T_end, T)

        firsts = jnp.arange(segments) * length
        start = _no_error(starts[0])
        (_, _, error), (ends, T) = jax.lax.scan(segment, start, (firsts, starts))
        return ends, T.reshape((self.steps,) + starts.shape[1:]), error

    def spin(self, T0, params, years, meter=diffrax.NoProgressMeter()):
        """`T0` after `years` years, and the largest year's error estimate (not
        differentiated); `meter` is told the years done out of `years`."""
        dynamic, static = eqx.partition((T0, params, self), eqx.is_inexact_array)
        T0, params, year = eqx.combine(jax.lax.stop_gradient(dynamic), static)

        def one_year(index, carry):
            T, worst, meter_state = carry
            T, error = year.flow_and_error(T, params)
            meter_state = meter.step(meter_state, (index + 1) / years)
            return T, jnp.maximum(worst, error), meter_state

        zero = jnp.zeros((), T0.dtype)
        T, worst, meter_state = jax.lax.fori_loop(
            0, years, one_year, (T0, zero, meter.init())
        )
        meter.close(meter_state)
        return T, worst


def _cycle(
    year: _Year,
    starts,
    params,
    result,
    num_steps,
    error_tolerance,
    unstable,
    earlier_error=0.0,
) -> SeasonalCycle | PeriodicState:
    """Run the year's segments from `starts` (shape `(segments, size)`;
    `starts[0]` is the state on 1 January, with one segment the year's only
    start) and summarise it as the model's result
    (`periodic_result`: the zonal model's `ebm.SeasonalCycle`, else an
    `ebm.PeriodicState`); the years before it (a spin-up) had at most
    `earlier_error`. The residual is the largest mismatch between a segment's end
    and the next segment's start (the last's: the first's)."""
    ends, v, step_error = year.trajectory(starts, params)
    step_error = jnp.maximum(step_error, earlier_error)
    finite = jnp.all(jnp.isfinite(v)) & jnp.all(jnp.isfinite(ends))
    result = fixed_step_result(finite, step_error, unstable, error_tolerance, result)
    model, unflatten, t0 = stepped_model(year.model)
    outputs = (
        t0,
        jnp.arange(year.steps) / year.steps,
        unflatten(starts[0]),
        jax.vmap(unflatten)(v),
        jnp.max(jnp.abs(ends - jnp.roll(starts, -1, axis=0))),
        step_error,
        result,
        num_steps,
    )
    own = model.periodic_result(params, *outputs)
    return periodic_state(model, params, *outputs) if own is None else own


def default_shooting_solver(model, segments: int = 1) -> optx.Newton:
    """Newton's method with GMRES, to `rtol = 1e-10` and an `atol` of 1e-10 K (the
    zonal model) or the model's own `shooting_tolerance`, in its state's units;
    for `segments` of the year (multiple shooting), a Krylov space as many times
    longer."""
    atol = 1e-10 if model is None else model.shooting_tolerance()
    linear_solver = _krylov(1e-6, 1e-6, segments)
    return optx.Newton(rtol=1e-10, atol=atol, linear_solver=linear_solver)


def _shooting_residual(ends, args):
    r"""The shooting equations $\phi_k(Z_{k-1}) - Z_k$, $k = 0 .. K-1$ (indices
    modulo $K$, so $Z_{-1} = Z_{K-1}$): $\phi_k$ runs segment $k$ of the year, and
    $Z_k$ (`ends[k]`) is the state at its end, so that $Z_{K-1}$ is the state on 1
    January. With one segment, $\Phi(T_0) - T_0$. Taking the segments' ends (not
    starts) as the unknowns makes the Jacobian minus the identity plus the
    segments' derivatives, as single shooting's is."""
    params, year = args
    return year.segment_ends(jnp.roll(ends, 1, axis=0), params) - ends


def _krylov(rtol: float, atol: float, segments: int = 1) -> lx.GMRES:
    # `dPhi/dT0 - I` is minus the identity plus a few slow modes: a short Krylov
    # space holds them (lineax runs every restart cycle in full, so keep it short).
    # With K segments, each mode that a segment does not damp away, `rho` per
    # year, gives K eigenvalues `rho^(1/K)` times the K-th roots of unity (minus
    # one): a space K times longer.
    # (`stagnation_iters` counts whole restart cycles: it stays as it is.)
    return lx.GMRES(rtol=rtol, atol=atol, restart=6 * segments, stagnation_iters=6)


def periodic_equilibrium(
    params: Params,
    *,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    steps_per_year: int = STEPS_PER_YEAR,
    spinup_years: int = 4,
    stepper=None,
    checkpoint="none",
    solver: optx.AbstractRootFinder | None = None,
    adjoint: optx.AbstractAdjoint | None = None,
    max_steps: int = 32,
    error_tolerance=None,
    retry_years: int = 100,
    segments: int = 1,
    throw: bool = True,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> SeasonalCycle | PeriodicState:
    """The seasonal cycle: the periodic steady state, by Newton-Krylov shooting.

    **Arguments:**

    - `params`: the physical parameters (the orbit among them).
    - `grid`, `model`: the grid, or the model (default: `ebm.seasonal_model(grid)`,
        the default model with `ebm.DailyInsolation`). Give one at most. `model`
        may be any model of the protocol whose forcing repeats every year (e.g.
        `ebm.DeepOceanModel` over a seasonal surface, under `ebm.AbruptCO2`): its
        state is stepped as one flat vector, as by `ebm.integrate_fixed`, and the
        result is an `ebm.PeriodicState` (see docs/hierarchy.md).
    - `start`: where the root-find starts: `"present"` (default), `"warm"`,
        `"cold"` (as for `ebm.equilibrium`), or a profile of shape `(n_lat,)` on 1
        January; for another model, a state of it (default its
        `initial_state`).
    - `steps_per_year`: equal time steps per year (default 365).
    - `spinup_years`: years of spin-up from `start` before shooting (default 4;
        cheap, and it brings Newton close to the cycle).
    - `stepper`: the fixed-step stepper, as for `ebm.integrate_fixed` (default
        `"rosenbrock"`, `ebm.Rosenbrock2`; for a model with a stepper of its own,
        as `ebm.SeaIceModel`, that one).
    - `checkpoint`: what reverse mode through a year stores: `"none"` (default),
        `"step"`, `"sqrt"` or `("nested", levels)` (see `ebm.integrate_fixed`; the
        reverse-only schedules cannot serve Newton's forward-mode products).
    - `solver`: the root-finder (default `optimistix.Newton` with GMRES,
        `rtol = atol = 1e-10` K; for another model, `atol` is its
        `shooting_tolerance()`; GMRES restarts after `6 * segments` products).
    - `adjoint`: the optimistix adjoint (default: implicit, with GMRES restarted
        as the solver's; a solve that fails gives NaN derivatives).
    - `max_steps`: Newton step limit.
    - `error_tolerance`: the largest estimated time-stepping error allowed in the
        cycle's year, K (`step_error`; `inf` turns the check off). Default: 10 for
        `"rosenbrock"`, whose estimate (its embedded first-order solution's)
        overstates its own error 40 to 80 times (0.6 K at the default 365 steps a
        year, where the cycle is within 0.01 K of the converged one); 1 for the
        Euler steppers, whose estimates track their error. (Years of the spin-up
        are not checked unless Newton fails: an inaccurate year is then the likelier
        cause, and its fix the one named.)
    - `retry_years`: where shooting fails (Newton's method did not converge from
        the spin-up, or its year was inaccurate or not finite), spin up this many
        years more from `start` (`spinup_years + retry_years` in all) and shoot
        once more: a longer spin-up brings Newton's method into the periodic
        state's basin (default 100; 0: no retry). The retry needs the failure to
        be known as the call returns (eagerly, and under eager `jax.grad`), and
        compiles nothing new; inside `jit` the failure is reported as it is.
    - `segments`: shoot over this many equal parts of the year at once (multiple
        shooting; default 1, single shooting): the unknowns are the state at the
        end of each part, and each part is run from the end of the one before
        (see docs/seasonal.md, "Multiple shooting"). For periodic states so
        unstable that a year magnifies a small change of the start beyond what
        Newton's method can correct (a leading Floquet multiplier of hundreds or
        more, e.g. `ebm.SeaIceModel`'s ice caps between the folds without a
        seasonal cycle): a part magnifies it by about the multiplier's
        `segments`-th root. A Newton step does about `segments` times single
        shooting's arithmetic, so use it where single shooting fails or lands on
        another state. It must divide `steps_per_year`.
    - `throw`: raise when the solve fails (default), else report it in `result`.
        (A derivative's implicit linear solve that fails gives NaN derivatives
        either way.)
    - `progress`: `True` for a progress bar on stderr (Newton steps out of
        `max_steps`: it usually converges in a few, and the bar then closes at
        100%), or any `diffrax.AbstractProgressMeter`, as for `ebm.integrate`.

    **Returns:**

    An `ebm.SeasonalCycle` (an `ebm.PeriodicState` for another model of the
    protocol). `jax.grad` and `jax.jacfwd` of its float fields with respect to
    `params` (and the model's array leaves) work.

    **Raises:**

    - `ValueError`: for a bad `start`, `steps_per_year`, `spinup_years`,
        `retry_years`, `segments` (an integer >= 1 dividing `steps_per_year`),
        `stepper`, `checkpoint` or `error_tolerance`, a model whose forcing
        changes from year to year, and (with `throw=True`, for known parameters)
        when `1 / steps_per_year` is above the stepper's stability limit
        at `start`, with the limit.
    - `EquinoxRuntimeError` (with `throw=True`): when Newton did not converge, the
        step was above the stability limit (traced parameters) or the year's error
        estimate above `error_tolerance`, the state became non-finite, or traced
        orbital parameters are out of range.
    """
    check_count("spinup_years", spinup_years, 0)
    check_count("retry_years", retry_years, 0)
    check_count("segments", segments, 1)
    year, params, T_start, limit, error_tolerance = _setup(
        params, model, grid, start, stepper, checkpoint, steps_per_year,
        error_tolerance, throw,
    )  # fmt: skip
    # After `_setup`, which checks `steps_per_year` itself.
    if steps_per_year % segments:
        raise ValueError(
            f"segments={segments} must divide steps_per_year={steps_per_year}: "
            "the parts of the year have equal steps."
        )
    if solver is None:
        solver = default_shooting_solver(model, segments)
    if adjoint is None:
        adjoint = ImplicitAdjoint(linear_solver=_krylov(1e-11, 1e-11, segments))

    def shoot(years):
        # The years as an array: the retry runs the same compiled program.
        return _periodic_equilibrium(
            params,
            year,
            T_start,
            jnp.asarray(years),
            solver,
            adjoint,
            max_steps,
            error_tolerance,
            limit,
            # Each step is a year or more of work: show every one.
            progress_meter(progress, refresh_steps=1),
            segments,
        )

    cycle = shoot(spinup_years)
    retried = retry_years > 0 and retriable(cycle.result)
    if retried:
        cycle = shoot(spinup_years + retry_years)
    if not throw:
        return cycle
    message = inaccurate_message(cycle, error_tolerance, year, steps_per_year)
    if message is None and not cycle.result.is_traced():
        message = failure_message(cycle.result)
    if message is not None and retried:
        message = (
            f"{message} (after a retry from a spin-up of {spinup_years + retry_years}"
            " years: `retry_years`)"
        )
    return raise_if_failed(cycle, cycle.result, message)


@eqx.filter_jit
def _periodic_equilibrium(
    params,
    year,
    T_start,
    spinup_years,
    solver,
    adjoint,
    max_steps,
    error_tolerance,
    limit,
    meter,
    segments=1,
) -> SeasonalCycle | PeriodicState:
    unstable = year.unstable(T_start, params, limit)
    T_guess, spinup_error = year.spin(T_start, params, spinup_years)
    if not isinstance(meter, diffrax.NoProgressMeter):
        solver = CountedRootFinder(solver, meter, max_steps)
    # The first guess: the spun-up state at the end of every segment. (Not the
    # segments of a year run from it: where the state is unstable, that year would
    # magnify its distance from the state by the leading multiplier, which is what
    # the segments are there to avoid.)
    guess = jnp.broadcast_to(T_guess, (segments,) + T_guess.shape)
    solution = optx.root_find(
        _shooting_residual,
        solver,
        guess,
        (params, year),
        max_steps=max_steps,
        adjoint=adjoint,
        throw=False,
    )
    result = RESULTS.promote(solution.result)
    # Newton (or GMRES) failing on inaccurate years is the symptom, not the cause.
    failed = result != RESULTS.successful
    result = fixed_step_result(
        True, jnp.where(failed, spinup_error, 0.0), unstable, error_tolerance, result
    )
    return _cycle(
        year,
        jnp.roll(solution.value, 1, axis=0),
        params,
        result,
        solution.stats["num_steps"],
        error_tolerance,
        unstable,
    )


def seasonal_spinup(
    params: Params,
    *,
    years: int,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    steps_per_year: int = STEPS_PER_YEAR,
    stepper=None,
    checkpoint="none",
    error_tolerance=None,
    throw: bool = True,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> SeasonalCycle | PeriodicState:
    """The seasonal cycle by spinning up: `years` years from `start`, then one more.

    The same time stepping as `ebm.periodic_equilibrium`, so that the two converge
    to the same cycle; here by brute force (climlab's way), for comparison.

    **Arguments:**

    - `params`, `grid`, `model`, `start`, `steps_per_year`, `stepper`,
        `checkpoint`: as for `ebm.periodic_equilibrium` (any model of the protocol
        whose forcing repeats every year).
    - `years`: years to spin up before the year that is returned (an integer >= 0).
        They are not differentiated (the cycle does not depend on where they
        started; differentiate `ebm.periodic_equilibrium`); the last year is.
    - `error_tolerance`: as for `ebm.periodic_equilibrium`, but checked on every
        year run: an inaccurate year of the spin-up can take it to another climate.
    - `throw`: raise when the run fails (default), else report it in `result`.
    - `progress`: `True` for a progress bar on stderr (years of the spin-up out of
        `years`), or any `diffrax.AbstractProgressMeter`, as for `ebm.integrate`.

    **Returns:**

    An `ebm.SeasonalCycle` of the last year (an `ebm.PeriodicState` for another
    model of the protocol); its `residual` says how far from
    periodic it still is, `num_steps` is `years`, and `step_error` is the largest
    error estimate of any year run.

    **Raises:**

    - `ValueError`: as for `ebm.periodic_equilibrium`.
    - `EquinoxRuntimeError` (with `throw=True`): when a year's error estimate is
        above `error_tolerance`, the step above the stability limit (traced
        parameters), the state non-finite, or traced orbital parameters out of
        range.
    """
    check_count("years", years, 0)
    year, params, T_start, limit, error_tolerance = _setup(
        params, model, grid, start, stepper, checkpoint, steps_per_year,
        error_tolerance, throw,
    )  # fmt: skip
    cycle = _seasonal_spinup(
        params,
        year,
        T_start,
        years,
        error_tolerance,
        limit,
        # Each step is a year or more of work: show every one.
        progress_meter(progress, refresh_steps=1),
    )
    if not throw:
        return cycle
    message = inaccurate_message(cycle, error_tolerance, year, steps_per_year)
    return raise_if_failed(cycle, cycle.result, message)


@eqx.filter_jit
def _seasonal_spinup(
    params, year, T_start, years, error_tolerance, limit, meter
) -> SeasonalCycle | PeriodicState:
    unstable = year.unstable(T_start, params, limit)
    T0, spinup_error = year.spin(T_start, params, years, meter)
    return _cycle(
        year,
        T0[None],
        params,
        RESULTS.successful,
        jnp.asarray(years),
        error_tolerance,
        unstable,
        spinup_error,
    )
