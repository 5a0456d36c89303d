"""Time per simulated year against resolution, implicit against explicit.

For n_lat from 60 to 100,000: one year of `ebm.integrate` from the present-day
profile under

- `kvaerno5`: the default, diffrax's L-stable implicit `Kvaerno5`, its stage solves
    on the probed tridiagonal Jacobian (O(n) per step);
- `kencarp5`: diffrax's implicit-explicit `KenCarp5`, the transport implicit (the
    same tridiagonal solves) and radiation explicit;
- `imex-euler`: `ebm.integrate_fixed` with `IMEXEuler` at one step a day;
- `tsit5`: diffrax's explicit `Tsit5`, whose steps are bound by the diffusive
    stability limit (they grow like n^2);
- `imex-euler-gradient`: `jax.grad` of the final global mean with respect to every
    parameter through the `imex-euler` year (checkpointed reverse mode, O(n)).

All adaptive solvers use the default controller (rtol = atol = 1e-8). The time is the
median of `--repeats` runs after compilation; XLA's temporary memory comes from
`ebm.compiled_memory`. A run is measured only while its predicted time stays within
`--budget` (60 s): the steps of the last measured resolution, times (n / n_measured)^2
for the explicit solver (its diffusive limit) and unchanged for the others, at the
measured cost per step and cell. Beyond, that prediction is recorded and marked as
an estimate. Each solver's global mean after the year is compared with Kvaerno5's.

Writes benchmarks/results/high_resolution.json and .png.

Run: python benchmarks/high_resolution.py [--sizes 60 600 ...] [--repeats 3]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

import jax
import matplotlib


matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import ebm  # noqa: E402


sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _machine import machine  # noqa: E402


RESULTS = pathlib.Path(__file__).parent / "results"
SOLVERS = ("kvaerno5", "kencarp5", "imex-euler", "tsit5", "imex-euler-gradient")


def run_function(solver: str, grid: ebm.Grid, max_steps: int):
    days = 365
    if solver == "imex-euler":
        return lambda p: ebm.integrate_fixed(
            p, dt=1.0 / days, steps=days, grid=grid, stepper="imex", checkpoint="none"
        )
    if solver == "imex-euler-gradient":
        # The gradient of the final global mean with respect to every parameter,
        # through the year's steps (reverse mode, sqrt(N) checkpoints).
        def value_and_gradient(p):
            def mean(p):
                run = ebm.integrate_fixed(
                    p, dt=1.0 / days, steps=days, grid=grid, stepper="imex"
                )
                return run.global_mean, run

            (_, run), gradient = jax.value_and_grad(mean, has_aux=True)(p)
            return run, gradient

        return value_and_gradient
    return lambda p: ebm.integrate(
        p, years=1.0, grid=grid, solver=solver, max_steps=max_steps
    )


def measure(solver: str, n_lat: int, repeats: int, max_steps: int) -> dict:
    grid = ebm.Grid(n_lat)
    params = ebm.Params()
    function = jax.jit(run_function(solver, grid, max_steps))
    start = time.perf_counter()
    jax.block_until_ready(function(params))
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        output = jax.block_until_ready(function(params))
        times.append(time.perf_counter() - start)
    trajectory = output[0] if isinstance(output, tuple) else output
    memory = ebm.compiled_memory(function, params)
    seconds = statistics.median(times)
    steps = int(trajectory.num_steps)
    return dict(
        solver=solver,
        n_lat=n_lat,
        estimated=False,
        seconds_per_year=seconds,
        first_call_seconds=first,
        steps=steps,
        seconds_per_step_and_cell=seconds / steps / n_lat,
        temporary_megabytes=memory.temporary_bytes / 1e6,
        global_mean=float(trajectory.global_mean),
        successful=bool(trajectory.result == ebm.RESULTS.successful),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[60, 600, 6000, 60_000, 100_000]
    )
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="estimate instead of running when a year would take longer (s)",
    )
    parser.add_argument("--output", default="high_resolution")
    arguments = parser.parse_args()
    rows = []
    for solver in arguments.solvers:
        measured = None
        for n_lat in arguments.sizes:
            if measured is not None:
                # Explicit steps are bound by the diffusive limit: n^2 more of them.
                power = 2 if solver == "tsit5" else 0
                steps = measured["steps"] * (n_lat / measured["n_lat"]) ** power
                seconds = measured["seconds_per_step_and_cell"] * steps * n_lat
                if seconds > arguments.budget:
                    rows.append(
                        dict(
                            solver=solver,
                            n_lat=n_lat,
                            estimated=True,
                            seconds_per_year=seconds,
                            steps=int(steps),
                        )
                    )
                    print(
                        f"{solver:10s} n_lat {n_lat:7d}  estimated {seconds:10.3g} "
                        f"s/year ({int(steps):,} steps)",
                        flush=True,
                    )
                    continue
            row = measure(solver, n_lat, arguments.repeats, 2**20)
            measured = row
            rows.append(row)
            print(
                f"{solver:10s} n_lat {n_lat:7d}  "
                f"{row['seconds_per_year']:9.3f} s/year  "
                f"steps {row['steps']:7d}  temp {row['temporary_megabytes']:9.2f} MB  "
                f"first {row['first_call_seconds']:6.1f} s  "
                f"T {row['global_mean']:.8f}  ok {row['successful']}",
                flush=True,
            )
    reference = {
        row["n_lat"]: row["global_mean"] for row in rows if row["solver"] == "kvaerno5"
    }
    for row in rows:
        if "global_mean" in row and row["n_lat"] in reference:
            row["difference_from_kvaerno5"] = abs(
                row["global_mean"] - reference[row["n_lat"]]
            )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{arguments.output}.json"
    path.write_text(json.dumps(dict(machine=machine(), rows=rows), indent=2))
    print(f"wrote {path}")
    plot(rows, RESULTS / f"{arguments.output}.png")


def plot(rows: list[dict], path: pathlib.Path) -> None:
    figure, (timing, memory) = plt.subplots(1, 2, figsize=(11, 4.5))
    for solver in dict.fromkeys(row["solver"] for row in rows):
        mine = [row for row in rows if row["solver"] == solver]
        (line,) = timing.loglog(
            [r["n_lat"] for r in mine if not r["estimated"]],
            [r["seconds_per_year"] for r in mine if not r["estimated"]],
            marker="o",
            label=solver,
        )
        estimated = [r for r in mine if r["estimated"]]
        if estimated:
            last = [r for r in mine if not r["estimated"]][-1:]
            timing.loglog(
                [r["n_lat"] for r in last + estimated],
                [r["seconds_per_year"] for r in last + estimated],
                linestyle=":",
                marker="x",
                color=line.get_color(),
                label=f"{solver} (estimated)",
            )
        measured = [r for r in mine if not r["estimated"]]
        memory.loglog(
            [r["n_lat"] for r in measured],
            [r["temporary_megabytes"] for r in measured],
            marker="o",
            label=solver,
        )
    timing.set_xlabel("n_lat")
    timing.set_ylabel("seconds per simulated year")
    timing.set_title("One year from the present-day profile")
    memory.set_xlabel("n_lat")
    memory.set_ylabel("XLA temporary memory (MB)")
    memory.set_title("Memory (O(n): slope 1)")
    for axes in (timing, memory):
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
