"""`ebm.periodic_sweep`: periodic states along a sequence of one parameter's
values, each found from the one before.

Each point is `ebm.periodic_equilibrium` at the next value, started from the
previous point's state on 1 January and spun up `spinup_years` before Newton-Krylov
shooting; a periodic state that shooting finds but that is unstable (its year's
leading Floquet multiplier above 1) is found again after a long spin-up, as is one
where shooting fails. The sweep thus follows the attracting periodic state that the
previous one leads to, as a slowly changing experiment would. Swept up and then down, a
parameter range with two attracting states shows them as two branches that
disagree (hysteresis), each ending where its periodic state ceases to exist; the
unstable states between them are not found. The whole sweep is one compiled
program (a `jax.lax.scan` over the values), and each point is differentiable as
`ebm.periodic_equilibrium` is.
"""

import dataclasses

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count
from .._model.protocol import AbstractModel
from .._numerics.implicit import ImplicitAdjoint
from .._results import RESULTS
from .._stepping.steppers.flat import FlatModel
from .._zonal.cycle import SeasonalCycle
from .._zonal.grid import Grid
from .continuation.problem import with_parameter
from .periodic_models import PeriodicState
from .seasonal import (
    STEPS_PER_YEAR,
    _krylov,
    _periodic_equilibrium,
    _setup,
    default_shooting_solver,
)


def periodic_sweep(
    params,
    parameter: str,
    values,
    *,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    steps_per_year: int = STEPS_PER_YEAR,
    spinup_years: int = 4,
    retry_years: int = 100,
    stepper=None,
    max_steps: int = 32,
    error_tolerance=None,
) -> SeasonalCycle | PeriodicState:
    """The periodic states at each of `values` of `parameter`, in order, each
    started from the one before (see the module docstring).

    **Arguments:**

    - `params`, `grid`, `model`, `start`, `steps_per_year`, `stepper`,
        `error_tolerance`: as for `ebm.periodic_equilibrium`; `start` is where the
        first point starts.
    - `parameter`: the name of a scalar parameter of the model.
    - `values`: its values, a 1-d array, in the order they are visited (sweep up
        and then down for hysteresis).
    - `spinup_years`: years spun up from the previous point's state before each
        point's shooting (default 4): enough to leave a periodic state that no
        longer exists for the one it leads to.
    - `retry_years`: where a point's shooting fails, or finds a periodic state that
        is unstable (the leading multiplier of its year's derivative, estimated by
        the power method, above 1: shooting next to a fold can land on the
        unstable state), years spun up from the previous state before shooting
        once more (default 100).
    - `max_steps`: each point's Newton step limit.

    **Returns:**

    What `ebm.periodic_equilibrium` returns (an `ebm.SeasonalCycle` or an
    `ebm.PeriodicState`), every field with a leading axis over `values`, which it
    holds with the parameter's name (`parameter`, `values`). A point
    that failed says so in its `result` (no error is raised); the next point then
    starts from the last one that succeeded.

    **Raises:**

    - `ValueError`: for a `parameter` that is not a scalar parameter of the model,
        `values` that are not a non-empty 1-d array of finite numbers, and as
        `ebm.periodic_equilibrium` does for the other arguments.
    """
    check_count("spinup_years", spinup_years, 0)
    check_count("retry_years", retry_years, 0)
    year, params, start, _, error_tolerance = _setup(
        params, model, grid, start, stepper, "none", steps_per_year,
        error_tolerance, True,
    )  # fmt: skip
    check_scalar_parameter(params, parameter)
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(
            f"`values` must be a non-empty 1-d array of finite numbers, got {values!r}."
        )
    for value in np.unique(values):
        allowed = params.out_of_range(parameter, value)
        if allowed is not None:
            raise ValueError(
                f"Each of `values` must be an allowed `{parameter}`, {allowed}; "
                f"got {value:g}."
            )
    solver = default_shooting_solver(model)
    adjoint = ImplicitAdjoint(linear_solver=_krylov(1e-11, 1e-11))
    points = _sweep(
        params, parameter, jnp.asarray(values), year, start,
        jnp.asarray([spinup_years, retry_years]), solver, adjoint, max_steps,
        error_tolerance,
    )  # fmt: skip
    return dataclasses.replace(points, parameter=parameter, values=jnp.asarray(values))


def check_scalar_parameter(params, parameter: str) -> None:
    """Refuse a `parameter` that is not a scalar field of `params`.

    **Raises:**

    - `ValueError`: naming the scalar parameters.
    """
    container = type(params)
    if parameter not in container.field_names() or np.ndim(getattr(params, parameter)):
        scalars = tuple(
            n for n in container.field_names() if np.ndim(getattr(params, n)) == 0
        )
        raise ValueError(
            f"`parameter` must be a scalar parameter of the model, one of {scalars}, "
            f"got {parameter!r}."
        )


POWER_ITERATIONS = 16
"""Products with the year's derivative that estimate its leading multiplier."""


def leading_multiplier(year, state, params) -> jax.Array:
    """The modulus of the leading Floquet multiplier of the periodic state `state`
    (the year's flow map's derivative's leading eigenvalue), by `POWER_ITERATIONS`
    of the power method from a fixed start: above 1 for an unstable state. Not
    differentiated."""
    state, params = jax.lax.stop_gradient((state, params))
    vector = jnp.cos(jnp.arange(state.size, dtype=state.dtype) + 0.5)
    vector = vector / jnp.linalg.norm(vector)

    def power(_, carry):
        vector, _ = carry
        image = jax.jvp(lambda y: year.flow(y, params), (state,), (vector,))[1]
        size = jnp.linalg.norm(image)
        return image / jnp.where(size > 0, size, 1.0), size

    _, size = jax.lax.fori_loop(
        0, POWER_ITERATIONS, power, (vector, jnp.zeros((), state.dtype))
    )
    return size


def _start_of(year, cycle) -> jax.Array:
    """The state on 1 January of `cycle`, as the year's flat start."""
    if isinstance(year.model, FlatModel):
        return year.model.flatten(cycle.state0)
    return cycle.T0


@eqx.filter_jit
def _sweep(
    params, parameter, values, year, start, years, solver, adjoint, max_steps,
    error_tolerance,
):  # fmt: skip
    def attempt(previous, p, spinup_years):
        cycle = _periodic_equilibrium(
            p,
            year,
            previous,
            spinup_years,
            solver,
            adjoint,
            max_steps,
            error_tolerance,
            None,  # the stability limit at this point's start
            diffrax.NoProgressMeter(),
        )
        state = _start_of(year, cycle)
        ok = (cycle.result == RESULTS.successful) & jnp.all(jnp.isfinite(state))
        return cycle, state, ok

    def point(previous, value):
        p = with_parameter(params, parameter, value)
        cycle, state, ok = attempt(previous, p, years[0])
        # Shooting converges to unstable periodic states too (next to a fold, a
        # short spin-up leaves the state near one): those are retried.
        ok = ok & (leading_multiplier(year, state, p) <= 1.0)
        cycle, state, ok = jax.lax.cond(
            ok,
            lambda: (cycle, state, ok),
            lambda: attempt(previous, p, years[1]),
        )
        return jnp.where(ok, state, previous), cycle

    return jax.lax.scan(point, start, values)[1]
