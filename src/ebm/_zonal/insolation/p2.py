r"""Annual-mean insolation in the second-Legendre-polynomial approximation.

$$Q(\phi) = \frac{S_0}{4}\left(1 + s_2 P_2(\sin\phi)\right),
\qquad P_2(x) = \tfrac{1}{2}(3x^2 - 1),$$

in W m-2 at cell centres (climlab's `P2Insolation`; North 1975), the default. Its
global mean tends to $S_0/4$ as the grid is refined ($P_2$ has zero mean on the
sphere; on the 60-cell grid it is within 0.03 % of it); $s_2 = -0.48$ is the P2 fit
of today's orbit's annual mean.
"""

from ..._custom_types import Flux
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractInsolation
from ..grid import Grid


S0 = Parameter(
    "S0",
    1365.2,
    "W m-2",
    "solar constant",
    lower=0.0,
    upper=20000.0,
    note="Mercury's at perihelion is 14,500 W m-2",
    transform="logit",
)
S2 = Parameter(
    "s2",
    -0.48,
    "1",
    "second Legendre coefficient of insolation",
    lower=-1.0,
    upper=2.0,
    note="so that the insolation `1 + s2 P2` is nowhere negative",
    transform="logit",
)


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
