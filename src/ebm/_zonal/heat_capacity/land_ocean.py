r"""A mix of land and ocean in each cell.

Each cell is a fraction $f_i$ land and $1 - f_i$ ocean, and its zonal-mean heat
capacity is the area-weighted mix

$$C_i = \rho_w c_w\left((1 - f_i)\,h + f_i\,h_\text{land}\right),$$

with $h$ = `water_depth` for the ocean and $h_\text{land}$ the water-equivalent
depth of the land surface that exchanges heat over a season (of order a metre).
Land warms and cools several times faster than a mixed layer, which is what makes
continental seasons large. (One temperature per cell: land and ocean are assumed to
exchange heat quickly within a latitude band.)
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..._model.parameters import AbstractParams
from ..base import AbstractHeatCapacity
from ..grid import Grid
from .mixed_layer import WATER_DEPTH, water_column_heat_capacity


class LandOceanHeatCapacity(AbstractHeatCapacity):
    """A mix of land and ocean in each cell.

    **Arguments:**

    - `land_fraction`: the land fraction of each cell, in `[0, 1]`: an array of shape
        `(n_lat,)`, or one number for every cell.
    - `land_water_depth`: water-equivalent depth of the land surface, m (default
        1.0, an order-of-magnitude value; > 0).

    **Raises:**

    - `ValueError`: for a land fraction outside `[0, 1]` or not finite, or a
        `land_water_depth` that is not positive and finite.
    """

    parameters = (WATER_DEPTH,)

    land_fraction: Float[Array, "*lat"] = eqx.field(converter=jnp.asarray)
    land_water_depth: Float[Array, ""] = eqx.field(
        default=1.0, converter=lambda x: jnp.asarray(x, dtype=float)
    )

    def __check_init__(self):
        if isinstance(self.land_fraction, jax.core.Tracer) or isinstance(
            self.land_water_depth, jax.core.Tracer
        ):
            return  # Traced (built inside jit): nothing to check yet.
        fraction = np.asarray(self.land_fraction, dtype=float)
        if fraction.ndim > 1 or not np.all((0 <= fraction) & (fraction <= 1)):
            raise ValueError(
                "`land_fraction` must be one number or one per cell, each in "
                f"[0, 1], got {self.land_fraction}."
            )
        depth = np.asarray(self.land_water_depth)
        if not (depth.shape == () and np.isfinite(depth) and depth > 0):
            raise ValueError(
                f"`land_water_depth` must be > 0 m and finite, got {depth}."
            )

    def __call__(self, params: AbstractParams, grid: Grid) -> Float[Array, " lat"]:
        fraction = jnp.broadcast_to(self.land_fraction.astype(float), (grid.n_lat,))
        depth = (1.0 - fraction) * params.water_depth + fraction * self.land_water_depth
        return water_column_heat_capacity(depth)
