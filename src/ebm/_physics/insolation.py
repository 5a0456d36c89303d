r"""Insolation at the top of the atmosphere: annual-mean and seasonal.

- `P2Insolation` (the default, climlab's `P2Insolation`; North 1975): the annual
    mean in the second-Legendre-polynomial approximation,

    $$Q(\phi) = \frac{S_0}{4}\left(1 + s_2 P_2(\sin\phi)\right),
    \qquad P_2(x) = \tfrac{1}{2}(3x^2 - 1),$$

    whose global mean tends to $S_0/4$ as the grid is refined ($P_2$ has zero mean
    on the sphere; on the 60-cell grid it is within 0.03 % of it).
- `AnnualMeanInsolation`: the exact annual mean from the orbit
    (`ebm.annual_mean_insolation`), which depends on `obliquity` and
    `eccentricity`; $s_2 = -0.48$ is its P2 fit for today's orbit.
- `DailyInsolation`: the daily mean on each day of the year from the orbit
    (`ebm.daily_insolation`, Berger 1978), for the seasonal model.

All are evaluated at cell centres, in W m-2. See `ebm._orbital` for the orbital
formulas and their conventions.
"""

from .._constants import DAYS_PER_YEAR
from .._custom_types import Flux
from .._model.grid import Grid
from .._model.parameters import AbstractParams, Parameter
from .base import AbstractInsolation
from .orbital import ORBIT, annual_mean_insolation, daily_insolation


S0 = Parameter("S0", 1365.2, "W m-2", "solar constant", lower=0.0, transform="log")
S2 = Parameter("s2", -0.48, "1", "second Legendre coefficient of insolation")


def legendre_p2(x):
    """The second Legendre polynomial, `(3 x^2 - 1) / 2`."""
    return 0.5 * (3.0 * x**2 - 1.0)


class P2Insolation(AbstractInsolation):
    """`S0 / 4 (1 + s2 P2(sin lat))` at cell centres."""

    parameters = (S0, S2)
    tridiagonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        del t
        return params.S0 / 4.0 * (1.0 + params.s2 * legendre_p2(grid.sin_lat))


class AnnualMeanInsolation(AbstractInsolation):
    """The orbit's exact annual-mean insolation at cell centres."""

    parameters = (S0, *ORBIT)
    tridiagonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        del t
        return annual_mean_insolation(grid.lat, params)


class DailyInsolation(AbstractInsolation):
    """The orbit's daily-mean insolation at cell centres on day `t * 365.2422`.

    Time `t` is in years from 1 January (day 0); the vernal equinox falls on day 80.
    """

    parameters = (S0, *ORBIT)
    tridiagonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        if t is None:
            raise ValueError(
                "DailyInsolation depends on the time of year, so a model with it has "
                "no steady state: ebm.equilibrium, continuation and fold need an "
                "annual-mean insolation (P2Insolation or AnnualMeanInsolation). "
                "Its seasonal cycle is ebm.periodic_equilibrium; ebm.integrate runs "
                "it in time."
            )
        return daily_insolation(grid.lat, t * DAYS_PER_YEAR, params)
