r"""The ice-albedo blend averaged over each cell (the default albedo).

Where the ice edge crosses a grid cell, the temperature changes across that cell by
$\Delta T \approx |\partial_\phi T|\,\Delta\phi$ (2-3 K on a 3-degree grid), more than a
1 K transition width. Evaluated at cell centres (`SmoothIceAlbedo`, climlab's
choice), the albedo then jumps as the edge passes from cell to cell: the edge is
pinned to the grid, and between cells the branch of equilibria folds back on itself
once per cell (a staircase of grid-scale saddle-nodes, 18 folds in S0 on 90 cells
where the continuum model has 4). `SubgridIceAlbedo`, the default, removes the
pinning with the cell's *mean* ice fraction: temperature is reconstructed linearly
between the cell centre and its two faces (the face value is the mean of the two
neighbours; the poles have zero gradient), and the blend is averaged over that
profile exactly,

$$\overline{f}(a, b) = \frac{1}{b - a}\int_a^b \tfrac12\left(1 - \tanh\frac{T-T_f}{w}
\right)dT = \tfrac12\left(1 - w\,\frac{\log\cosh\frac{b - T_f}{w} -
\log\cosh\frac{a - T_f}{w}}{b - a}\right),$$

over each half-cell. As $w \to 0$ this is the fraction of the cell below $T_f$, which
moves continuously with the edge, so the sharp limit stays well posed. Each cell's
albedo depends on its neighbours, so the Jacobian is still tridiagonal. Both forms
converge to the same continuum model as the grid is refined.
"""

import jax.numpy as jnp

from ..._custom_types import Flux, Temperature
from ..._model.parameters import AbstractParams
from ..base import AbstractAlbedo
from ..grid import Grid
from .ice import ICE_ALBEDO, ICE_FREE_ALBEDO_RANGE, _mean_tanh, ice_free_albedo


class SubgridIceAlbedo(AbstractAlbedo):
    """The blend averaged over each cell's reconstructed temperature (the default).

    `ai` below `Tf`, `a0 + a2 P2(sin lat)` above, blended over `ice_width`, and
    averaged over the linear temperature profile between each cell's centre and
    faces, so the ice edge moves continuously through cells instead of jumping from
    centre to centre. See the module docstring.
    """

    parameters = ICE_ALBEDO
    constraints = ICE_FREE_ALBEDO_RANGE
    tridiagonal = True

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        # The poles have no heat flux, hence no gradient: the face there is the cell.
        faces = jnp.concatenate([T[:1], 0.5 * (T[1:] + T[:-1]), T[-1:]])
        # South face, centre, south face, centre, ..., north pole: 2 n + 1 points
        # bounding the 2 n half-cells.
        points = jnp.concatenate([jnp.stack([faces[:-1], T], axis=1).ravel(), T[-1:]])
        half_cells = _mean_tanh((points - params.Tf) / params.ice_width)
        ice = 0.5 * (1.0 - jnp.mean(half_cells.reshape(-1, 2), axis=1))
        warm = ice_free_albedo(params, grid)
        return warm + (params.ai - warm) * ice
