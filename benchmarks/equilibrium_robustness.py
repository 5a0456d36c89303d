"""Does `ebm.equilibrium` converge from every start, at every S0, next to every fold?

For each grid (n_lat) and ice-albedo transition width (`ice_width`): the folds of the
present-day branch in S0 between 1150 and 1500 W m-2 (`ebm.continuation`, refined by
its extended system), then `ebm.equilibrium` from each start ("present", "warm",
"cold", and a given profile: the default parameters' present-day equilibrium, as a
restart would use) at every S0 from 1150 to 1500 W m-2 in steps of 1 W m-2 and every
0.01 W m-2 within 1 W m-2 of each fold (the fold itself excluded: there the stable
state has merged with the unstable one), each with the default `max_steps`. Recorded:
the success rate, root-finder iterations (median and max, far from and next to the
folds) and the wall time per solve (vmapped over S0).

For a sample of points next to each fold (0.01 W m-2 on either side), the
equilibrium is compared with the end state of a long `ebm.integrate` from the same
start (5,000 years; the step cap for derivatives is dropped, as only the end state
matters).

Writes benchmarks/results/equilibrium_robustness.json and .png.

Run: python benchmarks/equilibrium_robustness.py [--sizes 60 90 360 720]
    [--widths 0.25 1.0] [--integrate-sizes 60 90]
"""

import argparse
import json
import pathlib
import time

import diffrax
import equinox as eqx
import jax
import numpy as np
from _machine import machine

import ebm


RESULTS = pathlib.Path(__file__).parent / "results"
STARTS = ("present", "warm", "cold", "profile")
LOW, HIGH = 1150.0, 1500.0


def folds_of(params, grid):
    """The S0 of every fold of the present-day branch in [LOW, HIGH]."""
    values = []
    for stop in (LOW, HIGH):
        branch = ebm.continuation(
            params, "S0", stop=stop, bounds=(LOW, HIGH), grid=grid, max_points=4000
        )
        values += [float(fold.value) for fold in branch.folds]
    return sorted(values)


def with_S0(params, S0):
    return eqx.tree_at(lambda p: p.S0, params, S0)


def start_of(name, grid):
    if name == "profile":
        return ebm.equilibrium(ebm.Params(), grid=grid).T
    return name


# Members per vmapped call, as `ebm.ensemble`'s default block. One call over all
# ~1,000 values hangs on jaxlib 0.10.2's CPU backend: its batched LAPACK tridiagonal
# solves wait on the thread pool that runs them (a deadlock of XLA:CPU, not ebm's).
BLOCK = 256


def solve_all(params, grid, start, values):
    """Equilibria at every S0 in `values`, vmapped in blocks; with the wall time per
    solve."""

    def one(S0):
        state = ebm.equilibrium(
            with_S0(params, S0), grid=grid, start=start, throw=False
        )
        return state.converged & state.stable, state.num_steps, state.T

    solve = jax.jit(jax.vmap(one))
    padded = np.resize(values, -(-values.size // BLOCK) * BLOCK)
    blocks = padded.reshape(-1, BLOCK)
    jax.block_until_ready(solve(blocks[0]))  # compile
    clock = time.perf_counter()
    outputs = [jax.block_until_ready(solve(block)) for block in blocks]
    seconds = (time.perf_counter() - clock) / padded.size
    ok, steps, T = (np.concatenate(parts)[: values.size] for parts in zip(*outputs))
    return ok, steps, T, seconds


def long_run(params, grid, start, S0):
    run = ebm.integrate(
        with_S0(params, S0),
        years=5000.0,
        grid=grid,
        T0=start,
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10),
        max_steps=2**20,
    )
    return np.asarray(run.T)


def measure(n_lat, ice_width, integrate):
    grid = ebm.Grid(n_lat)
    params = ebm.Params(ice_width=ice_width)
    folds = folds_of(params, grid)
    coarse = np.arange(LOW, HIGH + 0.5, 1.0)
    # Not the fold itself: there the stable and unstable states merge into one
    # that is neither (its Jacobian is singular), and which side of it S0 lies on
    # is decided by the last digits of the fold's computed value.
    offsets = np.concatenate([np.arange(-100, 0), np.arange(1, 101)]) * 0.01
    near = np.concatenate([fold + offsets for fold in folds])
    values = np.concatenate([coarse, near])
    is_near = np.concatenate([np.zeros(coarse.size, bool), np.ones(near.size, bool)])
    rows = []
    for start_name in STARTS:
        start = start_of(start_name, grid)
        ok, steps, T, seconds = solve_all(params, grid, start, values)
        row = dict(
            start=start_name,
            solves=int(values.size),
            success_rate=float(ok.mean()),
            failures=[float(v) for v in values[~ok]],
            iterations_far_median=float(np.median(steps[~is_near])),
            iterations_far_max=int(steps[~is_near].max()),
            iterations_near_median=float(np.median(steps[is_near])),
            iterations_near_max=int(steps[is_near].max()),
            seconds_per_solve=seconds,
        )
        if integrate and start_name in ("present", "warm"):
            checks = []
            for fold in folds:
                for S0 in (fold - 0.01, fold + 0.01):
                    index = int(np.argmin(np.abs(values - S0)))
                    end = long_run(params, grid, start, float(values[index]))
                    checks.append(
                        dict(
                            S0=float(values[index]),
                            max_difference_K=float(np.max(np.abs(end - T[index]))),
                        )
                    )
            row["against_integrate"] = checks
        rows.append(row)
        print(n_lat, ice_width, row, flush=True)
    return dict(n_lat=n_lat, ice_width=ice_width, folds=folds, starts=rows)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axis, key, title in (
        (axes[0], "iterations_far_max", "S0 every 1 W m-2"),
        (axes[1], "iterations_near_max", "within 1 W m-2 of a fold"),
    ):
        for width, marker in ((0.25, "o"), (1.0, "s")):
            for start, colour in zip(STARTS, ("C0", "C1", "C2", "C3")):
                points = [
                    (entry["n_lat"], row[key])
                    for entry in results
                    if entry["ice_width"] == width
                    for row in entry["starts"]
                    if row["start"] == start
                ]
                if points:
                    x, y = zip(*points)
                    axis.plot(
                        x,
                        y,
                        marker=marker,
                        color=colour,
                        label=f"{start}, ice_width {width:g} K",
                    )
        axis.set_xscale("log")
        axis.set_xlabel("n_lat")
        axis.set_title(title)
    axes[0].set_ylabel("most root-finder iterations")
    axes[1].legend(fontsize=7)
    figure.suptitle("ebm.equilibrium: iterations to converge (all converged)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[60, 90, 360, 720])
    parser.add_argument("--widths", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--integrate-sizes", type=int, nargs="*", default=[60, 90])
    args = parser.parse_args()
    results = [
        measure(n_lat, width, n_lat in args.integrate_sizes)
        for n_lat in args.sizes
        for width in args.widths
    ]
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "equilibrium_robustness.json"
    path.write_text(json.dumps(dict(machine=machine(), results=results), indent=1))
    plot(results, RESULTS / "equilibrium_robustness.png")
    print("wrote", path)


if __name__ == "__main__":
    main()
