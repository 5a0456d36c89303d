"""Where does the Earth tip into a snowball, and how does the tipping point move?

Traces the equilibria of the default model in the solar constant S0 by
pseudo-arclength continuation, from an ice-free climate at S0 = 2000 W m-2 down to
1000 W m-2: the ice-free branch, the small-ice-cap instability, the present-day
branch, the unstable large-ice-cap branch, the snowball and the folds between them.
Prints the folds, the snowball fold's sensitivity to each parameter (implicit
derivatives through the extended fold system), and plots the hysteresis loop at
ice_width 1 K and 0.25 K (hysteresis.png).

Run: python examples/snowball_hysteresis.py [--fast] (36 cells and the 1 K loop only)
"""

import argparse
import time

import jax

import ebm


HIGH, LOW = 2000.0, 1000.0
NAMES = ("A", "B", "D", "a0", "ai", "Tf")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="hysteresis.png")
    parser.add_argument("--n-lat", type=int, default=60)
    parser.add_argument(
        "--fast", action="store_true", help="36 cells and the 1 K loop only"
    )
    arguments = parser.parse_args()
    grid = ebm.Grid(n_lat=36 if arguments.fast else arguments.n_lat)
    widths = (1.0,) if arguments.fast else (1.0, 0.25)

    branches = {}
    for width in widths:
        params = ebm.Params(S0=HIGH, ice_width=width)
        started = time.perf_counter()
        branch = ebm.continuation(params, "S0", stop=LOW, start="warm", grid=grid)
        seconds = time.perf_counter() - started
        branches[width] = branch
        print(
            f"ice_width {width} K: {branch.num_points} points, {len(branch.folds)} "
            f"folds, {seconds:.1f} s (with compilation)"
        )
        print(f"  {'S0 (W m-2)':>12}{'ice edge':>10}{'mean (C)':>10}  branches exist")
        for fold in branch.folds:
            side = "above" if int(fold.side) > 0 else "below"
            print(
                f"  {float(fold.value):>12.3f}{float(fold.ice_edge):>10.2f}"
                f"{float(fold.global_mean):>10.2f}  {side}"
            )
        values = [float(v) for v in branch.values]
        kinds = ", ".join(
            ("stable" if bool(branch.stable[s.start]) else "unstable")
            + f" {values[s.start]:.0f}->{values[s.stop - 1]:.0f}"
            for s in branch.segments()
        )
        print(f"  segments: {kinds}\n")

    default = ebm.Params()
    snowball = ebm.fold(default, "S0", stop=LOW, grid=grid)
    gradient = jax.grad(lambda p: ebm.fold(p, "S0", guess=snowball, grid=grid).value)(
        default
    )
    print(
        f"snowball fold from today's climate: S0* = {float(snowball.value):.3f} W m-2, "
        f"ice edge {float(snowball.ice_edge):.2f} degN "
        f"({100 * (1 - float(snowball.value) / float(default.S0)):.1f}% below today)"
    )
    print(f"  {'theta':<6}{'dS0*/dtheta':>14}")
    for name in NAMES:
        print(f"  {name:<6}{float(getattr(gradient, name)):>14.4g}")

    figure = ebm.plot_branch(branches[1.0], label="ice_width 1 K")
    if 0.25 in branches:
        ebm.plot_branch(
            branches[0.25],
            ax=figure.axes,
            label="ice_width 0.25 K",
            color="C1",
            annotate=False,
        )
    figure.axes[0].set_title(
        f"Hysteresis in S0, {arguments.n_lat} cells: stable solid, unstable dashed"
    )
    figure.savefig(arguments.plot, dpi=120)
    print(f"\nwrote {arguments.plot}")


if __name__ == "__main__":
    main()
