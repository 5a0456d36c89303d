r"""`ebm.integrate` and `ebm.integrate_fixed`: one path for every model of the
protocol, diffrax's `diffeqsolve` on the model's terms (`model.run_terms`) under
the options the model chooses where the user did not (`model.run_options`:
solver, step-size controller, step budget; see `ebm._zonal.run` for the zonal
model's stiff defaults), returning the model's result (`model.run_result`: the
zonal model's `ebm.Trajectory`, else `ebm.Run`).

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

from .._checks import check_count, refuse_if
from .._model.parameters import AbstractParams
from .._model.protocol import AbstractModel
from .._progress import progress_meter
from .._results import raise_if_failed
from .._zonal.grid import Grid
from .._zonal.run import Trajectory
from .._zonal.start import resolve_any_model
from .checkpoints import resolve_checkpoint, spellings
from .fixed_model import (
    check_flat_stepper,
    default_fixed_stepper,
    stepped_model,
    stepped_problem,
)
from .options import (
    _check_positive,
    _with_checkpoints,
    adjoint_name,
    check_saved_times,
    differentiation_hint,
    refuse_reverse_mode,
    resolve_adjoint,
    solve_naming_the_mode,
)
from .run import (
    Run,
    _integrate,
    check_model_params,
    exact_run,
    protocol_run_options,
    run_result,
    run_start_time,
)
from .steppers import resolve_stepper
from .steppers.checks import (
    accumulate_error,
    check_stability,
    fixed_step_result,
    resolve_error_tolerance,
    stability_limit,
    step_with_error,
)


def integrate(
    params: AbstractParams,
    *,
    years,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
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
) -> Trajectory | Run:
    """Integrate the model for `years` from `T0`.

    **Arguments:**

    - `params`: the physical parameters.
    - `years`: length of the run, years (> 0).
    - `grid`, `model`: as for `ebm.equilibrium` (give one at most): the zonal
        model, or any other model of the protocol.
    - `T0`: the start state: for the zonal model a profile, degC, shape
        `(n_lat,)`, or one of `"present"` (default; the same start as
        `ebm.equilibrium`), `"warm"`, `"cold"`; for another model a state shaped
        as its `initial_state` (the default).
    - `adjoint`: `"recursive"` (default), `("recursive", checkpoints)`,
        `"direct"`, `"forward"`, `"backsolve"`, `"interpolating"`
        (`ebm.InterpolatingAdjoint()`), or any `diffrax.AbstractAdjoint`
        instance (e.g. `diffrax.RecursiveCheckpointAdjoint(checkpoints=64)`). A
        `RecursiveCheckpointAdjoint` without `checkpoints` (the default) gets
        `4 log2(max_steps)` of them.
    - `solver`: the model's choice by default (`model.run_options`). For the zonal
        model `"kvaerno5"` (default: `Kvaerno5` with matrix-free stage solves;
        see `ebm._zonal.run` for why an implicit solver), `"kencarp5"`
        (`KenCarp5`, implicit in the transport only), `"tsit5"` (explicit; its
        steps are bound by the diffusive stability limit), or any diffrax solver;
        diffrax's implicit-explicit solvers (`KenCarp3/4/5`, `Sil3`) get the
        model split into its local and transport parts. For another model,
        `"tsit5"`, `"kvaerno5"` or any diffrax solver (default the model's
        `default_solver()`, `Kvaerno5` where the run is stiff). For a global
        layer model (`ebm.TwoLayerModel`, `ebm.NLayerModel`) under a
        piecewise-linear forcing (`AbruptCO2`, `OnePercentCO2`, `ForcingSeries`,
        `HistoricalForcing`),
        `"exact"` solves the linear system exactly between the forcing's kinks and
        the saved times (mode by mode, differentiated by JAX itself; `adjoint`
        does not apply).
    - `saveat`: a `diffrax.SaveAt` (default: the final state only). Saved times fill
        `ts` and `Ts`.
    - `stepsize_controller`: the model's choice by default: for the zonal model
        `diffrax.PIDController(rtol=1e-8, atol=1e-8)` with steps capped at a tenth
        of the relaxation time `C / B` (see `default_controller`); for another,
        `diffrax.PIDController(rtol=1e-9, atol=1e-9)` stepping onto its forcing's
        kinks.
    - `dt0`: initial step, years (default: chosen by the controller).
    - `max_steps`: step limit (an integer >= 1). The default follows from the run's
        length (for another model, from its time scales: `default_max_steps`); for
        the zonal model, twice the steps the default controller's cap implies for
        `years`, rounded up to a power of two (at least 16384), for the forward run
        and for reverse mode alike (the recursive adjoint then stores
        4 log2(max_steps) checkpoints, so its memory grows like log(years)); a run
        whose budget would pass 2**24 steps is refused up front, with an estimate
        of its time.
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

    The model's result (`model.run_result`): an `ebm.Trajectory` for the zonal
    model, an `ebm.Run` for the other models of the protocol.

    **Raises:**

    - `ValueError`: for a bad `T0`, `adjoint`, `years`, `dt0` or `max_steps`; for a
        run too long for the default step budget (with its estimated steps and
        time); or when the chosen adjoint cannot do the requested
        differentiation (with the adjoint to use).
    - `EquinoxRuntimeError`: with `adjoint="backsolve"` on runs longer than its
        measured horizon (see the module docstring), or when the solve fails.
    """
    model = resolve_any_model(model, grid)
    params = check_model_params(params, model)
    _check_positive("years", years)
    if max_steps is not None:
        check_count("max_steps", max_steps, 1)
    if dt0 is not None:
        _check_positive("dt0", dt0)
    # (`"present"`, every model's `initial_state`, is the default start.)
    y0 = model.start_state(params, "present" if T0 is None else T0, "T0")
    if isinstance(solver, str) and solver == "exact":
        t0 = run_start_time(model, t0, years)
        check_saved_times(saveat, t0, years)
        return exact_run(params, model, years, t0, y0, saveat, throw)
    name = adjoint_name(adjoint)
    adjoint = resolve_adjoint(adjoint)
    refuse_reverse_mode(adjoint, name, (params, y0, model))
    # The model chooses what the user did not (`None`: the protocol's choices).
    choices = dict(
        t0=t0,
        solver=solver,
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
        adjoint=adjoint,
    )
    options = model.run_options(params, y0, years, **choices)
    if options is None:
        options = protocol_run_options(model, params, y0, years, **choices)
    check_saved_times(saveat, options.t0, years)
    adjoint = _with_checkpoints(adjoint, options.max_steps)
    if saveat is None:
        saveat = diffrax.SaveAt(t1=True)
    else:
        # The final state is always needed for the summary fields.
        saveat = eqx.tree_at(lambda s: s.subs.t1, saveat, True)
    run = solve_naming_the_mode(
        name,
        _integrate,
        params,
        # Arrays, not Python floats (which filter_jit would make static): runs of
        # any length within one step budget share a compiled program.
        jnp.asarray(years, dtype=float),
        jnp.asarray(options.t0, dtype=float),
        model,
        options.y0,
        adjoint,
        options.solver,
        saveat,
        options.stepsize_controller,
        dt0,
        options.max_steps,
        throw,
        progress_meter(progress),
    )
    if throw:
        run = raise_if_failed(run, run.result)
    return run


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
    params: AbstractParams,
    *,
    dt,
    steps: int,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
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
    model = resolve_any_model(model, grid)
    params = check_model_params(params, model)
    check_count("steps", steps, 1)
    _check_positive("dt", dt)
    # What the steppers advance: the zonal model itself, or any other model's state
    # as one flat vector, from the start of its forcing.
    field, T0 = stepped_problem(
        params, model, "present" if T0 is None else T0, dt, steps
    )
    if stepper is None:
        stepper = default_fixed_stepper(model)
    stepper = resolve_stepper(stepper)
    check_flat_stepper(stepper, model)
    error_tolerance = resolve_error_tolerance(error_tolerance, stepper)
    checkpoint = resolve_checkpoint(checkpoint)
    limit = check_stability(stepper, field, params, T0, dt, throw)
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
            field,
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
def _integrate_fixed(
    params, dt, steps, field, v0, stepper, checkpoint, error_tolerance, limit
) -> Trajectory | Run:
    v, result = _fixed_run(
        params, dt, steps, field, v0, stepper, checkpoint, error_tolerance, limit
    )
    model, unflatten, t0 = stepped_model(field)
    end = (t0 + dt * steps, unflatten(v))
    return run_result(model, params, end, (None, None), result, steps, True)
