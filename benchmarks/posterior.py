"""Effective samples per second of `ebm.posterior`, and simulation-based calibration.

`ess` (default): the posterior of (A, B, D) from a synthetic profile (the default
equilibrium at `--n-lat` cells plus 0.5 K of Gaussian noise; priors
A ~ Normal(210, 20), B ~ LogNormal(2, 0.3), D ~ LogNormal(0.5, 0.5)). The same call
runs twice; the second is timed (after compilation). Writes the effective sample
size per parameter, per second, the R-hat, divergences, failed proposals, gradients
per draw and the Laplace standard deviations to benchmarks/results/posterior.json,
and traces and pairwise scatter plots to benchmarks/results/posterior.png.

`sbc`: simulation-based calibration (Talts et al. 2018). For each of `--datasets`
parameter sets drawn from the prior, a profile is simulated with noise and its
posterior sampled; the rank of the true value among `--keep` thinned draws is
recorded. Under a correct sampler the ranks are uniform; a chi-square test on
`--bins` bins at the 1% level decides per parameter. Writes
benchmarks/results/posterior_sbc.json and posterior_sbc.png (rank histograms).

`ridge`: the shape of the `ess` problem's posterior. From the mode and the
Laplace covariance, the log density (in the parameters' units, relative to the
mode) along each principal axis of the covariance, in its standard deviations,
next to the Gaussian's $-t^2/2$; along the longest axis also B, D and the ice
edge of the equilibrium. Writes benchmarks/results/posterior_ridge.json and
posterior_ridge.png.

With `--transport-noise S` (PW), `ess` observes the heat transport on the cell
bounds too, with noise of standard deviation S, and writes
posterior_transport.json and posterior_transport.png.

Run: python benchmarks/posterior.py [ess|sbc|ridge] [--n-lat 90] [--warmup 500]
     [--samples 1000] [--chains 4] [--datasets 100] [--transport-noise 0.02]
"""

import argparse
import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
from _machine import machine
from jax.scipy.special import gammaincc

import ebm
from ebm._model.parameters import with_values


jax.config.update("jax_enable_x64", True)
RESULTS = pathlib.Path(__file__).parent / "results"
PRIORS = {
    "A": ebm.Normal(210.0, 20.0),
    "B": ebm.LogNormal(2.0, 0.3),
    "D": ebm.LogNormal(0.5, 0.5),
}
NOISE = 0.5


def synthetic(params, grid, seed):
    truth = ebm.equilibrium(params, grid=grid)
    noise = np.random.default_rng(seed).standard_normal(grid.n_lat)
    return truth, np.asarray(truth.T) + NOISE * noise


def ess(arguments) -> dict:
    grid, params = ebm.Grid(arguments.n_lat), ebm.Params()
    truth, observed = synthetic(params, grid, seed=0)
    noise = NOISE
    if arguments.transport_noise is not None:
        model = ebm.EnergyBalanceModel(grid=grid)
        transport = np.asarray(model.heat_transport(truth.T, params))
        rng = np.random.default_rng(5)
        transport = transport + arguments.transport_noise * rng.standard_normal(
            transport.shape
        )
        observed = {"T": observed, "heat_transport": transport}
        noise = {"T": NOISE, "heat_transport": arguments.transport_noise}
    options = dict(
        priors=PRIORS,
        noise=noise,
        grid=grid,
        num_chains=arguments.chains,
        num_warmup=arguments.warmup,
        num_samples=arguments.samples,
    )
    start = time.perf_counter()
    ebm.posterior(params, observed, seed=1, **options)
    first = time.perf_counter() - start
    start = time.perf_counter()
    draws = ebm.posterior(params, observed, seed=2, **options)
    seconds = time.perf_counter() - start
    laplace, _ = draws.laplace()
    row = dict(
        n_lat=arguments.n_lat,
        transport_noise=arguments.transport_noise,
        chains=arguments.chains,
        warmup=arguments.warmup,
        samples=arguments.samples,
        first_call_seconds=first,
        seconds=seconds,
        ess_per_second={n: float(draws.ess[n]) / seconds for n in PRIORS},
        ess={n: float(draws.ess[n]) for n in PRIORS},
        rhat={n: float(draws.rhat[n]) for n in PRIORS},
        mean={n: float(draws.mean(n)) for n in PRIORS},
        std={n: float(draws.std(n)) for n in PRIORS},
        laplace_std={n: float(laplace[n]) for n in PRIORS},
        truth={n: float(getattr(params, n)) for n in PRIORS},
        ecs_mean=float(draws.mean("ecs")),
        ecs_std=float(draws.std("ecs")),
        divergences=draws.divergences,
        failed=draws.failed,
        failed_warmup=draws.failed_warmup,
        acceptance_rate=draws.acceptance_rate,
        gradients_per_draw=draws.num_gradients / (arguments.chains * arguments.samples),
        step_size=np.asarray(draws.step_size).tolist(),
    )
    print(draws.summary())
    print(json.dumps(row, indent=1))
    plot_ess(draws, params, arguments.name)
    return row


def plot_ess(draws, params, name):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = (*PRIORS, "ecs")
    fig, axes = plt.subplots(2, len(names), figsize=(3.2 * len(names), 6))
    for column, name in enumerate(names):
        value = np.asarray(draws[name])
        for chain in value:
            axes[0, column].plot(chain, lw=0.5)
        axes[0, column].set_title(f"trace of {name}")
        axes[0, column].set_xlabel("draw")
        x, y = (name, names[(column + 1) % len(names)])
        axes[1, column].scatter(
            np.asarray(draws[x]).ravel(), np.asarray(draws[y]).ravel(), s=1, alpha=0.3
        )
        if x in PRIORS:
            axes[1, column].axvline(float(getattr(params, x)), color="k", lw=0.8)
        axes[1, column].set_xlabel(x)
        axes[1, column].set_ylabel(y)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{name}.png", dpi=110)


def sbc(arguments) -> dict:
    grid, base = ebm.Grid(arguments.n_lat), ebm.Params()
    rng = np.random.default_rng(7)
    ranks = {n: [] for n in PRIORS}
    skipped = 0
    keys = jax.random.split(jax.random.key(11), arguments.datasets * 4)
    done = 0
    start = time.perf_counter()
    for key in keys:
        if done == arguments.datasets:
            break
        subkeys = jax.random.split(key, len(PRIORS))
        values = {
            n: float(prior.sample(k)) for (n, prior), k in zip(PRIORS.items(), subkeys)
        }
        params = with_values(base, values)
        truth = ebm.equilibrium(params, grid=grid, throw=False)
        # The prior predictive keeps the warm branch, as the sampler does.
        if not bool(truth.converged) or float(truth.ice_edge) <= 0.0:
            skipped += 1
            continue
        observed = np.asarray(truth.T) + NOISE * rng.standard_normal(grid.n_lat)
        try:
            draws = ebm.posterior(
                params,
                observed,
                priors=PRIORS,
                noise=NOISE,
                grid=grid,
                num_chains=arguments.chains,
                num_warmup=arguments.warmup,
                num_samples=arguments.samples,
                seed=done,
                derived=(),
            )
        except ValueError:
            skipped += 1
            continue
        step = max(1, arguments.chains * arguments.samples // arguments.keep)
        for n in PRIORS:
            kept = np.asarray(draws[n]).T.ravel()[::step][: arguments.keep]
            ranks[n].append(int(np.sum(kept < values[n])))
        done += 1
        print(f"{done}/{arguments.datasets} datasets", flush=True)
    seconds = time.perf_counter() - start
    tests = {}
    for n, r in ranks.items():
        counts, _ = np.histogram(r, bins=arguments.bins, range=(0, arguments.keep + 1))
        expected = counts.sum() / arguments.bins
        statistic = float(np.sum((counts - expected) ** 2 / expected))
        p = float(gammaincc(0.5 * (arguments.bins - 1), 0.5 * statistic))
        tests[n] = dict(
            counts=counts.tolist(), chi2=float(statistic), p=float(p), uniform=p > 0.01
        )
    row = dict(
        n_lat=arguments.n_lat,
        datasets=done,
        skipped=skipped,
        keep=arguments.keep,
        chains=arguments.chains,
        warmup=arguments.warmup,
        samples=arguments.samples,
        seconds=seconds,
        tests=tests,
    )
    print(json.dumps(row, indent=1))
    plot_sbc(ranks, arguments)
    return row


def plot_sbc(ranks, arguments):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ranks), figsize=(3.5 * len(ranks), 3))
    for ax, (name, r) in zip(axes, ranks.items()):
        ax.hist(r, bins=arguments.bins, range=(0, arguments.keep + 1))
        ax.axhline(len(r) / arguments.bins, color="k", lw=0.8)
        ax.set_title(f"rank of the true {name}")
    fig.tight_layout()
    fig.savefig(RESULTS / "posterior_sbc.png", dpi=110)


def ridge(arguments) -> dict:
    grid, params = ebm.Grid(arguments.n_lat), ebm.Params()
    _, observed = synthetic(params, grid, seed=0)
    # A short run: only its best draw is used, as the start of the mode's search.
    draws = ebm.posterior(
        params,
        observed,
        priors=PRIORS,
        noise=NOISE,
        grid=grid,
        num_chains=2,
        num_warmup=50,
        num_samples=20,
        derived=(),
    )
    log_posterior = draws.log_posterior
    mode = draws.mode()
    _, covariance = draws.laplace(mode)
    names = log_posterior.names
    centre = np.array([float(mode[n]) for n in names])
    variances, axes = np.linalg.eigh(np.asarray(covariance))

    @jax.jit
    def along(x):
        values = {n: x[i] for i, n in enumerate(names)}
        density = log_posterior.log_density(
            log_posterior.coordinates(values), jacobian=False
        )
        state = ebm.equilibrium(
            log_posterior.with_parameters(values),
            model=log_posterior.model,
            start=log_posterior.start,
            throw=False,
        )
        return density, state.ice_edge

    top, _ = along(jnp.asarray(centre))
    t = np.round(np.linspace(-3.0, 3.0, 61), 10)
    row = dict(
        n_lat=arguments.n_lat,
        mode={n: float(mode[n]) for n in names},
        laplace_std={n: float(np.sqrt(covariance[i, i])) for i, n in enumerate(names)},
        correlation=(
            np.asarray(covariance)
            / np.sqrt(np.outer(np.diag(covariance), np.diag(covariance)))
        ).tolist(),
        t=t.tolist(),
        gaussian=(-0.5 * t**2).tolist(),
        axes=[],
    )
    for k in range(len(names) - 1, -1, -1):
        points = centre + np.outer(t, np.sqrt(variances[k]) * axes[:, k])
        density, edge = jax.vmap(along)(jnp.asarray(points))
        row["axes"].append(
            dict(
                std=float(np.sqrt(variances[k])),
                direction={n: float(axes[i, k]) for i, n in enumerate(names)},
                log_density=[
                    float(d - top) if np.isfinite(d) else None for d in density
                ],
                values={n: points[:, i].tolist() for i, n in enumerate(names)},
                ice_edge=np.asarray(edge).tolist(),
            )
        )
    longest = row["axes"][0]
    for i, ti in enumerate(t):
        d = longest["log_density"][i]
        print(
            f"t={ti:5.2f} B={longest['values']['B'][i]:6.3f} "
            f"D={longest['values']['D'][i]:6.3f} "
            f"ice edge={longest['ice_edge'][i]:6.2f} "
            f"log density={'-inf' if d is None else f'{d:10.2f}'}"
        )
    plot_ridge(row)
    return row


def plot_ridge(row):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.asarray(row["t"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for k, axis in enumerate(row["axes"]):
        density = np.array([np.nan if d is None else d for d in axis["log_density"]])
        left.plot(t, density, label=f"axis {k + 1} (std {axis['std']:.3g})")
    left.plot(t, row["gaussian"], "k--", lw=0.8, label="Gaussian")
    left.set_ylim(-12, 1)
    left.set_xlabel("distance from the mode, Laplace standard deviations")
    left.set_ylabel("log density - log density at the mode")
    left.legend(fontsize=8)
    longest = row["axes"][0]
    right.plot(t, longest["ice_edge"])
    right.set_xlabel("along axis 1, Laplace standard deviations")
    right.set_ylabel("ice edge, degrees latitude")
    fig.tight_layout()
    fig.savefig(RESULTS / "posterior_ridge.png", dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "mode", nargs="?", default="ess", choices=("ess", "sbc", "ridge")
    )
    parser.add_argument("--n-lat", type=int, default=90)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--keep", type=int, default=99)
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--transport-noise", type=float, default=None)
    arguments = parser.parse_args()
    arguments.name = {
        "ess": "posterior_transport" if arguments.transport_noise else "posterior",
        "sbc": "posterior_sbc",
        "ridge": "posterior_ridge",
    }[arguments.mode]
    RESULTS.mkdir(exist_ok=True)
    row = {"ess": ess, "sbc": sbc, "ridge": ridge}[arguments.mode](arguments)
    row["machine"] = machine()
    (RESULTS / f"{arguments.name}.json").write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
