"""`ebm hysteresis`: the branch of equilibria in a parameter, with its folds."""

from . import common


NAME = "hysteresis"

LOOP_START = 2000.0
"""S0 (W m-2) where `ebm hysteresis` starts by default: an ice-free planet, so that
the walk down to 1000 passes every fold of the snowball loop."""


def add_parser(subparsers) -> None:
    """`ebm hysteresis` and its flags, on `subparsers`."""
    from .._zonal.start import STARTS

    parser = subparsers.add_parser(
        NAME,
        help="branch of equilibria and its folds",
        description=(
            "Continue the equilibria in --parameter from its value (--S0 etc.) to "
            "--stop, by pseudo-arclength continuation; print the folds."
        ),
    )
    parser.add_argument(
        "--parameter", default="S0", help="parameter to continue in (S0)"
    )
    parser.add_argument(
        "--stop",
        type=float,
        default=None,
        help=(
            "where to stop (required unless the parameter is S0: then 1000; "
            f"without --S0 too, the walk starts at {LOOP_START:g}, ice-free, so "
            "that it traces the whole loop)"
        ),
    )
    parser.add_argument(
        "--start", default="warm", choices=STARTS, help="branch to start on (warm)"
    )
    parser.add_argument(
        "--max-points",
        type=int,
        default=None,
        metavar="N",
        help="most points of the branch (continuation's default, 2000)",
    )
    common.add_progress(parser, "points walked, out of --max-points")
    common.add_common(parser, "hysteresis.png")


def run(arguments) -> dict:
    """The branch, its folds, and its plot."""
    import equinox as eqx

    from .._steady.continuation import continuation

    model, params = common.setup(arguments)
    stop = arguments.stop
    if stop is None:
        if arguments.parameter != "S0":
            raise ValueError(
                f"`--stop` is needed to continue in {arguments.parameter!r} (only S0 "
                "has a default, 1000)."
            )
        stop = 1000.0
        if getattr(arguments, "S0", None) is None:
            # The whole loop: from an ice-free planet down past the snowball.
            params = eqx.tree_at(lambda p: p.S0, params, LOOP_START)
    branch = continuation(
        params,
        arguments.parameter,
        stop=stop,
        start=arguments.start,
        model=model,
        progress=common.progress(arguments),
        **common.limits(arguments, "max_points"),
    )
    report = {
        "n_lat": model.grid.n_lat,
        "terms": common.term_names(arguments),
        "parameter": arguments.parameter,
        "from": float(getattr(params, arguments.parameter)),
        "stop": stop,
        "points": branch.num_points,
        "folds": [
            {
                "value": float(fold.value),
                "ice_edge_degN": float(fold.ice_edge),
                "ice_edge_south_degN": float(fold.ice_edge_south),
                "global_mean_degC": float(fold.global_mean),
                "branches_exist": "above" if int(fold.side) > 0 else "below",
            }
            for fold in branch.folds
        ],
    }

    def plot(path):
        from .._edges.plot import plot_branch

        plot_branch(branch, path=path)

    return common.finish(report, branch, params, arguments, plot)
