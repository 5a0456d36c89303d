"""Which diffusivity and longwave parameters fit a noisy profile, and how well?

Makes a synthetic "observed" profile (the default equilibrium plus 0.5 K of noise per
cell), samples the posterior of D, A and B with NUTS through the equilibrium (each
gradient is one implicit linear solve), prints the summary (means, spreads, R-hat,
effective sample sizes, divergences), the posterior of the equilibrium climate
sensitivity for 3.7 W m-2, and the Laplace approximation at the mode, and draws a
corner plot of (A, B, D, ECS) (bayesian_calibration.png).

Run: python examples/bayesian_calibration.py [--fast] [--n-lat 90]
"""

import argparse

import numpy as np

import ebm


def corner(draws, names, truth, path):
    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    n = len(names)
    fig, axes = plt.subplots(n, n, figsize=(2.4 * n, 2.4 * n))
    for row, y in enumerate(names):
        for column, x in enumerate(names):
            ax = axes[row, column]
            if column > row:
                ax.set_visible(False)
                continue
            xs = np.asarray(draws[x]).ravel()
            if row == column:
                ax.hist(xs[np.isfinite(xs)], bins=30, color="C0")
            else:
                ax.scatter(xs, np.asarray(draws[y]).ravel(), s=1, alpha=0.3)
                if y in truth:
                    ax.axhline(truth[y], color="k", lw=0.8)
            if x in truth:
                ax.axvline(truth[x], color="k", lw=0.8)
            if row == n - 1:
                ax.set_xlabel(x)
            if column == 0 and row > 0:
                ax.set_ylabel(y)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="coarse grid, few draws")
    parser.add_argument("--n-lat", type=int, default=90)
    parser.add_argument("--noise", type=float, default=0.5, help="K, per cell")
    parser.add_argument("--plot", default="bayesian_calibration.png")
    arguments = parser.parse_args()
    n_lat = 18 if arguments.fast else arguments.n_lat
    warmup, samples = (100, 100) if arguments.fast else (500, 1000)

    grid, params = ebm.Grid(n_lat), ebm.Params()
    truth = ebm.equilibrium(params, grid=grid)
    rng = np.random.default_rng(0)
    observed = np.asarray(truth.T) + arguments.noise * rng.standard_normal(n_lat)
    priors = {
        "D": ebm.LogNormal(0.5, 0.5),
        "A": ebm.Normal(210.0, 20.0),
        "B": ebm.LogNormal(2.0, 0.3),
    }
    draws = ebm.posterior(
        params,
        observed,
        priors=priors,
        noise=arguments.noise,
        grid=grid,
        num_warmup=warmup,
        num_samples=samples,
        derived=("ecs",),
        progress=True,
    )
    print(draws.summary())
    lo, hi = np.asarray(draws.quantile("ecs", np.array([0.05, 0.95])))
    print(
        f"ECS {float(draws.mean('ecs')):.2f} K (90% interval {lo:.2f} to {hi:.2f} K) "
        "for 3.7 W m-2"
    )
    laplace, _ = draws.laplace()
    values = {name: float(getattr(params, name)) for name in priors}
    for name in priors:
        print(
            f"{name}: posterior std {float(draws.std(name)):.4g}, "
            f"Laplace std {float(laplace[name]):.4g}, true {values[name]}"
        )
    corner(draws, (*priors, "ecs"), values, arguments.plot)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
