"""Simulation-based calibration (Talts et al. 2018) of NUTS on the historical problem.

The problem is `ebm.calibrate_historical`'s: the two-layer model under AR6's
historical forcing, six parameters and the noise's standard deviation, AR(1)
residuals with lag-1 autocorrelation 0.5, 1850-2019. Each replication draws
"true" parameters and noise from the priors, simulates the observed warming from
them (the model's warming above its own 1850-1900 mean plus a stationary AR(1)
series), samples the posterior given those data, and records the rank of each
true value among `--keep` posterior draws taken evenly from the chains. If the
sampler (and the likelihood it is given) is right, each rank is uniform on
0..keep: the figure shows their histograms, and the JSON a chi-square test of
uniformity over 10 bins per quantity (ECS and TCR included), the worst R-hat, the
smallest ESS and the divergences of every replication, and the time.

Writes benchmarks/results/sbc_historical.json and .png.

Run: python benchmarks/sbc_historical.py [--replications 100] [--chains 2]
    [--warmup 200] [--samples 200] [--keep 99] [--max-doublings 6]
"""

import argparse
import json
import pathlib
import sys
import time


RESULTS = pathlib.Path(__file__).parent / "results"
BINS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--keep", type=int, default=99)
    parser.add_argument("--max-doublings", type=int, default=6)
    arguments = parser.parse_args()
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import jax
    import jax.numpy as jnp
    import numpy as np
    from _machine import machine
    from scipy import stats

    import ebm

    model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    params = model.Params(F2x=3.93)
    priors = ebm.historical_priors()
    noise_prior = ebm.LogNormal(0.1, 0.5)
    rho = 0.5
    times, _ = ebm.observed_warming(1850, 2019)

    @jax.jit
    def simulate(p):
        return ebm.historical_warming(p, model, times), ebm.tcr(p, model)

    rng = np.random.default_rng(0)
    names = (*priors, "noise_global_mean", "ecs", "tcr")
    ranks = {name: [] for name in names}
    rows = []
    began = time.perf_counter()
    for replication in range(arguments.replications):
        u = rng.random(len(priors) + 1)
        truth = {
            name: float(prior.quantile(jnp.asarray(x)))
            for (name, prior), x in zip(priors.items(), u)
        }
        sigma = float(noise_prior.quantile(jnp.asarray(u[-1])))
        true_params = params.__class__(
            **{n: truth.get(n, getattr(params, n)) for n in params.field_names()}
        )
        warming, tcr = simulate(true_params)
        noise = np.empty(times.size)
        noise[0] = rng.normal(0.0, sigma / np.sqrt(1 - rho**2))
        for k in range(1, times.size):
            noise[k] = rho * noise[k - 1] + rng.normal(0.0, sigma)
        observed = np.asarray(warming) + noise
        truth |= {
            "noise_global_mean": sigma,
            "ecs": 3.93 / truth["feedback"],
            "tcr": float(tcr),
        }
        start = time.perf_counter()
        draws = ebm.calibrate_historical(
            params,
            model=model,
            observed=observed,
            noise_correlation=rho,
            num_chains=arguments.chains,
            num_warmup=arguments.warmup,
            num_samples=arguments.samples,
            max_doublings=arguments.max_doublings,
            seed=replication,
        )
        seconds = time.perf_counter() - start
        total = arguments.chains * arguments.samples
        pick = np.linspace(0, total - 1, arguments.keep).astype(int)
        for name in names:
            kept = np.asarray(draws[name]).ravel()[pick]
            ranks[name].append(int(np.sum(kept < truth[name])))
        rows.append(
            dict(
                seconds=seconds,
                rhat_max=max(float(draws.rhat[n]) for n in draws.names),
                ess_min=min(float(draws.ess[n]) for n in draws.names),
                divergences=int(draws.divergences),
            )
        )
        print(
            f"{replication + 1}/{arguments.replications}: {seconds:.1f} s, R-hat "
            f"{rows[-1]['rhat_max']:.3f}, ESS {rows[-1]['ess_min']:.0f}, "
            f"{rows[-1]['divergences']} divergences",
            flush=True,
        )
    uniformity = {}
    for name in names:
        counts = np.histogram(ranks[name], bins=BINS, range=(0, arguments.keep + 1))[0]
        test = stats.chisquare(counts)
        uniformity[name] = dict(
            counts=counts.tolist(), chi2=float(test.statistic), p=float(test.pvalue)
        )
        print(f"{name:18s} chi2 {test.statistic:6.1f}, p {test.pvalue:.3f}")
    RESULTS.mkdir(exist_ok=True)
    record = dict(
        machine=machine(),
        command="python benchmarks/sbc_historical.py " + " ".join(sys.argv[1:]),
        settings=vars(arguments),
        seconds=time.perf_counter() - began,
        uniformity=uniformity,
        ranks=ranks,
        replications=rows,
    )
    path = RESULTS / "sbc_historical.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    plot(ranks, uniformity, vars(arguments), RESULTS / "sbc_historical.png")
    print(f"wrote {path}")


def plot(ranks, uniformity, settings, path) -> None:
    """The rank histograms, from the JSON's `ranks`, `uniformity` and `settings`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from scipy import stats

    names = list(ranks)
    fig, axes = plt.subplots(
        2, (len(names) + 1) // 2, figsize=(13, 5.5), layout="constrained"
    )
    replications, keep = settings["replications"], settings["keep"]
    expected = replications / BINS
    # The 99% band of one bin's count under uniformity (binomial).
    low, high = stats.binom.ppf([0.005, 0.995], replications, 1 / BINS)
    for ax, name in zip(np.ravel(axes), names):
        ax.hist(ranks[name], bins=BINS, range=(0, keep + 1), color="C0")
        ax.axhspan(low, high, color="0.85", zorder=-1)
        ax.axhline(expected, color="k", lw=0.8)
        ax.set_title(f"{name} (p = {uniformity[name]['p']:.2f})", fontsize=9)
        ax.set_yticks([])
    for ax in np.ravel(axes)[len(names) :]:
        ax.set_axis_off()
    fig.suptitle(
        f"rank of the true value among {keep} posterior draws, "
        f"{replications} replications (grey: 99% band of a uniform bin)"
    )
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
