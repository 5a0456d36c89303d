"""What do 170 years of observed warming say about climate sensitivity?

Calibrates the two-layer model against the IPCC AR6 assessed global mean surface
temperature (1850-2019, K above 1850-1900) under the AR6 historical effective
radiative forcing, both shipped with ebm (source, citation and licence in
`ebm/data/README.md`). Samples with NUTS, the gradient taken through the whole
historical run (solved exactly: `solver="exact"`):

- the feedback parameter, the deep-ocean exchange and efficacy, both heat
  capacities, and the scale factor of the aerosol forcing (its largest
  uncertainty), each with a broad log-normal prior;
- the noise: internal variability, an AR(1) process from year to year (lag-1
  autocorrelation 0.5, checked against the residuals at the end), its innovations'
  standard deviation sampled too;
- the forcing of doubled CO2 fixed at AR6's 3.93 W m-2, so ECS = 3.93 / feedback.

Prints the posterior of ECS and TCR beside AR6's assessed ranges, and draws the
posterior predictive warming against the observations with the two distributions
(historical_calibration.png).

Run: python examples/historical_calibration.py [--fast]
"""

import argparse

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

import ebm


AR6 = {  # Forster et al. (2021), Table 7.13 / SPM: likely and very likely ranges, K
    "ecs": {"likely": (2.5, 4.0), "very likely": (2.0, 5.0), "best": 3.0},
    "tcr": {"likely": (1.4, 2.2), "very likely": (1.2, 2.4), "best": 1.8},
}
PRIORS = {
    "feedback": ebm.LogNormal(1.3, 0.5),
    "gamma": ebm.LogNormal(0.7, 0.5),
    "C": ebm.LogNormal(8.0, 0.5),
    "C_deep": ebm.LogNormal(100.0, 0.5),
    "efficacy": ebm.LogNormal(1.2, 0.3),
    "aerosol_scale": ebm.LogNormal(1.0, 0.5),
}
CORRELATION = 0.5
REFERENCE = (1850.0, 1901.0)  # the mid-years 1850.5 to 1900.5


def simulate(model, params, times):
    run = ebm.integrate(
        params,
        model=model,
        years=float(times[-1]) - model.forcing.start,
        saveat=diffrax.SaveAt(ts=jnp.asarray(times)),
        solver="exact",
    )
    reference = (times >= REFERENCE[0]) & (times <= REFERENCE[1])
    return run.Ts - jnp.mean(run.Ts[reference])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="short chains")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)

    model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    params = model.Params(F2x=3.93)
    times, observed = ebm.observed_warming(1850, 2019)
    draws = ebm.posterior(
        params,
        {"global_mean": observed},
        priors=PRIORS,
        noise=ebm.LogNormal(0.1, 0.5),
        through="trajectory",
        times=times,
        model=model,
        solver="exact",
        noise_correlation=CORRELATION,
        anomaly_reference=REFERENCE,
        num_chains=2 if args.fast else 4,
        num_warmup=20 if args.fast else 400,
        num_samples=20 if args.fast else 400,
        max_doublings=5 if args.fast else 8,
        derived=("ecs", "tcr"),
        seed=1,
    )
    print(draws.summary())
    print()
    print("            5%    17%    50%    83%    95%   | AR6 likely  very likely")
    for name in ("ecs", "tcr"):
        q = [float(draws.quantile(name, p)) for p in (0.05, 0.17, 0.5, 0.83, 0.95)]
        likely, very = AR6[name]["likely"], AR6[name]["very likely"]
        print(
            f"  {name.upper()} (K) "
            + " ".join(f"{x:6.2f}" for x in q)
            + f"   | {likely[0]}-{likely[1]}     {very[0]}-{very[1]}"
        )

    # The posterior predictive warming, and the residuals' own autocorrelation.
    flat = {n: np.asarray(draws[n]).ravel() for n in PRIORS}
    pick = np.linspace(0, flat["feedback"].size - 1, min(200, flat["feedback"].size))
    runs = np.stack(
        [
            np.asarray(
                simulate(
                    model,
                    params.__class__(
                        **{
                            n: (flat[n][int(k)] if n in flat else getattr(params, n))
                            for n in params.field_names()
                        }
                    ),
                    times,
                )
            )
            for k in pick
        ]
    )
    residual = observed - np.median(runs, axis=0)
    lag1 = np.corrcoef(residual[1:], residual[:-1])[0, 1]
    print(
        f"\nlag-1 autocorrelation of the residuals at the posterior median: "
        f"{lag1:.2f} (assumed {CORRELATION})"
    )
    figure(times, observed, runs, draws)


def figure(times, observed, runs, draws):
    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), width_ratios=(2, 1, 1))
    ax = axes[0]
    low, mid, high = np.percentile(runs, [5, 50, 95], axis=0)
    ax.fill_between(times, low, high, color="C0", alpha=0.3, label="posterior 5-95%")
    ax.plot(times, mid, color="C0", label="posterior median")
    ax.plot(times, observed, color="k", lw=1, label="AR6 assessed GMST")
    ax.set(xlabel="year", ylabel="warming above 1850-1900 (K)")
    ax.legend(loc="upper left", fontsize=8)
    for ax, name in zip(axes[1:], ("ecs", "tcr")):
        values = np.asarray(draws[name]).ravel()
        ax.hist(values[np.isfinite(values)], bins=40, color="C0", density=True)
        ranges = AR6[name]
        ax.axvspan(*ranges["very likely"], color="0.85", zorder=-2, label="very likely")
        ax.axvspan(*ranges["likely"], color="0.7", zorder=-1, label="likely (AR6)")
        ax.set(xlabel=f"{name.upper()} (K)", yticks=[])
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig("historical_calibration.png", dpi=120)
    print("wrote historical_calibration.png")


if __name__ == "__main__":
    main()
