"""Abstract bases of the physical terms.

Each term of the energy budget is a small Module with one method, taking the
temperature on cell centres, the parameters and the `Grid`. A term declares the
physical parameters it reads from `params` in its class attribute `parameters` (a
tuple of `ebm.Parameter`; ranges that tie several of them together in
`constraints`). The model collects them into its parameter container
(`ebm.EnergyBalanceModel.Params`), so that one `jax.grad` reaches every one. A user
who wants another form (say an OLR with a cubic term) writes a final subclass of the
matching base, declares its coefficients there, and hands it to
`EnergyBalanceModel`: see `examples/custom_term.py`.

Other properties of a term, fixed when it is built (a land fraction, a prescribed
albedo profile), are its own fields.
"""

import abc
from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Float

from .._custom_types import Flux, Temperature
from .._model.declarations import Constraint, Parameter
from .._model.parameters import AbstractParams
from .grid import Grid


class AbstractTerm(eqx.Module):
    """A term of the energy budget, with the parameters it declares."""

    parameters: ClassVar[tuple[Parameter, ...]] = ()
    """The parameters this term reads from `params`."""
    constraints: ClassVar[tuple[Constraint, ...]] = ()
    """Ranges that tie several of them together."""
    tridiagonal: ClassVar[bool] = False
    """Whether the term couples each cell to at most its two neighbours, so that its
    Jacobian is tridiagonal (the solvers then probe it exactly with three
    evaluations). Local terms and diffusion are; a term that couples distant cells
    (a global mean, say) must leave this `False`."""


class AbstractInsolation(AbstractTerm):
    """Incoming solar radiation at the top of the atmosphere.

    Annual-mean forms ignore `t`; a seasonal form (`ebm.DailyInsolation`) needs it,
    and raises when it is not given (a model with it has no steady state: see
    `ebm.periodic_equilibrium`).
    """

    seasonal: ClassVar[bool] = False
    """Whether the insolation changes through the year (and needs `t`)."""

    @abc.abstractmethod
    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        """Insolation on cell centres at time `t` (years), W m-2."""


class AbstractAlbedo(AbstractTerm):
    """Planetary albedo as a function of temperature and latitude."""

    @abc.abstractmethod
    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        """Albedo on cell centres, dimensionless in [0, 1]."""


class AbstractLongwave(AbstractTerm):
    """Outgoing longwave radiation."""

    @abc.abstractmethod
    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        """Outgoing longwave radiation on cell centres, W m-2."""


class AbstractTransport(AbstractTerm):
    """Meridional heat transport, as a convergence and as a flux through the bounds.

    The two methods must agree: `convergence` is minus the divergence of `flux`, so
    that its area-weighted global sum is zero.
    """

    @abc.abstractmethod
    def flux(self, T: Temperature, params: AbstractParams, grid: Grid):
        """Northward heat transport through each cell bound, PW (`" lat+1"`)."""

    @abc.abstractmethod
    def convergence(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        """Heating by transport convergence on cell centres, W m-2."""


class AbstractForcing(AbstractTerm):
    """A radiative forcing added to every cell's energy budget."""

    @abc.abstractmethod
    def __call__(self, params: AbstractParams, grid: Grid, t=None) -> Flux:
        """The forcing on cell centres at time `t` (years), W m-2."""


class AbstractHeatCapacity(AbstractTerm):
    """Heat capacity of each cell's surface layer."""

    @abc.abstractmethod
    def __call__(self, params: AbstractParams, grid: Grid) -> Float[Array, " lat"]:
        """Heat capacity on cell centres, J m-2 K-1."""
