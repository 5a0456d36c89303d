r"""Meridional heat transport by diffusion of temperature.

The heating by transport convergence is

$$\mathcal{D}(T) = \frac{1}{\cos\phi}\frac{\partial}{\partial\phi}
\left(D\cos\phi\,\frac{\partial T}{\partial\phi}\right)
= \frac{\partial}{\partial x}\left(D(1-x^2)\frac{\partial T}{\partial x}\right),
\quad x = \sin\phi,$$

in W m-2, with the diffusivity $D$ in W m-2 K-1 (North 1975; climlab's
`MeridionalHeatDiffusion` in its `EBM`).

**Discretisation** (conservative finite volumes, as climlab's
`adv_diff_numerics.py`). On the bound $\phi_{i+1/2}$ between cells $i$ and $i+1$
the flux is

$$F_{i+1/2} = D\cos\phi_{i+1/2}\,\frac{T_{i+1} - T_i}{\Delta\phi},$$

with $F = 0$ at both poles ($\cos\phi = 0$ there: zero-flux boundary conditions), and
the convergence in cell $i$ is the flux difference over the cell's width in
$x = \sin\phi$:

$$\mathcal{D}_i = \frac{F_{i+1/2} - F_{i-1/2}}{\sin\phi_{i+1/2} - \sin\phi_{i-1/2}}.$$

Multiplying by the area weights $w_i = \tfrac12\Delta(\sin\phi)_i$ and summing
telescopes to $F$ at the poles, zero: diffusion conserves energy exactly. The
operator is tridiagonal, symmetric in the area-weighted inner product and negative
semi-definite; its largest eigenvalue grows like $4D/\Delta\phi^2$, which is what
makes explicit time stepping costly on fine grids.

The northward heat transport through a bound is the flux times the length of the
latitude circle, $H = -2\pi a^2 F$ (W), reported in PW.
"""

import jax.numpy as jnp

from ..._constants import EARTH_RADIUS, PETAWATT
from ..._custom_types import EdgeValues, Flux, Temperature
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractTransport
from ..grid import Grid


D = Parameter(
    "D",
    0.555,
    "W m-2 K-1",
    "meridional heat diffusivity",
    lower=0.0,
    transform="log",
)


def diffusive_flux(T: Temperature, D, grid: Grid) -> EdgeValues:
    """`D cos(lat) dT/dlat` on every bound, W m-2, zero at the poles; `D` is one
    value, or one per bound."""
    gradient = jnp.diff(T) / grid.spacing
    gradient = jnp.concatenate([jnp.zeros(1), gradient, jnp.zeros(1)])
    return D * grid.cos_lat_bounds * gradient


def in_petawatts(flux: EdgeValues) -> EdgeValues:
    """The northward heat transport `-2 pi a^2 F` of a flux `F` on the bounds, PW."""
    return -2.0 * jnp.pi * EARTH_RADIUS**2 * flux / PETAWATT


def convergence_of(flux: EdgeValues, grid: Grid) -> Flux:
    """The heating by convergence of a flux on the bounds, per cell, W m-2."""
    return jnp.diff(flux) / (2.0 * grid.area_weights)


def _diffusive_flux(T: Temperature, params: AbstractParams, grid: Grid) -> EdgeValues:
    """`D cos(lat) dT/dlat` on every bound, with the scalar `D`."""
    return diffusive_flux(T, params.D, grid)


class DiffusiveTransport(AbstractTransport):
    """Down-gradient diffusion of temperature in latitude, with diffusivity `D`."""

    parameters = (D,)
    tridiagonal = True

    def flux(self, T: Temperature, params: AbstractParams, grid: Grid) -> EdgeValues:
        """Northward heat transport through each bound, PW."""
        return in_petawatts(_diffusive_flux(T, params, grid))

    def convergence(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        return convergence_of(_diffusive_flux(T, params, grid), grid)
