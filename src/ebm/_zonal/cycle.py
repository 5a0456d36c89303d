"""One year of the zonal model's periodic state (`ebm.SeasonalCycle`), its result
of `ebm.periodic_equilibrium` and `ebm.seasonal_spinup`
(`EnergyBalanceModel.periodic_result`)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._custom_types import Scalar, Temperature
from .._results import RESULTS, with_result_names


class SeasonalCycle(eqx.Module):
    """One year of the periodic steady state (or of a spin-up's last year).

    **Attributes:**

    - `T0`: the temperature on 1 January that one year returns to, degC.
    - `t`: the times of the year, years (`k / steps_per_year`, from 0).
    - `T`: the temperature at each time, shape `(time, lat)`, degC.
    - `lat`: cell centres, degrees north.
    - `annual_mean`: each cell's mean temperature over the year, degC.
    - `amplitude`: half each cell's range over the year (max - min) / 2, K.
    - `global_mean`: the global mean at each time, degC.
    - `ice_edge`, `ice_edge_south`: each hemisphere's ice edge at each time,
        degrees north.
    - `annual_mean_ice_edge`, `annual_mean_ice_edge_south`: their means over the
        year, degrees north; `ice_edge_range` and `ice_edge_south_range` (properties)
        their annual ranges, max - min, degrees.
    - `residual`: largest change of any cell over the year, `max |Phi(T0) - T0|`, K
        (with `segments`, the largest mismatch where the year's parts meet).
    - `step_error`: the time stepping's estimated error over the year, K: each
        cell's local error estimates added with their signs, forgotten over a year,
        the largest of any cell and step (see `ebm.integrate_fixed`); for
        `ebm.seasonal_spinup`, over every year it ran. Checked against
        `error_tolerance`.
    - `result`: an `ebm.RESULTS`; `RESULTS.successful` when converged.
    - `num_steps`: Newton steps taken (years spun up, for `ebm.seasonal_spinup`).
    - `parameter`, `values`: for the result of `ebm.periodic_sweep`, the swept
        parameter's name and its values, along which every other field has a
        leading axis; `None` otherwise.
    """

    T0: Temperature
    t: Float[Array, " time"]
    T: Float[Array, "time lat"]
    lat: Float[Array, " lat"]
    annual_mean: Temperature
    amplitude: Temperature
    global_mean: Float[Array, " time"]
    ice_edge: Float[Array, " time"]
    ice_edge_south: Float[Array, " time"]
    annual_mean_ice_edge: Scalar
    annual_mean_ice_edge_south: Scalar
    residual: Scalar
    step_error: Scalar
    result: RESULTS
    num_steps: Int[Array, ""]
    parameter: str | None = eqx.field(static=True, default=None)
    values: Float[Array, " point"] | None = None

    def __repr__(self) -> str:
        return with_result_names(self)

    # The properties reduce over the last (time) axis: a sweep's or an ensemble's
    # results have a leading axis.
    @property
    def annual_global_mean(self) -> Scalar:
        """The global mean over the year, degC."""
        return jnp.mean(self.global_mean, axis=-1)

    @property
    def ice_edge_range(self) -> Scalar:
        """The northern ice edge's annual range, max - min over the year, degrees."""
        return jnp.max(self.ice_edge, axis=-1) - jnp.min(self.ice_edge, axis=-1)

    @property
    def ice_edge_south_range(self) -> Scalar:
        """The southern ice edge's annual range, max - min over the year, degrees."""
        south = self.ice_edge_south
        return jnp.max(south, axis=-1) - jnp.min(south, axis=-1)

    @property
    def converged(self):
        """Whether the solve succeeded."""
        return self.result == RESULTS.successful


def seasonal_cycle(
    model, params, t, T0, T, residual, step_error, result,
    num_steps,
) -> SeasonalCycle:  # fmt: skip
    """The `SeasonalCycle` of profiles `T` at the times `t` of the year, from
    `T0`: their means, ranges and ice edges."""
    ice_edge = jax.vmap(model.ice_edge, in_axes=(0, None))(T, params)
    ice_edge_south = jax.vmap(lambda T: model.ice_edge(T, params, "south"))(T)
    return SeasonalCycle(
        T0=T0,
        t=t,
        T=T,
        lat=model.grid.lat,
        annual_mean=jnp.mean(T, axis=0),
        amplitude=(jnp.max(T, axis=0) - jnp.min(T, axis=0)) / 2,
        global_mean=model.grid.global_mean(T),
        ice_edge=ice_edge,
        ice_edge_south=ice_edge_south,
        annual_mean_ice_edge=jnp.mean(ice_edge),
        annual_mean_ice_edge_south=jnp.mean(ice_edge_south),
        residual=residual,
        step_error=step_error,
        result=result,
        num_steps=num_steps,
    )
