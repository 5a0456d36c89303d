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

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._results import RESULTS, raise_if_failed
from .base import AbstractLayerModel
from .exact import exact_states
from .run import check_model_params, default_max_steps
from .scenarios import AbruptCO2, AbstractScenario, OnePercentCO2


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


def _integrals(model, params, ts, weights=None):
    """As `_integrals_jit`, for `ts` a NumPy array of years (exactly, for a layer
    model under a piecewise-linear forcing)."""
    if (
        weights is None
        and isinstance(model, AbstractLayerModel)
        and model.forcing.piecewise_linear
    ):
        return _exact_integrals(model, params, jnp.asarray(ts, dtype=float))
    max_steps = default_max_steps(model, params, float(ts[-1]))
    return _integrals_jit(model, params, jnp.asarray(ts), max_steps, weights)


@eqx.filter_jit
def _integrals_jit(model, params, ts, max_steps, weights=None):
    """`(int_0^t T dt, int_0^t N dt)` (and the weighted warming's integral, with
    `weights`) at each of `ts` (years from the start), from the model's initial
    state, and the run's result code."""
    state = model.initial_state(params)
    start = model.global_mean(state)
    profile = None if weights is None else model.surface_temperature(state)
    integrand = _WithIntegrals(model, start, weights, profile)
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(integrand),
        # The model's own: an explicit solver on a stiff model (the zonal
        # transport of `ebm.DeepOceanModel`) would spend its step budget.
        model.default_solver(),
        t0=0.0,
        t1=ts[-1],
        dt0=None,
        y0=(state, jnp.zeros(2 if weights is None else 3)),
        args=params,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10),
        max_steps=max_steps,
        throw=False,
    )
    _, integrals = solution.ys
    return integrals, RESULTS.promote(solution.result)


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


def tcr(params, model) -> jax.Array:
    """Transient climate response, K (see the module docstring).

    **Arguments:**

    - `params`: the model's parameters (`model.Params`).
    - `model`: an ocean-layer model (`ebm.TwoLayerModel`, `ebm.NLayerModel`); its
        own forcing is replaced by `ebm.OnePercentCO2()`.
    """
    params = check_model_params(params, model)
    return raise_if_failed(*tcr_and_result(params, model))


def tcr_and_result(params, model):
    """`(TCR, result code)`, unchecked (see `ebm.tcr`)."""
    ramp = _scenario(model, OnePercentCO2())
    integrals, result = _integrals(ramp, params, np.array([60.0, 80.0]))
    return (integrals[1, 0] - integrals[0, 0]) / 20.0, result


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


def polar_amplification(params, model, latitude: float = 60.0) -> jax.Array:
    """Polar amplification of the transient warming: the warming of the polar caps
    (poleward of `latitude`, area-weighted, both hemispheres) over the global-mean
    warming, each averaged over years 61-80 of `1pctCO2` (see the module
    docstring). Dimensionless; 1 for a warming uniform in latitude.

    **Arguments:**

    - `params`: the model's parameters (`model.Params`).
    - `model`: a zonal model (`ebm.DeepOceanModel`); its forcing is replaced by
        `ebm.OnePercentCO2()`.
    - `latitude`: where the polar caps begin, degrees (default 60).
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
    integrals, result = _integrals(
        _scenario(model, OnePercentCO2()), params, np.array([60.0, 80.0]), weights
    )
    change = integrals[1] - integrals[0]
    return raise_if_failed(change[2] / change[0], result)


def heat_uptake_efficiency(params, model) -> jax.Array:
    """Ocean heat uptake efficiency `N / T` over years 61-80 of `1pctCO2`, W m-2
    K-1 (see the module docstring)."""
    params = check_model_params(params, model)
    integrals, result = _integrals(
        _scenario(model, OnePercentCO2()), params, np.array([60.0, 80.0])
    )
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


def gregory(params, model, years: int = 150) -> Gregory:
    """Gregory regression over years 1-`years` of `abrupt-4xCO2` (see the module
    docstring).

    **Arguments:**

    - `params`, `model`: as for `ebm.tcr`; the model's forcing is replaced by
        `ebm.AbruptCO2(4.0)`.
    - `years`: the years regressed (default 150, CMIP's), an integer >= 2.
    """
    from .._checks import check_count

    params = check_model_params(params, model)
    check_count("years", years, 2)
    ts = np.arange(1.0, years + 1.0)
    integrals, result = _integrals(_scenario(model, AbruptCO2(4.0)), params, ts)
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
    """
    params = check_model_params(params, model)
    return raise_if_failed(*ecs_and_result(params, model))


def ecs_and_result(params, model):
    """`(ECS, result code)`, unchecked (see `ebm.ecs`)."""
    return _ecs(_scenario(model, AbruptCO2(2.0)), params)


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
    return warming, RESULTS.promote(solution.result)
