"""The constrained SSP projections of docs/projections.md, every CMIP6 model
emulated, and the gradients of the 2081-2100 warming.

- `projection`: the two-layer model's NUTS posterior given the observed warming
    1850-2019 (`ebm.calibrate_historical`, 4 chains of 1000 draws after 500,
    F2x = 3.93 W m-2), every draw projected through the five SSPs of AR6's Table
    SPM.1 (`ebm.project`): the table (5 %, 50 %, 95 % of each period's mean
    warming), the yearly bands, and the posterior's ECS and TCR; and the table of
    the same draws weighted by AR6's assessed ECS too (`with_assessed_ecs`).
- `emulations`: `ebm.emulate` of every shipped CMIP6 model (two-layer), with the
    chapter's own tunings' misfits (`ebm._analysis.emulate.emulation_table`), and
    the median seconds of one model's fit once compiled.
- `gradient`: `ebm.warming_gradient` of the posterior median's 2081-2100 warming
    under ssp245: with respect to every parameter, and to each year's forcing.

Writes benchmarks/results/ssp_projections.json; `plot_plumes`, `plot_gradient` and
`plot_emulations` draw the docs' figures from it.

Run: python benchmarks/ssp_projections.py [--samples 1000] [--warmup 500]
"""

import argparse
import json
import pathlib
import time

import numpy as np

import ebm


RESULTS = pathlib.Path(__file__).parent / "results"
SCENARIOS = ("ssp119", "ssp126", "ssp245", "ssp370", "ssp585")

# The log-standard deviation of a log-normal of median 3 K whose 5-95 % range is
# AR6's very likely 2-5 K (the mean of its two sides: log(5/3) and log(3/2) over
# 1.645).
ECS_SIGMA = 0.5 * (np.log(5.0 / 3.0) + np.log(3.0 / 2.0)) / 1.645


def projection(samples: int, warmup: int) -> dict:
    from ebm._analysis.project import weighted_quantiles

    model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    started = time.perf_counter()
    draws = ebm.calibrate_historical(
        model.Params(F2x=3.93), model=model, num_samples=samples, num_warmup=warmup
    )
    sampled = time.perf_counter() - started
    started = time.perf_counter()
    projected = ebm.project(draws, SCENARIOS)
    seconds = time.perf_counter() - started
    weights = np.asarray(projected.weights)
    bands = {
        scenario: np.array(
            [
                weighted_quantiles(column, weights, (0.05, 0.5, 0.95))
                for column in np.asarray(projected.warming[s]).T
            ]
        ).tolist()
        for s, scenario in enumerate(SCENARIOS)
    }
    # The same draws weighted by AR6's assessed ECS as well (a log-normal of median
    # 3 K through its very likely range, 2-5 K), as AR6's projections combine the
    # observed warming with the assessed sensitivity.
    ecs = np.asarray(draws["ecs"]).reshape(-1)
    assessed = ebm.constrain({"ecs": ecs}, {"ecs": ebm.LogNormal(3.0, ECS_SIGMA)})
    weighted = ebm.project(draws, SCENARIOS, weights=assessed, keep_runs=False)
    return {
        "draws": int(weights.size),
        "with_assessed_ecs": {
            "table": weighted.table(),
            "effective_size": float(assessed.effective_size),
            "ecs_K": [float(v) for v in assessed.quantile(ecs, [0.05, 0.5, 0.95])],
        },
        "sampling_s": sampled,
        "projection_s": seconds,
        "rhat_max": max(float(draws.rhat[n]) for n in draws.names),
        "ess_min": min(float(draws.ess[n]) for n in draws.names),
        "divergences": int(draws.divergences),
        "ecs_K": [float(v) for v in draws.quantile("ecs", [0.05, 0.5, 0.95])],
        "tcr_K": [float(v) for v in draws.quantile("tcr", [0.05, 0.5, 0.95])],
        "table": projected.table(),
        "ar6": {s: ebm.AR6_PROJECTIONS[s] for s in SCENARIOS},
        "time": np.asarray(projected.time).tolist(),
        "bands": bands,
        "median_params": {
            name: float(np.median(np.asarray(draws[name])))
            for name in draws.log_posterior.parameters
        },
    }


def emulations() -> dict:
    from ebm._analysis.emulate import emulation_table

    names = ebm.cmip6_models()
    fitted, seconds = [], []
    for name in names:
        ebm.emulate(name, throw=False)  # compiles, for a run of a new length
        started = time.perf_counter()
        fitted.append(ebm.emulate(name, throw=False))
        seconds.append(time.perf_counter() - started)
    return {
        "seconds_per_model_median": float(np.median(seconds)),
        "not_converged": [e.name for e in fitted if e.result != ebm.RESULTS.successful],
        "rows": emulation_table(fitted),
    }


def gradient(median: dict) -> dict:
    model = ebm.TwoLayerModel(forcing=ebm.SSPForcing("ssp245"))
    params = model.Params(F2x=3.93, **median)
    result = ebm.warming_gradient(params, "ssp245")
    return {
        "warming_K": float(result.warming),
        "params": {
            name: float(getattr(result.params, name))
            for name in type(result.params).field_names()
        },
        "time": np.asarray(result.time).tolist(),
        "forcing": np.asarray(result.forcing).tolist(),
    }


def plot_plumes(saved: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ebm._edges.plot_projection import _COLOURS

    projection = saved["projection"]
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    time = np.asarray(projection["time"])
    for k, scenario in enumerate(SCENARIOS):
        bands = np.asarray(projection["bands"][scenario])
        colour = _COLOURS[scenario]
        ax.fill_between(time, bands[:, 0], bands[:, 2], color=colour, alpha=0.18, lw=0)
        ax.plot(time, bands[:, 1], color=colour, lw=1.5, label=scenario)
        for first, last in ((2021, 2040), (2041, 2060), (2081, 2100)):
            low, best, high = projection["ar6"][scenario][f"{first}-{last}"]
            x = 0.5 * (first + last + 1) + 1.6 * (k - 2)
            label = "AR6 assessed, Table SPM.1" if k == first - 2021 == 0 else None
            ax.errorbar(
                [x], [best], yerr=[[best - low], [high - best]], fmt="o", ms=3,
                color=colour, label=label,
            )  # fmt: skip
    times, observed = ebm.observed_warming()
    ax.plot(times, observed, color="k", lw=0.8, label="observed (AR6 GMST)")
    ax.set_xlim(1850, 2101)
    ax.set_xlabel("year")
    ax.set_ylabel("warming above 1850-1900 (K)")
    ax.set_title(
        f"two-layer posterior given the observed warming ({projection['draws']} "
        "draws): median and 5-95 %",
        fontsize=10,
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_gradient(saved: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = saved["gradient"]
    fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    ax.plot(result["time"], result["forcing"], color="C0")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.axvspan(1850, 1901, color="0.9", label="reference 1850-1900")
    ax.axvspan(2081, 2101, color="C1", alpha=0.2, label="2081-2100")
    ax.set_xlim(1750, 2101)
    ax.set_xlabel("year of the forcing")
    ax.set_ylabel("d(warming 2081-2100) / d(forcing of the year)\n(K per W m-2)")
    ax.set_title(
        "ssp245, the posterior median: which years' forcing the late-century warming "
        "depends on",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_emulations(saved: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = saved["emulations"]["rows"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3), layout="constrained")
    tcr = np.array([[r["tcr_cmip6_K"], r["tcr_K"]] for r in rows])
    left.plot(tcr[:, 0], tcr[:, 1], "o", ms=4)
    span = [np.nanmin(tcr) * 0.9, np.nanmax(tcr) * 1.1]
    left.plot(span, span, color="0.6", lw=0.8)
    left.set_xlabel("CMIP6 model's TCR, its 1pctCO2 run (K)")
    left.set_ylabel("emulator's TCR, fitted to abrupt-4xCO2 (K)")
    left.set_title(f"{len(rows)} CMIP6 models: TCR out of sample", fontsize=10)
    ours = np.array([[r["rmse_T_K"], r["chapter_rmse_T_K"]] for r in rows])
    flux = np.array([[r["rmse_N_W_m2"], r["chapter_rmse_N_W_m2"]] for r in rows])
    right.plot(ours[:, 1], ours[:, 0], "o", ms=4, label="T (K)")
    right.plot(flux[:, 1], flux[:, 0], "s", ms=4, label="N (W m-2)")
    span = [0.0, np.nanmax(np.concatenate([ours, flux])) * 1.05]
    right.plot(span, span, color="0.6", lw=0.8)
    right.set_xlabel("rmse of AR6 Chapter 7's tuning, run through ebm")
    right.set_ylabel("rmse of ebm's maximum-likelihood fit")
    right.set_title("misfits to abrupt-4xCO2, years 1-150", fontsize=10)
    right.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=500)
    arguments = parser.parse_args()
    from _machine import machine

    saved = {"machine": machine()}
    saved["projection"] = projection(arguments.samples, arguments.warmup)
    for row in saved["projection"]["table"]:
        print(row)
    saved["emulations"] = emulations()
    saved["gradient"] = gradient(saved["projection"]["median_params"])
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "ssp_projections.json"
    path.write_text(json.dumps(saved, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
