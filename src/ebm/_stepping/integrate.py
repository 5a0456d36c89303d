r"""Time integration of the energy-balance model with diffrax, under a chosen adjoint.

The model is stiff: the fastest diffusive mode on a grid of spacing $\Delta\phi$
decays at a rate near $4D / (C\,\Delta\phi^2)$ (about one day at 60 cells, three
minutes at 1000), while the climate adjusts over years. An explicit solver's step
is bound by the fast rate and shrinks with the square of the cell size; an L-stable
implicit solver's step is bound only by accuracy. So the default is diffrax's
`Kvaerno5` (a 5th-order L-stable ESDIRK) with a PID step-size controller
(`rtol = atol = 1e-8`), its stage equations solved by a chord iteration whose linear
solves use the Jacobian's tridiagonal part, probed matrix-free
(`ebm.ProbedTridiagonal`): O(n_lat) work and memory per step on the forward pass.
(Reverse-mode gradients through the stages use diffrax's own implicit adjoint,
which forms the stage Jacobian densely: fine up to a few thousand cells.)

Other solvers by name (`solver=`): `"kencarp5"`, diffrax's implicit-explicit
`KenCarp5`, which solves only the transport implicitly (the same tridiagonal
solves) and the radiation explicitly: its steps are then bound by the explicit
stability of the ice-albedo feedback near the ice edge (thousands of steps a year,
where Kvaerno5 takes a few hundred; `benchmarks/high_resolution.py`); and
`"tsit5"`, explicit, the cheapest at 60 cells but bound by the diffusive limit.

How gradients are computed is the `adjoint` (diffrax's term):

- `"recursive"`: `RecursiveCheckpointAdjoint`; `grad`, `vjp`; `4 log2(max_steps)`
    checkpoints (diffrax's own default is O(sqrt(max_steps))), so memory grows like
    the logarithm of the run's length.
- `"direct"`: `DirectAdjoint()`; `grad`, `jvp`, `jacfwd`; more memory.
- `"forward"`: `ForwardMode()`; `jvp`, `jacfwd`; O(1) memory.
- `"backsolve"`: `BacksolveAdjoint(solver=Kvaerno5())`; `grad`, short runs only;
    O(1) memory.
- `"interpolating"`: `ebm.InterpolatingAdjoint()`, the continuous adjoint equation
    solved backwards against the forward state re-solved from checkpoints; `grad`,
    any length; memory O(sqrt(max_steps)) states.

`BacksolveAdjoint` rebuilds the state by integrating the model backwards in time,
which for a diffusive model is the ill-posed backward heat equation: rounding errors
in the fast modes grow like $e^{t/\tau}$, $\tau = C\,\Delta\phi^2/(4D)$. Its
gradients are accurate to 1e-4 only for runs shorter than a limit measured in units
of $\tau$ (`BACKSOLVE_HORIZON`, see `benchmarks/backsolve_horizon.py`); `integrate`
refuses longer runs under it. `"interpolating"` solves the same continuous adjoint
equation, which is diffusive backwards in time and so well-posed, against the state
re-solved forwards from checkpoints: the continuous adjoint for runs of any length.
"""

import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._checks import check_count, known_value, refuse_if
from .._constants import SECONDS_PER_YEAR
from .._custom_types import Scalar, Temperature
from .._model.grid import Grid
from .._model.model import EnergyBalanceModel
from .._model.parameters import check_params
from .._model.params import Params
from .._model.start import initial_profile, resolve_model
from .._numerics.chord import tridiagonal_root_finder
from .._numerics.tridiagonal import probe_tridiagonal
from .._progress import progress_meter
from .._results import (
    RESULTS,
    nan_unless_successful,
    raise_if_failed,
    with_result_names,
)
from .checkpoints import resolve_checkpoint, spellings
from .interpolating import InterpolatingAdjoint
from .steppers import resolve_stepper
from .steppers.checks import (
    accumulate_error,
    check_stability,
    fixed_step_result,
    resolve_error_tolerance,
    stability_limit,
    step_with_error,
)


ADJOINTS = {
    "recursive": diffrax.RecursiveCheckpointAdjoint,
    "direct": diffrax.DirectAdjoint,
    "forward": diffrax.ForwardMode,
    # The backward pass solves for the augmented state (T, adjoints, parameters), a
    # pytree, so it gets diffrax's dense stage solves rather than the tridiagonal ones.
    "backsolve": lambda: diffrax.BacksolveAdjoint(solver=diffrax.Kvaerno5()),
    "interpolating": InterpolatingAdjoint,
}

# Longest run, in units of the fastest diffusive time scale C dlat^2 / (4 D), over
# which BacksolveAdjoint's gradient stays within 1e-4 of the others on the default
# model. Measured by benchmarks/backsolve_horizon.py; see docs/adjoints.md,
# "Backsolve's horizon".
BACKSOLVE_HORIZON = 20.0


SOLVERS = {
    "kvaerno5": lambda: diffrax.Kvaerno5(root_finder=tridiagonal_root_finder()),
    "kencarp5": lambda: diffrax.KenCarp5(root_finder=tridiagonal_root_finder()),
    "tsit5": diffrax.Tsit5,
}
"""Solvers by name: the default implicit `Kvaerno5`, the implicit-explicit
`KenCarp5` (transport implicit, the rest explicit), and the explicit `Tsit5`."""

# diffrax's implicit-explicit Runge-Kutta methods: they take the pair of terms
# (explicit, implicit) as a `MultiTerm`.
_IMEX = (diffrax.KenCarp3, diffrax.KenCarp4, diffrax.KenCarp5, diffrax.Sil3)


def default_solver() -> diffrax.AbstractSolver:
    """`Kvaerno5` whose stage solves use the probed tridiagonal Jacobian."""
    return SOLVERS["kvaerno5"]()


def resolve_solver(solver) -> diffrax.AbstractSolver:
    """A diffrax solver from `None` (the default), a name in `SOLVERS`, or itself."""
    if solver is None:
        return default_solver()
    if isinstance(solver, diffrax.AbstractSolver):
        return solver
    if isinstance(solver, str) and solver in SOLVERS:
        return SOLVERS[solver]()
    raise ValueError(
        f"`solver` must be one of {tuple(SOLVERS)} or a diffrax.AbstractSolver "
        f"instance, got {solver!r}."
    )


def model_terms(model: EnergyBalanceModel, solver: diffrax.AbstractSolver):
    """The model as diffrax terms for `solver`: one `ODETerm`, or for an
    implicit-explicit solver the pair (local terms explicit, transport implicit)."""
    if isinstance(solver, _IMEX):
        return diffrax.MultiTerm(
            diffrax.ODETerm(model.local_tendency),
            diffrax.ODETerm(model.transport_tendency),
        )
    return diffrax.ODETerm(model)


# The step cap, as a fraction of the relaxation time C / B (0.66 years by default).
MAX_STEP_FRACTION = 0.1

# The smallest radiative damping `time_scales` counts with, W m-2 K-1: a longwave
# term whose emission does not grow with temperature (or falls) has no relaxation
# time of its own, and the step cap stays finite (0.13 millennia for 10 m of water).
SMALLEST_DAMPING = 1e-3


class TimeScales(eqx.Module):
    """A model's own time scales at a state, years (see `time_scales`)."""

    relaxation: Scalar
    diffusion: Scalar


@eqx.filter_jit
def time_scales(params: Params, model: EnergyBalanceModel, T: Temperature):
    """The model's fastest radiative and transport time scales at `T`, years.

    From the Jacobians of its terms at `T` (each probed as a tridiagonal matrix from
    three Jacobian-vector products), never from a particular parameter:

    - `relaxation`: `min_i C_i / (d OLR_i / d T_i)`, the fastest relaxation of a
        cell by its own emission (`C / B` for `ebm.LinearLongwave`,
        `C / (4 tau epsilon sigma T^3)` at the warmest cell for
        `ebm.GreyBodyLongwave`), with the damping at least `SMALLEST_DAMPING`;
    - `diffusion`: `min_i C_i / (|J_ii| + |J_i,i-1| + |J_i,i+1|)` for the
        transport's Jacobian `J`, W m-2 K-1: Gershgorin's bound on its fastest
        mode (`C dlat^2 / (4 D cos(dlat / 2))` for a uniform diffusivity `D`).
    """
    heat_capacity = model.heat_capacity(params, model.grid)

    def jacobian(flux):
        _, linear = jax.linearize(flux, T)
        return probe_tridiagonal(linear, T.shape[0], T.dtype)

    emission = jacobian(lambda T: model.outgoing_longwave(T, params))
    damping = jnp.maximum(emission.diagonal, SMALLEST_DAMPING)
    transport = jacobian(lambda T: model.heat_convergence(T, params))
    zero = jnp.zeros(1, T.dtype)
    rate = (
        jnp.abs(transport.diagonal)
        + jnp.abs(jnp.concatenate([zero, transport.lower]))
        + jnp.abs(jnp.concatenate([transport.upper, zero]))
    )
    return TimeScales(
        relaxation=jnp.min(heat_capacity / damping) / SECONDS_PER_YEAR,
        diffusion=jnp.min(heat_capacity / rate) / SECONDS_PER_YEAR,
    )


def start_time_scales(params: Params, model: EnergyBalanceModel, T0) -> TimeScales:
    """`time_scales` at the start of a run, not differentiated: computed on the
    values where they are known (eagerly, and under eager `grad`), so that a first
    call compiles one small program and the step count is known; else traced into
    the caller's program."""
    values = (params, model, T0)
    known = [known_value(leaf) for leaf in jax.tree.leaves(values)]
    if any(leaf is None for leaf in known):
        params, model, T0 = jax.lax.stop_gradient(values)
    else:
        params, model, T0 = jax.tree.unflatten(jax.tree.structure(values), known)
    return time_scales(params, model, T0)


def default_controller(relaxation) -> diffrax.PIDController:
    """PID control at `rtol = atol = 1e-8`, steps at most a tenth of `relaxation`,
    the model's fastest radiative relaxation time (`time_scales`; `C / B` for the
    linear longwave), years.

    The cap is for derivatives. The controller sees only the state's error, so near
    a steady state it takes steps of years; but the tangent of the state with respect
    to a parameter still relaxes on the time scale `C / B`, and a gradient through
    such steps is the exact derivative of an inaccurate discrete map (1% off over a
    2-year run from equilibrium). A tenth of `C / B` keeps gradients within 1e-9 of
    finite differences (tests/test_integrate.py).
    """
    return diffrax.PIDController(
        rtol=1e-8,
        atol=1e-8,
        dtmax=jax.lax.stop_gradient(MAX_STEP_FRACTION * relaxation),
    )


# The largest step budget `integrate` sets by itself: a run that needs more is
# refused up front (a `max_steps` given explicitly is used as it is).
MAX_DEFAULT_STEPS = 2**24
# The budget where the run's length in steps is not known while tracing (parameters
# traced under `jit`): a bound, not an allocation, as the checkpointed loop stores
# log2(max_steps) states whatever the bound.
TRACED_MAX_STEPS = 2**22


def needed_steps(years, relaxation) -> int | None:
    """Steps of the default controller's cap that `years` takes (`relaxation` as
    `time_scales` gives it), or `None` where a value is not known while tracing
    (inside `jit`)."""
    years, relaxation = known_value(years), known_value(relaxation)
    if years is None or relaxation is None:
        return None
    return math.ceil(float(years) / (MAX_STEP_FRACTION * float(relaxation)))


def _default_max_steps(years, relaxation) -> int:
    """Twice the capped steps `years` takes, as a power of two >= 16384 (so that runs
    of similar length share one compilation); `TRACED_MAX_STEPS` inside `jit`."""
    needed = needed_steps(years, relaxation)
    if needed is None:
        return TRACED_MAX_STEPS
    budget = max(16384, 2 ** math.ceil(math.log2(2 * needed)))
    if budget > MAX_DEFAULT_STEPS:
        cap = float(years) / needed
        raise ValueError(
            f"`years` = {float(years):g} needs about {needed:.3g} steps: the default "
            "controller caps the step at a tenth of the model's fastest relaxation "
            "time (C / B for the linear longwave), "
            f"here {cap:.3g} years, so that derivatives stay accurate (ebm integrates "
            "a few thousand such steps a second at 60 cells: "
            f"about {needed / 5e3 / 3600:.2g} hours). For the steady state use "
            "ebm.equilibrium (its gradient is one linear solve); for a forward run "
            "only, pass stepsize_controller=diffrax.PIDController(rtol=1e-8, "
            "atol=1e-8) without the cap; or pass max_steps to insist."
        )
    return budget


# Checkpoints per doubling of the step budget for the default recursive adjoint.
CHECKPOINTS_PER_DOUBLING = 4


def _with_checkpoints(adjoint, max_steps: int) -> diffrax.AbstractAdjoint:
    """The recursive adjoint with `4 log2(max_steps)` checkpoints where none are set.

    Left to itself, diffrax's online checkpointing (Stumm and Walther 2010) stores
    O(sqrt(max_steps)) states; a number that grows like the logarithm keeps the
    reverse pass's memory O(log(years)), at the cost of a few more recomputations
    of the forward run, which the backward steps' cost dominates here anyway.
    """
    if (
        isinstance(adjoint, diffrax.RecursiveCheckpointAdjoint)
        and adjoint.checkpoints is None
    ):
        checkpoints = CHECKPOINTS_PER_DOUBLING * max(1, math.ceil(math.log2(max_steps)))
        return diffrax.RecursiveCheckpointAdjoint(checkpoints=checkpoints)
    return adjoint


def resolve_adjoint(adjoint) -> diffrax.AbstractAdjoint:
    """A diffrax adjoint from a name in `ADJOINTS` or an instance."""
    if isinstance(adjoint, diffrax.AbstractAdjoint):
        return adjoint
    if isinstance(adjoint, str) and adjoint in ADJOINTS:
        return ADJOINTS[adjoint]()
    if (
        isinstance(adjoint, tuple)
        and len(adjoint) == 2
        and adjoint[0] == "recursive"
        and isinstance(adjoint[1], int)
        and adjoint[1] >= 1
    ):
        # The same spelling as integrate_fixed's checkpoint=("recursive", c).
        return diffrax.RecursiveCheckpointAdjoint(checkpoints=adjoint[1])
    raise ValueError(
        f"`adjoint` must be one of {tuple(ADJOINTS)}, ('recursive', checkpoints) "
        f"or a diffrax.AbstractAdjoint instance, got {adjoint!r}."
    )


def _check_positive(name: str, value) -> None:
    """`value` must be a positive, finite number (checked when it is not traced)."""
    if isinstance(value, bool) or isinstance(value, jax.core.Tracer):
        valid = not isinstance(value, bool)
    else:
        number = np.asarray(value)
        valid = (
            number.shape == ()
            and np.issubdtype(number.dtype, np.number)
            and bool(0 < number < np.inf)
        )
    if not valid:
        raise ValueError(
            f"`{name}` must be positive and finite (years), got {value!r}."
        )


class Trajectory(eqx.Module):
    """The result of `ebm.integrate`.

    **Attributes:**

    - `T`: final temperature on cell centres, degC.
    - `lat`: cell centres, degrees north.
    - `global_mean`: final area-weighted mean temperature, degC.
    - `ice_edge`, `ice_edge_south`: final ice edge of each hemisphere, degrees
        north.
    - `ts`: saved times, years (`None` unless `saveat` asks for them).
    - `Ts`: saved profiles, shape `(time, lat)` (`None` unless asked for).
    - `result`: an `ebm.RESULTS` (diffrax's codes, and `nonfinite_state` for a
        fixed-step run that blew up); `RESULTS.successful` when it finished.
    - `num_steps`: accepted plus rejected steps taken.
    """

    T: Temperature
    lat: Float[Array, " lat"]
    global_mean: Scalar
    ice_edge: Scalar
    ice_edge_south: Scalar
    ts: Float[Array, " time"] | None
    Ts: Float[Array, "time lat"] | None
    result: RESULTS
    num_steps: Int[Array, ""]

    def __repr__(self) -> str:
        return with_result_names(self)


_FORWARD_MODE_HINT = (
    "adjoint={name!r} supports reverse mode (jax.grad, jax.vjp) only; for forward "
    "mode (jax.jvp, jax.jacfwd) use integrate(..., adjoint='forward') (O(1) memory) "
    "or adjoint='direct'."
)


def _is_forward_mode_error(error: TypeError) -> bool:
    """Whether JAX refused to apply forward mode to a reverse-only custom_vjp."""
    return "jvp" in str(error) or "forward-mode" in str(error)


def integrate(
    params: Params,
    *,
    years,
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
    T0=None,
    adjoint="recursive",
    solver: diffrax.AbstractSolver | None = None,
    saveat: diffrax.SaveAt | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    dt0=None,
    max_steps: int | None = None,
    throw: bool = True,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> Trajectory:
    """Integrate the model for `years` from `T0`.

    **Arguments:**

    - `params`: the physical parameters.
    - `years`: length of the run, years (> 0).
    - `grid`, `model`: as for `ebm.equilibrium` (give one at most).
    - `T0`: initial profile, degC, shape `(n_lat,)`, or one of `"present"` (default;
        the same start as `ebm.equilibrium`), `"warm"`, `"cold"`.
    - `adjoint`: `"recursive"` (default), `("recursive", checkpoints)`,
        `"direct"`, `"forward"`, `"backsolve"`, `"interpolating"`
        (`ebm.InterpolatingAdjoint()`), or any `diffrax.AbstractAdjoint`
        instance (e.g. `diffrax.RecursiveCheckpointAdjoint(checkpoints=64)`). A
        `RecursiveCheckpointAdjoint` without `checkpoints` (the default) gets
        `4 log2(max_steps)` of them.
    - `solver`: `"kvaerno5"` (default: `Kvaerno5` with matrix-free stage solves;
        see the module docstring for why an implicit solver), `"kencarp5"`
        (`KenCarp5`, implicit in the transport only), `"tsit5"` (explicit; its
        steps are bound by the diffusive stability limit), or any diffrax solver;
        diffrax's implicit-explicit solvers (`KenCarp3/4/5`, `Sil3`) get the
        model split into its local and transport parts.
    - `saveat`: a `diffrax.SaveAt` (default: the final state only). Saved times fill
        `ts` and `Ts`.
    - `stepsize_controller`: default `diffrax.PIDController(rtol=1e-8, atol=1e-8)`
        with steps capped at a tenth of the relaxation time `C / B` (see
        `default_controller`).
    - `dt0`: initial step, years (default: chosen by the controller).
    - `max_steps`: step limit (an integer >= 1). The default follows from the run's
        length: twice the steps the default controller's cap implies for `years`,
        rounded up to a power of two (at least 16384), for the forward run and for
        reverse mode alike (the recursive adjoint then stores 4 log2(max_steps)
        checkpoints, so its memory grows like log(years)); a run whose budget
        would pass 2**24 steps is refused up front, with an estimate of its time.
        Where the parameters are traced (inside `jit`), or `stepsize_controller`
        is given, the default is a bound of 2**22 steps.
    - `throw`: raise if the solve fails (default), else return the failure code,
        with `T`, `Ts`, `global_mean` and `ice_edge` (and their derivatives) NaN.
        It checks the forward run; a backward pass that fails (`"interpolating"`'s
        re-solve or adjoint equation out of steps) gives NaN derivatives either
        way.
    - `progress`: `True` for a progress bar on stderr (diffrax's
        `TqdmProgressMeter`, percent of `years` done), or any
        `diffrax.AbstractProgressMeter`, used as given (`diffrax.TextProgressMeter()`
        prints percentages to stdout).

    **Returns:**

    An `ebm.Trajectory`.

    **Raises:**

    - `ValueError`: for a bad `T0`, `adjoint`, `years`, `dt0` or `max_steps`; for a
        run too long for the default step budget (with its estimated steps and
        time); or when the chosen adjoint cannot do the requested
        differentiation (with the adjoint to use).
    - `EquinoxRuntimeError`: with `adjoint="backsolve"` on runs longer than its
        measured horizon (see the module docstring), or when the solve fails.
    """
    if model is not None and not isinstance(model, EnergyBalanceModel):
        return _integrate_other(
            params,
            model,
            years=years,
            grid=grid,
            T0=T0,
            adjoint=adjoint,
            solver=solver,
            saveat=saveat,
            stepsize_controller=stepsize_controller,
            dt0=dt0,
            max_steps=max_steps,
            throw=throw,
            progress=progress,
        )
    model = resolve_model(model, grid)
    params = check_params(params)
    _check_positive("years", years)
    T0 = initial_profile("present" if T0 is None else T0, params, model.grid, "T0")
    adjoint_name = adjoint if isinstance(adjoint, str) else type(adjoint).__name__
    adjoint = resolve_adjoint(adjoint)
    solver = resolve_solver(solver)
    # The model's time scales, where the default controller or backsolve needs them
    # (a user's controller, budget and adjoint need none: no program to compile).
    needs_scales = stepsize_controller is None or isinstance(
        adjoint, diffrax.BacksolveAdjoint
    )
    scales = start_time_scales(params, model, T0) if needs_scales else None
    if max_steps is None:
        # A user's controller has no known cap: the bound alone, no estimate.
        max_steps = (
            _default_max_steps(years, scales.relaxation)
            if stepsize_controller is None
            else TRACED_MAX_STEPS
        )
    else:
        check_count("max_steps", max_steps, 1)
    if dt0 is not None:
        _check_positive("dt0", dt0)
    adjoint = _with_checkpoints(adjoint, max_steps)
    if stepsize_controller is None:
        stepsize_controller = default_controller(scales.relaxation)
    if saveat is None:
        saveat = diffrax.SaveAt(t1=True)
    else:
        # The final state is always needed for the summary fields.
        saveat = eqx.tree_at(lambda s: s.subs.t1, saveat, True)
    # An array, not a Python float (which filter_jit would make static): runs of any
    # length within one step budget share a compiled program.
    years = jnp.asarray(years, dtype=float)
    if isinstance(adjoint, diffrax.BacksolveAdjoint):
        T0 = _check_backsolve_horizon(scales.diffusion, years, T0)
    # JAX differentiates a jitted call where it is made: this is where a reverse-only
    # adjoint meets forward mode, and where its error can name the fix.
    try:
        trajectory = _integrate(
            params,
            years,
            model,
            T0,
            adjoint,
            solver,
            saveat,
            stepsize_controller,
            dt0,
            max_steps,
            throw,
            progress_meter(progress),
        )
    except TypeError as error:
        if _is_forward_mode_error(error):
            raise ValueError(_FORWARD_MODE_HINT.format(name=adjoint_name)) from error
        raise
    if throw:
        trajectory = raise_if_failed(trajectory, trajectory.result)
    return trajectory


def _integrate_other(params, model, *, grid, progress, T0, **kwargs):
    """`ebm.integrate` of a model of the protocol other than the zonal one."""
    from .._layers.run import integrate_model
    from .._model.protocol import AbstractModel

    if not isinstance(model, AbstractModel):
        raise TypeError(
            "`model` must be an ebm model (an ebm.AbstractModel, such as "
            f"ebm.EnergyBalanceModel or ebm.TwoLayerModel), got {type(model).__name__}."
        )
    if grid is not None:
        raise ValueError(
            f"`grid` is for the zonal model; {type(model).__name__} has none."
        )
    if progress is not False:
        raise ValueError(f"`progress` is not available for {type(model).__name__} yet.")
    return integrate_model(params, model, y0=T0, **kwargs)


_BACKSOLVE_MESSAGE = (
    "adjoint='backsolve' integrates the model backwards in time, which is "
    "unstable for diffusion; its gradient is only accurate to 1e-4 for runs "
    f"shorter than {BACKSOLVE_HORIZON} times the fastest transport time scale "
    "(C dlat^2 / (4 D) for diffusion: about 12 days at the default 60 cells). "
    "Use adjoint='recursive' for longer runs, or adjoint='interpolating' for the "
    "continuous adjoint without a backward state."
)


def _check_backsolve_horizon(diffusion, years, T0):
    """`T0`, once `years` is within backsolve's horizon (`diffusion` as
    `time_scales` gives it)."""
    horizon = BACKSOLVE_HORIZON * diffusion
    return refuse_if(T0, years > horizon, _BACKSOLVE_MESSAGE, eqx.EquinoxRuntimeError)


@eqx.filter_jit
def _integrate(
    params,
    years,
    model,
    T0,
    adjoint,
    solver,
    saveat,
    stepsize_controller,
    dt0,
    max_steps,
    throw,
    progress_meter,
) -> Trajectory:
    grid = model.grid
    solution = diffrax.diffeqsolve(
        model_terms(model, solver),
        solver,
        t0=0.0,
        t1=years,
        dt0=dt0,
        y0=T0,
        args=params,
        saveat=saveat,
        stepsize_controller=stepsize_controller,
        adjoint=adjoint,
        max_steps=max_steps,
        # The result is returned, and checked by the caller (on the host where it
        # is known): diffrax's own check would compile to a host callback.
        throw=False,
        progress_meter=progress_meter,
    )
    ys = solution.ys
    T = ys[-1]
    if saveat.subs.ts is None and not saveat.subs.steps and not saveat.subs.t0:
        ts, Ts = None, None
    else:
        ts, Ts = solution.ts[:-1], ys[:-1]
    result = RESULTS.promote(solution.result)
    outputs = (
        T,
        Ts,
        grid.global_mean(T),
        model.ice_edge(T, params),
        model.ice_edge(T, params, "south"),
    )
    if not throw:
        # An unfinished run's state is not the state at `years`.
        outputs = nan_unless_successful(result, outputs, params)
    T, Ts, global_mean, ice_edge, ice_edge_south = outputs
    return Trajectory(
        T=T,
        lat=grid.lat,
        global_mean=global_mean,
        ice_edge=ice_edge,
        ice_edge_south=ice_edge_south,
        ts=ts,
        Ts=Ts,
        result=result,
        num_steps=solution.stats["num_steps"],
    )


def _fixed_step(index, carry, args):
    """One step of the state, its estimated error in each cell (`accumulate_error`)
    and the largest of those so far, K."""
    model, stepper, params, stepper_state, dt = args
    T, error, worst = carry
    t = index.astype(T.dtype) * dt
    T_next, local_error = step_with_error(
        stepper, model, stepper_state, t, T, params, dt
    )
    error = accumulate_error(error, local_error, dt)
    return T_next, error, jnp.maximum(worst, jnp.max(jnp.abs(error)))


def integrate_fixed(
    params: Params,
    *,
    dt,
    steps: int,
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
    T0=None,
    stepper="imex",
    checkpoint="sqrt",
    error_tolerance=None,
    throw: bool = True,
) -> Trajectory:
    """Integrate the model for `steps` fixed steps of `dt` years.

    The loop is a `lax.scan` (or, for the reverse-mode-only schedules, a custom
    backward pass), and `checkpoint` decides what reverse mode stores and recomputes:
    see `ebm.AbstractCheckpoint` and the docs' "Choosing an adjoint".

    A fixed step is not chosen for accuracy, so the run checks it two ways: `dt`
    must be within the stepper's stability limit at `T0` (see `ebm.AbstractStepper`),
    and the run's estimated error must stay within `error_tolerance`: each cell's
    local error estimates, added with their signs and forgotten over a year
    (e-folding), the largest at any step and cell. Neither check is differentiated.

    **Arguments:**

    - `params`: the physical parameters.
    - `dt`: the step, years (> 0).
    - `steps`: how many steps (a Python integer >= 1; the run lasts `steps * dt`).
    - `grid`, `model`: as for `ebm.equilibrium` (give one at most).
    - `T0`: initial profile, as for `ebm.integrate` (default `"present"`).
    - `stepper`: `"imex"` (default; diffusion implicit, unconditionally stable),
        `"explicit"` (forward Euler, for steps below the diffusive limit),
        `"implicit"` (linearly implicit Euler), `"rosenbrock"` (`ebm.Rosenbrock2`,
        second order), or an `ebm.AbstractStepper`.
    - `checkpoint`: the reverse-mode schedule: `"none"`, `"step"`, `"sqrt"`
        (default), `("nested", levels)`, `("binomial", checkpoints)`, `"recursive"`
        or `("recursive", checkpoints)` (diffrax's `RecursiveCheckpointAdjoint`),
        the same as text (`"binomial-8"`), or an `ebm.AbstractCheckpoint` (e.g. with
        a `policy=`); the names are those of
        `ebm._stepping.checkpoints.CHECKPOINTS`.
    - `error_tolerance`: the largest estimated error allowed, K (`inf` turns the
        check off). Default: 1 for the Euler steppers, whose estimates track their
        error; 10 for `"rosenbrock"`, whose estimate (its embedded first-order
        solution's) overstates its own error 40 to 80 times.
    - `throw`: raise if the run fails (default), else return the failure in
        `result`: `RESULTS.unstable_step`, `RESULTS.nonfinite_state` or
        `RESULTS.inaccurate_step`.

    **Returns:**

    An `ebm.Trajectory` of the final state (`ts`, `Ts` are `None`).

    **Raises:**

    - `ValueError`: for a bad `dt`, `steps`, `T0`, `stepper`, `checkpoint` or
        `error_tolerance`, and (with `throw=True`, for known parameters) when `dt`
        is above the stepper's stability limit, with the limit.
    - `EquinoxRuntimeError` (with `throw=True`): when the run fails (a traced `dt`
        above the stability limit, a non-finite state, or the error estimate above
        `error_tolerance`).
    """
    model = resolve_model(model, grid)
    params = check_params(params)
    check_count("steps", steps, 1)
    _check_positive("dt", dt)
    T0 = initial_profile("present" if T0 is None else T0, params, model.grid, "T0")
    stepper = resolve_stepper(stepper)
    error_tolerance = resolve_error_tolerance(error_tolerance, stepper)
    checkpoint = resolve_checkpoint(checkpoint)
    limit = check_stability(stepper, model, params, T0, dt, throw)
    if isinstance(dt, jax.core.Tracer):
        # A known `dt` was checked by `_check_positive`.
        T0 = refuse_if(
            T0,
            jnp.logical_not(jnp.isfinite(dt) & (dt > 0)),
            "`dt` must be positive and finite (years).",
        )
    try:
        trajectory = _integrate_fixed(
            params,
            jnp.asarray(dt, dtype=float),  # traced: any step shares the program
            steps,
            model,
            T0,
            stepper,
            checkpoint,
            error_tolerance,
            limit,
        )
    except TypeError as error:
        if _is_forward_mode_error(error):
            raise ValueError(
                f"checkpoint={type(checkpoint).__name__} supports reverse mode "
                "(jax.grad, jax.vjp) only; for forward mode (jax.jvp, jax.jacfwd) "
                f"use checkpoint={spellings(forward_mode=True)}."
            ) from error
        raise
    if throw:
        trajectory = raise_if_failed(trajectory, trajectory.result)
    return trajectory


@eqx.filter_jit
def _integrate_fixed(
    params, dt, steps, model, T0, stepper, checkpoint, error_tolerance, limit
) -> Trajectory:
    if limit is None:
        limit = stability_limit(stepper, model, params, T0)
    unstable = dt > limit
    stepper_state = stepper.init(model, params, T0, dt)
    args = (model, stepper, params, stepper_state, dt)
    carry = (T0, jnp.zeros_like(T0), jnp.zeros((), T0.dtype))
    T, _, step_error = checkpoint.loop(_fixed_step, carry, args, steps)
    finite = jnp.all(jnp.isfinite(T))
    result = fixed_step_result(finite, step_error, unstable, error_tolerance)
    return Trajectory(
        T=T,
        lat=model.grid.lat,
        global_mean=model.grid.global_mean(T),
        ice_edge=model.ice_edge(T, params),
        ice_edge_south=model.ice_edge(T, params, "south"),
        ts=None,
        Ts=None,
        result=result,
        num_steps=jnp.asarray(steps),
    )
