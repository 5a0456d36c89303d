"""`ebm.integrate` for a model of the protocol whose state is a PyTree: a run of
the ocean-layer models under a forcing scenario."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PyTree

from .._model.parameters import AbstractParams, check_params
from .._model.protocol import AbstractModel, Variable, state_arrays
from .._results import (
    RESULTS,
    nan_unless_successful,
    raise_if_failed,
    with_result_names,
)
from .scenarios import AbstractScenario, run_start


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
    variables: tuple[Variable, ...] = eqx.field(static=True)
    result: RESULTS
    num_steps: Int[Array, ""]

    def __repr__(self) -> str:
        return with_result_names(self)


def check_model_params(params, model: AbstractModel) -> AbstractParams:
    """`params`, once it is `model.Params` (with its ranges checked)."""
    if not isinstance(params, model.Params):
        raise TypeError(
            f"`params` must be the model's parameters, `model.Params` "
            f"({model.Params.__name__}), got {type(params).__name__}. Build them "
            f"with `model.Params(...)`."
        )
    return check_params(params)


def check_state(model: AbstractModel, params, y, name: str) -> PyTree:
    """`y` as a float state of `model` (its start state where `y` is `None`), once
    it has the structure and shapes of `model.initial_state`."""
    if y is None:
        return model.initial_state(params)
    expected = jax.eval_shape(lambda: model.initial_state(params))
    if isinstance(y, str):
        raise ValueError(
            f"`{name}` must be a state of the model, shaped as "
            f"{jax.tree.map(lambda s: s.shape, expected)}; the branches by name "
            f"('present', 'warm', 'cold') are the zonal model's, got {y!r}."
        )
    got = jax.eval_shape(lambda: jax.tree.map(jnp.asarray, y))
    if jax.tree.structure(got) != jax.tree.structure(expected) or any(
        a.shape != b.shape
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected))
    ):
        raise ValueError(
            f"`{name}` must be a state of the model, shaped as "
            f"{jax.tree.map(lambda s: s.shape, expected)}, got "
            f"{jax.tree.map(lambda s: s.shape, got)}."
        )
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=float), y)


def default_max_steps(model: AbstractModel, params, years) -> int:
    """A step budget from the model's fastest time scale: 16 times the steps of a
    tenth of it, rounded up to a power of two (at least 4096). Generous, since
    nothing caps the steps at that tenth: an implicit solver on the zonal model
    over a deep ocean takes steps of about a twenty-fifth of it where the ice edge
    moves (3,052 for 80 years of 1pctCO2 on 30 cells, against the 2,415 that twice
    the tenth would allow). Where the parameters are traced
    (under `jit`/`vmap`), 16384: enough for centuries at the default tolerances, a
    failure code (`max_steps_reached`) beyond, and, under `vmap` and reverse mode,
    memory that a bound of millions of steps would multiply by the members."""
    try:
        fastest, _ = model.time_scales(params)
        steps = 16.0 * float(years) / (0.1 * float(fastest))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return 2**14
    return int(2 ** max(12, int(np.ceil(np.log2(max(steps, 1.0))))))


def integrate_model(
    params,
    model: AbstractModel,
    *,
    years,
    y0=None,
    t0=None,
    adjoint="recursive",
    solver=None,
    saveat=None,
    stepsize_controller=None,
    dt0=None,
    max_steps=None,
    throw=True,
) -> Run:
    """Integrate a protocol model (see `ebm.integrate`)."""
    from .._stepping.options import _check_positive, resolve_adjoint

    params = check_model_params(params, model)
    _check_positive("years", years)
    scenario = getattr(model, "forcing", None)
    if not isinstance(scenario, AbstractScenario):
        scenario = None  # a model whose time dependence is its own
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
    if scenario is not None and not isinstance(t0, jax.core.Tracer):
        scenario.check_span(float(t0), t0 + years)
    y0 = check_state(model, params, y0, "T0")
    if isinstance(solver, str) and solver == "exact":
        saveat = diffrax.SaveAt(t1=True) if saveat is None else saveat
        check_exact(model, saveat, t0, years)
        run = _integrate_exact(
            params,
            jnp.asarray(years, dtype=float),
            jnp.asarray(t0, dtype=float),
            model,
            y0,
            saveat.subs.ts,
        )
        return raise_if_failed(run, run.result) if throw else run
    adjoint = resolve_adjoint(adjoint)
    if solver is None:
        solver = model.default_solver()
    if stepsize_controller is None:
        # Steps end on the forcing's kinks (a series' times).
        stepsize_controller = diffrax.PIDController(
            rtol=1e-9, atol=1e-9, jump_ts=None if scenario is None else scenario.kinks
        )
    if max_steps is None:
        max_steps = default_max_steps(model, params, years)
    if saveat is None:
        saveat = diffrax.SaveAt(t1=True)
    else:
        saveat = eqx.tree_at(lambda s: s.subs.t1, saveat, True)
    run = _integrate_model(
        params,
        jnp.asarray(years, dtype=float),
        jnp.asarray(t0, dtype=float),
        model,
        y0,
        adjoint,
        solver,
        saveat,
        stepsize_controller,
        dt0,
        max_steps,
        throw,
    )
    if throw:
        run = raise_if_failed(run, run.result)
    return run


@eqx.filter_jit
def _integrate_model(
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
) -> Run:
    from .._stepping.interpolating import InterpolatingAdjoint
    from .._stepping.steppers.flat import FlatModel

    if isinstance(adjoint, InterpolatingAdjoint):
        # The continuous adjoint runs on one vector: the state's leaves, raveled.
        flat = FlatModel.around(model, y0, 0.0)
        field, y_start = flat, flat.flatten(y0)
    else:
        flat, field, y_start = None, model, y0
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(field),
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
        throw=False,
    )
    result = RESULTS.promote(solution.result)
    ys = solution.ys if flat is None else jax.vmap(flat.unflatten)(solution.ys)
    final = jax.tree.map(lambda y: y[-1], ys)
    state = state_arrays(model, final)
    t1 = solution.ts[-1]
    T = model.temperature(t1, final, params)
    global_mean = model.mean_temperature(t1, final, params)
    if saveat.subs.ts is None and not saveat.subs.steps and not saveat.subs.t0:
        ts, states, Ts = None, None, None
    else:
        ts = solution.ts[:-1]
        saved = jax.tree.map(lambda y: y[:-1], ys)
        states = state_arrays(model, saved)
        Ts = jax.vmap(lambda t, y: model.temperature(t, y, params))(ts, saved)
    if not throw:
        state, states, T, Ts, global_mean = nan_unless_successful(
            result, (state, states, T, Ts, global_mean), params
        )
    return Run(
        state=state,
        ts=ts,
        states=states,
        T=T,
        Ts=Ts,
        global_mean=global_mean,
        variables=model.variables,
        result=result,
        num_steps=solution.stats["num_steps"],
    )


def check_exact(model: AbstractModel, saveat, t0, years) -> None:
    """Refuse `solver="exact"` where the run is not a linear layer model's under a
    piecewise-linear forcing saved at given times (or its end).

    **Raises:**

    - `ValueError`: naming what is missing.
    """
    from .base import AbstractLayerModel

    if not isinstance(model, AbstractLayerModel):
        raise ValueError(
            "solver='exact' solves a global layer model (ebm.TwoLayerModel, "
            f"ebm.NLayerModel), which is linear; got {type(model).__name__}."
        )
    if not model.forcing.piecewise_linear:
        raise ValueError(
            "solver='exact' needs a forcing that is linear in time between its "
            f"kinks; {type(model.forcing).__name__} does not declare it "
            "(`piecewise_linear`)."
        )
    subs = saveat.subs
    if subs.t0 or subs.steps or saveat.dense or subs.fn is not _SAVE_STATE:
        raise ValueError(
            "solver='exact' saves the state at given times and at the end: use "
            "diffrax.SaveAt(ts=...) (without t0, steps, dense or fn)."
        )
    ts = subs.ts
    known = not any(isinstance(x, jax.core.Tracer) for x in (ts, t0, years))
    if ts is not None and known:
        ts, t0, t1 = np.asarray(ts), float(t0), float(t0) + float(years)
        if np.any(np.diff(ts) < 0) or ts[0] < t0 or ts[-1] > t1:
            raise ValueError(
                f"The saved times must be increasing and within the run, [{t0:g}, "
                f"{t1:g}] (years), got {ts[0]:g} to {ts[-1]:g}."
            )


_SAVE_STATE = diffrax.SaveAt(t1=True).subs.fn


@eqx.filter_jit
def _integrate_exact(params, years, t0, model, y0, ts) -> Run:
    from .exact import exact_states

    t1 = t0 + years
    save = jnp.zeros(0) if ts is None else jnp.asarray(ts, dtype=float)
    saved, final, intervals = exact_states(
        model, params, model.to_vector(y0), t0, t1, save
    )
    final = model.from_vector(final)
    if ts is None:
        states, Ts = None, None
    else:
        states = jax.vmap(model.from_vector)(saved)
        Ts = jax.vmap(model.surface_temperature)(states)
        states = state_arrays(model, states)
    finite = jnp.all(jnp.isfinite(model.to_vector(final)))
    return Run(
        state=state_arrays(model, final),
        ts=None if ts is None else save,
        states=states,
        T=model.surface_temperature(final),
        Ts=Ts,
        global_mean=model.global_mean(final),
        variables=model.variables,
        result=RESULTS.where(finite, RESULTS.successful, RESULTS.nonfinite_state),
        num_steps=jnp.asarray(intervals),
    )
