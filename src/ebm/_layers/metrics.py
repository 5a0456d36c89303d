r"""The numbers the field reports for a model, each differentiable with respect to
every parameter.

- `ecs`: equilibrium climate sensitivity, K: the steady surface warming under the
    forcing of doubled CO2, $F_{2x}$, by a root-find differentiated implicitly.

Every warming is the global mean's change from the model's start state (the
pre-industrial one: zero for the ocean layers, the surface model's equilibrium
for `ebm.DeepOceanModel`).
- `tcr`: transient climate response, K: the surface warming averaged over years
    61-80 of `1pctCO2` (CMIP's convention; CO2 doubles at year 69.7), i.e.
    $\frac{1}{20}\int_{60}^{80} T\,dt$.
- `gregory`: the regression of the annual-mean top-of-atmosphere imbalance $N$ on
    the annual-mean warming $T$ over years 1-150 of `abrupt-4xCO2` (Gregory et al.
    2004): its intercept (the effective forcing of quadrupled CO2), slope (minus the
    effective feedback parameter) and the effective climate sensitivity, minus
    intercept over slope, halved (CMIP papers' convention).
- `heat_uptake_efficiency`: $\kappa = N / T$ averaged over years 61-80 of
    `1pctCO2`, W m-2 K-1.
- `polar_amplification` (zonal models): the warming of the polar caps (poleward of
    60 degrees, area-weighted, both hemispheres) over the global-mean warming, each
    averaged over years 61-80 of `1pctCO2`.

Annual means are exact: the run carries the integrals $\int T\,dt$ and
$\int N\,dt$ as two more state variables, read at whole years. For the global
layer models (`ebm.TwoLayerModel`, `ebm.NLayerModel`), linear under the CMIP
experiments' piecewise-linear forcing, the run and its integrals are the exact
solution (`ebm._layers.exact`): one matrix exponential per interval, so a metric of
an ensemble member costs microseconds; the others are integrated by diffrax to a
relative tolerance of 1e-10.
"""

import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._checks import check_count, known_value
from .._results import RESULTS, raise_if_failed
from .._scenarios.base import AbruptCO2, AbstractScenario, OnePercentCO2
from .._stepping.options import MODEL_SOLVERS, resolve_model_solver
from .._stepping.run import check_model_params, default_max_steps, known_time_scales
from .base import AbstractLayerModel
from .exact import exact_states


class _WithIntegrals(eqx.Module):
    """The model's tendency, with `d/dt (int T dt, int N dt) = (T, N)`, `T` the
    global-mean warming from `start` (the start state's global mean); with
    `weights`, a third integral of the surface warming's mean under those weights
    (which sum to one)."""

    model: eqx.Module
    start: jax.Array
    weights: jax.Array | None = None
    start_profile: jax.Array | None = None

    def __call__(self, t, y, params):
        state, _ = y
        rates = [
            self.model.global_mean(state) - self.start,
            self.model.toa_imbalance(t, state, params),
        ]
        if self.weights is not None:
            warming = self.model.surface_temperature(state) - self.start_profile
            rates.append(jnp.sum(self.weights * warming))
        return self.model(t, state, params), jnp.stack(rates)


def _integrals(model, params, ts, weights=None, options=None):
    """As `_integrals_jit`, for `ts` a NumPy array of years (exactly, for a layer
    model under a piecewise-linear forcing unless `options` name another solver).

    `options` are the run's `solver`, `stepsize_controller` and `max_steps`, as
    `ebm.integrate` takes them (each default where missing or `None`)."""
    options = RunOptions() if options is None else options
    if (
        weights is None
        and options.solver in (None, "exact")
        and isinstance(model, AbstractLayerModel)
        and model.forcing.piecewise_linear
    ):
        integrals, result = _exact_integrals(model, params, jnp.asarray(ts, float))
        return integrals, result, None
    if options.solver == "exact":
        raise ValueError(
            "solver='exact' solves a global layer model under a piecewise-linear "
            f"forcing; {type(model).__name__} is integrated by diffrax: use "
            f"solver=None (its default), one of {tuple(MODEL_SOLVERS)} or a "
            "diffrax solver."
        )
    scales = known_time_scales(model, params)
    solver = resolve_model_solver(options.solver, model, scales, float(ts[-1]))
    max_steps = options.max_steps
    if max_steps is None:
        max_steps = default_max_steps(model, params, float(ts[-1]), solver, scales)
    else:
        check_count("max_steps", max_steps, 1)
    controller = options.stepsize_controller
    if controller is None:
        controller = diffrax.PIDController(rtol=1e-10, atol=1e-10)
    return _integrals_jit(
        model, params, jnp.asarray(ts), solver, controller, max_steps, weights
    )


class RunOptions(eqx.Module):
    """How a metric's run is solved (see `ebm.integrate`): `solver` (a name or a
    diffrax solver; `None` for the model's default, exact for a layer model),
    `stepsize_controller` (default `PIDController(rtol=1e-10, atol=1e-10)`) and
    `max_steps` (default from the model's time scales and the run's length)."""

    solver: object = None
    stepsize_controller: object = None
    max_steps: int | None = None


@eqx.filter_jit
def _integrals_jit(model, params, ts, solver, controller, max_steps, weights=None):
    """`(int_0^t T dt, int_0^t N dt)` (and the weighted warming's integral, with
    `weights`) at each of `ts` (years from the start), from the model's initial
    state, and the run's result code."""
    state = model.initial_state(params)
    start = model.global_mean(state)
    profile = None if weights is None else model.surface_temperature(state)
    integrand = _WithIntegrals(model, start, weights, profile)
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(integrand),
        solver,
        t0=0.0,
        t1=ts[-1],
        dt0=None,
        y0=(state, jnp.zeros(2 if weights is None else 3)),
        args=params,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        max_steps=max_steps,
        throw=False,
    )
    states, integrals = solution.ys
    # The ice edge at the start and the end (NaN for a model without sea ice).
    edges = jnp.stack(
        [
            _edge(model, 0.0, state, params),
            _edge(model, ts[-1], jax.tree.map(lambda y: y[-1], states), params),
        ]
    )
    return integrals, RESULTS.promote(solution.result), edges


def _edge(model, t, y, params):
    edge = model.ice_edge_latitude(t, y, params)
    return jnp.asarray(jnp.nan if edge is None else edge, dtype=float)


class RegimeChangeWarning(UserWarning):
    """A metric's run or steady state ended in another regime of the ice than it
    started in (the ice cap lost or gained, or a snowball): the metric then
    measures the jump across a fold of the model's branch of steady states, not
    the response of one climate."""


def _regime(edge: float) -> str:
    """The ice's regime at the ice edge `edge`, degrees north."""
    if edge >= 90.0 - 1e-9:
        return "no ice"
    if edge <= 1e-9:
        return "ice to the equator"
    return "an ice cap"


def _described(edge: float) -> str:
    regime = _regime(edge)
    return (
        f"{regime} (edge at {edge:.3g} degrees N)" if regime == "an ice cap" else regime
    )


def warn_on_regime_change(edges, what: str) -> None:
    """Warn (`RegimeChangeWarning`) where the ice edges `(start, end)` (degrees
    north, known values; NaN or `None` for a model without sea ice) are in
    different regimes: no ice, an ice cap, ice to the equator."""
    values = None if edges is None else known_value(edges)
    if values is None:
        return
    start, end = (float(v) for v in np.asarray(values))
    if not (np.isfinite(start) and np.isfinite(end)):
        return
    if _regime(start) != _regime(end):
        warnings.warn(
            f"{what} starts with {_described(start)} and ends with "
            f"{_described(end)}: "
            "it crosses a fold of the model's steady states (the ice-albedo "
            "feedback's jump), so it is not the response of one climate. Look at "
            "the run (ebm.integrate) or the branch (ebm.continuation).",
            RegimeChangeWarning,
            stacklevel=3,
        )


@eqx.filter_jit
def _exact_integrals(model, params, ts):
    """As `_integrals_jit`, by the exact solution of the linear layer model with
    the integrals of its warming and imbalance in the augmented state; the result
    code says whether they are finite."""
    y0 = model.to_vector(model.initial_state(params))
    zero = jnp.zeros_like(y0)

    def warming(v):
        return model.global_mean(model.from_vector(v))

    def imbalance_less_forcing(v):
        state = model.from_vector(v)
        return model.toa_imbalance(0.0, state, params) - model.forcing(0.0, params)

    # Both linear in the layers' temperatures: their gradients are their rows.
    rows = jnp.stack([jax.grad(warming)(zero), jax.grad(imbalance_less_forcing)(zero)])
    outputs = (rows, jnp.array([0.0, 1.0]))
    t0 = jnp.zeros((), ts.dtype)
    saved, _, _ = exact_states(model, params, y0, t0, ts[-1], ts, outputs)
    integrals = saved[:, y0.shape[0] :]
    # The warming is from the start state's global mean.
    integrals = integrals.at[:, 0].add(-warming(y0) * ts)
    finite = jnp.all(jnp.isfinite(integrals))
    result = RESULTS.where(finite, RESULTS.successful, RESULTS.nonfinite_state)
    return integrals, result


def _scenario(model, scenario):
    """`model` under `scenario` instead of its own forcing scenario.

    **Raises:**

    - `TypeError`: for a model without a forcing scenario.
    """
    if not isinstance(getattr(model, "forcing", None), AbstractScenario):
        raise TypeError(
            "ECS, TCR, the Gregory regression, the heat uptake efficiency and the "
            "polar amplification are of a model under a forcing scenario (the "
            "ocean-layer models, ebm.DeepOceanModel); "
            f"{type(model).__name__} has none."
        )
    return eqx.tree_at(lambda m: m.forcing, model, scenario)


def tcr(
    params, model, *, solver=None, stepsize_controller=None, max_steps=None
) -> jax.Array:
    """Transient climate response, K (see the module docstring).

    **Arguments:**

    - `params`: the model's parameters (`model.Params`).
    - `model`: a model under a forcing scenario (`ebm.TwoLayerModel`,
        `ebm.NLayerModel`, `ebm.DeepOceanModel`); its own forcing is replaced by
        `ebm.OnePercentCO2()`.
    - `solver`, `stepsize_controller`, `max_steps`: how the run is solved, as
        `ebm.integrate` takes them (default: exactly for a layer model; else the
        model's solver at `rtol = atol = 1e-10`, with a step budget from the
        model's time scales and the run's length).

    **Warns:**

    - `ebm.RegimeChangeWarning`: where the run loses or gains the ice cap.
    """
    params = check_model_params(params, model)
    options = RunOptions(solver, stepsize_controller, max_steps)
    value, result, edges = _tcr(params, model, options)
    warn_on_regime_change(edges, "The 1pctCO2 run of TCR")
    return raise_if_failed(value, result)


def tcr_and_result(params, model):
    """`(TCR, result code)`, unchecked (see `ebm.tcr`)."""
    value, result, _ = _tcr(params, model, RunOptions())
    return value, result


def _tcr(params, model, options):
    ramp = _scenario(model, OnePercentCO2())
    integrals, result, edges = _integrals(
        ramp, params, np.array([60.0, 80.0]), options=options
    )
    return (integrals[1, 0] - integrals[0, 0]) / 20.0, result, edges


def polar_weights(grid, latitude: float = 60.0) -> jax.Array:
    """Area weights of the polar caps, poleward of `latitude` in both hemispheres,
    on `grid`'s cells: each cell's area within a cap over the caps' area (a cell
    that the circle crosses counts in part), summing to one."""
    from .._checks import check_threshold

    check_threshold("latitude", latitude)
    if not 0.0 < latitude < 90.0:
        raise ValueError(f"`latitude` must be in (0, 90) degrees, got {latitude!r}.")
    bounds = np.sin(np.deg2rad(np.asarray(grid.lat_bounds)))
    edge = np.sin(np.deg2rad(latitude))
    north = np.clip(bounds[1:], edge, 1.0) - np.clip(bounds[:-1], edge, 1.0)
    south = np.clip(-bounds[:-1], edge, 1.0) - np.clip(-bounds[1:], edge, 1.0)
    caps = north + south
    return jnp.asarray(caps / caps.sum())


def polar_amplification(
    params,
    model,
    latitude: float = 60.0,
    *,
    solver=None,
    stepsize_controller=None,
    max_steps=None,
) -> jax.Array:
    """Polar amplification of the transient warming: the warming of the polar caps
    (poleward of `latitude`, area-weighted, both hemispheres) over the global-mean
    warming, each averaged over years 61-80 of `1pctCO2` (see the module
    docstring). Dimensionless; 1 for a warming uniform in latitude.

    **Arguments:**

    - `params`: the model's parameters (`model.Params`).
    - `model`: a zonal model (`ebm.DeepOceanModel`); its forcing is replaced by
        `ebm.OnePercentCO2()`.
    - `latitude`: where the polar caps begin, degrees (default 60).
    - `solver`, `stepsize_controller`, `max_steps`: as for `ebm.tcr`.

    **Warns:**

    - `ebm.RegimeChangeWarning`: where the run loses or gains the ice cap.
    """
    grid = getattr(getattr(model, "surface", None), "grid", None)
    if grid is None:
        raise TypeError(
            "`polar_amplification` needs a zonal model with a surface grid "
            f"(ebm.DeepOceanModel), got {type(model).__name__}, whose state has "
            "one global temperature."
        )
    weights = polar_weights(grid, latitude)
    params = check_model_params(params, model)
    integrals, result, edges = _integrals(
        _scenario(model, OnePercentCO2()),
        params,
        np.array([60.0, 80.0]),
        weights,
        RunOptions(solver, stepsize_controller, max_steps),
    )
    warn_on_regime_change(edges, "The 1pctCO2 run of the polar amplification")
    change = integrals[1] - integrals[0]
    return raise_if_failed(change[2] / change[0], result)


def heat_uptake_efficiency(
    params, model, *, solver=None, stepsize_controller=None, max_steps=None
) -> jax.Array:
    """Ocean heat uptake efficiency `N / T` over years 61-80 of `1pctCO2`, W m-2
    K-1 (see the module docstring).

    **Arguments:**

    - `params`, `model`, `solver`, `stepsize_controller`, `max_steps`: as for
        `ebm.tcr`.

    **Warns:**

    - `ebm.RegimeChangeWarning`: where the run loses or gains the ice cap.
    """
    params = check_model_params(params, model)
    integrals, result, edges = _integrals(
        _scenario(model, OnePercentCO2()),
        params,
        np.array([60.0, 80.0]),
        options=RunOptions(solver, stepsize_controller, max_steps),
    )
    warn_on_regime_change(edges, "The 1pctCO2 run of the heat uptake efficiency")
    change = integrals[1] - integrals[0]
    return raise_if_failed(change[1] / change[0], result)


class Gregory(eqx.Module):
    """The Gregory regression of `abrupt-4xCO2` (from `ebm.gregory`).

    **Attributes:**

    - `T`, `N`: annual means of each year, K and W m-2.
    - `forcing`: the intercept, the effective forcing of quadrupled CO2, W m-2.
    - `feedback`: minus the slope, the effective feedback parameter, W m-2 K-1.
    - `effective_sensitivity`: `forcing / feedback / 2`, K.
    """

    T: jax.Array
    N: jax.Array
    forcing: jax.Array
    feedback: jax.Array
    effective_sensitivity: jax.Array


def gregory(
    params,
    model,
    years: int = 150,
    *,
    solver=None,
    stepsize_controller=None,
    max_steps=None,
) -> Gregory:
    """Gregory regression over years 1-`years` of `abrupt-4xCO2` (see the module
    docstring).

    **Arguments:**

    - `params`, `model`: as for `ebm.tcr`; the model's forcing is replaced by
        `ebm.AbruptCO2(4.0)`.
    - `years`: the years regressed (default 150, CMIP's), an integer >= 2.
    - `solver`, `stepsize_controller`, `max_steps`: as for `ebm.tcr`.

    **Warns:**

    - `ebm.RegimeChangeWarning`: where the run loses or gains the ice cap.
    """
    params = check_model_params(params, model)
    check_count("years", years, 2)
    ts = np.arange(1.0, years + 1.0)
    integrals, result, edges = _integrals(
        _scenario(model, AbruptCO2(4.0)),
        params,
        ts,
        options=RunOptions(solver, stepsize_controller, max_steps),
    )
    warn_on_regime_change(edges, "The abrupt-4xCO2 run of the Gregory regression")
    integrals = jnp.concatenate([jnp.zeros((1, 2)), integrals])
    annual = jnp.diff(integrals, axis=0)
    T, N = annual[:, 0], annual[:, 1]
    T_mean, N_mean = jnp.mean(T), jnp.mean(N)
    slope = jnp.sum((T - T_mean) * (N - N_mean)) / jnp.sum((T - T_mean) ** 2)
    intercept = N_mean - slope * T_mean
    out = Gregory(
        T=T,
        N=N,
        forcing=intercept,
        feedback=-slope,
        effective_sensitivity=-intercept / slope / 2.0,
    )
    return raise_if_failed(out, result)


def ecs(params, model) -> jax.Array:
    """Equilibrium climate sensitivity, K: the steady surface warming under
    `F2x` (see the module docstring), by Newton's method on the model's tendency,
    differentiated implicitly.

    **Arguments:**

    - `params`, `model`: as for `ebm.tcr`; the model's forcing is replaced by
        `ebm.AbruptCO2(2.0)`.

    **Warns:**

    - `ebm.RegimeChangeWarning`: where the steady state has lost or gained the
        start's ice cap.
    """
    params = check_model_params(params, model)
    value, result, edges = _ecs(_scenario(model, AbruptCO2(2.0)), params)
    warn_on_regime_change(edges, "The warm steady state of ECS")
    return raise_if_failed(value, result)


def ecs_and_result(params, model):
    """`(ECS, result code)`, unchecked (see `ebm.ecs`)."""
    value, result, _ = _ecs(_scenario(model, AbruptCO2(2.0)), params)
    return value, result


@eqx.filter_jit
def _ecs(model, params):
    def tendency(y, params):
        return model(0.0, y, params)

    start = model.initial_state(params)
    solution = optx.root_find(
        tendency,
        optx.Newton(rtol=1e-12, atol=1e-12),
        start,
        args=params,
        throw=False,
    )
    # Warming from the start state (the pre-industrial one), not its temperature.
    warming = model.global_mean(solution.value) - model.global_mean(start)
    edges = jnp.stack(
        [_edge(model, 0.0, start, params), _edge(model, 0.0, solution.value, params)]
    )
    return warming, RESULTS.promote(solution.result), edges
