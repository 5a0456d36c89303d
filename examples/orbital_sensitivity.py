"""How do the seasons and the ice edge respond to the Earth's orbit?

Differentiates the seasonal cycle (the periodic steady state of the model with daily
insolation) with respect to obliquity, eccentricity and the longitude of perihelion,
by implicit differentiation through the shooting root-find: the derivative of the
annual-mean ice edge, of the northern summer (June-August) temperature at the pole,
and of the annual-mean temperature at every latitude. Checks the derivatives
against central finite differences, compares with the annual-mean model (annual-mean
orbital insolation, no seasons), and plots dT/d(obliquity) by latitude
(orbital_sensitivity.png).

Run: python examples/orbital_sensitivity.py [--fast]
"""

import argparse
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import ebm


ORBIT = ("obliquity", "eccentricity", "long_peri")
UNITS = {"obliquity": "deg", "eccentricity": "1", "long_peri": "deg"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="orbital_sensitivity.png")
    parser.add_argument(
        "--fast", action="store_true", help="30 cells, 73 steps, no reverse mode"
    )
    arguments = parser.parse_args()
    grid = ebm.Grid(30 if arguments.fast else 60)
    steps = 73 if arguments.fast else 365
    params = ebm.Params()

    def with_orbit(orbit):
        return eqx.tree_at(
            lambda p: [getattr(p, name) for name in ORBIT], params, list(orbit)
        )

    def outputs(orbit):
        cycle = ebm.periodic_equilibrium(
            with_orbit(orbit), grid=grid, steps_per_year=steps
        )
        day = cycle.t * 365.2422
        summer = (day >= 152) & (day < 244)
        pole_summer = jnp.sum(jnp.where(summer, cycle.T[:, -1], 0.0)) / jnp.sum(summer)
        return {
            "annual-mean ice edge (deg N)": cycle.annual_mean_ice_edge,
            "JJA polar temperature (C)": pole_summer,
            "global mean (C)": cycle.annual_global_mean,
            "annual mean T (C)": cycle.annual_mean,
        }

    orbit = jnp.array([float(getattr(params, name)) for name in ORBIT])
    started = time.perf_counter()
    values = outputs(orbit)
    jacobian = jax.jacfwd(outputs)(orbit)
    seconds = time.perf_counter() - started
    # Reverse mode through the same implicit solve, for one output (its compilation
    # is skipped in the fast mode; the tests check reverse mode).
    if arguments.fast:
        edge_gradient = jnp.full(3, jnp.nan)
    else:
        edge_gradient = jax.grad(lambda o: outputs(o)["annual-mean ice edge (deg N)"])(
            orbit
        )
    print(
        f"seasonal cycle on {grid.n_lat} cells, {steps} steps a year "
        f"(values and forward-mode Jacobian: {seconds:.1f} s with compilation)"
    )
    steps_fd = np.array([1e-3, 1e-5, 1e-2])
    print(f"  {'output':<30}{'value':>9}" + "".join(f"{'d/d' + n:>17}" for n in ORBIT))
    for key in list(values)[:3]:
        row = f"  {key:<30}{float(values[key]):>9.3f}"
        for index, name in enumerate(ORBIT):
            row += f"{float(jacobian[key][index]):>17.5g}"
        print(row)
    print("  central finite differences of the ice edge (relative difference):")
    for index, name in enumerate(ORBIT):
        shift = jnp.zeros(3).at[index].set(steps_fd[index])
        up = outputs(orbit + shift)["annual-mean ice edge (deg N)"]
        down = outputs(orbit - shift)["annual-mean ice edge (deg N)"]
        fd = float((up - down) / (2 * steps_fd[index]))
        exact = float(jacobian["annual-mean ice edge (deg N)"][index])
        print(
            f"    d/d{name:<13} implicit {exact:12.6g}  reverse "
            f"{float(edge_gradient[index]):12.6g}  finite difference {fd:12.6g}  "
            f"({abs(exact - fd) / max(abs(fd), 1e-300):.1e})"
        )

    # The annual-mean model sees only the annual-mean insolation: obliquity, and
    # eccentricity through 1/sqrt(1 - e^2); never the perihelion.
    annual = ebm.EnergyBalanceModel(grid=grid, insolation=ebm.AnnualMeanInsolation())

    def annual_edge(orbit):
        return ebm.equilibrium(with_orbit(orbit), model=annual).ice_edge

    annual_jacobian = jax.jacfwd(annual_edge)(orbit)
    print("  annual-mean model (no seasons), ice edge:")
    for index, name in enumerate(ORBIT):
        print(
            f"    d/d{name:<13} {float(annual_jacobian[index]) + 0.0:12.5g} deg N per "
            f"{UNITS[name]}"
        )

    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    lat = np.asarray(grid.lat)
    ax.plot(lat, np.asarray(jacobian["annual mean T (C)"][:, 0]), label="annual mean")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel("latitude (°N)")
    ax.set_ylabel("dT/d(obliquity) (K per degree)")
    ax.set_xticks(np.arange(-90, 91, 30))
    ax.set_title("seasonal cycle: response of the annual mean to tilt")
    ax.legend()
    fig.savefig(arguments.plot, dpi=120)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
