r"""Warming projections: parameter draws run through the SSP scenarios.

Each draw of a global layer model's parameters (a posterior's, a weighted prior
ensemble's, an emulated CMIP6 model's) is run from 1750 through
`ebm.SSPForcing(scenario)` (the AR6 historical forcing continued by the scenario),
solved exactly, and its surface warming at the middle of each year from 1850 is
taken relative to the draw's own 1850-1900 mean (`ebm.historical_warming`, as the
calibration against the observed warming takes it). So a projection is the global
surface air temperature change relative to 1850-1900 that AR6's Table SPM.1
assesses; a layer model's surface temperature stands for both GSAT and GMST, which
AR6 takes to differ by under 4 % (Gulev et al. 2021). The table is each period's
mean warming (2021-2040, 2041-2060, 2081-2100 by default), its quantiles over the
draws, weighted where the draws carry weights.

The draws run through `ebm.ensemble` in blocks, one compiled program for every
scenario (their forcing series have the same length).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._results import with_result_names
from .._scenarios.ssp import SSPForcing, check_scenario_name
from .calibration import historical_warming


PERIODS = ((2021, 2040), (2041, 2060), (2081, 2100))
"""AR6's near-term, mid-term and long-term periods (Table SPM.1), calendar years."""

QUANTILES = (0.05, 0.5, 0.95)
"""The quantiles of the table: AR6's very likely range and its median."""

AR6_PROJECTIONS = {
    "ssp119": {
        "2021-2040": (1.2, 1.5, 1.7),
        "2041-2060": (1.2, 1.6, 2.0),
        "2081-2100": (1.0, 1.4, 1.8),
    },
    "ssp126": {
        "2021-2040": (1.2, 1.5, 1.8),
        "2041-2060": (1.3, 1.7, 2.2),
        "2081-2100": (1.3, 1.8, 2.4),
    },
    "ssp245": {
        "2021-2040": (1.2, 1.5, 1.8),
        "2041-2060": (1.6, 2.0, 2.5),
        "2081-2100": (2.1, 2.7, 3.5),
    },
    "ssp370": {
        "2021-2040": (1.2, 1.5, 1.8),
        "2041-2060": (1.7, 2.1, 2.6),
        "2081-2100": (2.8, 3.6, 4.6),
    },
    "ssp585": {
        "2021-2040": (1.3, 1.6, 1.9),
        "2041-2060": (1.9, 2.4, 3.0),
        "2081-2100": (3.3, 4.4, 5.7),
    },
}
"""The IPCC AR6 assessed change in global surface air temperature, K relative to
1850-1900, of each period's 20-year mean: (5 %, best estimate, 95 %), the very
likely range and best estimate of Table SPM.1 (IPCC 2021, Summary for
Policymakers, doi:10.1017/9781009157896.001), from CMIP6 projections constrained by
the observed warming and the assessed ECS and TCR (Lee et al. 2021, Chapter 4)."""


class Projection(eqx.Module):
    """Warming projections of a set of draws (from `ebm.project`).

    **Attributes:**

    - `scenarios`: the scenarios, in order.
    - `time`: the middle of each year from 1850 to `end`, years.
    - `warming`: each draw's warming in each scenario and year, K relative to its
        own 1850-1900 mean, shape `(scenario, draw, time)` (`None` where
        `ebm.project` was asked to keep the periods' means only).
    - `periods`: the periods of `period_means`, `((first, last), ...)`, calendar
        years, inclusive.
    - `period_means`: each draw's mean warming over each period, K, shape
        `(scenario, draw, period)`.
    - `weights`: each draw's weight, summing to one (equal, unless given).
    - `params`: the draws' parameters, each field with a leading `draw` axis.
    - `ok`: whether each draw's runs succeeded (all scenarios); a failed draw has
        weight 0 in the quantiles.
    """

    scenarios: tuple[str, ...] = eqx.field(static=True)
    time: Array
    warming: Array | None
    periods: tuple[tuple[int, int], ...] = eqx.field(static=True)
    period_means: Array
    weights: Array
    params: eqx.Module
    ok: Array

    def __repr__(self) -> str:
        return with_result_names(self)

    def quantiles(self, q=QUANTILES) -> np.ndarray:
        """The weighted quantiles `q` of each scenario's period means over the
        draws, K, shape `(scenario, period, len(q))`."""
        q = np.atleast_1d(np.asarray(q, dtype=float))
        if np.any((q < 0) | (q > 1)):
            raise ValueError(f"`q` must be in [0, 1], got {q}.")
        means = np.asarray(self.period_means)
        weights = np.where(np.asarray(self.ok), np.asarray(self.weights), 0.0)
        out = np.empty((means.shape[0], means.shape[2], q.size))
        for s in range(means.shape[0]):
            for p in range(means.shape[2]):
                out[s, p] = weighted_quantiles(means[s, :, p], weights, q)
        return out

    def table(self, q=QUANTILES) -> list[dict]:
        """One row per scenario: the quantiles `q` of each period's warming, K, as
        AR6's Table SPM.1 gives them (`{"scenario": ..., "2021-2040": [5 %, 50 %,
        95 %], ...}`)."""
        values = self.quantiles(q)
        rows = []
        for s, scenario in enumerate(self.scenarios):
            row = {"scenario": scenario}
            for p, (first, last) in enumerate(self.periods):
                row[f"{first}-{last}"] = [float(v) for v in values[s, p]]
            rows.append(row)
        return rows


def weighted_quantiles(values, weights, q) -> np.ndarray:
    """Quantiles `q` of `values` under `weights` (the midpoints of each value's
    weight, the weighted "Hazen" rule; equal weights give NumPy's default of
    interpolating between order statistics to within one draw), skipping NaN
    values and zero weights."""
    values, weights = np.asarray(values, float), np.asarray(weights, float)
    keep = np.isfinite(values) & (weights > 0)
    if not keep.any():
        return np.full(np.shape(q), np.nan)
    order = np.argsort(values[keep])
    sorted_values, sorted_weights = values[keep][order], weights[keep][order]
    cumulative = (np.cumsum(sorted_weights) - 0.5 * sorted_weights) / np.sum(
        sorted_weights
    )
    return np.interp(q, cumulative, sorted_values)


def projection_task(params, *, model, times, periods):
    """One draw's warming at `times` under `model` (K above its own 1850-1900 mean)
    and its mean over each of `periods` (the masks of `times` within each)."""
    warming = historical_warming(params, model, times)
    means = jnp.sum(periods * warming[None, :], axis=1) / jnp.sum(periods, axis=1)
    return {"warming": warming, "period_means": means}


def project(
    draws,
    scenarios=("ssp119", "ssp126", "ssp245", "ssp370", "ssp585"),
    *,
    model=None,
    weights=None,
    end: int = 2100,
    periods=None,
    keep_runs: bool = True,
    block_size: int = 1024,
    devices=None,
    progress: bool = False,
) -> Projection:
    """Run draws of a global layer model's parameters through SSP scenarios (see
    the module docstring).

    **Arguments:**

    - `draws`: the parameters to project: an `ebm.Posterior` (of
        `ebm.calibrate_historical`: every draw of every chain), an
        `ebm.Emulation` (one emulated CMIP6 model), or the model's `Params`, one
        set or a batch (each field with a leading axis, as `ebm.sweep` and
        `ebm.sample_prior` make).
    - `scenarios`: one scenario name or several, each in `ebm.SSP_SCENARIOS`
        (default the five of AR6's Table SPM.1).
    - `model`: the layer model (default the posterior's, else
        `ebm.TwoLayerModel()`); its forcing is replaced by each scenario's.
    - `weights`: the draws' weights (e.g. `ebm.constrain(...).weights`, or the
        `ebm.Constrained` itself); default equal.
    - `end`: the last year projected (2020-2500; default 2100).
    - `periods`: the periods whose mean warming the table gives, `((first, last),
        ...)`, calendar years within 1850-`end` (default AR6's, `PERIODS`, those
        that end by `end`; else the last twenty years to `end`).
    - `keep_runs`: keep every draw's yearly warming (`Projection.warming`); with
        `False` only the periods' means (for ensembles of millions).
    - `block_size`, `devices`, `progress`: as for `ebm.ensemble`.

    **Returns:**

    An `ebm.Projection`.

    **Raises:**

    - `ValueError`: for an unknown scenario (with the closest name), an `end` or
        a period outside the projection, weights of the wrong length, negative or
        summing to zero, or draws that are not parameters of `model`.
    """
    from .._layers.base import AbstractLayerModel
    from .._layers.two_layer import TwoLayerModel
    from .._model.parameters import AbstractParams
    from .emulate import Emulation
    from .ensemble import ensemble
    from .posterior import Posterior
    from .prior_ensemble import Constrained

    if isinstance(scenarios, str):
        scenarios = (scenarios,)
    scenarios = tuple(check_scenario_name(s) for s in scenarios)
    if not scenarios:
        raise ValueError("`scenarios` must name at least one scenario.")
    if isinstance(draws, Posterior):
        model = draws.log_posterior.problem.model if model is None else model
        params = posterior_params(draws)
    elif isinstance(draws, Emulation):
        params = draws.params
    elif isinstance(draws, AbstractParams):
        params = draws
    else:
        raise TypeError(
            "`draws` must be an ebm.Posterior, an ebm.Emulation or a model's "
            f"Params (one set or a batch), got {type(draws).__name__}."
        )
    model = TwoLayerModel() if model is None else model
    if not isinstance(model, AbstractLayerModel):
        raise TypeError(
            "`model` must be a global layer model (ebm.TwoLayerModel(), "
            f"ebm.NLayerModel(n)), got {type(model).__name__}."
        )
    params = _batch(
        params, eqx.tree_at(lambda m: m.forcing, model, SSPForcing(scenarios[0]))
    )
    count = next(iter(jax.tree.leaves(params))).shape[0]
    if isinstance(weights, Constrained):
        weights = weights.weights
    weights = _check_weights(weights, count)
    if (
        not (isinstance(end, int | np.integer) and not isinstance(end, bool))
        or not 2020 <= end <= 2500
    ):
        raise ValueError(f"`end` must be a whole year within 2020-2500, got {end!r}.")
    time = np.arange(1850, end + 1) + 0.5
    if periods is None:
        periods = [p for p in PERIODS if p[1] <= end] or [(end - 19, end)]
    periods = _check_periods(periods, end)
    masks = jnp.asarray(
        [(time >= first) & (time < last + 1) for first, last in periods], float
    )
    warming, means, ok = [], [], np.ones(count, bool)
    for scenario in scenarios:
        scenario_model = eqx.tree_at(
            lambda m: m.forcing, model, SSPForcing(scenario, end=end)
        )
        run = ensemble(
            params,
            projection_task,
            model=scenario_model,
            times=jnp.asarray(time),
            periods=masks,
            block_size=min(block_size, count),
            devices=devices,
            on_failure="ignore",
            progress=progress,
        )
        ok &= np.asarray(run.ok)
        means.append(np.asarray(run.result["period_means"]))
        if keep_runs:
            warming.append(np.asarray(run.result["warming"]))
    return Projection(
        scenarios=scenarios,
        time=jnp.asarray(time),
        warming=jnp.asarray(np.stack(warming)) if keep_runs else None,
        periods=periods,
        period_means=jnp.asarray(np.stack(means)),
        weights=jnp.asarray(weights),
        params=params,
        ok=jnp.asarray(ok),
    )


def posterior_params(draws):
    """A posterior's every draw (chains flattened) as one batch of its model's
    parameters, the fields it did not sample broadcast."""
    log_posterior = draws.log_posterior
    base = log_posterior.params
    flat = {n: np.asarray(draws[n]).reshape(-1) for n in log_posterior.parameters}
    count = next(iter(flat.values())).size
    return type(base)(
        **{
            n: jnp.asarray(flat[n])
            if n in flat
            else jnp.broadcast_to(
                getattr(base, n), (count, *jnp.shape(getattr(base, n)))
            )
            for n in base.field_names()
        }
    )


def _batch(params, model):
    """`params` as a batch of `model.Params` (a single set becomes a batch of one),
    the parameters of `model`'s forcing scenario that `params` lack (the
    `aerosol_scale` of an `ebm.SSPForcing`, for draws of a model under another
    forcing) at their defaults.

    **Raises:**

    - `ValueError`: for parameters of another model, or fields of unequal batch
        lengths.
    """
    container = model.Params
    given = type(params).field_names()
    scenario = {p.name for p in getattr(model.forcing, "parameters", ())}
    missing = [n for n in container.field_names() if n not in given]
    if any(n not in scenario for n in missing):
        raise ValueError(
            f"The draws are {type(params).__name__}, not the parameters of the "
            f"model ({container.__name__}): they lack "
            f"{', '.join(n for n in missing if n not in scenario)}."
        )
    defaults = container()
    values = {
        n: jnp.asarray(getattr(params if n in given else defaults, n))
        for n in container.field_names()
    }
    lengths = {v.shape[0] for v in values.values() if v.ndim == 1}
    if len(lengths) > 1:
        raise ValueError(
            f"Every field of the draws must have one length, got lengths {lengths}."
        )
    count = lengths.pop() if lengths else 1
    return container(
        **{
            n: jnp.broadcast_to(v, (count,)) if v.ndim == 0 else v
            for n, v in values.items()
        }
    )


def _check_weights(weights, count: int) -> np.ndarray:
    if weights is None:
        return np.full(count, 1.0 / count)
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (count,):
        raise ValueError(
            f"`weights` must have one weight per draw, shape ({count},), got "
            f"{weights.shape}."
        )
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
        raise ValueError("`weights` must be finite and non-negative.")
    total = weights.sum()
    if not total > 0:
        raise ValueError("`weights` must not all be zero.")
    return weights / total


def _check_periods(periods, end: int) -> tuple[tuple[int, int], ...]:
    try:
        periods = tuple((int(a), int(b)) for a, b in periods)
    except (TypeError, ValueError):
        raise ValueError(
            "`periods` must be pairs of years (first, last), e.g. ((2081, 2100),), "
            f"got {periods!r}."
        ) from None
    for first, last in periods:
        if not 1850 <= first <= last <= end:
            raise ValueError(
                f"Each period must be within 1850-{end} (`end`) with first <= last, "
                f"got ({first}, {last})."
            )
    if not periods:
        raise ValueError("`periods` must hold at least one period.")
    return periods


class WarmingGradient(eqx.Module):
    """The gradient of one draw's mean warming over a period (from
    `ebm.warming_gradient`).

    **Attributes:**

    - `warming`: the mean warming over `period`, K above the draw's 1850-1900 mean.
    - `period`: `(first, last)`, calendar years.
    - `params`: d(warming)/d(every parameter), as the model's `Params` (each in K
        per the parameter's units).
    - `time`: the forcing series' times, the middle of each year from 1750, years.
    - `forcing`: d(warming)/d(forcing of each year), K per W m-2: the response of
        the period's warming to a change of one year's annual-mean forcing (the
        series' value at that time, interpolated linearly between times).
    """

    warming: Array
    period: tuple[int, int] = eqx.field(static=True)
    params: eqx.Module
    time: Array
    forcing: Array


def warming_gradient(
    params, scenario: str = "ssp245", *, model=None, period=(2081, 2100)
) -> WarmingGradient:
    """The gradient of a draw's mean warming over `period` under an SSP with
    respect to every parameter and to the forcing of every year, by reverse mode
    through the exact run (one pass for all of them).

    **Arguments:**

    - `params`: one draw of the model's parameters.
    - `scenario`: one of `ebm.SSP_SCENARIOS` (default `"ssp245"`).
    - `model`: the layer model (default `ebm.TwoLayerModel()`); its forcing is
        replaced by the scenario's, to the end of `period`.
    - `period`: `(first, last)`, calendar years within 1850-2500 (default AR6's
        long term, 2081-2100).

    **Returns:**

    An `ebm.WarmingGradient`.

    **Raises:**

    - `ValueError`: for an unknown scenario or a period outside 1850-2500.
    """
    from .._layers.two_layer import TwoLayerModel

    ((first, last),) = _check_periods((period,), 2500)
    end = max(last, 2020)
    model = TwoLayerModel() if model is None else model
    scenario_model = eqx.tree_at(
        lambda m: m.forcing, model, SSPForcing(check_scenario_name(scenario), end=end)
    )
    params = _batch(params, scenario_model)
    if next(iter(jax.tree.leaves(params))).shape[0] != 1:
        raise ValueError("`params` must be one draw, not a batch.")
    params = jax.tree.map(lambda x: x[0], params)
    time = jnp.arange(1850, last + 1) + 0.5
    mask = (time >= first) & (time < last + 1)

    def warming(params, forcing):
        with_forcing = eqx.tree_at(lambda m: m.forcing, scenario_model, forcing)
        run = historical_warming(params, with_forcing, time)
        return jnp.sum(jnp.where(mask, run, 0.0)) / jnp.sum(mask, dtype=float)

    value, (d_params, d_forcing) = jax.value_and_grad(warming, argnums=(0, 1))(
        params, scenario_model.forcing
    )
    # F = rest + s aerosol: a change of one year's forcing is a change of `rest`.
    return WarmingGradient(
        warming=value,
        period=(first, last),
        params=d_params,
        time=scenario_model.forcing.rest.times,
        forcing=d_forcing.rest.values,
    )
