# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Calibrating against the observed warming
#
# What do 170 years of observed global warming say about the equilibrium climate
# sensitivity (ECS) and the transient climate response (TCR)? This notebook
# calibrates the two-layer model against the IPCC AR6 assessed global mean surface
# temperature, under AR6's historical effective radiative forcing (both shipped
# with ebm; sources and licences in `ebm/data/README.md`), in two ways: by NUTS,
# with the gradient taken through the whole historical run, and as FaIR's users do,
# by weighting a large prior ensemble by the likelihood of an observed warming.
# Chains of 300 draws keep it quick; `ebm calibrate` (or
# `examples/historical_calibration.py`) runs chains of 1,000.

# %%
import matplotlib.pyplot as plt
import numpy as np

import ebm


times, observed = ebm.observed_warming(1850, 2019)
forcing = ebm.forcing_components()
figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5), layout="constrained")
left.plot(times, observed, "k", lw=1)
left.set(xlabel="year", ylabel="warming above 1850-1900 (K)", title="AR6 GMST")
for name in ("total", "co2", "aerosol", "volcanic"):
    right.plot(forcing["time"], forcing[name], lw=1, label=name)
right.set(xlabel="year", ylabel="W m-2", title="AR6 effective radiative forcing")
right.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## The model and its priors
#
# The two-layer model, $C\,\dot T = F - \lambda T - \epsilon\gamma(T - T_d)$,
# $C_d\,\dot T_d = \gamma (T - T_d)$, is driven by `ebm.HistoricalForcing()`:
# AR6's total forcing with its aerosol part scaled by a parameter,
# `aerosol_scale`, the forcing's largest uncertainty. The forcing of doubled CO2
# is held at AR6's 3.93 W m-2, so that ECS $= 3.93/\lambda$. Six parameters are
# sampled, each with a broad log-normal prior, and the noise: internal
# variability, an AR(1) process with lag-1 autocorrelation 0.5 whose innovations'
# standard deviation is sampled too.

# %%
priors = ebm.historical_priors()
for name, prior in priors.items():
    low, high = (float(prior.quantile(q)) for q in (0.05, 0.95))
    print(f"{name:14s} 5-95% of the prior: {low:8.3g} to {high:8.3g}")

# %% [markdown]
# ## NUTS, with the gradient through the run
#
# Every gradient of the log posterior goes through the 270-year historical run,
# solved exactly (`solver="exact"`: the linear system's modes advanced in closed
# form between the forcing's yearly values) and differentiated by JAX. ECS and
# TCR are computed for every draw.

# %%
draws = ebm.calibrate_historical(num_chains=4, num_warmup=300, num_samples=300)
print(draws.summary())
assert max(float(draws.rhat[name]) for name in ("ecs", "tcr")) < 1.05
# A divergence or two, if any, in ECS's far tail (see below).
assert draws.divergences <= 0.01 * draws.num_chains * draws.num_draws

# %% [markdown]
# ECS mixes slowest: where the feedback is small (ECS's long tail) the posterior
# narrows into a ridge along which the efficacy and the deep-ocean exchange trade
# against it, and NUTS's steps, adapted to the bulk, now and then diverge there.
# `calibrate_historical`'s target acceptance of 0.9 (above `ebm.posterior`'s 0.8)
# keeps the steps small enough that divergences are rare.
#
# The posterior predictive warming follows the observations, and the posteriors of
# ECS and TCR sit beside AR6's assessed ranges (shaded: likely and very likely).
# The observed warming constrains TCR far better than ECS: the deep ocean's slow
# response leaves the equilibrium a long extrapolation.

# %%
runs = ebm.predictive_warming(draws, times)
ebm.plot_calibration(draws, runs=runs)
plt.show()
residual = observed - np.median(runs, axis=0)
lag1 = np.corrcoef(residual[1:], residual[:-1])[0, 1]
print(f"lag-1 autocorrelation of the residuals: {lag1:.2f} (assumed 0.5)")
nuts = {
    name: np.nanquantile(np.ravel(draws[name]), [0.05, 0.5, 0.95])
    for name in ("ecs", "tcr")
}
assert 0.3 < lag1 < 0.7

# %% [markdown]
# ## FaIR's way: a prior ensemble, weighted
#
# FaIR's calibration draws a large prior ensemble, runs every member, and keeps
# the members whose outputs agree with observed constraints. Here: 20,000 members
# of the same priors by Latin hypercube, each run through the historical period,
# weighted by the likelihood of one number, the observed warming of 2010-2019 above
# 1850-1900 (1.065 K, with AR6's uncertainty, $\sigma$ = 0.076 K), and a rejection
# sample drawn from the weights.

# %%
model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
reference, recent = times < 1901, times >= 2010
target = float(observed[recent].mean() - observed[reference].mean())


def member(p):
    warming = ebm.historical_warming(p, model, times)  # above 1850-1900
    return {
        "warming": warming[recent].mean(),
        "ecs": ebm.ecs(p, model),
        "tcr": ebm.tcr(p, model),
    }


prior = ebm.sample_prior(priors, model.Params(F2x=3.93), 20_000, seed=0)
outputs = ebm.ensemble(prior, task=member, block_size=5_000, on_failure="raise")
outputs = {name: np.asarray(value) for name, value in outputs.result.items()}
weighted = ebm.constrain(outputs, {"warming": ebm.Normal(target, 0.076)}, seed=0)
print(
    f"observed warming {target:.3f} K; effective sample size "
    f"{weighted.effective_size:,.0f} of 20,000, rejection sample "
    f"{weighted.num_accepted:,}"
)

# %% [markdown]
# The two answers side by side (5 %, 50 % and 95 %):

# %%
print(f"{'':10s}{'prior':>24s}{'weighted':>24s}{'NUTS':>24s}")
for name in ("ecs", "tcr"):
    columns = [
        np.nanquantile(outputs[name], [0.05, 0.5, 0.95]),
        weighted.quantile(outputs[name], [0.05, 0.5, 0.95]),
        nuts[name],
    ]
    print(
        f"{name.upper() + ' (K)':10s}"
        + "".join(f"{'  '.join(f'{v:6.2f}' for v in c):>24s}" for c in columns)
    )
    # Both constrain TCR well inside its prior.
    for constrained in columns[1:]:
        assert constrained[2] - constrained[0] < 0.8 * (columns[0][2] - columns[0][0])

# %% [markdown]
# Both narrow the prior; they are not the same posterior, because they do not use
# the same evidence. The weights use one number, the recent warming; NUTS uses
# the whole series with its year-to-year structure (the cooling after each
# eruption, the mid-century plateau under rising aerosol forcing), which separates
# the aerosol scale from the feedback. The weights cost a run per prior member and
# no gradient, and their effective sample size falls as the constraint tightens;
# NUTS needs the gradient through the run, which ebm provides. With the same
# likelihood the two agree: see [Calibration against
# observations](../observations.md#importance-weights-against-nuts).
