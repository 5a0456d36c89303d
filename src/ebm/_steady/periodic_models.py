r"""The periodic state of a model of the protocol: `ebm.PeriodicState`, the
result of `ebm.periodic_equilibrium` and `ebm.seasonal_spinup` for a model without
one of its own (`periodic_result`; the zonal model's is `ebm.SeasonalCycle`).
Both shoot for (or spin up to) the periodic state of the flow map over one year,
$\Phi(y_0) = y_0$ (see `ebm._steady.seasonal`), with the model's state stepped as
one flat vector (`FlatModel`, as `ebm.integrate_fixed` steps it) and the model's
own Jacobian in the implicit steppers: every declared variable through the year.

A periodic state needs a forcing that repeats every year: the model's time
dependence is its seasonal cycle (e.g. a zonal surface with `ebm.DailyInsolation`)
and its scenario, if it has one, is steady from its start (`ebm.AbruptCO2`). A
scenario that changes from year to year (`ebm.OnePercentCO2`, a series) has none,
and is refused by name.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._custom_types import Scalar
from .._model.protocol import AbstractModel, Variable, state_arrays
from .._results import RESULTS, with_result_names
from .._scenarios.base import AbstractScenario


class PeriodicState(eqx.Module):
    """One year of the periodic state of a model of the protocol (or of a spin-up's
    last year), from the start of the model's year (`year_start`).

    **Attributes:**

    - `state0`: the state at the start of the year that one year returns to,
        `{name: array}` (see `variables`).
    - `t`: the times of the year, years (`k / steps_per_year`, from 0, the start of
        the model's year: `year_start`).
    - `states`: the state at each time, each array with a leading time axis.
    - `T`: the surface temperature (`model.temperature`) at each time,
        degC; `annual_mean` its mean over the year.
    - `global_mean`: the global-mean surface temperature at each time, degC.
    - `residual`: the largest change of any state variable over the year,
        `max |Phi(y0) - y0|`, in its units (with `segments`, the largest mismatch
        where the year's parts meet).
    - `step_error`: the time stepping's estimated error over the year (as for
        `ebm.SeasonalCycle`); checked against `error_tolerance`.
    - `variables`: the model's declared variables.
    - `result`: an `ebm.RESULTS`; `RESULTS.successful` when converged.
    - `num_steps`: Newton steps taken (years spun up, for `ebm.seasonal_spinup`).
    - `parameter`, `values`: for the result of `ebm.periodic_sweep`, the swept
        parameter's name and its values, along which every other field has a
        leading axis; `None` otherwise.
    - `year_start`: what time 0 of the year is (the model's `year_start`: "1
        January", or "the northern winter solstice" for `ebm.SeaIceModel`).
    """

    state0: dict[str, Array]
    t: Float[Array, " time"]
    states: dict[str, Array]
    T: Array
    annual_mean: Array
    global_mean: Float[Array, " time"]
    residual: Scalar
    step_error: Scalar
    variables: tuple[Variable, ...] = eqx.field(static=True)
    result: RESULTS
    num_steps: Int[Array, ""]
    parameter: str | None = eqx.field(static=True, default=None)
    values: Float[Array, " point"] | None = None
    year_start: str = eqx.field(static=True, default="1 January")

    def __repr__(self) -> str:
        return with_result_names(self)

    @property
    def annual_global_mean(self) -> Scalar:
        """The global-mean surface temperature over the year, degC (over the last
        axis: a sweep's or an ensemble's results have a leading axis)."""
        return jnp.mean(self.global_mean, axis=-1)

    @property
    def converged(self):
        """Whether the solve succeeded."""
        return self.result == RESULTS.successful


def check_repeating_forcing(model: AbstractModel) -> None:
    """Refuse a model under a scenario that changes from year to year.

    **Raises:**

    - `ValueError`: naming the scenario, with what to do instead.
    """
    scenario = getattr(model, "forcing", None)
    if isinstance(scenario, AbstractScenario) and not scenario.steady:
        raise ValueError(
            f"A periodic state needs forcing that repeats every year; "
            f"{type(scenario).__name__} changes from year to year, so "
            f"{type(model).__name__} under it has none. Give the model a steady "
            "scenario (e.g. ebm.AbruptCO2(factor)), or run it in time with "
            "ebm.integrate."
        )


def periodic_state(
    model: AbstractModel, params, t0, t, y0, ys, residual, step_error, result,
    num_steps,
) -> PeriodicState:  # fmt: skip
    """The `PeriodicState` of `model`'s states `ys` at the times `t` of the year
    (`t0 + t` on its clock), from `y0`."""
    T = jax.vmap(lambda t, y: model.temperature(t0 + t, y, params))(t, ys)
    return PeriodicState(
        state0=state_arrays(model, y0),
        t=t,
        states=jax.vmap(lambda y: state_arrays(model, y))(ys),
        T=T,
        annual_mean=jnp.mean(T, axis=0),
        global_mean=jax.vmap(lambda t, y: model.mean_temperature(t0 + t, y, params))(
            t, ys
        ),
        residual=residual,
        step_error=step_error,
        variables=model.variables,
        result=result,
        num_steps=num_steps,
        year_start=model.year_start,
    )
