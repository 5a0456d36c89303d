"""`ebm equilibrium`: the equilibrium from a start, its global mean, ice edge and the
gradient of the global mean with respect to every parameter; plots T(lat)."""

from . import common


NAME = "equilibrium"


def add_parser(subparsers) -> None:
    """`ebm equilibrium` and its flags, on `subparsers`."""
    from .._zonal.start import STARTS

    parser = subparsers.add_parser(
        NAME,
        help="equilibrium, its gradient, and a plot",
        description=(
            "Find the stable equilibrium reached from a start; print the global mean, "
            "ice edge, and d(global mean)/d(parameter) for every parameter by "
            "implicit differentiation; plot T(lat)."
        ),
    )
    parser.add_argument(
        "--start", default="present", choices=STARTS, help="branch (present)"
    )
    common.add_max_steps(parser, "root-finder iteration limit (256)")
    parser.add_argument(
        "--transport-plot",
        metavar="FILE",
        default=None,
        help="also plot the northward heat transport",
    )
    common.add_common(parser, "equilibrium.png")


def run(arguments) -> dict:
    """The equilibrium, its gradient and plots, as a report."""
    import jax

    from .._steady.equilibrium import equilibrium

    model, params = common.setup(arguments)
    limits = common.limits(arguments)

    def global_mean(params):
        state = equilibrium(params, model=model, start=arguments.start, **limits)
        return state.global_mean, state

    # The state and its gradient from one solve (and one program to trace).
    (_, state), gradient = jax.value_and_grad(global_mean, has_aux=True)(params)
    report = {
        "n_lat": model.grid.n_lat,
        "start": arguments.start,
        "terms": common.term_names(arguments),
        "params": common.floats(params),
        "global_mean_degC": float(state.global_mean),
        "ice_edge_degN": float(state.ice_edge),
        "ice_edge_south_degN": float(state.ice_edge_south),
        "stable": bool(state.stable),
        "leading_eigenvalue_W_m2_K": float(state.leading_eigenvalue),
        "residual_W_m2": float(state.residual),
        "iterations": int(state.num_steps),
    }
    common.add_derivatives(report, "d_global_mean_d", gradient, "degC")
    if arguments.transport_plot is not None:
        from .._edges.plot import plot_heat_transport

        plot_heat_transport(state, params, model, path=arguments.transport_plot)
        report["transport_plot"] = arguments.transport_plot

    def plot(path):
        from .._edges.plot import plot_equilibrium

        plot_equilibrium(state, params=params, path=path)

    return common.finish(report, state, params, arguments, plot, model)


def print_summary(report: dict) -> None:
    """The report as text: the state, then the gradient, one parameter a line."""
    print(
        f"equilibrium from '{report['start']}' on {report['n_lat']} cells "
        f"({'stable' if report['stable'] else 'UNSTABLE'}, "
        f"{report['iterations']} iterations, residual {report['residual_W_m2']:.1e} "
        "W m-2)"
    )
    terms = ", ".join(f"{kind} {name}" for kind, name in report["terms"].items())
    print(f"  terms: {terms}")
    print(f"  global mean temperature  {report['global_mean_degC']:10.4f} degC")
    print(f"  ice edge, north          {report['ice_edge_degN']:10.4f} degN")
    print(f"  ice edge, south          {report['ice_edge_south_degN']:10.4f} degN")
    common.print_derivatives(
        report,
        "d_global_mean_d",
        "d(global mean)/d(parameter), implicit differentiation",
    )
