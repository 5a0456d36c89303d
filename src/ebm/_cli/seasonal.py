"""`ebm seasonal`: the seasonal cycle (periodic steady state); Hovmoller plot."""

from . import common


NAME = "seasonal"


def add_parser(subparsers) -> None:
    """`ebm seasonal` and its flags, on `subparsers`."""
    from .._physics.insolation.daily import DailyInsolation
    from .._stepping.steppers.names import STEPPERS

    parser = subparsers.add_parser(
        NAME,
        help="the seasonal cycle (periodic steady state)",
        description=(
            "The periodic steady state of the model with daily insolation, by "
            "Newton-Krylov shooting; print its diagnostics and plot it."
        ),
    )
    parser.add_argument(
        "--steps-per-year", type=int, default=365, help="equal steps, >= 4 (365)"
    )
    parser.add_argument(
        "--stepper",
        choices=tuple(STEPPERS),
        default="rosenbrock",
        help="the fixed-step method of the year (rosenbrock)",
    )
    parser.add_argument(
        "--error-tolerance",
        type=float,
        default=None,
        metavar="K",
        help="largest estimated time-stepping error allowed, K (the stepper's "
        "default; inf turns the check off)",
    )
    common.add_max_steps(parser, "Newton step limit of the shooting (32)")
    common.add_progress(parser, "Newton steps, out of --max-steps")
    common.add_common(parser, "seasonal_cycle.png", insolation=DailyInsolation)


def run(arguments) -> dict:
    """The cycle's diagnostics, and its plot."""
    from .._steady.seasonal import periodic_equilibrium

    model, params = common.setup(arguments)
    cycle = periodic_equilibrium(
        params,
        model=model,
        steps_per_year=arguments.steps_per_year,
        stepper=arguments.stepper,
        error_tolerance=arguments.error_tolerance,
        progress=common.progress(arguments),
        **common.limits(arguments),
    )
    report = {
        "n_lat": model.grid.n_lat,
        "terms": common.term_names(arguments),
        "steps_per_year": arguments.steps_per_year,
        "stepper": arguments.stepper,
        "step_error_K": float(cycle.step_error),
        "params": common.floats(params),
        "newton_steps": int(cycle.num_steps),
        "residual_K": float(cycle.residual),
        "annual_global_mean_degC": float(cycle.annual_global_mean),
        "annual_mean_ice_edge_degN": float(cycle.annual_mean_ice_edge),
        "ice_edge_min_max_degN": [
            float(cycle.ice_edge.min()),
            float(cycle.ice_edge.max()),
        ],
        "ice_edge_range_deg": float(cycle.ice_edge_range),
        "annual_mean_ice_edge_south_degN": float(cycle.annual_mean_ice_edge_south),
        "ice_edge_south_min_max_degN": [
            float(cycle.ice_edge_south.min()),
            float(cycle.ice_edge_south.max()),
        ],
        "ice_edge_south_range_deg": float(cycle.ice_edge_south_range),
        "amplitude_K_north_pole": float(cycle.amplitude[-1]),
    }

    def plot(path):
        from .._edges.plot import plot_seasonal_cycle

        plot_seasonal_cycle(cycle, params=params, path=path)

    return common.finish(report, cycle, params, arguments, plot)
