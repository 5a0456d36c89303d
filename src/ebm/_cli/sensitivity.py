"""`ebm sensitivity`: the forward-mode Jacobian of an output; plots the profiles."""

from . import common


NAME = "sensitivity"


def add_parser(subparsers) -> None:
    """`ebm sensitivity` and its flags, on `subparsers`."""
    from .._analysis.fit import OUTPUTS
    from .._model.start import STARTS

    parser = subparsers.add_parser(
        NAME,
        help="forward-mode Jacobian of an output",
        description=(
            "d output / d parameter for every (or --names) parameter, through the "
            "equilibrium's implicit solve."
        ),
    )
    parser.add_argument(
        "--output",
        default="T",
        choices=OUTPUTS,
        help="what to differentiate (T; only T is plotted)",
    )
    parser.add_argument(
        "--names", nargs="+", default=None, metavar="NAME", help="(every parameter)"
    )
    parser.add_argument(
        "--start", default="present", choices=STARTS, help="branch (present)"
    )
    common.add_common(parser, "sensitivity.png")


def run(arguments) -> dict:
    """The Jacobian of `--output`, and its plot."""
    from .._analysis.fit import sensitivity

    params, grid = common.setup(arguments)
    result = sensitivity(
        params,
        arguments.output,
        names=arguments.names,
        grid=grid,
        start=arguments.start,
    )
    report = {
        "n_lat": grid.n_lat,
        "output": arguments.output,
        "params": common.floats(params),
        "jacobian": {
            name: (
                [float(x) for x in result[name]]
                if arguments.output == "T"
                else float(result[name])
            )
            for name in result.names
        },
    }

    def plot(path):
        from .._edges.plot import plot_sensitivity

        plot_sensitivity(result, params, path)

    return common.finish(
        report,
        result,
        params,
        arguments,
        plot if arguments.output == "T" else "only --output T has a profile to plot",
    )
