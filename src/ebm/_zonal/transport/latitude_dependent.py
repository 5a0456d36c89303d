r"""Meridional heat transport by diffusion, with a diffusivity that varies in latitude.

$$\mathcal{D}(T) = \frac{1}{\cos\phi}\frac{\partial}{\partial\phi}
\left(D(\phi)\cos\phi\,\frac{\partial T}{\partial\phi}\right),$$

in W m-2, with $D(\phi)$ in W m-2 K-1 given on every cell bound $\phi_{i+1/2}$ (the
parameter `D_bounds`, `grid.n_lat + 1` values from the South Pole to the North
Pole; a scalar means the same value everywhere, which is `ebm.DiffusiveTransport`
with `D`). climlab's `MeridionalHeatDiffusion` takes its `D` the same way, an array
on the bounds.

The discretisation is `ebm.DiffusiveTransport`'s, conservative finite volumes: the
flux through bound $i + 1/2$ is

$$F_{i+1/2} = D_{i+1/2}\cos\phi_{i+1/2}\,\frac{T_{i+1} - T_i}{\Delta\phi},$$

zero at the poles whatever $D$ is there, and the convergence in cell $i$ is
$(F_{i+1/2} - F_{i-1/2}) / \Delta(\sin\phi)_i$. So the two polar values of
`D_bounds` never enter, and where $T_{i+1} = T_i$ (the equator of a symmetric
climate) $D_{i+1/2}$ does not either: a profile fitted to temperatures is
determined only where the temperature gradient is not small.
"""

from ..._custom_types import EdgeValues, Flux, Temperature
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractTransport
from ..grid import Grid
from .diffusive import convergence_of, diffusive_flux, in_petawatts


D_BOUNDS = Parameter(
    "D_bounds",
    0.555,
    "W m-2 K-1",
    "meridional heat diffusivity on each cell bound",
    lower=0.0,
    transform="log",
    profile="bounds",
)


def _flux(T: Temperature, params: AbstractParams, grid: Grid) -> EdgeValues:
    """`D cos(lat) dT/dlat` on every bound, W m-2, zero at the poles."""
    return diffusive_flux(T, params.on_grid("D_bounds", grid), grid)


class LatitudeDiffusiveTransport(AbstractTransport):
    """Down-gradient diffusion of temperature with a diffusivity `D_bounds` given on
    every cell bound."""

    parameters = (D_BOUNDS,)
    tridiagonal = True

    def flux(self, T: Temperature, params: AbstractParams, grid: Grid) -> EdgeValues:
        """Northward heat transport through each bound, PW."""
        return in_petawatts(_flux(T, params, grid))

    def convergence(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        return convergence_of(_flux(T, params, grid), grid)
