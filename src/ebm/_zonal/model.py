r"""The energy-balance model as a vector field.

Zonal-mean surface temperature $T(\phi, t)$ (degC) obeys

$$C\,\frac{\partial T}{\partial t} = \underbrace{(1 - \alpha(T,\phi))\,Q(\phi)}_{
\text{absorbed solar}} - \underbrace{(A + B T)}_{\text{OLR}}
+ \underbrace{\frac{1}{\cos\phi}\frac{\partial}{\partial\phi}
\left(D\cos\phi\frac{\partial T}{\partial\phi}\right)}_{\text{transport}}
+ F,$$

with $C$ the surface heat capacity, J m-2 K-1 (by default that of a water column of
depth $h$ = `water_depth`, $C = \rho_w c_w h$; see `ebm.LandOceanHeatCapacity` for a
land/ocean mix), and $F$ a uniform radiative forcing (`forcing`, W m-2,
default 0). Each term is a swappable Module (see `ebm._zonal`);
the defaults reproduce climlab's `EBM`. The right-hand side is the *energy budget*
(W m-2); dividing by $C$ and multiplying by the seconds in a year gives the tendency
in K per year, which is what the vector field returns, since `ebm` measures time in
years.

With an annual-mean insolation (the default) the model is autonomous. With
`ebm.DailyInsolation` the insolation, and so the budget, depends on the time of year
$t$ (years from 1 January): the seasonal model.

Grid, boundary conditions and discretisation are those of `ebm.Grid` and
`ebm.DiffusiveTransport`: cells uniform in latitude, no heat flux through the poles.
"""

import functools
from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PyTree

from .._checks import known_value
from .._constants import SECONDS_PER_YEAR
from .._custom_types import EdgeValues, Flux, Scalar, Temperature
from .._model.parameters import AbstractParams, check_params, merge, params_class
from .._model.protocol import AbstractModel, RunOptions, Variable
from .._numerics.implicit import ImplicitAdjoint
from .albedo.subgrid import SubgridIceAlbedo
from .base import (
    AbstractAlbedo,
    AbstractForcing,
    AbstractHeatCapacity,
    AbstractInsolation,
    AbstractLongwave,
    AbstractTerm,
    AbstractTransport,
)
from .cycle import SeasonalCycle, seasonal_cycle
from .equilibrium import DEFAULT_ADJOINT, TRIDIAGONAL_ADJOINT, zonal_equilibrium
from .fitted import check_terms_use
from .forcing.uniform import UniformForcing
from .grid import Grid, geometry
from .heat_capacity.mixed_layer import MixedLayerHeatCapacity
from .insolation.p2 import P2Insolation, legendre_p2
from .longwave.linear import LinearLongwave
from .params import Params, declarations_of
from .run import Trajectory, model_terms, trajectory, zonal_run_options
from .transport.diffusive import DiffusiveTransport


def ice_edge(
    T: Float[Array, "*batch lat"],
    params: AbstractParams,
    grid: Grid,
    hemisphere: Literal["north", "south"] = "north",
) -> Float[Array, "*batch"]:
    """Latitude of one hemisphere's ice edge, degrees north.

    The first crossing of `Tf`, walking from the equator to the pole of
    `hemisphere`, linearly interpolated between the two cell centres that straddle
    it. The walk starts at the equator's cell on an odd grid, and at the first cell
    of the hemisphere on an even one (no cell is centred on the equator). For the
    north: 90 when no cell of the walk is below `Tf` (ice-free), 0 when its first
    cell already is: a snowball, or an ice belt at the equator under ice-free
    higher latitudes (this edge does not tell them apart; the profile does). For
    the south the same with the sign of latitude: -90 ice-free, 0 ice at the
    equator. NaN where the walk meets a NaN temperature. Piecewise smooth in `T`
    and the parameters, so it has a derivative wherever the edge stays between the
    same two cells.

    **Arguments:**

    - `T`: temperature on the cell centres, degC, shape `(..., n_lat)`: leading
        axes (times, members) give one edge each.
    - `params`: the parameters (for `Tf`).
    - `grid`: the grid of `T`.
    - `hemisphere`: `"north"` (default) or `"south"`.

    **Raises:**

    - `ValueError`: if `hemisphere` is not `"north"` or `"south"`, or `T`'s last
        axis is not `grid.n_lat` long.
    - `TypeError`: if `params` or `grid` is not ebm's.
    """
    if hemisphere not in ("north", "south"):
        raise ValueError(
            f"`hemisphere` must be 'north' or 'south', got {hemisphere!r}."
        )
    if not isinstance(grid, Grid):
        raise TypeError(f"`grid` must be an ebm.Grid, got {type(grid).__name__}.")
    if not isinstance(params, AbstractParams):
        name = type(params).__name__
        raise TypeError(f"`params` must be ebm parameters (ebm.Params), got {name}.")
    T = jnp.asarray(T, dtype=float)
    if T.ndim == 0 or T.shape[-1] != grid.n_lat:
        raise ValueError(
            f"`T` must have {grid.n_lat} values (one per cell of {grid}) along its "
            f"last axis, got shape {T.shape}."
        )
    if T.ndim > 1:
        return jax.vmap(lambda T: ice_edge(T, params, grid, hemisphere))(T)
    if hemisphere == "south":
        # The grid is symmetric: reversed, its latitudes are the negated ones
        # (`0.0 -` keeps a snowball's edge +0, not -0).
        return 0.0 - ice_edge(T[::-1], params, grid)
    lat = grid.lat
    # Index, not `lat >= 0`: the equator's centre is zero only to rounding.
    first_cell = grid.n_lat // 2
    walked = jnp.arange(grid.n_lat) >= first_cell
    # Walk poleward from `first_cell`; cells south of it are ignored.
    below = walked & (T < params.Tf)
    first = jnp.argmax(below)
    any_ice = jnp.any(below)
    equatorward = jnp.maximum(first - 1, 0)
    at_equator = first == first_cell
    T_warm, T_cold = T[equatorward], T[first]
    fraction = (T_warm - params.Tf) / jnp.where(T_warm == T_cold, 1.0, T_warm - T_cold)
    edge = lat[equatorward] + fraction * (lat[first] - lat[equatorward])
    edge = jnp.where(at_equator, 0.0, edge)
    edge = jnp.where(any_ice, edge, 90.0)
    # A NaN is neither above nor below `Tf`: the walk cannot pass it.
    unknown = jnp.any(walked & jnp.isnan(T))
    return jnp.where(unknown, jnp.nan, edge)


def present_day_profile(grid: Grid) -> Temperature:
    """climlab's start `12 - 40 P2(sin lat)`, degC: polar ice, warm tropics."""
    # On the host, from the grid's fixed geometry: no program to compile.
    return jnp.asarray(12.0 - 40.0 * legendre_p2(geometry(grid.n_lat)["sin_lat"]))


STARTS = ("present", "warm", "cold")


def initial_profile(
    start, params: Params, grid: Grid, name: str = "start"
) -> Temperature:
    """The starting profile for `start`, degC.

    - `"present"`: climlab's `12 - 40 P2(sin lat)`: warm tropics, polar ice.
    - `"warm"`: ice-free, from `Tf + 20` K at the poles to `Tf + 42.5` K at the
        equator.
    - `"cold"`: a snowball, from `Tf - 50` K at the poles to `Tf - 27.5` K at the
        equator.
    - an array of shape `(n_lat,)`: used as it is.

    **Raises:**

    - `ValueError`: for an unknown name, or an array of the wrong shape or with
        non-finite values.
    """
    if isinstance(start, str):
        if start == "present":
            return present_day_profile(grid)
        # On the host where `Tf` is known: no program to compile for the start.
        p2 = legendre_p2(geometry(grid.n_lat)["sin_lat"])
        Tf = known_value(params.Tf)
        Tf = params.Tf if Tf is None else np.asarray(Tf)
        if start == "warm":
            return jnp.asarray(Tf + 35.0 - 15.0 * p2)
        if start == "cold":
            return jnp.asarray(Tf - 35.0 - 15.0 * p2)
        raise ValueError(
            f"`{name}` must be one of {STARTS} or an array of shape ({grid.n_lat},), "
            f"got {start!r}."
        )
    return check_profile(name, start, grid)


def check_profile(name: str, T, grid: Grid) -> Temperature:
    """`T` as a float array, checked to have shape `(n_lat,)` and finite values."""
    try:
        T = jnp.asarray(T, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be one of {STARTS} or an array of shape ({grid.n_lat},) "
            f"(degC), got {T!r}."
        ) from None
    if T.shape != (grid.n_lat,):
        raise ValueError(
            f"`{name}` must have shape ({grid.n_lat},) to match `n_lat`, "
            f"got shape {T.shape}."
        )
    if not isinstance(T, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(T))):
        raise ValueError(f"`{name}` must be finite everywhere, got {T}.")
    return T


class EnergyBalanceModel(AbstractModel):
    """The diffusive energy-balance model, as a vector field for `diffrax.ODETerm`.

    Call it as `model(t, T, params)`: `t` in years (used only by a seasonal
    insolation), `T` the temperature on cell centres in degC, `params` an
    `ebm.Params`; it returns `dT/dt` in K per year. The diagnostic methods take
    `(T, params)`, and those that involve insolation also the time `t`.

    **Arguments:**

    - `grid`: the latitude grid (default `ebm.Grid()`, 60 cells).
    - `insolation`, `albedo`, `longwave`, `transport`, `heat_capacity`, `forcing`:
        the physical terms; each defaults to climlab's form (the forcing, ebm's own,
        to a uniform `forcing` of 0) and can be replaced by any final subclass of
        its abstract base.

    **Raises:**

    - `ValueError`: when `heat_capacity` does not give one value per cell of `grid`,
        or when two terms declare one parameter name differently.
    """

    grid: Grid = Grid()
    insolation: AbstractInsolation = P2Insolation()
    albedo: AbstractAlbedo = SubgridIceAlbedo()
    longwave: AbstractLongwave = LinearLongwave()
    transport: AbstractTransport = DiffusiveTransport()
    heat_capacity: AbstractHeatCapacity = MixedLayerHeatCapacity()
    forcing: AbstractForcing = UniformForcing()

    def __check_init__(self):
        parameters = self.Params  # raises for conflicting declarations
        try:
            shape = jax.eval_shape(self.heat_capacity, parameters(), self.grid).shape
        except (TypeError, ValueError):
            shape = "not broadcastable to the grid"
        if shape != (self.grid.n_lat,):
            raise ValueError(
                f"`heat_capacity` must give one value per cell, shape "
                f"({self.grid.n_lat},), got {shape}: is its land fraction on another "
                "grid?"
            )

    def terms(self) -> tuple[AbstractTerm, ...]:
        """The physical terms, in the order their parameters are collected."""
        return (
            self.longwave,
            self.transport,
            self.insolation,
            self.albedo,
            self.heat_capacity,
            self.forcing,
        )

    @property
    def Params(self) -> type[AbstractParams]:
        """The parameter container of this model: `ebm.Params`, plus the parameters
        that its terms declare and ebm's own do not (see `ebm.Parameter`). Build
        a model's parameters with `model.Params(D=0.3, ...)`."""
        return _params_of(tuple(type(term) for term in self.terms()))

    outputs: ClassVar[tuple[str, ...]] = (
        "T",
        "global_mean",
        "ice_edge",
        "ice_edge_south",
    )
    derived_names: ClassVar[tuple[str, ...]] = ("ecs", "snowball_S0")
    fitted_by_default: ClassVar[tuple[str, ...] | None] = ("D",)
    varied_by_default: ClassVar[tuple[str, ...] | None] = ("D", "B")

    @property
    def forcing_parameter(self) -> str | None:
        """`"forcing"`, the uniform forcing (W m-2), where the parameters have it:
        the zonal model has no forcing scenario, and its entry points no time."""
        return "forcing" if "forcing" in self.Params.field_names() else None

    def checked_params(self, params: AbstractParams) -> AbstractParams:
        """`params`, once they hold the zonal model's (`ebm.Params`, or parameters
        with them), with their ranges checked.

        **Raises:**

        - `TypeError`: for another model's parameters, naming the model to pass.
        - `ValueError`: for a value outside its range.
        """
        check_zonal_params(params, self)
        return check_params(params)

    def observable_shapes(self, params: AbstractParams, t) -> dict[str, tuple]:
        """`{output: shape}`: the temperature on cell centres, its global mean, the
        two ice edges, and the heat transport on cell edges."""
        del params, t
        n_lat = self.grid.n_lat
        return {
            "T": (n_lat,),
            "global_mean": (),
            "ice_edge": (),
            "ice_edge_south": (),
            "heat_transport": (n_lat + 1,),
        }

    def check_fitted(
        self, params: AbstractParams, names: tuple[str, ...], through: str, start
    ) -> None:
        """Refuse a fitted parameter that none of the terms uses in the solved
        equation (the energy budget through an equilibrium, the tendency through a
        run, at the profile `start_state(params, start)`), naming each term and
        the parameters it uses."""
        name = "start" if through == "equilibrium" else "T0"
        T = self.start_state(params, start, name)
        check_terms_use(self, params, names, through, T)

    def walked_model(self, params: AbstractParams, parameter: str, t, start):
        """Itself: `ebm.continuation` and `ebm.fold` walk the zonal model on its
        energy budget, with its tridiagonal Jacobian."""
        del parameter, t
        return params, self, start

    @property
    def switch_widths(self) -> tuple[str, ...]:
        """`("ice_width",)`, the width of the ice-albedo transition (where the
        parameters have it)."""
        return tuple(n for n in ("ice_width",) if n in self.Params.field_names())

    def __call__(self, t, T: Temperature, args: PyTree) -> Temperature:
        params = args
        return self.tendency(T, params, t)

    def tendency(self, T: Temperature, params: AbstractParams, t=None) -> Temperature:
        """`dT/dt` at time `t` (years; needed by a seasonal insolation), K per year."""
        budget = self.energy_budget(T, params, t)
        return budget * SECONDS_PER_YEAR / self.heat_capacity(params, self.grid)

    def transport_tendency(
        self, t, T: Temperature, params: AbstractParams
    ) -> Temperature:
        """The transport's part of `dT/dt`, K per year: the stiff, linear part that
        implicit-explicit solvers (`diffrax.KenCarp5`, `ebm.IMEXEuler`) treat
        implicitly. A diffrax vector field `(t, T, params)`."""
        del t
        heating = self.heat_convergence(T, params)
        return heating * SECONDS_PER_YEAR / self.heat_capacity(params, self.grid)

    def local_tendency(self, t, T: Temperature, params: AbstractParams) -> Temperature:
        """The rest of `dT/dt` (radiation and forcing, local in latitude), K per
        year: the part that implicit-explicit solvers treat explicitly. A diffrax
        vector field `(t, T, params)`."""
        budget = (
            self.absorbed_solar(T, params, t)
            - self.outgoing_longwave(T, params)
            + self.forcing(params, self.grid, t)
        )
        return budget * SECONDS_PER_YEAR / self.heat_capacity(params, self.grid)

    def energy_budget(self, T: Temperature, params: AbstractParams, t=None) -> Flux:
        """Net heating of each cell, W m-2: absorbed solar - OLR + transport + F."""
        return (
            self.absorbed_solar(T, params, t)
            - self.outgoing_longwave(T, params)
            + self.heat_convergence(T, params)
            + self.forcing(params, self.grid, t)
        )

    def absorbed_solar(self, T: Temperature, params: AbstractParams, t=None) -> Flux:
        """Absorbed solar radiation `(1 - albedo) Q` at time `t`, W m-2."""
        albedo = self.albedo(T, params, self.grid)
        return (1.0 - albedo) * self.insolation(params, self.grid, t)

    def outgoing_longwave(self, T: Temperature, params: AbstractParams) -> Flux:
        """Outgoing longwave radiation, W m-2."""
        return self.longwave(T, params, self.grid)

    def heat_convergence(self, T: Temperature, params: AbstractParams) -> Flux:
        """Heating by convergence of meridional heat transport, W m-2."""
        return self.transport.convergence(T, params, self.grid)

    def heat_transport(self, T: Temperature, params: AbstractParams) -> EdgeValues:
        """Northward heat transport through each cell bound, PW."""
        return self.transport.flux(T, params, self.grid)

    def ice_edge(
        self,
        T: Temperature,
        params: AbstractParams,
        hemisphere: Literal["north", "south"] = "north",
    ) -> Scalar:
        """One hemisphere's ice-edge latitude, degrees north (see `ebm.ice_edge`)."""
        return ice_edge(T, params, self.grid, hemisphere)

    def ice_edge_latitude(self, t, y: Temperature, params: AbstractParams) -> Scalar:
        """The northern ice edge of profile `y`, degrees north (`ice_edge`)."""
        del t
        return self.ice_edge(y, params)

    def global_mean(self, field: Float[Array, "*batch lat"]) -> Float[Array, "*batch"]:
        """Area-weighted global mean over the last axis."""
        return self.grid.global_mean(field)

    # --- the model protocol (`ebm.AbstractModel`): the state is `T` itself ------

    @property
    def variables(self) -> tuple[Variable, ...]:
        """The state: one variable, the surface temperature `T(lat)`, degC."""
        return (Variable("T", "degC", "surface temperature", ("lat",)),)

    def initial_state(self, params: AbstractParams) -> Temperature:
        """climlab's start, `ebm.present_day_profile`."""
        del params
        return present_day_profile(self.grid)

    start_names: ClassVar[tuple[str, ...]] = STARTS

    steps_itself: ClassVar[bool] = True
    """The fixed-step steppers advance the profile itself, with the split of
    `local_tendency` from `transport_tendency` (`"imex"`) and the tridiagonal
    Jacobian."""

    def start_state(
        self, params: AbstractParams, y: Temperature | str | None = None, name="start"
    ) -> Temperature:
        """`initial_profile(y, params, grid)`: a profile of shape `(n_lat,)` or one
        of the named starts `"present"`, `"warm"` and `"cold"` (`None` is refused:
        the entry points' default is `"present"`)."""
        return initial_profile(y, params, self.grid, name)

    def steady_state(
        self, params, t, start, *, solver, adjoint, max_steps, near_fold, throw
    ):
        """The stable equilibrium reached from `start` (a named start or a
        profile), an `ebm.Equilibrium`: the root of the energy budget found by
        `solver` (default `ebm.PseudoTransientContinuation()`), differentiated by
        `adjoint` (default `steady_adjoint()`); `t` is not used (the forcing is
        the `forcing` parameter)."""
        del t
        return zonal_equilibrium(
            self,
            params,
            start,
            solver=solver,
            adjoint=adjoint,
            max_steps=max_steps,
            near_fold=near_fold,
            throw=throw,
        )

    def run_terms(self, solver):
        """`diffrax.ODETerm(self)`, or for diffrax's implicit-explicit solvers the
        pair (local terms explicit, transport implicit) (`model_terms`)."""
        return model_terms(self, solver)

    def run_options(
        self, params, y0, years, *, t0, solver, stepsize_controller, max_steps, adjoint
    ) -> RunOptions:
        """The zonal model's run from time 0 (`zonal_run_options`): solvers by name
        (`"kvaerno5"`, the default, with tridiagonal stage solves; `"kencarp5"`;
        `"tsit5"`), PID control at `rtol = atol = 1e-8` with steps capped at a
        tenth of the relaxation time, the step budget that cap implies, and
        backsolve's horizon in units of the diffusive time.

        **Raises:**

        - `ValueError`: for a `t0` (the forcing is a parameter, and runs start at
            0), an unknown solver, or a run too long for the default budget.
        """
        if t0 is not None:
            raise ValueError(
                "`t0` starts a run of a model with a forcing scenario on its clock; "
                f"the zonal model's runs start at 0 (got t0={t0!r})."
            )
        return zonal_run_options(
            self,
            params,
            y0,
            years,
            solver=solver,
            stepsize_controller=stepsize_controller,
            max_steps=max_steps,
            adjoint=adjoint,
        )

    def run_result(self, params, end, saved, result, num_steps, throw) -> Trajectory:
        """An `ebm.Trajectory`: the profile, its global mean and ice edges."""
        return trajectory(self, params, end, saved, result, num_steps, throw)

    def periodic_result(
        self, params, t0, t, y0, ys, residual, step_error, result, num_steps
    ) -> SeasonalCycle:
        """An `ebm.SeasonalCycle`: the profiles, their means, ranges and ice
        edges (`t0` is 0: the zonal model's year starts on 1 January)."""
        del t0
        return seasonal_cycle(
            self, params, t, y0, ys, residual, step_error, result, num_steps
        )

    def steady_adjoint(self) -> ImplicitAdjoint:
        """The implicit adjoint of the equilibrium: a direct solve with the
        Jacobian's probed tridiagonal when every term is one of ebm's own (whose
        Jacobians are at most tridiagonal); matrix-free GMRES preconditioned by it
        for any other term."""
        # The same solution without compiling GMRES (about half the compile time
        # of the first gradient), which would be skipped at run time anyway.
        if has_tridiagonal_jacobian(self):
            return TRIDIAGONAL_ADJOINT
        return DEFAULT_ADJOINT

    def surface_temperature(self, y: Temperature) -> Temperature:
        return y

    def toa_imbalance(self, t, y: Temperature, params: AbstractParams) -> Scalar:
        """Global mean of absorbed solar - OLR + forcing, W m-2 (transport
        redistributes heat and adds none)."""
        net = (
            self.absorbed_solar(y, params, t)
            - self.outgoing_longwave(y, params)
            + self.forcing(params, self.grid, t)
        )
        return self.grid.global_mean(net)

    def heat_content(self, y: Temperature, params: AbstractParams) -> Scalar:
        """Global mean of `C T`, W yr m-2."""
        capacity = self.heat_capacity(params, self.grid) / SECONDS_PER_YEAR
        return self.grid.global_mean(capacity * y)


@functools.cache
def _params_of(terms: tuple[type, ...]) -> type[AbstractParams]:
    parameters, constraints = declarations_of(terms)
    # Refuses a term that declares one of ebm's names differently.
    merge((*Params.declarations, *parameters))
    known = set(Params.field_names())
    new = tuple(p for p in parameters if p.name not in known)
    added = tuple(c for c in constraints if c not in Params.constraints)
    if not new and not added:
        return Params
    # Named after the terms that add to `ebm.Params` (`GreyBodyLongwaveParams`), and
    # pickled as the terms that make it, since it is made at run time and so cannot
    # be found by name in a module.
    adding = [
        term.__name__
        for term in terms
        if any(p in new for p in term.parameters)
        or any(c in added for c in term.constraints)
    ]
    cls = params_class("".join(adding) + "Params", new, added, base=Params)
    cls.__qualname__ = cls.__name__
    cls.__reduce__ = functools.partialmethod(_reduce_params, terms)
    return cls


def _reduce_params(params: AbstractParams, terms: tuple[type, ...]):
    values = {name: getattr(params, name) for name in type(params).field_names()}
    return _rebuild_params, (terms, values)


def _rebuild_params(terms: tuple[type, ...], values: dict) -> AbstractParams:
    return _params_of(terms)(**values)


def has_tridiagonal_jacobian(model: EnergyBalanceModel) -> bool:
    """Whether the energy budget's Jacobian is tridiagonal by construction: the
    model is ebm's own class and each of its terms' classes declares itself
    `tridiagonal` (a subclass that does not say so again may couple anything), so
    the Jacobian's probed tridiagonal part is the whole of it."""
    terms = (model.insolation, model.albedo, model.longwave, model.transport)
    return type(model) is EnergyBalanceModel and all(
        type(term).__dict__.get("tridiagonal", False)
        for term in (*terms, model.forcing)
    )


def check_zonal_params(params, model: "EnergyBalanceModel") -> None:
    """Refuse the parameters of another model (a layer model's, say) given to the
    zonal one, naming the model they belong to, before any check of their values."""
    if not isinstance(params, AbstractParams):
        return
    missing = sorted(set(model.Params.field_names()) - set(type(params).field_names()))
    # (Parameters that lack only a term of one's own's are refused, with that
    # term's parameter named, where they are read.)
    if set(missing) & set(Params.field_names()):
        raise TypeError(
            f"`params` are {type(params).__name__}, not the zonal model's parameters "
            f"({model.Params.__name__}: they lack {', '.join(missing[:4])}"
            f"{', ...' if len(missing) > 4 else ''}): pass the model they belong to "
            "as `model=` (e.g. model=ebm.TwoLayerModel())."
        )
