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

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._checks import check_count, refuse_if
from .._custom_types import Scalar, Temperature
from .._progress import progress_meter
from .._results import (
    RESULTS,
    nan_unless_successful,
    raise_if_failed,
    with_result_names,
)
from .._zonal.grid import Grid
from .._zonal.model import EnergyBalanceModel
from .._zonal.params import Params
from .._zonal.start import resolve_model
from .checkpoints import resolve_checkpoint, spellings
from .fixed_model import _is_other_model, check_flat_stepper, flat_problem
from .options import (
    BACKSOLVE_HORIZON,
    SHORTEST_RUN,
    TRACED_MAX_STEPS,
    _check_positive,
    _default_max_steps,
    _with_checkpoints,
    adjoint_name,
    check_saved_times,
    default_controller,
    differentiation_hint,
    model_terms,
    refuse_reverse_mode,
    resolve_adjoint,
    resolve_solver,
    run_arguments_result,
    solve_naming_the_mode,
    start_time_scales,
)
from .run import integrate_model, run_result
from .steppers import resolve_stepper
from .steppers.checks import (
    accumulate_error,
    check_stability,
    fixed_step_result,
    resolve_error_tolerance,
    stability_limit,
    step_with_error,
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
    t0=None,
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
        model split into its local and transport parts. For a global layer model
        (`ebm.TwoLayerModel`, `ebm.NLayerModel`) under a piecewise-linear forcing
        (`AbruptCO2`, `OnePercentCO2`, `ForcingSeries`, `HistoricalForcing`),
        `"exact"` solves the linear system exactly between the forcing's kinks and
        the saved times (mode by mode, differentiated by JAX itself; `adjoint`
        does not apply).
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
        prints percentages to stdout), for every model (`solver="exact"` takes no
        steps to show).
    - `t0`: for a model of the protocol, the time the run starts, years on its
        forcing's clock (default the forcing's start: 0 for `ebm.AbruptCO2` and
        `ebm.OnePercentCO2`, the first time of a series); `t0=-50` runs 50 years
        of the pre-industrial control before a CO2 experiment. The zonal model's
        runs start at 0.

    **Returns:**

    An `ebm.Trajectory` (an `ebm.Run` for a model of the protocol).

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
            t0=t0,
        )
    if t0 is not None:
        raise ValueError(
            "`t0` starts a run of a model with a forcing scenario on its clock; the "
            f"zonal model's runs start at 0 (got t0={t0!r})."
        )
    model = resolve_model(model, grid)
    params = model.checked_params(params)
    _check_positive("years", years)
    T0 = model.start_state(params, "present" if T0 is None else T0, "T0")
    check_saved_times(saveat, 0.0, years)
    name = adjoint_name(adjoint)
    adjoint = resolve_adjoint(adjoint)
    refuse_reverse_mode(adjoint, name, (params, T0))
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
    trajectory = solve_naming_the_mode(
        name,
        _integrate,
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
    if throw:
        trajectory = raise_if_failed(trajectory, trajectory.result)
    return trajectory


def _integrate_other(params, model, *, grid, T0, **kwargs):
    """`ebm.integrate` of a model of the protocol other than the zonal one."""
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
    # A traced length, unchecked on the host (a known one was refused there): an
    # invalid one runs for a moment instead (backwards, a diffusive model blows up)
    # and is reported by its code.
    invalid = run_arguments_result(years, 0.0, None)
    years = jnp.where(invalid == RESULTS.successful, years, SHORTEST_RUN)
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
    result = RESULTS.where(invalid == RESULTS.successful, result, invalid)
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
    stepper=None,
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
    - `grid`, `model`: as for `ebm.equilibrium` (give one at most). `model` may be
        any model of the protocol (`ebm.TwoLayerModel`, `ebm.DeepOceanModel`, ...):
        its state is stepped as one flat vector, with the model's own Jacobian
        (`model.jacobian`) as a dense matrix in the implicit steppers, from the
        start of its forcing (calendar years for a series).
    - `T0`: initial profile, as for `ebm.integrate` (default `"present"`; for
        another model, a state shaped as its `initial_state`, which is the
        default).
    - `stepper`: `"imex"` (the zonal model's default; diffusion implicit,
        unconditionally stable), `"explicit"` (forward Euler, for steps below the
        diffusive limit), `"implicit"` (linearly implicit Euler), `"rosenbrock"`
        (`ebm.Rosenbrock2`, second order; the default for the other models, which
        have no split of transport from the rest for `"imex"`, unless the model
        has a stepper of its own, as `ebm.SeaIceModel` has `ebm.SeaIceEuler`), or
        an `ebm.AbstractStepper`.
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

    An `ebm.Trajectory` of the final state (`ts`, `Ts` are `None`); an `ebm.Run`
    of the final state for another model of the protocol.

    **Raises:**

    - `ValueError`: for a bad `dt`, `steps`, `T0`, `stepper`, `checkpoint` or
        `error_tolerance`, and (with `throw=True`, for known parameters) when `dt`
        is above the stepper's stability limit, with the limit.
    - `EquinoxRuntimeError` (with `throw=True`): when the run fails (a traced `dt`
        above the stability limit, a non-finite state, or the error estimate above
        `error_tolerance`).
    """
    other = _is_other_model(model)
    if other:
        # A model of the protocol as a vector field on its flat state.
        model, params, T0 = flat_problem(params, model, grid, T0, dt, steps)
    else:
        model = resolve_model(model, grid)
        params = model.checked_params(params)
        T0 = model.start_state(params, "present" if T0 is None else T0, "T0")
    check_count("steps", steps, 1)
    _check_positive("dt", dt)
    if stepper is None:
        own = model.model.default_stepper() if other else None
        stepper = ("rosenbrock" if other else "imex") if own is None else own
    stepper = resolve_stepper(stepper)
    if other:
        check_flat_stepper(stepper, model.model)
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
        trajectory = (_integrate_fixed_flat if other else _integrate_fixed)(
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
        if differentiation_hint("", error) is not None:
            raise ValueError(
                f"checkpoint={type(checkpoint).__name__} supports reverse mode "
                "(jax.grad, jax.vjp) only; for forward mode (jax.jvp, jax.jacfwd) "
                f"use checkpoint={spellings(forward_mode=True)}."
            ) from error
        raise
    if throw:
        trajectory = raise_if_failed(trajectory, trajectory.result)
    return trajectory


def _fixed_run(
    params, dt, steps, model, T0, stepper, checkpoint, error_tolerance, limit
):
    """The final state of `steps` fixed steps, and the run's result."""
    if limit is None:
        limit = stability_limit(stepper, model, params, T0)
    unstable = dt > limit
    stepper_state = stepper.init(model, params, T0, dt)
    args = (model, stepper, params, stepper_state, dt)
    carry = (T0, jnp.zeros_like(T0), jnp.zeros((), T0.dtype))
    T, _, step_error = checkpoint.loop(_fixed_step, carry, args, steps)
    finite = jnp.all(jnp.isfinite(T))
    return T, fixed_step_result(finite, step_error, unstable, error_tolerance)


@eqx.filter_jit
def _integrate_fixed_flat(params, dt, steps, model, *args):
    """`_fixed_run` of a protocol model (a `FlatModel`), as an `ebm.Run`."""
    v, result = _fixed_run(params, dt, steps, model, *args)
    end = (model.t0 + dt * steps, model.unflatten(v))
    return run_result(model.model, params, end, (None, None), result, steps, True)


@eqx.filter_jit
def _integrate_fixed(
    params, dt, steps, model, T0, stepper, checkpoint, error_tolerance, limit
) -> Trajectory:
    T, result = _fixed_run(
        params, dt, steps, model, T0, stepper, checkpoint, error_tolerance, limit
    )
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
