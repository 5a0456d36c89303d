"""What does the seasonal cycle of the energy-balance model look like?

Drives the default model with daily insolation from today's orbit (Berger 1978) and
finds its periodic steady state by Newton-Krylov shooting: the state on 1 January
that one year of the model returns to. Prints the cycle's diagnostics (global mean,
the ice edge's seasonal excursion, the amplitude by latitude), checks it against a
brute-force spin-up of the same model, and draws the latitude-time (Hovmoller)
plot (seasonal_cycle.png).

Run: python examples/seasonal_cycle.py [--fast]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ebm


def _timed(fn):
    started = time.perf_counter()
    result = jax.block_until_ready(fn())
    return result, time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="seasonal_cycle.png")
    parser.add_argument("--fast", action="store_true", help="30 cells, 73 steps")
    parser.add_argument("--water-depth", type=float, default=10.0)
    arguments = parser.parse_args()
    grid = ebm.Grid(30 if arguments.fast else 60)
    steps = 73 if arguments.fast else 365
    params = ebm.Params(water_depth=arguments.water_depth)

    def shoot():
        return ebm.periodic_equilibrium(params, grid=grid, steps_per_year=steps)

    cycle, first = _timed(shoot)
    cycle, seconds = _timed(shoot)
    print(
        f"periodic steady state ({grid.n_lat} cells, {steps} steps a year, "
        f"{arguments.water_depth:g} m mixed layer): {int(cycle.num_steps)} Newton "
        f"steps, {seconds:.2f} s ({first:.1f} s with compilation); one year "
        f"returns to within {float(cycle.residual):.1e} K"
    )
    edge = np.asarray(cycle.ice_edge)
    day = np.asarray(cycle.t) * 365.2422
    print(f"  global mean over the year  {float(cycle.annual_global_mean):7.2f} C")
    print(
        f"  global mean range          {float(jnp.min(cycle.global_mean)):7.2f} to "
        f"{float(jnp.max(cycle.global_mean)):.2f} C"
    )
    print(
        f"  northern ice edge          {edge.min():7.1f} N "
        f"(day {day[edge.argmin()]:.0f}) to {edge.max():.1f} N "
        f"(day {day[edge.argmax()]:.0f}); mean "
        f"{float(cycle.annual_mean_ice_edge):.1f} N"
    )
    # The southern edge in degrees south: equatorward is a smaller number.
    south = -np.asarray(cycle.ice_edge_south)
    print(
        f"  southern ice edge          {south.min():7.1f} S "
        f"(day {day[south.argmin()]:.0f}) to {south.max():.1f} S "
        f"(day {day[south.argmax()]:.0f}); mean "
        f"{-float(cycle.annual_mean_ice_edge_south):.1f} S"
    )
    lat = np.asarray(cycle.lat)
    print("  amplitude, half the range over the year (K):")
    for target in (-80, -45, 0, 45, 80):
        index = int(np.argmin(np.abs(lat - target)))
        hemisphere = (
            f"{lat[index]:5.1f} N" if lat[index] >= 0 else f"{-lat[index]:5.1f} S"
        )
        print(
            f"    {hemisphere}  {float(cycle.amplitude[index]):6.2f}"
            f"   (annual mean {float(cycle.annual_mean[index]):6.2f} C)"
        )

    # The same model spun up year after year: climlab's way to the same answer.
    years = 60
    spun, spin_seconds = _timed(
        lambda: ebm.seasonal_spinup(
            params, grid=grid, steps_per_year=steps, years=years
        )
    )
    difference = float(jnp.max(jnp.abs(spun.T - cycle.T)))
    print(
        f"spin-up of {years} years ({spin_seconds:.2f} s with compilation) is within "
        f"{difference:.1e} K of the shooting solution"
    )
    ebm.plot_seasonal_cycle(cycle, params=params, path=arguments.plot)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
