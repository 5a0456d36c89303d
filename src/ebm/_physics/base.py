"""Abstract bases of the physical terms.

Each term of the energy budget is a small Module with one method, taking the
temperature on cell centres, the `Params` and the `Grid`. Terms carry no physical
parameters of their own (those live in `Params`, so that one `jax.grad` reaches them
all); a user who wants another form (say an OLR with a cubic term) writes a final
subclass of the matching base and hands it to `EnergyBalanceModel`.
"""

import abc

import equinox as eqx

from .._custom_types import Flux, Temperature
from .._grid import Grid
from .._params import Params


class AbstractInsolation(eqx.Module):
    """Incoming solar radiation at the top of the atmosphere.

    Annual-mean forms ignore `t`; a seasonal form (`ebm.DailyInsolation`) needs it,
    and raises when it is not given (a model with it has no steady state: see
    `ebm.periodic_equilibrium`).
    """

    @abc.abstractmethod
    def __call__(self, params: Params, grid: Grid, t=None) -> Flux:
        """Insolation on cell centres at time `t` (years), W m-2."""


class AbstractAlbedo(eqx.Module):
    """Planetary albedo as a function of temperature and latitude."""

    @abc.abstractmethod
    def __call__(self, T: Temperature, params: Params, grid: Grid) -> Flux:
        """Albedo on cell centres, dimensionless in [0, 1]."""


class AbstractLongwave(eqx.Module):
    """Outgoing longwave radiation."""

    @abc.abstractmethod
    def __call__(self, T: Temperature, params: Params, grid: Grid) -> Flux:
        """Outgoing longwave radiation on cell centres, W m-2."""


class AbstractTransport(eqx.Module):
    """Meridional heat transport, as a convergence and as a flux through the bounds.

    The two methods must agree: `convergence` is minus the divergence of `flux`, so
    that its area-weighted global sum is zero.
    """

    @abc.abstractmethod
    def flux(self, T: Temperature, params: Params, grid: Grid):
        """Northward heat transport through each cell bound, PW (`" lat+1"`)."""

    @abc.abstractmethod
    def convergence(self, T: Temperature, params: Params, grid: Grid) -> Flux:
        """Heating by transport convergence on cell centres, W m-2."""
