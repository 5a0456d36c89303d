r"""Radiative forcing of carbon dioxide (Myhre et al. 1998).

$$F = 5.35\,\ln\frac{\mathrm{CO_2}}{\mathrm{CO_{2,ref}}} + F_0,$$

in W m-2, the same in every cell and constant in time, with the concentrations in
ppm (`CO2`, `CO2_ref`; both 280 ppm, pre-industrial, by default) and $F_0$ the
uniform `forcing` of any other agent (0 by default). Doubling CO2 forces
$5.35 \ln 2 = 3.71$ W m-2, so the equilibrium climate sensitivity per doubling is
one derivative, $\ln 2\;\partial \bar T / \partial \ln \mathrm{CO_2}$: with
`ebm.LinearLongwave` and no ice-albedo feedback (`ebm.PrescribedAlbedo`) it is
$5.35 \ln 2 / B$ exactly.
"""

import jax.numpy as jnp

from ..._custom_types import Flux
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractForcing
from ..grid import Grid
from .uniform import FORCING


FORCING_PER_E_FOLDING = 5.35
"""W m-2 per e-folding of the CO2 concentration (Myhre et al. 1998)."""

CO2 = Parameter(
    "CO2",
    280.0,
    "ppm",
    "atmospheric CO2 concentration",
    lower=0.0,
    upper=1e6,
    lower_open=True,
    note="a million ppm is the whole atmosphere",
    transform="logit",
)
CO2_REF = Parameter(
    "CO2_ref",
    280.0,
    "ppm",
    "CO2 concentration of zero CO2 forcing",
    lower=0.0,
    upper=1e6,
    lower_open=True,
    note="a million ppm is the whole atmosphere",
    transform="logit",
)


class CO2Forcing(AbstractForcing):
    """`5.35 ln(CO2 / CO2_ref) + forcing`, in every cell at all times."""

    parameters = (FORCING, CO2, CO2_REF)
    tridiagonal = True

    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        del t
        co2 = FORCING_PER_E_FOLDING * jnp.log(params.CO2 / params.CO2_ref)
        return jnp.full(grid.n_lat, co2 + params.forcing)
