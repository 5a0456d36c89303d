"""`ebm sensitivity`: the forward-mode Jacobian of an output; plots the profiles."""

from . import common


NAME = "sensitivity"


def add_parser(subparsers) -> None:
    """`ebm sensitivity` and its flags, on `subparsers`."""
    from .._zonal.model import EnergyBalanceModel
    from .._zonal.start import STARTS

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
        choices=EnergyBalanceModel.outputs,
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
    """The Jacobian of `--output`, and its plot; with a term that declares `CO2`,
    also the climate sensitivity per doubling of CO2."""
    from .._analysis.sensitivity import sensitivity

    model, params = common.setup(arguments)
    result = sensitivity(
        params,
        arguments.output,
        names=arguments.names,
        model=model,
        start=arguments.start,
    )
    report = {
        "n_lat": model.grid.n_lat,
        "terms": common.term_names(arguments),
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
    report.update(_per_doubling(model, params, arguments, result))

    def plot(path):
        from .._edges.plot import plot_sensitivity

        plot_sensitivity(result, params, path=path)

    return common.finish(
        report,
        result,
        params,
        arguments,
        plot if arguments.output == "T" else "only --output T has a profile to plot",
    )


def _per_doubling(model, params, arguments, result) -> dict:
    """`d(global mean)/dCO2` and the climate sensitivity per doubling of CO2,
    `ln 2 CO2 d(global mean)/dCO2`, when one of the model's terms declares `CO2`
    (nothing otherwise)."""
    import math

    from .._analysis.sensitivity import sensitivity
    from .._zonal.forcing.co2 import CO2

    if not any(CO2 in term.parameters for term in model.terms()):
        return {}
    if CO2.name in result.names and arguments.output == "global_mean":
        derivative = float(result[CO2.name])
    elif CO2.name in result.names and arguments.output == "T":
        # The global mean is linear in the profile: so is its derivative.
        derivative = float(model.global_mean(result[CO2.name]))
    else:
        mean = sensitivity(
            params, "global_mean", names=(CO2.name,), model=model,
            start=arguments.start,
        )  # fmt: skip
        derivative = float(mean[CO2.name])
    return {
        "d_global_mean_d_CO2_K_per_ppm": derivative,
        "climate_sensitivity_per_CO2_doubling_K": math.log(2.0)
        * float(getattr(params, CO2.name))
        * derivative,
    }
