r"""Calibration of a global ocean-layer model against the observed warming.

The bundled observations (`ebm.observed_warming`: the IPCC AR6 assessed global mean
surface temperature, K above 1850-1900) are compared with the model's global-mean
surface temperature under the AR6 historical forcing (`ebm.HistoricalForcing`,
whose aerosol part is scaled by `aerosol_scale`), both taken as anomalies from
their own 1850-1900 mean. The residuals are internal variability: an AR(1) process
from year to year, $r_t = \rho\, r_{t-1} + \sigma \varepsilon_t$, with $\rho$ held
(0.5 by default, the lag-1 autocorrelation of annual global-mean temperature's
departures from the forced response) and $\sigma$ sampled. NUTS samples the
parameters and $\sigma$, with the gradient taken through the whole run (solved
exactly, `solver="exact"`); ECS and TCR are computed for every draw.
"""

import numpy as np

from .._layers.two_layer import TwoLayerModel
from .._scenarios.historical import HistoricalForcing, observed_warming
from .priors import LogNormal


AR6_RANGES = {
    "ecs": {"likely": (2.5, 4.0), "very likely": (2.0, 5.0), "best": 3.0},
    "tcr": {"likely": (1.4, 2.2), "very likely": (1.2, 2.4), "best": 1.8},
}
"""The IPCC AR6 assessed ranges of ECS and TCR, K (Forster et al. 2021, Table 7.13;
the SPM's likely and very likely ranges and best estimates)."""

REFERENCE = (1850.0, 1901.0)
"""The reference period of the anomalies: the mid-years 1850.5 to 1900.5."""


def historical_priors() -> dict:
    """The two-layer model's default priors for a historical calibration: broad
    log-normals (median, log standard deviation 0.5; 0.3 for the efficacy) around
    the values of Geoffroy et al. (2013)'s CMIP5 mean, and around 1 for the scale of
    the aerosol forcing."""
    return {
        "feedback": LogNormal(1.3, 0.5),
        "gamma": LogNormal(0.7, 0.5),
        "C": LogNormal(8.0, 0.5),
        "C_deep": LogNormal(100.0, 0.5),
        "efficacy": LogNormal(1.2, 0.3),
        "aerosol_scale": LogNormal(1.0, 0.5),
    }


def calibrate_historical(
    params=None,
    *,
    model=None,
    start: int = 1850,
    end: int = 2019,
    observed=None,
    priors=None,
    noise=None,
    noise_correlation: float = 0.5,
    num_chains: int = 4,
    num_warmup: int = 500,
    num_samples: int = 1000,
    max_doublings: int = 8,
    target_acceptance: float = 0.9,
    seed: int = 1,
    progress=False,
):
    """The posterior of a global layer model's parameters given the observed
    warming from `start` to `end` (see the module docstring).

    **Arguments:**

    - `params`: the values of the parameters not sampled (default
        `model.Params(F2x=3.93)`, AR6's forcing of doubled CO2, so that ECS =
        3.93 / feedback).
    - `model`: a global layer model driven by `ebm.HistoricalForcing()` (default
        `ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())`).
    - `start`, `end`: the observed years (within 1850-2019, the forcing's span).
    - `observed`: the warming to calibrate against, one value per year from
        `start` to `end`, K above its own 1850-1900 mean (default the bundled
        observations, `ebm.observed_warming(start, end)`): another dataset, or
        synthetic data.
    - `priors`: `{name: prior}` (default `ebm.historical_priors()`, the two-layer
        model's).
    - `noise`: the prior of the innovations' standard deviation, K (default
        `ebm.LogNormal(0.1, 0.5)`).
    - `target_acceptance`: NUTS's target acceptance rate during adaptation
        (default 0.9, above `ebm.posterior`'s 0.8: the posterior narrows into a
        ridge where the feedback is small, in ECS's long tail, where steps adapted
        to the bulk diverge; smaller steps make that rare).
    - `noise_correlation`, `num_chains`, `num_warmup`, `num_samples`,
        `max_doublings`, `seed`, `progress`: as for `ebm.posterior`.

    **Returns:**

    An `ebm.Posterior` with `"ecs"` and `"tcr"` derived for every draw.

    **Raises:**

    - `ValueError`: for a model not driven by `ebm.HistoricalForcing`, years
        outside the observations or the forcing, and as `ebm.posterior`.
    """
    from .posterior import posterior

    model = TwoLayerModel(forcing=HistoricalForcing()) if model is None else model
    if not isinstance(getattr(model, "forcing", None), HistoricalForcing):
        raise ValueError(
            "`model` must be a global layer model driven by ebm.HistoricalForcing() "
            f"(e.g. ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())), got "
            f"{model!r}."
        )
    if end > 2019:
        raise ValueError(
            f"`end` must be at most 2019, the last year of the forcing, got {end!r}."
        )
    params = model.Params(F2x=3.93) if params is None else params
    times, bundled = observed_warming(start, end)
    if observed is None:
        observed = bundled
    elif np.shape(observed) != times.shape:
        raise ValueError(
            f"`observed` must have one value per year from {start} to {end}, shape "
            f"{times.shape}, got shape {np.shape(observed)}."
        )
    return posterior(
        params,
        {"global_mean": observed},
        priors=historical_priors() if priors is None else priors,
        noise=LogNormal(0.1, 0.5) if noise is None else noise,
        through="trajectory",
        times=times,
        model=model,
        solver="exact",
        noise_correlation=noise_correlation,
        anomaly_reference=REFERENCE,
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        max_doublings=max_doublings,
        target_acceptance=target_acceptance,
        derived=("ecs", "tcr"),
        seed=seed,
        progress=progress,
    )


def predictive_warming(draws, times, count: int = 200) -> np.ndarray:
    """The simulated warming (K above its own 1850-1900 mean) at `times` of `count`
    draws of a posterior from `calibrate_historical`, evenly spaced through the
    chains: shape `(count, len(times))`."""
    import jax
    import jax.numpy as jnp

    log_posterior = draws.log_posterior
    model, params = log_posterior.problem.model, log_posterior.params
    flat = {n: np.asarray(draws[n]).ravel() for n in log_posterior.parameters}
    total = next(iter(flat.values())).size
    pick = np.linspace(0, total - 1, min(count, total)).astype(int)
    times = np.asarray(times, dtype=float)
    batch = type(params)(
        **{
            n: jnp.asarray(flat[n][pick])
            if n in flat
            else jnp.broadcast_to(
                getattr(params, n), (pick.size, *jnp.shape(getattr(params, n)))
            )
            for n in params.field_names()
        }
    )

    return np.asarray(
        jax.jit(jax.vmap(lambda p: historical_warming(p, model, times)))(batch)
    )


def historical_warming(params, model=None, times=None):
    """The warming of a global layer model's historical run at `times` (years;
    default the observed years, `ebm.observed_warming(1850, 2019)[0]`), K above its
    own mean over 1850-1900 (the observed times within it), the run solved exactly
    from the forcing's start: what `ebm.calibrate_historical` compares with the
    observations. Differentiable, and `jax.vmap`-able over `params`.

    **Arguments:**

    - `params`: the model's parameters.
    - `model`: a global layer model driven by `ebm.HistoricalForcing()` (default
        `ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())`).
    - `times`: increasing times within the forcing's span, some within 1850-1900.
    """
    import diffrax
    import jax
    import jax.numpy as jnp

    from .._stepping.integrate import integrate

    model = TwoLayerModel(forcing=HistoricalForcing()) if model is None else model
    times = observed_warming(1850, 2019)[0] if times is None else times
    times = jnp.asarray(times, dtype=float)
    reference = (times >= REFERENCE[0]) & (times <= REFERENCE[1])
    # (Checked where the times are known: traced ones, inside `ebm.project`'s
    # ensemble, were checked where they were made.)
    if not isinstance(times, jax.core.Tracer) and not bool(jnp.any(reference)):
        raise ValueError(
            f"`times` must include some within {REFERENCE[0]:g}-{REFERENCE[1]:g}, the "
            "reference period of the warming."
        )
    run = integrate(
        params,
        model=model,
        years=times[-1] - model.forcing.start,
        saveat=diffrax.SaveAt(ts=times),
        solver="exact",
    )
    mean = jnp.sum(jnp.where(reference, run.Ts, 0.0)) / jnp.sum(reference, dtype=float)
    return run.Ts - mean
