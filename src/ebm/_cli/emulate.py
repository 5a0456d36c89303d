"""`ebm emulate`: a global layer model fitted to CMIP6 models' abrupt-4xCO2 runs
(`ebm.emulate`), its out-of-sample TCR, and the chapter's own tunings beside it."""

from . import common


NAME = "emulate"

MODELS = ("two-layer", "three-layer")


def add_parser(subparsers) -> None:
    """`ebm emulate` and its flags, on `subparsers`."""
    parser = subparsers.add_parser(
        NAME,
        help="fit a layer model to CMIP6 models' abrupt-4xCO2 runs",
        description=(
            "Fit a two- or three-layer model to each named CMIP6 model's "
            "abrupt-4xCO2 warming and top-of-atmosphere imbalance (shipped with "
            "ebm, 40 models) by maximum likelihood through the exact run; print the "
            "fitted parameters, ECS (the emulator's and the Gregory estimate), TCR "
            "(the emulator's against the model's own 1pctCO2 run), the misfits, "
            "and the misfits of AR6 WG1 Chapter 7's own two-layer tuning of the same "
            "model run through ebm's model."
        ),
    )
    parser.add_argument(
        "names", nargs="*", metavar="MODEL", help="CMIP6 models (ebm.cmip6_models())"
    )
    parser.add_argument(
        "--all", action="store_true", help="every CMIP6 model shipped with ebm"
    )
    parser.add_argument(
        "--model", choices=MODELS, default="two-layer", help="(two-layer)"
    )
    parser.add_argument(
        "--table",
        metavar="FILE.csv",
        default=None,
        help="write the table, one row per model, as CSV",
    )
    parser.add_argument("--json", action="store_true", help="print JSON, not text")
    parser.add_argument(
        "--plot", default="emulate.png", metavar="FILE", help="(emulate.png)"
    )
    parser.add_argument("--no-plot", action="store_true", help="do not plot")


def run(arguments) -> dict:
    """The fits, their table and plot."""
    import csv

    from .._analysis.emulate import emulate, emulation_table
    from .._layers.n_layer import NLayerModel
    from .._layers.two_layer import TwoLayerModel
    from .._results import RESULTS
    from .._scenarios.cmip6 import check_model_name, cmip6_models

    if arguments.all and arguments.names:
        raise ValueError("Name CMIP6 models or give --all, not both.")
    names = list(cmip6_models()) if arguments.all else arguments.names
    if not names:
        raise ValueError(
            "Name one CMIP6 model or more (e.g. `ebm emulate CanESM5`), or give "
            "--all; the models are ebm.cmip6_models()."
        )
    for name in names:
        check_model_name(name)
    model = TwoLayerModel() if arguments.model == "two-layer" else NLayerModel(3)
    emulations = [emulate(name, model=model, throw=False) for name in names]
    failed = [e.name for e in emulations if e.result != RESULTS.successful]
    rows = emulation_table(emulations)
    report = {"model": arguments.model, "emulations": rows, "not_converged": failed}
    if arguments.table is not None:
        with open(arguments.table, "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        report["table"] = arguments.table

    def plot(path):
        from .._edges.plot_projection import plot_emulation

        plot_emulation(emulations[0] if len(emulations) == 1 else emulations, path=path)

    return common.finish(report, None, None, arguments, plot)


def print_summary(report: dict) -> None:
    """One line per CMIP6 model: ECS, TCR and the misfits."""
    print(
        f"{report['model']} model fitted to each CMIP6 model's abrupt-4xCO2 run "
        "(years 1-150); TCR out of sample, from 1pctCO2"
    )
    header = (
        f"  {'model':18s} {'ECS K':>6s} {'Gregory':>7s} {'TCR K':>6s} {'CMIP6':>6s} "
        f"{'rmse T K':>8s} {'rmse N':>7s} {'chapter T':>9s} {'chapter N':>9s}"
    )
    print(header)
    for row in report["emulations"]:
        print(
            f"  {row['model']:18s} {row['ecs_K']:6.2f} {row['ecs_gregory_K']:7.2f} "
            f"{row['tcr_K']:6.2f} {row['tcr_cmip6_K']:6.2f} {row['rmse_T_K']:8.3f} "
            f"{row['rmse_N_W_m2']:7.3f} {row['chapter_rmse_T_K']:9.3f} "
            f"{row['chapter_rmse_N_W_m2']:9.3f}"
        )
    print(
        "  (rmse N in W m-2; 'chapter': AR6 WG1 Chapter 7's own two-layer tuning run "
        "through ebm's model, NaN where it has none)"
    )
    if report["not_converged"]:
        print(f"  NOT CONVERGED: {', '.join(report['not_converged'])}")
