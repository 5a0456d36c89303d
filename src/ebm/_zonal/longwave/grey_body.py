r"""Outgoing longwave radiation of a grey body (climlab's `Boltzmann`).

$$\mathrm{OLR} = \tau\,\varepsilon\,\sigma\,(T + 273.15)^4,$$

in W m-2 with $T$ in degC: the surface emits as a grey body of emissivity
$\varepsilon$ (`emissivity`), and the atmosphere transmits a fraction $\tau$ (`tau`)
of it to space; $\sigma$ is the Stefan-Boltzmann constant. Only the product
$\tau\varepsilon$ enters. Its feedback $\partial\,\mathrm{OLR}/\partial T =
4\tau\varepsilon\sigma(T + 273.15)^3$ grows with temperature, 3.3 W m-2 K-1 at 15
degC for climlab's defaults $\varepsilon = 0.65$, $\tau = 0.95$ (whose OLR at 15 degC,
241 W m-2, is today's global mean); `ebm.LinearLongwave`'s `B` is 2.
"""

from ..._custom_types import Flux, Temperature
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractLongwave
from ..grid import Grid


STEFAN_BOLTZMANN = 5.670374419e-8
"""The Stefan-Boltzmann constant, W m-2 K-4 (CODATA 2018)."""

ZERO_CELSIUS = 273.15
"""0 degC in K."""

EMISSIVITY = Parameter(
    "emissivity",
    0.65,
    "1",
    "longwave emissivity of the surface",
    lower=0.0,
    upper=1.0,
    lower_open=True,
    transform="logit",
)
TAU = Parameter(
    "tau",
    0.95,
    "1",
    "longwave transmissivity of the atmosphere",
    lower=0.0,
    upper=1.0,
    lower_open=True,
    transform="logit",
)


class GreyBodyLongwave(AbstractLongwave):
    """`tau emissivity sigma (T + 273.15)^4` (climlab's `Boltzmann`)."""

    parameters = (EMISSIVITY, TAU)
    tridiagonal = True

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        del grid
        kelvin = T + ZERO_CELSIUS
        return params.tau * params.emissivity * STEFAN_BOLTZMANN * kelvin**4
