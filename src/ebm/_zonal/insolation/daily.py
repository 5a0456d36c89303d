"""The daily-mean insolation of each day of the year, for the seasonal model.

`ebm.daily_insolation` (Berger 1978; see `ebm._zonal.insolation.orbital` for the
formulas and their conventions), at cell centres, W m-2.
"""

from ..._constants import DAYS_PER_YEAR
from ..._custom_types import Flux
from ..._model.parameters import AbstractParams
from ..base import AbstractInsolation
from ..grid import Grid
from .orbital import ORBIT, unchecked_daily_insolation
from .p2 import S0


class DailyInsolation(AbstractInsolation):
    """The orbit's daily-mean insolation at cell centres on day `t * 365.2422`.

    Time `t` is in years from 1 January (day 0); the vernal equinox falls on day 80.
    """

    parameters = (S0, *ORBIT)
    tridiagonal = True
    seasonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        if t is None:
            raise ValueError(
                "DailyInsolation depends on the time of year, so a model with it has "
                "no steady state: ebm.equilibrium, continuation and fold need an "
                "annual-mean insolation (P2Insolation or AnnualMeanInsolation). "
                "Its seasonal cycle is ebm.periodic_equilibrium; ebm.integrate runs "
                "it in time."
            )
        return unchecked_daily_insolation(grid.lat, t * DAYS_PER_YEAR, params)
