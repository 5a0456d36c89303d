"""`ebm seaice`: Wagner & Eisenman's (2015) sea-ice model's seasonal cycle; its ice
edge, polar ice and the gradient of the summer ice edge."""

from . import common


NAME = "seaice"


def add_parser(subparsers) -> None:
    """`ebm seaice` and its flags, on `subparsers`."""
    from .._seaice.model import SeaIceParams

    parser = subparsers.add_parser(
        NAME,
        help="the sea-ice model's seasonal cycle (Wagner & Eisenman 2015)",
        description=(
            "The periodic state of Wagner & Eisenman's (2015) sea-ice model, by "
            "Newton-Krylov shooting: its annual mean temperature, the ice edge's "
            "seasonal range, the polar ice thickness and d(summer ice edge)/"
            "d(parameter) for every parameter; plot temperature, ice thickness and "
            "ice edge through the year."
        ),
    )
    parser.add_argument(
        "--n", type=int, default=100, help="boxes from the equator to the pole (100)"
    )
    parser.add_argument(
        "--steps-per-year", type=int, default=1000, help="equal steps, >= 4 (1000)"
    )
    parser.add_argument(
        "--no-thermodynamics",
        action="store_true",
        help="ice without thermodynamics: T = E / cw everywhere, ice only changes "
        "the co-albedo",
    )
    parser.add_argument(
        "--no-gradient",
        action="store_true",
        help="skip d(summer ice edge)/d(parameter)",
    )
    common.add_max_steps(parser, "Newton step limit of the shooting (32)")
    parser.add_argument(
        "--retry-years",
        type=int,
        default=100,
        help="where the shooting fails, years of spin-up more before shooting "
        "once again (100; 0: no retry)",
    )
    common.add_outputs(parser, "seaice.png", "cycle")
    group = parser.add_argument_group("parameters")
    common.add_declared_parameters(
        group, {p.name: (p, ()) for p in SeaIceParams.declarations}
    )


def run(arguments) -> dict:
    """The cycle's diagnostics, the summer ice edge's gradient, and the plot."""
    import jax
    import numpy as np

    from .._seaice.metrics import edge_latitude, summer_ice_edge
    from .._seaice.model import SeaIceModel
    from .._steady.seasonal import periodic_equilibrium

    model = SeaIceModel(arguments.n, thermodynamics=not arguments.no_thermodynamics)
    params = common.make_params(arguments, model.Params)

    def cycle_of(p):
        return periodic_equilibrium(
            p,
            model=model,
            steps_per_year=arguments.steps_per_year,
            retry_years=arguments.retry_years,
            **common.limits(arguments),
        )

    cycle = cycle_of(params)
    edge = np.degrees(np.arcsin(np.asarray(jax.vmap(model.ice_edge)(cycle.states))))
    pole = np.asarray(jax.vmap(lambda y: model.thickness(y, params))(cycle.states))
    report = {
        "n": arguments.n,
        "thermodynamics": not arguments.no_thermodynamics,
        "steps_per_year": arguments.steps_per_year,
        "params": common.floats(params),
        "newton_steps": int(cycle.num_steps),
        "step_error_W_yr_m2": float(cycle.step_error),
        "annual_mean_T_degC": float(cycle.annual_global_mean),
        "ice_edge_min_max_degN": [float(edge.min()), float(edge.max())],
        "polar_ice_thickness_min_max_m": [
            float(pole[:, -1].min()),
            float(pole[:, -1].max()),
        ],
    }
    if not arguments.no_gradient:
        # The edge in degrees north, arcsin of the sine that the model gives (1
        # without summer ice, where its derivatives are 0).
        gradient = jax.grad(
            lambda p: edge_latitude(summer_ice_edge(cycle_of(p), model))
        )(params)
        common.add_derivatives(report, "d_summer_ice_edge_d", gradient, "degrees_north")

    def plot(path):
        from .._seaice.plot import plot_sea_ice

        plot_sea_ice(
            cycle,
            model,
            params,
            path=path,
            title=f"sea ice through the year: n = {arguments.n}, F = "
            f"{float(params.F):g} W m-2",
        )

    return common.finish(report, cycle, params, arguments, plot, model=model)
