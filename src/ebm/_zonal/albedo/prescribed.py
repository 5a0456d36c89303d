"""A prescribed albedo profile, fixed in time: no ice-albedo feedback."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..._custom_types import Flux, Temperature
from ..._model.parameters import AbstractParams
from ..base import AbstractAlbedo
from ..grid import Grid


class PrescribedAlbedo(AbstractAlbedo):
    """A fixed albedo profile: no ice-albedo feedback.

    Give it the albedo of a reference state, `ebm.SmoothIceAlbedo()(T, params, grid)`,
    to hold the ice where it is while other things change (e.g. climate sensitivity
    without the ice-albedo feedback).

    **Arguments:**

    - `albedo`: one value per cell, in [0, 1].
    """

    albedo: Float[Array, " lat"] = eqx.field(converter=jnp.asarray)
    tridiagonal = True

    def __check_init__(self):
        values = self.albedo
        if isinstance(values, jax.core.Tracer):
            return
        if values.ndim != 1 or not bool(jnp.all((values >= 0) & (values <= 1))):
            raise ValueError(
                "PrescribedAlbedo `albedo` must be a 1-d profile with values in "
                f"[0, 1], got {values}."
            )

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        del T, params
        if self.albedo.shape != (grid.n_lat,):
            raise ValueError(
                f"PrescribedAlbedo has {self.albedo.shape[0]} values but the grid "
                f"has {grid.n_lat} cells."
            )
        return self.albedo
