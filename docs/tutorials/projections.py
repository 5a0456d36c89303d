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
# # Emulating CMIP6 models and projecting the SSPs
#
# Two questions simple climate models are used for. Which CMIP6 model does a cheap
# model stand in for? And how much warming, by when, under each SSP scenario,
# given what has been observed? This notebook fits the two-layer model to three
# CMIP6 models' abrupt-4xCO2 runs (shipped with ebm, as anomalies from each
# model's pre-industrial control), checks each fit on the same model's 1pctCO2
# run, and then projects the SSPs with a prior ensemble constrained by the
# observed warming. `ebm emulate --all` and `ebm project` (NUTS, four chains of
# 1,000) do the same at full size; [Projections and emulation](../projections.md)
# has their tables.

# %%
import matplotlib.pyplot as plt
import numpy as np

import ebm


names = ("CanESM5", "MIROC6", "INM-CM5-0")
emulations = [ebm.emulate(name) for name in names]
for e in emulations:
    print(
        f"{e.name:10s} ECS {float(e.ecs):4.2f} K (Gregory {float(e.ecs_gregory):4.2f}),"
        f" TCR {float(e.tcr):4.2f} K (its own 1pctCO2: {float(e.tcr_cmip6):4.2f}),"
        f" rmse {float(e.rmse_T):.3f} K and {float(e.rmse_N):.3f} W m-2"
    )

# %% [markdown]
# Each fit maximises the likelihood of the annual means of $T$ and $N$ over all
# 150 years, through the exact solution of the layer model and its gradient: a
# few dozen L-BFGS steps, tens of milliseconds once compiled. The emulator's ECS is
# its $F_{2x}/\lambda$; the Gregory estimate is the regression of the data alone.
# The TCR is out of sample, and where the emulator's runs high, part of the reason
# is the forcing: a CMIP6 model's forcing of quadrupled CO2 is more than twice its
# forcing of doubled CO2, and the fit's $F_{2x}$ is half the former.

# %%
ebm.plot_emulation(emulations[0])
plt.show()

# %% [markdown]
# ## Projections constrained by the observed warming
#
# A prior ensemble of the two-layer model (the priors of the historical
# calibration, and AR6's 3.93 W m-2 for doubled CO2) is run through the historical
# forcing and weighted by the likelihood of the observed warming of 2010-2019
# above 1850-1900, with AR6's uncertainty of it, as FaIR's calibration does; every
# member is then projected through each scenario, and the table is the weighted
# quantiles of each period's mean warming.

# %%
model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
members = ebm.sample_prior(ebm.historical_priors(), model.Params(F2x=3.93), 5000)
times, observed = ebm.observed_warming(1850, 2019)
recent = times >= 2010


def recent_warming(params):
    return ebm.historical_warming(params, model, times)[recent].mean()


runs = ebm.ensemble(members, recent_warming, block_size=5000)
target = observed[recent].mean()
sigma = (1.20 - 0.95) / (2 * 1.645)  # AR6's very likely range for 2011-2020, K
constrained = ebm.constrain(
    {"warming": np.asarray(runs.result)}, {"warming": ebm.Normal(target, sigma)}
)
print(f"effective sample size: {constrained.effective_size:.0f} of {members.F2x.size}")

projection = ebm.project(
    members, ("ssp126", "ssp245", "ssp585"), weights=constrained, block_size=5000
)
for row in projection.table():
    periods = [key for key in row if key != "scenario"]
    cells = "  ".join(
        f"{p} {row[p][1]:.2f} [{row[p][0]:.2f}-{row[p][2]:.2f}]" for p in periods
    )
    print(f"{row['scenario']}: {cells}")

# %% [markdown]
# AR6's assessed 2081-2100 warming (Table SPM.1) is 1.8 [1.3-2.4] K under ssp126,
# 2.7 [2.1-3.5] K under ssp245 and 4.4 [3.3-5.7] K under ssp585. AR6 constrains its
# projections with the assessed ECS and TCR as well as with the observed warming;
# this ensemble has the observed warming alone, which leaves the high end of the
# sensitivity less constrained.

# %%
table = {row["scenario"]: row for row in projection.table()}
for scenario in ("ssp126", "ssp245", "ssp585"):
    low, median, high = table[scenario]["2081-2100"]
    assert low < median < high
assert table["ssp126"]["2081-2100"][1] < table["ssp245"]["2081-2100"][1]
assert table["ssp245"]["2081-2100"][1] < table["ssp585"]["2081-2100"][1]
ebm.plot_projection(projection)
plt.show()
