"""A million-member prior ensemble of the two-layer model, constrained by the
observed warming: FaIR's calibration, in one process on a laptop.

Samples the prior of the historical calibration (`historical_calibration.py`: the
feedback parameter, the deep-ocean exchange and efficacy, both heat capacities and
the aerosol forcing's scale factor, each log-normal; F2x fixed at AR6's 3.93 W m-2)
by Latin hypercube, runs every member through the historical period (AR6 ERF,
1750-2019, solved exactly) in blocks (`ebm.ensemble`: memory does not grow with
the member count; a progress bar on stderr), and computes each member's ECS and TCR.
Each member is weighted by the likelihood of the observed warming of 2010-2019
above 1850-1900 (AR6's assessed GMST, shipped with ebm), with AR6's uncertainty of
that warming (its very likely range for 2011-2020, 0.95-1.20 K, is +-1.645 sigma:
sigma = 0.076 K). Prints the prior and constrained ECS and TCR beside AR6's
assessed ranges, the effective sample size, the rejection sample's size, the
members per second and the peak memory, and draws the distributions
(prior_ensemble.png).

Run: python examples/prior_ensemble.py [--members 1000000] [--fast]
"""

import argparse
import resource
import time

import jax
import numpy as np

import ebm


# The same priors, and AR6's ranges, as the NUTS calibration's.
AR6, PRIORS = ebm.AR6_RANGES, ebm.historical_priors()

WARMING_SIGMA = (1.20 - 0.95) / (2 * 1.645)  # K


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--block-size", type=int, default=16_384)
    parser.add_argument("--fast", action="store_true", help="10,000 members")
    parser.add_argument("--plot", default="prior_ensemble.png")
    arguments = parser.parse_args()
    members = 10_000 if arguments.fast else arguments.members

    model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    params = model.Params(F2x=3.93)
    times, observed = ebm.observed_warming(1850, 2019)
    reference, recent = times < 1901, times >= 2010
    target = float(observed[recent].mean() - observed[reference].mean())

    def task(p):
        warming = ebm.historical_warming(p, model, times)  # above 1850-1900
        return {
            "warming": warming[recent].mean(),
            "ecs": ebm.ecs(p, model),
            "tcr": ebm.tcr(p, model),
        }

    began = time.perf_counter()
    prior = ebm.sample_prior(PRIORS, params, members, seed=0)
    sampled = time.perf_counter() - began
    run = ebm.ensemble(
        prior,
        task=task,
        block_size=min(arguments.block_size, members),
        progress=True,
        on_failure="raise",
    )
    outputs = {name: np.asarray(value) for name, value in run.result.items()}
    seconds = time.perf_counter() - began
    weighted = ebm.constrain(
        outputs, {"warming": ebm.Normal(target, WARMING_SIGMA)}, seed=0
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GiB (Linux)

    print(
        f"{members:,} members in {seconds:.1f} s ({members / seconds:,.0f} members/s, "
        f"sampling {sampled:.1f} s, compilation included); peak memory {peak:.2f} GiB"
    )
    print(
        f"observed warming 2010-2019 above 1850-1900: {target:.3f} K "
        f"(sigma {WARMING_SIGMA:.3f} K); effective sample size "
        f"{weighted.effective_size:,.0f}, rejection sample {weighted.num_accepted:,}"
    )
    q = np.array([0.05, 0.17, 0.5, 0.83, 0.95])
    print(f"{'':18s}{'5%':>7s}{'17%':>7s}{'50%':>7s}{'83%':>7s}{'95%':>7s}   AR6")
    for name in ("ecs", "tcr", "warming"):
        prior_q = np.quantile(outputs[name], q)
        constrained = weighted.quantile(outputs[name], q)
        kept = np.quantile(outputs[name][np.asarray(weighted.accepted)], q)
        ranges = AR6.get(name)
        ar6 = (
            f"likely {ranges['likely'][0]}-{ranges['likely'][1]}, very likely "
            f"{ranges['very likely'][0]}-{ranges['very likely'][1]}"
            if ranges
            else f"observed {target:.2f}"
        )
        label = f"{name.upper()} (K)" if name != "warming" else "warming (K)"
        for what, values in (
            ("prior", prior_q),
            ("weighted", constrained),
            ("rejection", kept),
        ):
            row = "".join(f"{v:7.2f}" for v in values)
            note = ar6 if what == "weighted" else ""
            print(f"{label:12s}{what:>10s}{row}   {note}")
    draw(outputs, weighted, target, arguments.plot)
    print(f"wrote {arguments.plot}")


def draw(outputs, weighted, target, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    limits = {"warming": (0.0, 2.5), "ecs": (0.0, 8.0), "tcr": (0.0, 4.0)}
    weights = np.asarray(weighted.weights)
    for ax, name in zip(axes, ("warming", "ecs", "tcr")):
        bins = np.linspace(*limits[name], 81)
        ax.hist(outputs[name], bins, density=True, alpha=0.4, label="prior")
        ax.hist(
            outputs[name], bins, weights=weights, density=True, alpha=0.6,
            label="constrained",
        )  # fmt: skip
        if name in AR6:
            ax.axvspan(*AR6[name]["likely"], color="k", alpha=0.08, label="AR6 likely")
        else:
            ax.axvline(target, color="k", lw=1, label="observed")
        ax.set_xlabel(f"{name.upper() if name != 'warming' else 'warming'} (K)")
        ax.set_yticks([])
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    main()
