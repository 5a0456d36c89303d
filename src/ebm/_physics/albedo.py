r"""Temperature-dependent albedo with ice-albedo feedback.

Ice-free cells have albedo $\alpha_w = a_0 + a_2 P_2(\sin\phi)$, ice-covered cells
(temperature below $T_f$) have $a_i$ (Budyko 1969, North 1975). climlab's
`StepFunctionAlbedo` switches between the two with a step at $T_f$; ebm blends them
smoothly over a width $w$ (`ice_width`, K):

$$\alpha(T, \phi) = \alpha_w(\phi) + \left(a_i - \alpha_w(\phi)\right)
\tfrac{1}{2}\left(1 - \tanh\frac{T - T_f}{w}\right),$$

which tends to the step as $w \to 0$ and has a derivative everywhere.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Flux, Temperature
from .._grid import Grid
from .._params import Params
from .base import AbstractAlbedo
from .insolation import legendre_p2


def ice_fraction(T: Temperature, params: Params) -> Flux:
    """Fraction of each cell's albedo taken from ice: 1 well below `Tf`, 0 above."""
    return 0.5 * (1.0 - jnp.tanh((T - params.Tf) / params.ice_width))


class SmoothIceAlbedo(AbstractAlbedo):
    """`a0 + a2 P2(sin lat)` above `Tf`, `ai` below, blended over `ice_width`."""

    def __call__(self, T: Temperature, params: Params, grid: Grid) -> Flux:
        warm = params.a0 + params.a2 * legendre_p2(grid.sin_lat)
        return warm + (params.ai - warm) * ice_fraction(T, params)


class PrescribedAlbedo(AbstractAlbedo):
    """A fixed albedo profile: no ice-albedo feedback.

    Give it the albedo of a reference state, `ebm.SmoothIceAlbedo()(T, params, grid)`,
    to hold the ice where it is while other things change (e.g. climate sensitivity
    without the ice-albedo feedback).

    **Arguments:**

    - `albedo`: one value per cell, in [0, 1].
    """

    albedo: Float[Array, " lat"] = eqx.field(converter=jnp.asarray)

    def __check_init__(self):
        values = self.albedo
        if isinstance(values, jax.core.Tracer):
            return
        if values.ndim != 1 or not bool(jnp.all((values >= 0) & (values <= 1))):
            raise ValueError(
                "PrescribedAlbedo `albedo` must be a 1-d profile with values in "
                f"[0, 1], got {values}."
            )

    def __call__(self, T: Temperature, params: Params, grid: Grid) -> Flux:
        del T, params
        if self.albedo.shape != (grid.n_lat,):
            raise ValueError(
                f"PrescribedAlbedo has {self.albedo.shape[0]} values but the grid "
                f"has {grid.n_lat} cells."
            )
        return self.albedo
