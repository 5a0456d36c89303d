"""What do 170 years of observed warming say about climate sensitivity?

Calibrates the two-layer model against the IPCC AR6 assessed global mean surface
temperature (1850-2019, K above 1850-1900) under the AR6 historical effective
radiative forcing, both shipped with ebm (source, citation and licence in
`ebm/data/README.md`). Samples with NUTS (`ebm.calibrate_historical`; `ebm
calibrate` on the command line), the gradient taken through the whole historical
run (solved exactly: `solver="exact"`):

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

import jax
import numpy as np

import ebm


CORRELATION = 0.5


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="short chains")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)

    fast = dict(num_chains=2, num_warmup=20, num_samples=20, max_doublings=5)
    draws = ebm.calibrate_historical(
        noise_correlation=CORRELATION, **(fast if args.fast else {})
    )
    print(draws.summary())
    print()
    print("            5%    17%    50%    83%    95%   | AR6 likely  very likely")
    for name in ("ecs", "tcr"):
        q = [float(draws.quantile(name, p)) for p in (0.05, 0.17, 0.5, 0.83, 0.95)]
        ranges = ebm.AR6_RANGES[name]
        likely, very = ranges["likely"], ranges["very likely"]
        print(
            f"  {name.upper()} (K) "
            + " ".join(f"{x:6.2f}" for x in q)
            + f"   | {likely[0]}-{likely[1]}     {very[0]}-{very[1]}"
        )

    # The posterior predictive warming, and the residuals' own autocorrelation.
    times, observed = ebm.observed_warming(1850, 2019)
    runs = ebm.predictive_warming(draws, times)
    residual = observed - np.median(runs, axis=0)
    lag1 = np.corrcoef(residual[1:], residual[:-1])[0, 1]
    print(
        f"\nlag-1 autocorrelation of the residuals at the posterior median: "
        f"{lag1:.2f} (assumed {CORRELATION})"
    )
    ebm.plot_calibration(draws, runs=runs, path="historical_calibration.png")
    print("wrote historical_calibration.png")


if __name__ == "__main__":
    main()
