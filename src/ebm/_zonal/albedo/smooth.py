r"""The ice-albedo blend at cell centres (climlab's choice, with a smooth step).

$$\alpha_i = \alpha_w(\phi_i) + \left(a_i - \alpha_w(\phi_i)\right)
\tfrac{1}{2}\left(1 - \tanh\frac{T_i - T_f}{w}\right),$$

with the ice-free albedo $\alpha_w = a_0 + a_2 P_2(\sin\phi)$ (see
`ebm._zonal.albedo.ice`). Where the ice edge crosses a cell by more than the
transition width, the edge is pinned to the grid: see `ebm.SubgridIceAlbedo`.
"""

from ..._custom_types import Flux, Temperature
from ..._model.parameters import AbstractParams
from ..base import AbstractAlbedo
from ..grid import Grid
from .ice import ICE_ALBEDO, ICE_FREE_ALBEDO_RANGE, ice_fraction, ice_free_albedo


class SmoothIceAlbedo(AbstractAlbedo):
    """The blend evaluated at cell centres (climlab's choice, with a smooth step).

    The ice edge is pinned to the grid when `ice_width` is below the temperature
    change across a cell; see `ebm.SubgridIceAlbedo`.
    """

    parameters = ICE_ALBEDO
    constraints = ICE_FREE_ALBEDO_RANGE
    tridiagonal = True

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        warm = ice_free_albedo(params, grid)
        return warm + (params.ai - warm) * ice_fraction(T, params)
