r"""A uniform radiative forcing.

$$F = \text{forcing},$$

in W m-2, the same in every cell and constant in time: 3.7 W m-2 is the forcing of
doubled CO2 (Myhre et al. 1998), for forced and transient experiments and climate
sensitivity. It is ebm's own (climlab's `EBM` has none) and 0 by default.
"""

import jax.numpy as jnp

from ..._custom_types import Flux
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractForcing
from ..grid import Grid


FORCING = Parameter(
    "forcing",
    0.0,
    "W m-2",
    "radiative forcing added to every cell's energy budget",
    lower=-500.0,
    upper=500.0,
    note="twice the sunlight the Earth absorbs",
    transform="logit",
)


class UniformForcing(AbstractForcing):
    """`forcing`, in every cell at all times."""

    parameters = (FORCING,)
    tridiagonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        del t
        return jnp.full(grid.n_lat, params.forcing)
