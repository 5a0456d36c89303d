"""The run of `ebm.integrate` for every model of the protocol: the protocol's
options where a model has none of its own (`protocol_run_options`), the one
compiled solve (`_integrate`), its result `ebm.Run`, and the exact solution of a
linear model."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PyTree

from .._checks import known_value, refuse_if
from .._custom_types import Scalar
from .._model.parameters import AbstractParams
from .._model.protocol import AbstractModel, RunOptions, Variable, state_arrays
from .._results import (
    RESULTS,
    nan_unless_successful,
    raise_if_failed,
    with_result_names,
)
from .._scenarios.base import AbstractScenario, run_start
from .options import (
    BACKSOLVE_HORIZON_MODELS,
    SHORTEST_RUN,
    resolve_model_solver,
    run_arguments_result,
)


class Run(eqx.Module):
    """The result of `ebm.integrate` for a model of the protocol other than the
    zonal one (the ocean-layer models, the zonal model over a deep ocean).

    **Attributes:**

    - `state`: the final state, `{name: array}` (see `variables`).
    - `ts`: saved times, years, on the forcing's clock (from 0 for the CMIP
        experiments, calendar years for a series) (`None` unless `saveat` asks).
    - `states`: the saved states, each array with a leading time axis (`None`
        unless asked for).
    - `T`: the final surface temperature (`model.temperature`), and `Ts`
        its values at the saved times (`None` unless asked for).
    - `global_mean`: the final global-mean surface temperature.
    - `N`: the final net downward flux at the top of the atmosphere
        (`model.toa_imbalance`), W m-2, global mean, and `Ns` its values at the
        saved times.
    - `F`: the forcing scenario's forcing at the end, W m-2, and `Fs` at the
        saved times (`None` for a model without a scenario).
    - `variables`: the model's declared variables (names, units, long names,
        dimensions).
    - `result`: an `ebm.RESULTS`; `RESULTS.successful` when the run finished.
    - `num_steps`: accepted plus rejected steps.
    """

    state: dict[str, Array]
    ts: Float[Array, " time"] | None
    states: dict[str, Array] | None
    T: Array
    Ts: Array | None
    global_mean: Array
    N: Array
    Ns: Array | None
    F: Array | None
    Fs: Array | None
    variables: tuple[Variable, ...] = eqx.field(static=True)
    result: RESULTS
    num_steps: Int[Array, ""]

    def __repr__(self) -> str:
        return with_result_names(self)


def check_model_params(params, model: AbstractModel) -> AbstractParams:
    """`params`, once they are the model's (`model.checked_params`: its `Params`,
    with their ranges checked).

    **Raises:**

    - `TypeError`: for a `model` that is not an ebm model (parameters and model
        swapped, say), or parameters that are not its.
    """
    if not isinstance(model, AbstractModel):
        swapped = (
            " (are `params` and `model` swapped?)"
            if isinstance(model, AbstractParams) and isinstance(params, AbstractModel)
            else ""
        )
        raise TypeError(
            "`model` must be an ebm model (an ebm.AbstractModel, such as "
            f"ebm.TwoLayerModel()), got {type(model).__name__}{swapped}."
        )
    return model.checked_params(params)


# The longest default step budget of a run, steps: a run that needs more says so
# (`RESULTS.max_steps_reached`, which names `max_steps`).
MAX_DEFAULT_STEPS = 2**24


# Steps a year that an implicit solver is allowed by default, whatever the model's
# time scales: enough for a seasonal cycle at the default tolerances (a zonal model
# over a deep ocean with daily insolation takes 1,500-2,500 a year on 12-60 cells).
IMPLICIT_STEPS_PER_YEAR = 4096


def known_time_scales(model: AbstractModel, params):
    """`model.time_scales(params)` (`(fastest, slowest)`, years) on the values of
    `params` where they are known (eagerly, and under eager `jax.grad`), else
    `None` (inside `jit`)."""
    leaves, treedef = jax.tree.flatten(params)
    known = [known_value(leaf) for leaf in leaves]
    if any(value is None for value in known):
        return None
    try:
        fastest, slowest = model.time_scales(jax.tree.unflatten(treedef, known))
        return float(fastest), float(slowest)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def default_max_steps(
    model: AbstractModel, params, years, solver=None, scales=None
) -> int:
    """A step budget for `years` of `model` under `solver`, a power of two (at
    least 4096, at most `MAX_DEFAULT_STEPS`).

    An explicit solver's steps are bound by the model's fastest time scale: it gets
    16 times the steps of a tenth of it. An implicit solver's are bound by accuracy
    alone: it gets `IMPLICIT_STEPS_PER_YEAR` steps a year of the run, or the
    explicit budget where that is larger. Generous, since the budget is a bound, not
    an allocation (the recursive adjoint stores `4 log2(max_steps)` checkpoints).
    Where the length or (for an explicit solver) the parameters are traced (under
    `jit`), 2**14 steps for an explicit solver and 2**16 for an implicit one:
    enough for decades, and a failure code (`max_steps_reached`) beyond.

    **Arguments:**

    - `model`, `params`, `years`: the run.
    - `solver`: the diffrax solver (`None`: explicit).
    - `scales`: the model's known time scales (`known_time_scales`), if already
        computed.
    """
    implicit = isinstance(solver, diffrax.AbstractImplicitSolver)
    length = known_value(years)
    if scales is None:
        scales = known_time_scales(model, params)
    if length is None or (scales is None and not implicit):
        return 2**16 if implicit else 2**14
    steps = 1.0 if scales is None else 16.0 * float(length) / (0.1 * scales[0])
    if implicit:
        steps = max(steps, IMPLICIT_STEPS_PER_YEAR * float(length))
    budget = 2 ** max(12, int(np.ceil(np.log2(max(steps, 1.0)))))
    return int(min(budget, MAX_DEFAULT_STEPS))


def gershgorin_time(model: AbstractModel, t, y, params) -> Scalar:
    """A lower bound on the model's fastest relaxation time at `(t, y)`, years: the
    inverse of Gershgorin's bound on the spectral radius of its Jacobian (the
    largest absolute row sum), traced where the parameters are."""
    matrix = model.jacobian(t, y, params).as_matrix()
    return 1.0 / jnp.max(jnp.sum(jnp.abs(matrix), axis=1))


def _backsolve_message(horizon: float | None) -> str:
    length = "" if horizon is None else f" ({horizon:.3g} years here)"
    return (
        "adjoint='backsolve' integrates the model backwards in time, where each of "
        "its decaying modes grows: its gradient is accurate to 1e-4 only for runs "
        f"shorter than {BACKSOLVE_HORIZON_MODELS:g} times the model's fastest "
        "relaxation time (bounded from its Jacobian by Gershgorin's theorem)"
        f"{length}. Use adjoint='recursive' (the default) for longer runs, "
        "adjoint='interpolating' for the continuous adjoint without a backward "
        "state, or solver='exact' for a layer model."
    )


def check_backsolve_horizon(model: AbstractModel, params, t0, y0, years) -> PyTree:
    """`y0`, once `years` is within backsolve's horizon: `BACKSOLVE_HORIZON_MODELS`
    times the model's fastest relaxation time (`gershgorin_time`, at the start);
    checked now where the values are known, else in the caller's program."""
    horizon = BACKSOLVE_HORIZON_MODELS * gershgorin_time(model, t0, y0, params)
    known = known_value(horizon)
    message = _backsolve_message(None if known is None else float(known))
    return refuse_if(y0, years > horizon, message, eqx.EquinoxRuntimeError)


def run_start_time(model: AbstractModel, t0, years):
    """The start of a run of `years`, years on the model's clock: `t0`, checked
    finite, or the start of its forcing (`run_start`), checked within a forcing
    series' span where known.

    **Raises:**

    - `ValueError`: for a `t0` that is not a finite number, or a run outside the
        forcing series' span.
    """
    if t0 is None:
        t0 = run_start(model)
    elif not isinstance(t0, jax.core.Tracer):
        try:
            finite = np.ndim(t0) == 0 and bool(np.isfinite(float(t0)))
        except (TypeError, ValueError):
            finite = False
        if not finite:
            raise ValueError(f"`t0` must be a finite number of years, got {t0!r}.")
    # (A traced start is checked where it was given.)
    scenario = getattr(model, "forcing", None)
    if isinstance(scenario, AbstractScenario) and not isinstance(t0, jax.core.Tracer):
        scenario.check_span(float(t0), t0 + years)
    return t0


def protocol_run_options(
    model: AbstractModel,
    params,
    y0,
    years,
    *,
    t0,
    solver,
    stepsize_controller,
    max_steps,
    adjoint,
) -> RunOptions:
    """The protocol's choices for a run (see `AbstractModel.run_options`): the
    model's default solver (`Kvaerno5` for a stiff run), PID control at
    `rtol = atol = 1e-9` stepping onto the forcing's kinks, a step budget from
    `time_scales` (`default_max_steps`), backsolve's horizon from Gershgorin's
    bound (`check_backsolve_horizon`), from `t0` (default the forcing's start)."""
    t0 = run_start_time(model, t0, years)
    scales = known_time_scales(model, params)
    solver = resolve_model_solver(solver, model, scales, years)
    if stepsize_controller is None:
        # Steps end on the forcing's kinks (a series' times).
        scenario = getattr(model, "forcing", None)
        kinks = scenario.kinks if isinstance(scenario, AbstractScenario) else None
        stepsize_controller = diffrax.PIDController(rtol=1e-9, atol=1e-9, jump_ts=kinks)
    if max_steps is None:
        max_steps = default_max_steps(model, params, years, solver, scales)
    if isinstance(adjoint, diffrax.BacksolveAdjoint):
        y0 = check_backsolve_horizon(model, params, t0, y0, years)
    return RunOptions(
        solver=solver,
        stepsize_controller=stepsize_controller,
        max_steps=max_steps,
        t0=t0,
        y0=y0,
    )


def exact_run(params, model: AbstractModel, years, t0, y0, saveat, throw) -> Run:
    """A run of a linear model solved exactly between its forcing's kinks and the
    saved times (`solver="exact"`)."""
    saveat = diffrax.SaveAt(t1=True) if saveat is None else saveat
    check_exact(model, saveat)
    run = _integrate_exact(
        params,
        jnp.asarray(years, dtype=float),
        jnp.asarray(t0, dtype=float),
        model,
        y0,
        saveat.subs.ts,
    )
    return raise_if_failed(run, run.result) if throw else run


@eqx.filter_jit
def _integrate(
    params,
    years,
    t0,
    model,
    y0: PyTree,
    adjoint,
    solver,
    saveat,
    stepsize_controller,
    dt0,
    max_steps,
    throw,
    meter,
):
    from .interpolating import InterpolatingAdjoint
    from .steppers.flat import FlatModel

    # A traced length or start, unchecked on the host: an invalid one runs for a
    # moment instead (backwards, a diffusive model blows up), and is reported by its
    # code.
    invalid = run_arguments_result(years, t0, None)
    years = jnp.where(invalid == RESULTS.successful, years, SHORTEST_RUN)
    t0 = jnp.where(jnp.isfinite(t0), t0, 0.0)
    if isinstance(adjoint, InterpolatingAdjoint) and not _one_vector(y0):
        # The continuous adjoint runs on one vector: the state's leaves, raveled.
        flat = FlatModel.around(model, y0, 0.0)
        terms, y_start = diffrax.ODETerm(flat), flat.flatten(y0)
    else:
        flat, terms, y_start = None, model.run_terms(solver), y0
    solution = diffrax.diffeqsolve(
        terms,
        solver,
        t0=t0,
        t1=t0 + years,
        dt0=dt0,
        y0=y_start,
        args=params,
        saveat=saveat,
        stepsize_controller=stepsize_controller,
        adjoint=adjoint,
        max_steps=max_steps,
        # The result is returned, and checked by the caller (on the host where it
        # is known): diffrax's own check would compile to a host callback.
        throw=False,
        progress_meter=meter,
    )
    result = RESULTS.promote(solution.result)
    result = RESULTS.where(invalid == RESULTS.successful, result, invalid)
    ys = solution.ys if flat is None else jax.vmap(flat.unflatten)(solution.ys)
    final = jax.tree.map(lambda y: y[-1], ys)
    if saveat.subs.ts is None and not saveat.subs.steps and not saveat.subs.t0:
        ts, saved = None, None
    else:
        ts, saved = solution.ts[:-1], jax.tree.map(lambda y: y[:-1], ys)
    end, saved = (solution.ts[-1], final), (ts, saved)
    num_steps = solution.stats["num_steps"]
    return run_result(model, params, end, saved, result, num_steps, throw)


def _one_vector(y) -> bool:
    """Whether the state `y` is one array of one dimension (the zonal model's)."""
    return isinstance(y, jax.Array) and y.ndim == 1


def run_result(model, params, end, saved, result, num_steps, throw=False) -> Run:
    """The model's own result of a run (`model.run_result`: the zonal model's
    `ebm.Trajectory`), else the `Run` of `model`: its state `end = (t1, y1)` at
    the end and `saved = (ts, ys)` at the saved times (`(None, None)` for none),
    with each state's surface temperature, global mean, top-of-atmosphere
    imbalance and forcing; with `throw=False`, NaN (and NaN derivatives) unless
    `result` is a success."""
    own = model.run_result(params, end, saved, result, num_steps, throw)
    if own is not None:
        return own
    t1, final = end
    ts, states = saved
    scenario = getattr(model, "forcing", None)
    scenario = scenario if isinstance(scenario, AbstractScenario) else None

    def diagnostics(t, y):
        return (
            model.temperature(t, y, params),
            model.mean_temperature(t, y, params),
            model.toa_imbalance(t, y, params),
            None if scenario is None else scenario(t, params),
        )

    T, global_mean, N, F = diagnostics(t1, final)
    Ts = Ns = Fs = None
    if ts is not None:
        Ts, _, Ns, Fs = jax.vmap(diagnostics)(ts, states)
        states = state_arrays(model, states)
    outputs = (state_arrays(model, final), states, T, Ts, global_mean, N, Ns, F, Fs)
    if not throw:
        outputs = nan_unless_successful(result, outputs, params)
    state, states, T, Ts, global_mean, N, Ns, F, Fs = outputs
    return Run(
        state=state,
        ts=ts,
        states=states,
        T=T,
        Ts=Ts,
        global_mean=global_mean,
        N=N,
        Ns=Ns,
        F=F,
        Fs=Fs,
        variables=model.variables,
        result=result,
        num_steps=jnp.asarray(num_steps),
    )


def check_exact(model: AbstractModel, saveat) -> None:
    """Refuse `solver="exact"` where the model has no exact solution
    (`model.check_exact`) or the run is not saved at given times (or its end).

    **Raises:**

    - `ValueError`: naming what is missing.
    """
    model.check_exact()
    subs = saveat.subs
    if subs.t0 or subs.steps or saveat.dense or subs.fn is not _SAVE_STATE:
        raise ValueError(
            "solver='exact' saves the state at given times and at the end: use "
            "diffrax.SaveAt(ts=...) (without t0, steps, dense or fn)."
        )


_SAVE_STATE = diffrax.SaveAt(t1=True).subs.fn


@eqx.filter_jit
def _integrate_exact(params, years, t0, model, y0, ts) -> Run:
    # Traced arguments, unchecked on the host: reported by their code, with the
    # state computed over a valid run (the saved times clipped to it).
    invalid = run_arguments_result(years, t0, ts)
    years = jnp.where(jnp.isfinite(years) & (years > 0), years, SHORTEST_RUN)
    t0 = jnp.where(jnp.isfinite(t0), t0, 0.0)
    t1 = t0 + years
    save = jnp.zeros(0) if ts is None else jnp.asarray(ts, dtype=float)
    save = jnp.clip(jnp.sort(jnp.where(jnp.isfinite(save), save, t0)), t0, t1)
    saved, final, intervals = model.exact_states(params, y0, t0, t1, save)
    finite = jnp.all(
        jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(final)])
    )
    result = RESULTS.where(finite, RESULTS.successful, RESULTS.nonfinite_state)
    result = RESULTS.where(invalid == RESULTS.successful, result, invalid)
    saved = (None, None) if ts is None else (save, saved)
    return run_result(model, params, (t1, final), saved, result, intervals)
