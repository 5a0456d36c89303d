r"""A run of the zonal model under `ebm.integrate`: its solvers, step-size
controller, step budget, backsolve horizon and result (`ebm.Trajectory`), which
`EnergyBalanceModel.run_options` and `run_result` give the entry point.

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

`BacksolveAdjoint` rebuilds the state by integrating the model backwards in time,
which for a diffusive model is the ill-posed backward heat equation: rounding errors
in the fast modes grow like $e^{t/\tau}$, $\tau = C\,\Delta\phi^2/(4D)$. Its
gradients are accurate to 1e-4 only for runs shorter than a limit measured in units
of $\tau$ (`BACKSOLVE_HORIZON`, see `benchmarks/backsolve_horizon.py`); `integrate`
refuses longer runs under it.
"""

import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._checks import known_value, refuse_if
from .._constants import SECONDS_PER_YEAR
from .._custom_types import Scalar, Temperature
from .._model.protocol import RunOptions
from .._numerics.chord import tridiagonal_root_finder
from .._numerics.tridiagonal import probe_tridiagonal
from .._results import RESULTS, nan_unless_successful, with_result_names


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
IMEX_SOLVERS = (diffrax.KenCarp3, diffrax.KenCarp4, diffrax.KenCarp5, diffrax.Sil3)


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


def model_terms(model, solver: diffrax.AbstractSolver):
    """The model as diffrax terms for `solver`: one `ODETerm`, or for an
    implicit-explicit solver the pair (local terms explicit, transport implicit)."""
    if isinstance(solver, IMEX_SOLVERS):
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
def time_scales(params, model, T: Temperature):
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


def start_time_scales(params, model, T0) -> TimeScales:
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


def zonal_run_options(
    model,
    params,
    y0: Temperature,
    years,
    *,
    solver,
    stepsize_controller,
    max_steps,
    adjoint: diffrax.AbstractAdjoint,
) -> RunOptions:
    """The zonal model's run (see `EnergyBalanceModel.run_options`): its solvers by
    name (`SOLVERS`, default `Kvaerno5` with tridiagonal stage solves), the
    implicit-explicit split for diffrax's IMEX solvers (`model_terms`), the PID
    controller capped at a tenth of the relaxation time (`default_controller`),
    the step budget that follows from it (`_default_max_steps`), and backsolve's
    horizon in units of the diffusive time (`BACKSOLVE_HORIZON`)."""
    solver = resolve_solver(solver)
    # The model's time scales, where the default controller or backsolve needs them
    # (a user's controller, budget and adjoint need none: no program to compile).
    backsolve = isinstance(adjoint, diffrax.BacksolveAdjoint)
    needs_scales = stepsize_controller is None or backsolve
    scales = start_time_scales(params, model, y0) if needs_scales else None
    if max_steps is None:
        # A user's controller has no known cap: the bound alone, no estimate.
        max_steps = (
            _default_max_steps(years, scales.relaxation)
            if stepsize_controller is None
            else TRACED_MAX_STEPS
        )
    if stepsize_controller is None:
        stepsize_controller = default_controller(scales.relaxation)
    if backsolve:
        y0 = _check_backsolve_horizon(
            scales.diffusion, jnp.asarray(years, dtype=float), y0
        )
    return RunOptions(
        solver=solver,
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
        t0=0.0,
        y0=y0,
    )


def trajectory(model, params, end, saved, result, num_steps, throw):
    """The `Trajectory` of a zonal run (see `EnergyBalanceModel.run_result`)."""
    grid = model.grid
    _, T = end
    ts, Ts = saved
    outputs = (
        T,
        Ts,
        grid.global_mean(T),
        model.ice_edge(T, params),
        model.ice_edge(T, params, "south"),
    )
    if not throw:
        # An unfinished run's state is not the state at its end.
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
        num_steps=jnp.asarray(num_steps),
    )
