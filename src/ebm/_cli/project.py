"""`ebm project`: warming projections under the SSP scenarios (`ebm.project`) of
the two-layer model calibrated against the observed warming (or of draws from a
file, or of an emulated CMIP6 model), beside the IPCC's assessed ranges."""

from . import common


NAME = "project"

QUANTILES = (0.05, 0.5, 0.95)


def add_parser(subparsers) -> None:
    """`ebm project` and its flags, on `subparsers`."""
    from .._scenarios.ssp import SSP_SCENARIOS

    parser = subparsers.add_parser(
        NAME,
        help="warming projections under the SSP scenarios, beside AR6's",
        description=(
            "Project the global surface warming (K above 1850-1900) under SSP "
            "scenarios of the two-layer model's posterior given the observed "
            "warming (NUTS, as `ebm calibrate`), of posterior draws written by `ebm "
            "calibrate --netcdf`, or of an emulated CMIP6 model; print the median "
            "and 5-95 %% range of the 20-year means AR6's Table SPM.1 gives "
            "(2021-2040, 2041-2060, 2081-2100) beside AR6's assessment; write the "
            "runs (scenario, draw, time) and plot the plumes."
        ),
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SSP_SCENARIOS,
        default=None,
        help="a scenario, repeatable (default: ssp119 ssp126 ssp245 ssp370 ssp585)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--draws",
        metavar="FILE.nc",
        default=None,
        help="posterior draws written by `ebm calibrate --netcdf` (default: sample "
        "them now)",
    )
    source.add_argument(
        "--emulate",
        metavar="MODEL",
        default=None,
        help="project one emulated CMIP6 model (ebm.emulate) instead of draws",
    )
    parser.add_argument(
        "--end", type=int, default=2100, help="last year projected (2100)"
    )
    parser.add_argument(
        "--F2x",
        type=float,
        default=3.93,
        metavar="X",
        help="forcing of doubled CO2 where not sampled, W m-2 (3.93, AR6's)",
    )
    parser.add_argument("--chains", type=common.count(1), default=4, help="chains (4)")
    parser.add_argument(
        "--warmup", type=common.count(1), default=500, help="warm-up steps (500)"
    )
    parser.add_argument(
        "--samples", type=common.count(2), default=1000, help="draws per chain (1000)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    common.add_progress(parser, "warm-up steps and draws")
    common.add_outputs(parser, "projection.png", "runs (scenario, draw, time)")


def run(arguments) -> dict:
    """The projections, their table against AR6, file and plot."""
    import numpy as np

    from .._analysis.emulate import emulate
    from .._analysis.project import AR6_PROJECTIONS, project
    from .._layers.two_layer import TwoLayerModel

    scenarios = tuple(
        arguments.scenario or ("ssp119", "ssp126", "ssp245", "ssp370", "ssp585")
    )
    model = TwoLayerModel()
    if arguments.emulate is not None:
        draws, source = emulate(arguments.emulate), f"{arguments.emulate} emulated"
    elif arguments.draws is not None:
        draws = _draws_from_file(arguments.draws, model, arguments.F2x)
        source = f"the draws of {arguments.draws}"
    else:
        from .._analysis.calibration import calibrate_historical
        from .._scenarios.historical import HistoricalForcing

        historical = TwoLayerModel(forcing=HistoricalForcing())
        draws = calibrate_historical(
            historical.Params(F2x=arguments.F2x),
            model=historical,
            num_chains=arguments.chains,
            num_warmup=arguments.warmup,
            num_samples=arguments.samples,
            seed=arguments.seed,
            progress=common.progress(arguments),
        )
        source = "the posterior given the observed warming, 1850-2019"
    projection = project(draws, scenarios, end=arguments.end)
    table = projection.table(QUANTILES)
    report = {
        "draws": source,
        "count": int(np.asarray(projection.weights).size),
        "failed": int(np.sum(~np.asarray(projection.ok))),
        "quantiles": list(QUANTILES),
        "projection_K": table,
        "ar6_K": {s: AR6_PROJECTIONS[s] for s in scenarios if s in AR6_PROJECTIONS},
    }

    def plot(path):
        from .._edges.plot_projection import plot_projection

        plot_projection(projection, path=path)

    return common.finish(report, projection, None, arguments, plot)


def _draws_from_file(path, model, F2x):
    """The two-layer model's parameters of every draw of `ebm calibrate
    --netcdf`'s file (chains flattened), those not sampled at their defaults
    (`F2x` given).

    **Raises:**

    - `ValueError`: for a file without any of the model's parameters.
    """
    import jax.numpy as jnp
    import numpy as np

    from .._edges.io import load
    from .._scenarios.ssp import SSPForcing

    container = model.__class__(forcing=SSPForcing()).Params
    dataset = load(path)
    sampled = [n for n in container.field_names() if n in dataset.data_vars]
    if not sampled:
        raise ValueError(
            f"--draws {path} holds none of the two-layer model's parameters "
            f"({', '.join(container.field_names())}): write it with `ebm calibrate "
            "--netcdf`."
        )
    values = {n: np.asarray(dataset[n].values, float).reshape(-1) for n in sampled}
    count = next(iter(values.values())).size
    defaults = container(F2x=F2x)
    return container(
        **{
            n: jnp.asarray(values[n])
            if n in values
            else jnp.full(count, float(getattr(defaults, n)))
            for n in container.field_names()
        }
    )


def print_summary(report: dict) -> None:
    """The table AR6 prints, with its assessment beside."""
    print(
        f"warming above 1850-1900 (K), median [5-95 %] of {report['count']} draws "
        f"of {report['draws']}; AR6's assessment (Table SPM.1) below each"
    )
    if report["failed"]:
        print(f"  ({report['failed']} draws failed and are left out)")
    periods = [k for k in report["projection_K"][0] if k != "scenario"]
    print(f"  {'scenario':16s}" + "".join(f"{p:>22s}" for p in periods))
    for row in report["projection_K"]:
        cells = "".join(
            f"{row[p][1]:>8.2f} [{row[p][0]:.2f}-{row[p][2]:.2f}]" for p in periods
        )
        print(f"  {row['scenario']:16s}{cells}")
        ar6 = report["ar6_K"].get(row["scenario"])
        if ar6 is not None:
            cells = "".join(
                f"{ar6[p][1]:>8.1f} [{ar6[p][0]:.1f}-{ar6[p][2]:.1f}]" for p in periods
            )
            print(f"  {'  AR6':16s}{cells}")
