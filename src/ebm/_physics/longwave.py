r"""Outgoing longwave radiation, linear in surface temperature (Budyko 1969).

$$\mathrm{OLR} = A + B\,T,$$

in W m-2 with $T$ in degC; $A$ is the emission at 0 degC, $B$ the longwave feedback.
"""

from .._custom_types import Flux, Temperature
from .._grid import Grid
from .._params import Params
from .base import AbstractLongwave


class LinearLongwave(AbstractLongwave):
    """`A + B T` (climlab's `AplusBT`)."""

    def __call__(self, T: Temperature, params: Params, grid: Grid) -> Flux:
        del grid
        return params.A + params.B * T
