r"""One ocean mixed layer of depth `water_depth` in every cell (climlab's).

$$C = \rho_w c_w h,$$

J m-2 K-1, with $h$ = `water_depth`. The model's temperature is that of a well-mixed
layer; its heat capacity sets how fast it responds, not where it settles
(equilibria do not depend on it, the seasonal cycle does).
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from ..._constants import WATER_DENSITY, WATER_HEAT_CAPACITY
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractHeatCapacity
from ..grid import Grid


def water_column_heat_capacity(depth):
    """`rho_w c_w depth`: the heat capacity of a water column `depth` m deep,
    J m-2 K-1."""
    return WATER_DENSITY * WATER_HEAT_CAPACITY * depth


WATER_DEPTH = Parameter(
    "water_depth",
    10.0,
    "m",
    "depth of the water column that sets heat capacity",
    lower=0.0,
    upper=11000.0,
    lower_open=True,
    note="the deepest ocean is 10,935 m",
    transform="logit",
)


class MixedLayerHeatCapacity(AbstractHeatCapacity):
    """An ocean mixed layer `params.water_depth` deep in every cell."""

    parameters = (WATER_DEPTH,)

    def __call__(self, params: AbstractParams, grid: Grid) -> Float[Array, " lat"]:
        return jnp.full(grid.n_lat, water_column_heat_capacity(params.water_depth))
