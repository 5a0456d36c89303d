"""The `ebm` command.

`ebm equilibrium` finds the equilibrium from a start, prints its global mean, ice edge
and the gradient of the global mean with respect to every parameter (implicit
differentiation), and plots the profile. Bad arguments give one line on stderr and
exit status 2.
"""

import argparse
import dataclasses
import json
import sys


def _parser() -> argparse.ArgumentParser:
    from ._params import Params

    parser = argparse.ArgumentParser(
        prog="ebm", description="Differentiable energy-balance climate model."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    eq = commands.add_parser(
        "equilibrium",
        help="equilibrium, its gradient, and a plot",
        description=(
            "Find the stable equilibrium reached from a start; print the global mean, "
            "ice edge, and d(global mean)/d(parameter) for every parameter by "
            "implicit differentiation; plot T(lat)."
        ),
    )
    eq.add_argument("--n-lat", type=int, default=60, help="latitude cells (default 60)")
    eq.add_argument(
        "--start",
        default="present",
        choices=["present", "warm", "cold"],
        help="branch to start from (default present)",
    )
    eq.add_argument(
        "--plot",
        default="equilibrium.png",
        metavar="FILE",
        help="where to write the plot (default equilibrium.png)",
    )
    eq.add_argument("--no-plot", action="store_true", help="do not plot")
    eq.add_argument("--json", action="store_true", help="print JSON instead of text")
    defaults = Params()
    for field in dataclasses.fields(Params):
        eq.add_argument(
            f"--{field.name}",
            type=float,
            default=None,
            metavar="X",
            help=f"default {float(getattr(defaults, field.name))}",
        )
    return parser


def _equilibrium(arguments) -> dict:
    import jax

    from ._equilibrium import equilibrium
    from ._grid import Grid
    from ._params import Params

    overrides = {
        field.name: getattr(arguments, field.name)
        for field in dataclasses.fields(Params)
        if getattr(arguments, field.name) is not None
    }
    params = Params(**overrides)
    grid = Grid(arguments.n_lat)

    def global_mean(params):
        return equilibrium(params, grid=grid, start=arguments.start).global_mean

    state = equilibrium(params, grid=grid, start=arguments.start)
    gradient = jax.grad(global_mean)(params)
    report = {
        "n_lat": grid.n_lat,
        "start": arguments.start,
        "params": {name: float(getattr(params, name)) for name in Params.field_names()},
        "global_mean_degC": float(state.global_mean),
        "ice_edge_degN": float(state.ice_edge),
        "stable": bool(state.stable),
        "leading_eigenvalue_W_m2_K": float(state.leading_eigenvalue),
        "residual_W_m2": float(state.residual),
        "iterations": int(state.num_steps),
        "d_global_mean_d": {
            name: float(getattr(gradient, name)) for name in Params.field_names()
        },
    }
    if not arguments.no_plot:
        from ._plot import plot_equilibrium

        plot_equilibrium(state, params, arguments.plot)
        report["plot"] = arguments.plot
    return report


def _print_equilibrium(report: dict) -> None:
    print(
        f"equilibrium from '{report['start']}' on {report['n_lat']} cells "
        f"({'stable' if report['stable'] else 'UNSTABLE'}, "
        f"{report['iterations']} iterations, residual {report['residual_W_m2']:.1e} "
        "W m-2)"
    )
    print(f"  global mean temperature  {report['global_mean_degC']:10.4f} degC")
    print(f"  ice edge                 {report['ice_edge_degN']:10.4f} degN")
    print("  d(global mean)/d(parameter), implicit differentiation:")
    for name, value in report["d_global_mean_d"].items():
        marker = "  <- diffusivity" if name == "D" else ""
        print(f"    d/d{name:<12s} {value: .8e}{marker}")
    if "plot" in report:
        print(f"  plot written to {report['plot']}")


def main(argv=None) -> int:
    """Entry point of the `ebm` command; returns the exit status."""
    parser = _parser()
    arguments = parser.parse_args(argv)
    try:
        report = _equilibrium(arguments)
    except ValueError as error:
        print(f"ebm: error: {error}", file=sys.stderr)
        return 2
    if arguments.json:
        print(json.dumps(report, indent=2))
    else:
        _print_equilibrium(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
