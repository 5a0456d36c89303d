"""The exact annual-mean insolation of the orbit, at cell centres, W m-2.

`ebm.annual_mean_insolation` (see `ebm._zonal.insolation.orbital`): it depends on
`obliquity` and `eccentricity`.
"""

from ..._custom_types import Flux
from ..._model.parameters import AbstractParams
from ..base import AbstractInsolation
from ..grid import Grid
from .orbital import ORBIT, unchecked_annual_mean_insolation
from .p2 import S0


class AnnualMeanInsolation(AbstractInsolation):
    """The orbit's exact annual-mean insolation at cell centres."""

    parameters = (S0, *ORBIT)
    tridiagonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        del t
        return unchecked_annual_mean_insolation(grid.lat, params)
