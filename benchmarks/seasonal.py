"""The seasonal cycle: shooting against spinning up, and the time step's error.

1. Time discretisation: the periodic steady state (60 cells) with `steps_per_year`
   = 73 ... 1460 ROS2 steps, against a reference at 5840 steps: the largest error
   over the cycle, K.
2. Shooting against spin-up, by mixed-layer depth (10, 25, 50, 100 m; 60 cells, 365
   steps a year): the time of `ebm.periodic_equilibrium` after compilation, and the
   years (and time) a spin-up from the same start needs to come within 1e-8 K of it.
3. Gradients: the derivative of the 1 January global mean with respect to every
   parameter, implicitly through the shooting solve (`jax.grad`), against reverse
   mode through the spin-up (`ebm.integrate_fixed`, ROS2, sqrt checkpointing) of
   those years.

Writes benchmarks/results/seasonal.json and seasonal.png.

Run: python benchmarks/seasonal.py [--depths 10 25 50 100] [--repeats 3]
     python benchmarks/seasonal.py --plot-only
"""

import argparse
import json
import pathlib
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _machine import machine

import ebm
from ebm._steady.seasonal import _Year, seasonal_model
from ebm._stepping.checkpoints import NoCheckpoint
from ebm._stepping.steppers import Rosenbrock2
from ebm._zonal.start import initial_profile


RESULTS = pathlib.Path(__file__).parent / "results"
GRID = ebm.Grid(60)
TOLERANCE = 1e-8


def _timed(fn, repeats):
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = jax.block_until_ready(fn())
        times.append(time.perf_counter() - started)
    return result, statistics.median(times)


def discretisation(steps_list, reference_steps):
    params = ebm.Params()

    def cycle(steps):
        return ebm.periodic_equilibrium(params, grid=GRID, steps_per_year=steps)

    reference = cycle(reference_steps)
    rows = []
    for steps in steps_list:
        state = cycle(steps)
        stride = reference_steps // steps
        error = float(jnp.max(jnp.abs(state.T - reference.T[::stride])))
        rows.append(
            dict(
                steps_per_year=steps,
                max_error_K=error,
                annual_mean_ice_edge=float(state.annual_mean_ice_edge),
            )
        )
        print(f"  {steps:5d} steps a year: error {error:.2e} K")
    return dict(reference_steps=reference_steps, rows=rows)


def shooting_against_spinup(depth, repeats):
    params = ebm.Params(water_depth=depth)
    model = seasonal_model(GRID)
    shoot = lambda: ebm.periodic_equilibrium(params, model=model)  # noqa: E731
    cycle, shooting_seconds = _timed(shoot, repeats)
    year = _Year(model, Rosenbrock2(), NoCheckpoint(), 365)
    flow = eqx.filter_jit(year.flow)
    T = initial_profile("present", params, GRID)
    years = 0
    while float(jnp.max(jnp.abs(T - cycle.T0))) >= TOLERANCE:
        T = flow(T, params)
        years += 1
    _, spinup_seconds = _timed(
        lambda: ebm.seasonal_spinup(params, model=model, years=years), repeats
    )

    def implicit(p):
        return GRID.global_mean(ebm.periodic_equilibrium(p, model=model).T0)

    def through_spinup(p):
        trajectory = ebm.integrate_fixed(
            p,
            model=model,
            dt=1.0 / 365,
            steps=365 * years,
            stepper="rosenbrock",
            checkpoint="sqrt",
        )
        return trajectory.global_mean

    gradient, implicit_seconds = _timed(lambda: jax.grad(implicit)(params), repeats)
    spun_gradient, spinup_gradient_seconds = _timed(
        lambda: jax.grad(through_spinup)(params), 1
    )
    names = ebm.Params.field_names()
    relative = max(
        abs(float(getattr(gradient, n)) - float(getattr(spun_gradient, n)))
        / max(abs(float(getattr(gradient, n))), 1e-12)
        for n in names
        if abs(float(getattr(gradient, n))) > 1e-9
    )
    row = dict(
        water_depth=depth,
        newton_steps=int(cycle.num_steps),
        shooting_seconds=shooting_seconds,
        spinup_years=years,
        spinup_seconds=spinup_seconds,
        speedup=spinup_seconds / shooting_seconds,
        implicit_gradient_seconds=implicit_seconds,
        spinup_gradient_seconds=spinup_gradient_seconds,
        gradient_speedup=spinup_gradient_seconds / implicit_seconds,
        gradient_largest_relative_difference=relative,
    )
    print(
        f"  {depth:5.0f} m: shooting {shooting_seconds:.2f} s ({row['newton_steps']} "
        f"Newton steps); spin-up {years} years {spinup_seconds:.2f} s "
        f"({row['speedup']:.1f}x); gradient {implicit_seconds:.2f} s implicit, "
        f"{spinup_gradient_seconds:.2f} s through the spin-up "
        f"({row['gradient_speedup']:.1f}x; agree to {relative:.1e})"
    )
    return row


def plot(saved, path):
    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, (error_ax, time_ax) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    rows = saved["discretisation"]["rows"]
    steps = np.array([r["steps_per_year"] for r in rows])
    errors = np.array([r["max_error_K"] for r in rows])
    error_ax.loglog(steps, errors, "o-", label="ROS2")
    error_ax.loglog(steps, errors[0] * (steps[0] / steps) ** 2, ":", label="slope -2")
    error_ax.set_xlabel("steps per year")
    error_ax.set_ylabel("largest error over the cycle (K)")
    error_ax.legend()
    depth_rows = saved["shooting_against_spinup"]
    depths = [r["water_depth"] for r in depth_rows]
    for key, label in (
        ("shooting_seconds", "shooting"),
        ("spinup_seconds", "spin-up to 1e-8 K"),
        ("implicit_gradient_seconds", "gradient, implicit"),
        ("spinup_gradient_seconds", "gradient through spin-up"),
    ):
        time_ax.semilogy(depths, [r[key] for r in depth_rows], "o-", label=label)
    time_ax.set_xlabel("mixed-layer depth (m)")
    time_ax.set_ylabel("seconds (after compilation)")
    time_ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=float, nargs="+", default=[10, 25, 50, 100])
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[73, 146, 365, 730, 1460]
    )
    parser.add_argument("--reference-steps", type=int, default=5840)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plot-only", action="store_true")
    arguments = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if arguments.plot_only:
        saved = json.loads((RESULTS / "seasonal.json").read_text())
        plot(saved, RESULTS / "seasonal.png")
        return
    print("time discretisation (60 cells):")
    errors = discretisation(arguments.steps, arguments.reference_steps)
    print("shooting against spin-up (60 cells, 365 steps a year):")
    rows = [shooting_against_spinup(d, arguments.repeats) for d in arguments.depths]
    saved = dict(
        machine=machine(),
        command="python benchmarks/seasonal.py",
        tolerance_K=TOLERANCE,
        discretisation=errors,
        shooting_against_spinup=rows,
    )
    (RESULTS / "seasonal.json").write_text(json.dumps(saved, indent=2) + "\n")
    plot(saved, RESULTS / "seasonal.png")
    print(f"wrote {RESULTS / 'seasonal.json'} and seasonal.png")


if __name__ == "__main__":
    main()
