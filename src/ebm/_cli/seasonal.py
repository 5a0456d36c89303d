"""`ebm seasonal`: the seasonal cycle (periodic steady state) of the zonal model, or
of the zonal model over a deep ocean; Hovmoller plot."""

from . import common


NAME = "seasonal"

MODELS = ("zonal", "zonal-deep-ocean")


def add_parser(subparsers) -> None:
    """`ebm seasonal` and its flags, on `subparsers`."""
    from .._deep_ocean.model import _DEEP
    from .._stepping.steppers.names import STEPPERS
    from .._zonal.insolation.daily import DailyInsolation

    parser = subparsers.add_parser(
        NAME,
        help="the seasonal cycle (periodic steady state)",
        description=(
            "The periodic steady state of the model with daily insolation, by "
            "Newton-Krylov shooting; print its diagnostics and plot it. With "
            "--model zonal-deep-ocean, every cell exchanges heat with a deep ocean "
            "beneath it, under CO2 held at --co2-factor times pre-industrial."
        ),
    )
    parser.add_argument("--model", choices=MODELS, default="zonal", help="(zonal)")
    parser.add_argument(
        "--co2-factor",
        type=float,
        default=None,
        metavar="X",
        help="CO2 over its pre-industrial value, held (the zonal-deep-ocean "
        "model's forcing, F2x log2 X; 1)",
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
    group = parser.add_argument_group("parameters of the deep ocean (zonal-deep-ocean)")
    common.add_declared_parameters(
        group, {p.name: (p, ("zonal-deep-ocean",)) for p in _DEEP}
    )


def run(arguments) -> dict:
    """The cycle's diagnostics, and its plot."""
    from .._deep_ocean.model import _DEEP

    deep = [p.name for p in _DEEP if getattr(arguments, p.name) is not None]
    if arguments.model == "zonal-deep-ocean":
        return _run_deep_ocean(arguments)
    if deep or arguments.co2_factor is not None:
        flag = f"--{(deep or ['co2_factor'])[0].replace('_', '-')}"
        raise ValueError(
            f"`{flag}` is a parameter of the deep ocean: it needs --model "
            "zonal-deep-ocean."
        )
    model, params = common.setup(arguments)
    cycle = _periodic_state(arguments, params, model)
    report = {
        **_shooting_report(arguments, model.grid, params, cycle),
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


def _run_deep_ocean(arguments) -> dict:
    """The zonal model over a deep ocean: its periodic state's diagnostics, each
    variable's Hovmoller plot."""
    import numpy as np

    from .._deep_ocean.model import DeepOceanModel
    from .._scenarios.base import AbruptCO2

    surface, surface_params = common.setup(arguments)
    factor = 1.0 if arguments.co2_factor is None else arguments.co2_factor
    if not 0 < factor < float("inf"):
        raise ValueError(f"`--co2-factor` must be a positive number, got {factor}.")
    model = DeepOceanModel(surface=surface, forcing=AbruptCO2(factor))
    params = common.make_params(arguments, model.Params)
    params = model.Params(
        **{
            name: getattr(surface_params, name) for name in surface.Params.field_names()
        },
        **{
            name: getattr(params, name)
            for name in model.Params.field_names()
            if name not in surface.Params.field_names()
        },
    )
    cycle = _periodic_state(arguments, params, model)
    deep = cycle.states["T_deep"]
    report = {
        "model": arguments.model,
        **_shooting_report(arguments, surface.grid, params, cycle),
        "co2_factor": factor,
        "annual_global_mean_deep_degC": float(np.mean(surface.grid.global_mean(deep))),
        # Half the range over the year, as `ebm.SeasonalCycle.amplitude`.
        "amplitude_K_north_pole": float(np.ptp(cycle.T[:, -1]) / 2),
        "amplitude_deep_K_north_pole": float(np.ptp(deep[:, -1]) / 2),
    }

    def plot(path):
        from .._edges.plot_run import plot_run

        plot_run(
            cycle, path=path, title=f"zonal model over a deep ocean, {factor:g} x CO2"
        )

    return common.finish(report, cycle, params, arguments, plot, model)


def _shooting_report(arguments, grid, params, cycle) -> dict:
    """What every model's report says: the grid, the terms, the year's steps, the
    parameters, the shooting's outcome and the annual global mean."""
    return {
        "n_lat": grid.n_lat,
        "terms": common.term_names(arguments),
        "steps_per_year": arguments.steps_per_year,
        "stepper": arguments.stepper,
        "step_error_K": float(cycle.step_error),
        "params": common.floats(params),
        "newton_steps": int(cycle.num_steps),
        "residual_K": float(cycle.residual),
        "annual_global_mean_degC": float(cycle.annual_global_mean),
    }


def _periodic_state(arguments, params, model):
    """`ebm.periodic_equilibrium` with the year's and the shooting's flags."""
    from .._steady.seasonal import periodic_equilibrium

    return periodic_equilibrium(
        params,
        model=model,
        steps_per_year=arguments.steps_per_year,
        stepper=arguments.stepper,
        error_tolerance=arguments.error_tolerance,
        progress=common.progress(arguments),
        **common.limits(arguments),
    )
