r"""Meridional heat transport by diffusion of moist static energy (climlab's
`MeridionalMoistDiffusion`).

Heat is transported down the gradient of the near-surface moist static energy
$c_p T + L q$, with the specific humidity $q = r\,q^*(T)$ at a fixed relative humidity
$r$ (`relative_humidity`). In temperature units (the *moist temperature*
$T_m = T + L r q^*(T) / c_p$, K) the heating by transport convergence is

$$\mathcal{D}(T) = \frac{1}{\cos\phi}\frac{\partial}{\partial\phi}
\left(D\cos\phi\,\frac{\partial T_m}{\partial\phi}\right)
= \frac{1}{\cos\phi}\frac{\partial}{\partial\phi}
\left(D\,(1 + f(T))\cos\phi\,\frac{\partial T}{\partial\phi}\right),
\qquad f(T) = \frac{L r}{c_p}\frac{d q^*}{d T},$$

in W m-2, with $D$ in W m-2 K-1 (the same `D` as `ebm.DiffusiveTransport`'s, now
multiplying the gradient of $T_m$) and the moisture amplification factor $f$
dimensionless: the effective diffusivity of temperature is $D(1 + f)$, which grows
roughly exponentially with temperature (about 7% per K). With $r = 0$ this is
`ebm.DiffusiveTransport`.

The saturation specific humidity at the surface pressure $p$ (`surface_pressure`,
hPa) is climlab's (`climlab.utils.thermo.qsat`), from the saturation vapour pressure
of Bolton (1980) with $T$ in degC:

$$e^*(T) = 6.112\,\exp\!\left(\frac{17.67\,T}{T + 243.5}\right)\ \mathrm{hPa},
\qquad q^*(T) = \frac{\epsilon\,e^*}{p - (1 - \epsilon)\,e^*},
\qquad \epsilon = R_d / R_v,$$

with climlab's constants $L$ = 2.5e6 J kg-1, $c_p$ = 1004 J kg-1 K-1,
$R_d$ = 287 J kg-1 K-1 and $R_v$ = 461.5 J kg-1 K-1. ebm differentiates $q^*$
exactly where climlab takes a centred difference 0.01 K wide; the two slopes differ
by about 1e-8 relative.

**Discretisation**, as climlab's: on the bound $\phi_{i+1/2}$ between cells $i$ and
$i+1$, $f$ is evaluated at the mean of the two cells' temperatures (climlab
interpolates $T$ linearly to the bounds), and the flux is

$$F_{i+1/2} = \underbrace{D\cos\phi_{i+1/2}\,\frac{T_{i+1} - T_i}{\Delta\phi}}_{
\text{dry}} + \underbrace{f\!\left(\tfrac{T_i + T_{i+1}}{2}\right)
D\cos\phi_{i+1/2}\,\frac{T_{i+1} - T_i}{\Delta\phi}}_{\text{latent}},$$

zero at both poles; the convergence is its difference over each cell's width in
$\sin\phi$, exactly as `ebm.DiffusiveTransport`'s, so energy is conserved to rounding
and the Jacobian is tridiagonal (each flux depends on its two cells only). The
northward heat transport is $H = -2\pi a^2 F$, reported in PW, and splits into the
dry part ($c_p T$, `dry_flux`) and the latent part ($L q$, `latent_flux`).

climlab's default diffusivity for this term is $D$ = 0.24 W m-2 K-1, against 0.555
for dry diffusion (`ebm.Params`' default `D`, shared by both terms): pass
`model.Params(D=0.24)` for climlab's moist model.
"""

import jax.numpy as jnp

from ..._custom_types import EdgeValues, Flux, Temperature
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractTransport
from ..grid import Grid
from .diffusive import D, _diffusive_flux, convergence_of, in_petawatts


LATENT_HEAT = 2.5e6
"""Latent heat of vaporisation of water, J kg-1 (climlab's `Lhvap`)."""

DRY_AIR_HEAT_CAPACITY = 1004.0
"""Specific heat of dry air at constant pressure, J kg-1 K-1 (climlab's `cp`)."""

DRY_AIR_GAS_CONSTANT = 287.0
"""Gas constant of dry air, J kg-1 K-1 (climlab's `Rd`)."""

WATER_VAPOUR_GAS_CONSTANT = 461.5
"""Gas constant of water vapour, J kg-1 K-1 (climlab's `Rv`)."""

MOLAR_MASS_RATIO = DRY_AIR_GAS_CONSTANT / WATER_VAPOUR_GAS_CONSTANT
"""Ratio of the molar masses of water vapour and dry air, `Rd / Rv` (climlab's
`eps`)."""

RELATIVE_HUMIDITY = Parameter(
    "relative_humidity",
    0.8,
    "1",
    "near-surface relative humidity of the moist static energy",
    lower=0.0,
    upper=1.0,
    transform="logit",
)
SURFACE_PRESSURE = Parameter(
    "surface_pressure",
    1000.0,
    "hPa",
    "surface pressure of the saturation specific humidity",
    lower=0.0,
    lower_open=True,
    transform="log",
)


def saturation_vapour_pressure(T: Temperature) -> Temperature:
    """Saturation vapour pressure over water at `T` (degC), hPa (Bolton 1980)."""
    return 6.112 * jnp.exp(17.67 * T / (T + 243.5))


def saturation_specific_humidity(T: Temperature, pressure) -> Temperature:
    """Saturation specific humidity at `T` (degC) and `pressure` (hPa), kg kg-1."""
    vapour = saturation_vapour_pressure(T)
    return MOLAR_MASS_RATIO * vapour / (pressure - (1.0 - MOLAR_MASS_RATIO) * vapour)


def _saturation_slope(T, pressure):
    """`d q* / dT` at `T` (degC) and `pressure` (hPa), kg kg-1 K-1."""
    vapour = saturation_vapour_pressure(T)
    vapour_slope = vapour * 17.67 * 243.5 / (T + 243.5) ** 2
    dry = pressure - (1.0 - MOLAR_MASS_RATIO) * vapour
    return MOLAR_MASS_RATIO * pressure * vapour_slope / dry**2


def moisture_amplification(T, params: AbstractParams):
    """climlab's `moist_amplification_factor` `f = L r / c_p dq*/dT` at `T` (degC),
    dimensionless."""
    slope = _saturation_slope(T, params.surface_pressure)
    return LATENT_HEAT / DRY_AIR_HEAT_CAPACITY * params.relative_humidity * slope


def _latent_flux(T: Temperature, params: AbstractParams, dry: EdgeValues) -> EdgeValues:
    """The latent part of the flux on every bound, W m-2, zero at the poles, from
    its dry part `dry`."""
    bound_temperature = 0.5 * (T[1:] + T[:-1])
    factor = moisture_amplification(bound_temperature, params)
    factor = jnp.concatenate([jnp.zeros(1), factor, jnp.zeros(1)])
    return factor * dry


def _flux(T: Temperature, params: AbstractParams, grid: Grid) -> EdgeValues:
    """The whole flux, dry plus latent, on every bound, W m-2."""
    dry = _diffusive_flux(T, params, grid)
    return dry + _latent_flux(T, params, dry)


class MoistDiffusiveTransport(AbstractTransport):
    """Down-gradient diffusion of moist static energy `c_p T + L r q*(T)`, with
    diffusivity `D` (climlab's `MeridionalMoistDiffusion`)."""

    parameters = (D, RELATIVE_HUMIDITY, SURFACE_PRESSURE)
    tridiagonal = True

    def flux(self, T: Temperature, params: AbstractParams, grid: Grid) -> EdgeValues:
        """Northward heat transport through each bound, dry plus latent, PW."""
        return in_petawatts(_flux(T, params, grid))

    def dry_flux(
        self, T: Temperature, params: AbstractParams, grid: Grid
    ) -> EdgeValues:
        """The part of `flux` carried as sensible heat `c_p T`, PW."""
        return in_petawatts(_diffusive_flux(T, params, grid))

    def latent_flux(
        self, T: Temperature, params: AbstractParams, grid: Grid
    ) -> EdgeValues:
        """The part of `flux` carried as latent heat `L q`, PW."""
        return in_petawatts(_latent_flux(T, params, _diffusive_flux(T, params, grid)))

    def convergence(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        return convergence_of(_flux(T, params, grid), grid)
