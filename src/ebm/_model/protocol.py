r"""The model protocol: what every ebm model declares and provides.

A model is an `equinox.Module` vector field `model(t, y, params) -> dy/dt` over a
state `y` that is a PyTree the model declares: a dictionary of named arrays, each
described by an `ebm.Variable` (its units, long name and dimensions), so that the
results, files and plots of any model say what each array is. Time is in years,
temperatures in degC (or K for anomalies), fluxes in W m-2.

Besides the tendency a model gives

- its parameter container (`model.Params`, built from declared `ebm.Parameter`s);
- its start state (`initial_state`);
- its surface temperature (`surface_temperature`, the field `.T` of every result)
    and global mean;
- its energy budget: the net downward flux at the top of the atmosphere
    (`toa_imbalance`, W m-2, global mean) and the heat content of its state
    (`heat_content`, W yr m-2 per unit area of the globe), which it conserves:
    `d heat_content / dt = toa_imbalance`;
- the structure of its Jacobian (`jacobian`, a `lineax` operator), which the
    implicit solves use;
- its time scales (`time_scales`), which size steps from the model itself, never
    from one named parameter.

`ebm.EnergyBalanceModel` (one temperature per latitude) and the ocean-layer models
(`ebm.TwoLayerModel`, `ebm.NLayerModel`) implement it.
"""

import abc
import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
from jaxtyping import Array, Float, PyTree

from .._checks import known_value
from .._custom_types import Scalar
from .parameters import AbstractParams, check_params


@dataclasses.dataclass(frozen=True)
class Coordinate:
    """The coordinate of one of a variable's dimensions, as files write it.

    **Arguments:**

    - `name`: the dimension's name (`"x"`).
    - `values`: its values, a tuple of floats.
    - `units`, `long_name`: as for `ebm.Variable`.
    - `latitude`: the latitude of each value, degrees north, where the coordinate
        is not latitude itself (the sea-ice model's `x = sin(latitude)`): files
        write it beside the coordinate as `<name>_latitude`.
    """

    name: str
    values: tuple[float, ...]
    units: str
    long_name: str
    latitude: tuple[float, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Variable:
    """One variable of a model's state, as its results and files describe it.

    **Arguments:**

    - `name`: its key in the state dictionary (and its netCDF variable name).
    - `units`: UDUNITS units (`"degC"`).
    - `long_name`: what it is, in a few words.
    - `dims`: the names of its dimensions (`("lat",)`, `("layer",)`, or `()` for a
        scalar).
    - `coordinates`: an `ebm.Coordinate` for each dimension other than `lat`
        (whose grid files know) that has values of its own; a dimension without one
        is numbered (`layer`: 2, 3, ... below the surface).
    """

    name: str
    units: str
    long_name: str
    dims: tuple[str, ...] = ()
    coordinates: tuple[Coordinate, ...] = ()

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(
                f"Variable `name` must be a Python identifier, got {self.name!r}."
            )
        for coordinate in self.coordinates:
            if coordinate.name not in self.dims:
                raise ValueError(
                    f"Variable {self.name!r}: a coordinate must be of one of its "
                    f"dims {self.dims}, got {coordinate.name!r}."
                )


class AbstractModel(eqx.Module):
    """The protocol every ebm model implements (see the module docstring).

    Subclasses define `variables`, `Params`, `__call__`, `initial_state`,
    `surface_temperature`, `toa_imbalance` and `heat_content`; `jacobian` and
    `time_scales` have generic defaults (a dense Jacobian by automatic
    differentiation, and its eigenvalues).
    """

    @property
    @abc.abstractmethod
    def variables(self) -> tuple[Variable, ...]:
        """The declared variables of the state, in order."""

    @property
    @abc.abstractmethod
    def Params(self) -> type[AbstractParams]:
        """The model's parameter container."""

    @abc.abstractmethod
    def __call__(self, t, y: PyTree, params: AbstractParams) -> PyTree:
        """`dy/dt` at time `t` (years), per year."""

    @abc.abstractmethod
    def initial_state(self, params: AbstractParams) -> PyTree:
        """The state at the start of a run."""

    def start_state(
        self, params: AbstractParams, y: PyTree | str | None = None, name="start"
    ) -> PyTree:
        """The state a solve starts from: `y` as a float state of the model (its
        `initial_state(params)` where `y` is `None` or `"present"`, the entry
        points' default start), once it has the structure and shapes of
        `initial_state` and (where known) finite values; a model with more named
        starts (the zonal model's `"warm"` and `"cold"`) also takes those. Errors
        call the argument `name`.

        **Raises:**

        - `ValueError`: for a `y` of another structure or shape, not real, or not
            finite.
        """
        if y is None or (isinstance(y, str) and y == "present"):
            return self.initial_state(params)
        expected = jax.eval_shape(lambda: self.initial_state(params))
        if isinstance(y, str):
            raise ValueError(
                f"`{name}` must be a state of the model, shaped as "
                f"{jax.tree.map(lambda s: s.shape, expected)}, or 'present' (its "
                "initial state); the other branches by name ('warm', 'cold') are the "
                f"zonal model's, got {y!r}."
            )
        try:
            got = jax.eval_shape(lambda: jax.tree.map(jnp.asarray, y))
        except TypeError:
            got = None
        if (
            got is None
            or jax.tree.structure(got) != jax.tree.structure(expected)
            or any(
                a.shape != b.shape
                for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected))
            )
        ):
            described = repr(y) if got is None else jax.tree.map(lambda s: s.shape, got)
            raise ValueError(
                f"`{name}` must be a state of the model, shaped as "
                f"{jax.tree.map(lambda s: s.shape, expected)}, got {described}."
            )
        dtypes = [leaf.dtype for leaf in jax.tree.leaves(got)]
        if any(
            not jnp.issubdtype(d, jnp.number) or jnp.issubdtype(d, jnp.complexfloating)
            for d in dtypes
        ):
            raise ValueError(f"`{name}` must hold real numbers, got {y!r}.")
        for path, leaf in jax.tree_util.tree_leaves_with_path(y):
            value = known_value(leaf)
            if value is not None and not np.all(np.isfinite(np.asarray(value))):
                where = jax.tree_util.keystr(path)
                raise ValueError(
                    f"`{name}` must be finite, got a NaN or infinite value in "
                    f"`{name}{where}`."
                )
        return jax.tree.map(lambda x: jnp.asarray(x, dtype=float), y)

    @abc.abstractmethod
    def surface_temperature(self, y: PyTree) -> Array:
        """The surface temperature of state `y`, degC (or K of anomaly)."""

    @abc.abstractmethod
    def toa_imbalance(self, t, y: PyTree, params: AbstractParams) -> Scalar:
        """Global-mean net downward flux at the top of the atmosphere, W m-2."""

    @abc.abstractmethod
    def heat_content(self, y: PyTree, params: AbstractParams) -> Scalar:
        """Heat content of state `y` per unit area of the globe, W yr m-2 (relative
        to the zero state): its rate of change is `toa_imbalance`."""

    def global_mean(self, y: PyTree) -> Scalar:
        """The global-mean surface temperature of state `y`, degC."""
        return self.surface_temperature(y)

    def temperature(self, t, y: PyTree, params: AbstractParams) -> Array:
        """The surface temperature of state `y` at time `t`, degC:
        `surface_temperature(y)`, unless (as for `ebm.SeaIceModel`) it depends on
        the time and the parameters too."""
        del t, params
        return self.surface_temperature(y)

    def mean_temperature(self, t, y: PyTree, params: AbstractParams) -> Scalar:
        """The global-mean surface temperature of state `y` at time `t`, degC:
        `global_mean(y)`, unless (as for `ebm.SeaIceModel`) it depends on the time
        and the parameters too."""
        del t, params
        return self.global_mean(y)

    @property
    def year_start(self) -> str:
        """What time 0 of the model's year is, as results, files and figures say
        it: `"1 January"` (the default; the orbit's calendar), or the event the
        model's seasonal cycle is written from (`ebm.SeaIceModel`: the northern
        winter solstice)."""
        return "1 January"

    def ice_edge_latitude(self, t, y: PyTree, params: AbstractParams) -> Scalar | None:
        """The northern hemisphere's ice edge in state `y` at time `t`, degrees
        north (90 without ice, 0 under ice to the equator), or `None` for a model
        without sea ice (the default): what entry points read to say when a run
        loses or gains its ice cap."""
        del t, y, params
        return None

    @property
    def diagnostic_variables(self) -> tuple[Variable, ...]:
        """What files write beside the state, computed from it by `diagnostics`
        (names, units, long names, dimensions): none by default."""
        return ()

    def diagnostics(self, t, y: PyTree, params: AbstractParams) -> dict[str, Array]:
        """The values of `diagnostic_variables` in state `y` at time `t`."""
        del t, y, params
        return {}

    def check_exact(self) -> None:
        """Refuse `solver="exact"` where the model has no exact solution (the
        default: only a linear model under a piecewise-linear forcing has one).

        **Raises:**

        - `ValueError`: naming what is missing.
        """
        raise ValueError(
            "solver='exact' solves a global layer model (ebm.TwoLayerModel, "
            f"ebm.NLayerModel), which is linear; got {type(self).__name__}."
        )

    def exact_states(self, params: AbstractParams, y0: PyTree, t0, t1, save):
        """`(states at the times save, state at t1, intervals solved)`: the exact
        solution from `y0` at `t0` (`ebm.integrate(..., solver="exact")`), for a
        model whose `check_exact` passes; the saved states are batched along their
        first axis."""
        del params, y0, t0, t1, save
        raise NotImplementedError(f"{type(self).__name__} has no exact solution.")

    @property
    def switch_widths(self) -> tuple[str, ...]:
        """The parameters that set the widths of the model's sharp switches (none by
        default): named where a fixed-step run's error is too large, as one
        remedy."""
        return ()

    outputs: ClassVar[tuple[str, ...]] = ("T", "global_mean")
    """The outputs of the model's steady states and runs that `ebm.sensitivity`,
    `ebm.hessian`, `ebm.fit` and `ebm.posterior` take by name: the surface
    temperature and its global mean (a model with sea ice adds its ice edges)."""

    derived_names: ClassVar[tuple[str, ...]] = ("ecs", "tcr")
    """The quantities `ebm.posterior` derives from each draw by name (`ebm.ecs`
    and `ebm.tcr` under the model's own CO2 scenarios)."""

    fitted_by_default: ClassVar[tuple[str, ...] | None] = None
    """The parameters `ebm.fit` fits unless told, or `None` (the default): the
    caller names them."""

    varied_by_default: ClassVar[tuple[str, ...] | None] = None
    """The parameters `ebm.hessian` differentiates in unless told, or `None` (the
    default): all of them."""

    def check_fitted(
        self, params: AbstractParams, names: tuple[str, ...], through: str, start
    ) -> None:
        """Refuse, before `ebm.fit` takes a step, fitted parameters (`names`) that
        the solve through `through` (`"equilibrium"` or `"trajectory"`, from
        `start`: the equilibrium's `start` or the run's `T0`, a state or a name for
        `start_state`) cannot depend on, naming them. By default nothing: every
        model's fit also refuses, at its first step, a parameter whose gradient is
        zero to rounding; a model that knows which of its parts use which
        parameters (the zonal model's terms) says so before compiling the fit."""
        del params, names, through, start

    @property
    def forcing_parameter(self) -> str | None:
        """The parameter that is the model's radiative forcing, W m-2, for a model
        forced by a parameter (the zonal model's uniform `forcing`), or `None` (the
        default) for one forced by a scenario on its clock (its `forcing`), whose
        entry points take the time `t` at which it is held."""
        return None

    def checked_params(self, params: AbstractParams) -> AbstractParams:
        """`params`, once they are the model's (`self.Params`), with their ranges
        checked.

        **Raises:**

        - `TypeError`: for parameters that are not the model's.
        - `ValueError`: for a value outside its range.
        """
        if not isinstance(params, self.Params):
            raise TypeError(
                f"`params` must be the model's parameters, `model.Params` "
                f"({self.Params.__name__}), got {type(params).__name__}. Build them "
                f"with `model.Params(...)`."
            )
        return check_params(params)

    def observable_shapes(self, params: AbstractParams, t) -> dict[str, tuple]:
        """`{output: shape}` of one observation of each output of the model that
        `ebm.posterior` and `ebm.fit` compare with observations (the state at time
        `t` gives the shapes)."""
        surface = jax.eval_shape(
            lambda: self.temperature(t, self.initial_state(params), params)
        )
        return {"T": surface.shape, "global_mean": ()}

    start_names: ClassVar[tuple[str, ...]] = ("present",)
    """The start states `ebm.equilibrium` takes by name (`"present"`: the model's
    `initial_state`); a model whose steady state is a zonal model's takes that
    model's branches (`"warm"`, `"cold"`) too."""

    def steady_state(
        self,
        params: AbstractParams,
        t,
        start,
        *,
        solver,
        adjoint,
        max_steps: int,
        near_fold,
        throw: bool,
    ):
        """The model's steady state under the forcing of time `t` (`params`
        checked, `start` as given to `ebm.equilibrium`), for a model that finds it
        otherwise than by Newton's method on its whole state: the result
        `ebm.equilibrium` returns (the zonal model's `ebm.Equilibrium`, found by
        `solver` and differentiated by `adjoint`; an `ebm.SteadyState`, as
        `ebm.SteadyState.of` builds it, for `ebm.DeepOceanModel` from its
        surface's). `throw` and `near_fold` are the caller's: raise on failure,
        warn near a fold. `None` (the default): `ebm.equilibrium` runs Newton's
        method on the tendency from `start` (a state of the model), differentiated
        by `adjoint` (`ebm.equilibrium`'s default: `steady_adjoint()`)."""
        del params, t, start, solver, adjoint, max_steps, near_fold, throw
        return None

    def steady_adjoint(self) -> optx.AbstractAdjoint:
        """The implicit adjoint of the model's steady state unless told
        (`optimistix.ImplicitAdjoint()`: a dense solve on the model's small
        Jacobian; the zonal model's is a tridiagonal or preconditioned GMRES
        solve)."""
        return optx.ImplicitAdjoint()

    def walked_model(self, params: AbstractParams, parameter: str, t, start):
        """`(params, model, start)` of the zonal model whose branch and folds are
        this model's steady states under the forcing of time `t` (the zonal model
        itself; `ebm.DeepOceanModel`'s surface), or `None` (the default):
        `ebm.continuation` and `ebm.fold` walk the model's own tendency, held at
        time `t`, with a dense Jacobian (`params` already checked as the model's).

        **Raises:**

        - `ValueError`: for a model that has no branch to walk (the global layer
            models are linear).
        """
        del params, parameter, t, start
        return None

    def jacobian(
        self, t, y: PyTree, params: AbstractParams
    ) -> lx.AbstractLinearOperator:
        """The Jacobian of the tendency with respect to the state, per year."""
        return lx.JacobianLinearOperator(
            lambda y, params: self(t, y, params), y, params
        )

    def default_solver(self):
        """The diffrax solver `ebm.integrate` uses unless told: `diffrax.Tsit5()`
        (explicit); a stiff model returns an implicit one."""
        import diffrax

        return diffrax.Tsit5()

    def run_terms(self, solver):
        """The model as diffrax terms for `solver` (a `diffrax.AbstractSolver`):
        `diffrax.ODETerm(self)`; a model split for diffrax's implicit-explicit
        solvers returns the pair `MultiTerm(explicit, implicit)` for them (the
        zonal model's local terms and transport)."""
        import diffrax

        del solver
        return diffrax.ODETerm(self)

    def run_options(
        self,
        params: AbstractParams,
        y0: PyTree,
        years,
        *,
        t0,
        solver,
        stepsize_controller,
        max_steps,
        adjoint,
    ) -> "RunOptions | None":
        """The model's own choices for a run of `ebm.integrate` of `years` from
        `y0` (`params` and `y0` checked; `t0`, `solver`, `stepsize_controller` and
        `max_steps` as the user gave them, `None` where not; `adjoint` a diffrax
        adjoint), as `RunOptions`: the zonal model's solvers by name, controller
        capped at a tenth of its relaxation time, step budget and backsolve
        horizon. `None` (the default): the protocol's, from the model's
        `default_solver()` (`Kvaerno5` for a run stiff by `time_scales`), PID
        control at `rtol = atol = 1e-9` stepping onto its forcing's kinks, a budget
        from `time_scales`, backsolve's horizon from Gershgorin's bound on the
        Jacobian, and a start at `t0` (default: the start of its forcing)."""
        del params, y0, years, t0, solver, stepsize_controller, max_steps, adjoint
        return None

    def run_result(self, params: AbstractParams, end, saved, result, num_steps, throw):
        """The model's own result of a run (the zonal model's `ebm.Trajectory`),
        from `end = (t1, y1)`, `saved = (ts, ys)` (`(None, None)` where nothing
        was saved), the run's `result` code and `num_steps`; with `throw=False`,
        NaN unless the run succeeded. `None` (the default): `ebm.Run`."""
        del params, end, saved, result, num_steps, throw
        return None

    steps_itself: ClassVar[bool] = False
    """Whether the fixed-step steppers (`ebm.integrate_fixed`, the seasonal entry
    points) advance the model as it is: a state that is one vector, with the
    zonal model's interface (`tendency`, a banded Jacobian, and the split into
    `local_tendency` and `transport_tendency` that `"imex"` steps, its default
    there). `False` (the default): the state raveled into one vector
    (`FlatModel`), with the model's Jacobian dense, and `"imex"` refused."""

    def periodic_result(
        self, params: AbstractParams, t0, t, y0, ys, residual, step_error, result,
        num_steps,
    ):  # fmt: skip
        """The model's own result of a year of `ebm.periodic_equilibrium` or
        `ebm.seasonal_spinup` (the zonal model's `ebm.SeasonalCycle`), from the
        state `y0` the year starts from, the states `ys` at the times `t` of the
        year (from 0; `t0 + t` on the model's clock), the year's `residual`
        (`max |Phi(y0) - y0|`), its `step_error`, `result` code and `num_steps`.
        `None` (the default): `ebm.PeriodicState`."""
        del params, t0, t, y0, ys, residual, step_error, result, num_steps
        return None

    def default_stepper(self):
        """The fixed-step stepper (`ebm.AbstractStepper`) of `ebm.integrate_fixed`
        and the seasonal entry points unless told, or `None` for theirs
        (`"rosenbrock"`): a model whose state needs a step of its own (as
        `ebm.SeaIceModel`) returns it."""
        return None

    def shooting_tolerance(self) -> float:
        """The absolute tolerance, in the state's units, to which
        `ebm.periodic_equilibrium` solves for the state that a year returns to
        (default 1e-10, for states in K)."""
        return 1e-10

    def time_scales(self, params: AbstractParams, y: PyTree | None = None):
        """`(fastest, slowest)`: the shortest and longest relaxation times of the
        linearised tendency at `y` (default: the start state), years, for concrete
        parameters."""
        if y is None:
            y = self.initial_state(params)
        matrix = self.jacobian(0.0, y, params).as_matrix()
        # On the host: XLA has no nonsymmetric eigensolver off the CPU.
        rates = np.abs(np.linalg.eigvals(np.asarray(matrix)).real)
        return 1.0 / np.max(rates), 1.0 / np.min(rates)


class RunOptions(eqx.Module):
    """A model's choices for a run (see `AbstractModel.run_options`): the diffrax
    `solver`, `stepsize_controller` and step budget `max_steps`, the start time
    `t0` (years on the model's clock) and the start state `y0`."""

    solver: PyTree
    stepsize_controller: PyTree
    max_steps: int = eqx.field(static=True)
    t0: Scalar
    y0: PyTree


def state_arrays(model: AbstractModel, y: PyTree) -> dict[str, Float[Array, "..."]]:
    """`y` as `{name: array}` in the order of `model.variables` (a state that is one
    array, as the zonal model's `T`, is its one variable)."""
    if not isinstance(y, dict):
        (variable,) = model.variables
        return {variable.name: jnp.asarray(y)}
    return {v.name: jnp.asarray(y[v.name]) for v in model.variables}


def as_model_state(model, params, arrays: dict):
    """`{name: array}` (as `state_arrays` gives it, and every result's `state`) in
    the structure of the model's states: the inverse of `state_arrays`."""
    # Its structure only: no start state is computed (the deep ocean's is an
    # equilibrium solve).
    like = jax.eval_shape(lambda: model.initial_state(params))
    if isinstance(like, dict):
        return {name: arrays[name] for name in like}
    (value,) = arrays.values()
    return value


def state_units(variables: tuple[Variable, ...]) -> str | None:
    """The units that every variable of a state (`model.variables`) shares (those
    of a residual or a step error over the whole state), else `None`."""
    units = {v.units for v in variables}
    return units.pop() if len(units) == 1 else None
