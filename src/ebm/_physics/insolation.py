r"""Annual-mean insolation in the second-Legendre-polynomial approximation.

$$Q(\phi) = \frac{S_0}{4}\left(1 + s_2 P_2(\sin\phi)\right),
\qquad P_2(x) = \tfrac{1}{2}(3x^2 - 1),$$

in W m-2, evaluated at cell centres (North 1975; climlab's `P2Insolation`). Its
global mean tends to $S_0/4$ as the grid is refined ($P_2$ has zero mean on the
sphere); on the 60-cell grid it is within 0.03 % of it.
"""

from .._custom_types import Flux
from .._grid import Grid
from .._params import Params
from .base import AbstractInsolation


def legendre_p2(x):
    """The second Legendre polynomial, `(3 x^2 - 1) / 2`."""
    return 0.5 * (3.0 * x**2 - 1.0)


class P2Insolation(AbstractInsolation):
    """`S0 / 4 (1 + s2 P2(sin lat))` at cell centres."""

    def __call__(self, params: Params, grid: Grid) -> Flux:
        return params.S0 / 4.0 * (1.0 + params.s2 * legendre_p2(grid.sin_lat))
