r"""Outgoing longwave radiation, linear in surface temperature (Budyko 1969).

$$\mathrm{OLR} = A + B\,T,$$

in W m-2 with $T$ in degC; $A$ is the emission at 0 degC, $B$ the longwave feedback.
"""

from ..._custom_types import Flux, Temperature
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams
from ..base import AbstractLongwave
from ..grid import Grid


A = Parameter(
    "A",
    210.0,
    "W m-2",
    "outgoing longwave radiation at 0 degC",
    lower=0.0,
    upper=316.0,
    note="at most a black body's emission at 0 degC, 315.6 W m-2",
    transform="logit",
)
B = Parameter(
    "B",
    2.0,
    "W m-2 K-1",
    "longwave sensitivity to temperature",
    lower=0.0,
    lower_open=True,
    transform="log",
)


class LinearLongwave(AbstractLongwave):
    """`A + B T` (climlab's `AplusBT`)."""

    parameters = (A, B)
    tridiagonal = True

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        del grid
        return params.A + params.B * T
