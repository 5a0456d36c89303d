"""`ebm calibrate`: the two-layer model calibrated against the observed warming by
NUTS (`ebm.calibrate_historical`); the posterior of ECS and TCR beside AR6's
assessed ranges, and the posterior predictive warming."""

from . import common


NAME = "calibrate"

QUANTILES = (0.05, 0.17, 0.5, 0.83, 0.95)


def add_parser(subparsers) -> None:
    """`ebm calibrate` and its flags, on `subparsers`."""
    parser = subparsers.add_parser(
        NAME,
        help="calibrate the two-layer model against the observed warming (NUTS)",
        description=(
            "Sample the posterior of the two-layer model's feedback, deep-ocean "
            "exchange and efficacy, heat capacities and aerosol forcing scale, given "
            "the IPCC AR6 assessed global warming (shipped with ebm) under the AR6 "
            "historical forcing, by NUTS through the whole run; AR(1) internal "
            "variability. Print the posterior, ECS and TCR beside AR6's assessed "
            "ranges; plot the posterior predictive warming."
        ),
    )
    parser.add_argument(
        "--start", type=int, default=1850, help="first observed year, >= 1850 (1850)"
    )
    parser.add_argument(
        "--end", type=int, default=2019, help="last observed year, <= 2019 (2019)"
    )
    parser.add_argument("--chains", type=common.count(1), default=4, help="chains (4)")
    parser.add_argument(
        "--warmup", type=common.count(1), default=500, help="warm-up steps (500)"
    )
    parser.add_argument(
        "--samples", type=common.count(2), default=1000, help="draws per chain (1000)"
    )
    parser.add_argument(
        "--max-doublings",
        type=common.count(1),
        default=8,
        help="NUTS's most trajectory doublings (8)",
    )
    parser.add_argument(
        "--noise-correlation",
        type=float,
        default=0.5,
        metavar="RHO",
        help="lag-1 autocorrelation of internal variability, in (-1, 1) (0.5)",
    )
    parser.add_argument(
        "--F2x",
        type=float,
        default=3.93,
        metavar="X",
        help="forcing of doubled CO2, held, W m-2 (3.93, AR6's)",
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    common.add_progress(parser, "warm-up steps and draws")
    common.add_outputs(parser, "calibration.png", "posterior draws")


def run(arguments) -> dict:
    """The posterior, its summary against AR6, and the plot."""
    import time

    import numpy as np

    from .._analysis.calibration import (
        AR6_RANGES,
        calibrate_historical,
        predictive_warming,
    )
    from .._layers.two_layer import TwoLayerModel
    from .._scenarios.historical import HistoricalForcing

    model = TwoLayerModel(forcing=HistoricalForcing())
    params = model.Params(F2x=arguments.F2x)
    began = time.perf_counter()
    draws = calibrate_historical(
        params,
        model=model,
        start=arguments.start,
        end=arguments.end,
        noise_correlation=arguments.noise_correlation,
        num_chains=arguments.chains,
        num_warmup=arguments.warmup,
        num_samples=arguments.samples,
        max_doublings=arguments.max_doublings,
        seed=arguments.seed,
        progress=common.progress(arguments),
    )
    seconds = time.perf_counter() - began
    times = np.asarray(draws.log_posterior.problem.times)
    observed = np.asarray(draws.log_posterior.observed["global_mean"])
    runs = predictive_warming(draws, times)
    residual = observed - np.median(runs, axis=0)
    names = (*draws.names, *draws.derived)
    report = {
        "model": "two-layer",
        "years": [arguments.start, arguments.end],
        "chains": draws.num_chains,
        "draws_per_chain": draws.num_draws,
        "seconds": seconds,
        "params": common.floats(params),
        "quantiles": list(QUANTILES),
        "posterior": {
            name: [float(draws.quantile(name, q)) for q in QUANTILES] for name in names
        },
        "rhat_max": max(float(draws.rhat[name]) for name in draws.names),
        "ess_min": min(float(draws.ess[name]) for name in draws.names),
        "divergences": int(draws.divergences),
        "warning": draws.mixing_problem(),
        "acceptance_rate": float(draws.acceptance_rate),
        "ar6_ranges_K": {
            name: {key: ranges[key] for key in ("likely", "very likely")}
            for name, ranges in AR6_RANGES.items()
        },
        "residual_lag1_autocorrelation": float(
            np.corrcoef(residual[1:], residual[:-1])[0, 1]
        ),
    }

    def plot(path):
        from .._edges.plot_calibration import plot_calibration

        plot_calibration(draws, runs=runs, path=path)

    dataset = draws.to_dataset() if arguments.netcdf is not None else None
    return common.finish(report, dataset, params, arguments, plot)


def print_summary(report: dict) -> None:
    """The posterior's quantiles, one quantity a line, with AR6's ranges."""
    start, end = report["years"]
    print(
        f"two-layer model against the observed warming {start}-{end}: "
        f"{report['chains']} chains x {report['draws_per_chain']} draws in "
        f"{report['seconds']:.0f} s; R-hat <= {report['rhat_max']:.3f}, "
        f"ESS >= {report['ess_min']:.0f}, {report['divergences']} divergences"
    )
    if report["warning"] is not None:
        print(f"WARNING: {report['warning']}")
    print(f"  {'':18s}" + "".join(f"{q:>8.0%}" for q in QUANTILES) + "   AR6 likely")
    for name, values in report["posterior"].items():
        ranges = report["ar6_ranges_K"].get(name)
        label = f"{name.upper()} (K)" if ranges else name
        line = f"  {label:18s}" + "".join(f"{v:8.3g}" for v in values)
        if ranges:
            line += f"   {ranges['likely'][0]}-{ranges['likely'][1]}"
        print(line)
    print(
        "  lag-1 autocorrelation of the residuals at the posterior median: "
        f"{report['residual_lag1_autocorrelation']:.2f}"
    )
