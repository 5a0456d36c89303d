"""Gradients through long runs: time and memory against the run's length.

For 100, 1,000, 10,000 and 100,000 years of `ebm.integrate` on the default model:
XLA's temporary memory (`memory_analysis().temp_size_in_bytes` of the compiled
function) and the wall time (after compilation) of d(global mean)/d(every parameter)
under each reverse-mode adjoint ("recursive", the default, and "direct"; "backsolve"
refuses runs this long, see `benchmarks/backsolve_horizon.py`), and of the forward
run alone for comparison. The step budget is the one `integrate` chooses by itself
for that length when called eagerly (`max_steps` twice the capped steps, a power of
two; the recursive adjoint then stores 4 log2(max_steps) checkpoints).

Times are measured up to `--max-timed-years` (default 10,000: a gradient through
100,000 years, 1.5 million steps, takes most of an hour on 2 cores); memory for
every length, as it needs only compilation.

Writes benchmarks/results/long_runs.json and .png.

Run: python benchmarks/long_runs.py [--years 100 1000 10000 100000]
    [--max-timed-years 10000] [--adjoints recursive direct]
"""

import argparse
import json
import pathlib
import time

import diffrax
import jax
from _machine import machine

import ebm
from ebm._stepping.options import _with_checkpoints
from ebm._zonal.run import _default_max_steps, start_time_scales
from ebm._zonal.start import resolve_model


RESULTS = pathlib.Path(__file__).parent / "results"


def compiled(fn, params):
    start = time.perf_counter()
    program = jax.jit(fn).lower(params).compile()
    return program, time.perf_counter() - start


def run_time(program, params) -> float:
    start = time.perf_counter()
    jax.block_until_ready(program(params))
    return time.perf_counter() - start


def measure(years: float, adjoint: str | None, timed: bool) -> dict:
    params = ebm.Params()
    model = resolve_model(None, None)
    scales = start_time_scales(params, model, model.start_state(params, "present"))
    max_steps = _default_max_steps(years, scales.relaxation)

    def global_mean(p):
        run = ebm.integrate(
            p, years=years, adjoint=adjoint or "recursive", max_steps=max_steps
        )
        return run.global_mean

    fn = global_mean if adjoint is None else jax.grad(global_mean)
    program, compile_seconds = compiled(fn, params)
    row = dict(
        years=years,
        adjoint=adjoint or "forward run",
        max_steps=max_steps,
        checkpoints=(
            _with_checkpoints(
                diffrax.RecursiveCheckpointAdjoint(), max_steps
            ).checkpoints
            if adjoint == "recursive"
            else None
        ),
        compile_seconds=compile_seconds,
        temp_megabytes=program.memory_analysis().temp_size_in_bytes / 1e6,
        seconds=run_time(program, params) if timed else None,
    )
    print(row, flush=True)
    return row


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, seconds) = plt.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(row["adjoint"] for row in rows):
        mine = [row for row in rows if row["adjoint"] == name]
        memory.plot(
            [row["years"] for row in mine],
            [row["temp_megabytes"] for row in mine],
            marker="o",
            label=name,
        )
        timed = [row for row in mine if row["seconds"] is not None]
        seconds.plot(
            [row["years"] for row in timed],
            [row["seconds"] for row in timed],
            marker="o",
            label=name,
        )
    for axis in (memory, seconds):
        axis.set_xscale("log")
        axis.set_xlabel("years integrated")
        axis.legend()
    memory.set_ylabel("XLA temporary memory, MB")
    seconds.set_yscale("log")
    seconds.set_ylabel("wall time after compilation, s")
    figure.suptitle("d(global mean)/d(every parameter) through long runs, 60 cells")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--years", type=float, nargs="+", default=[100.0, 1000.0, 10000.0, 100000.0]
    )
    parser.add_argument("--max-timed-years", type=float, default=10000.0)
    parser.add_argument("--adjoints", nargs="+", default=["recursive", "direct"])
    args = parser.parse_args()
    rows = [
        measure(years, adjoint, years <= args.max_timed_years)
        for adjoint in [None, *args.adjoints]
        for years in args.years
    ]
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "long_runs.json"
    path.write_text(json.dumps(dict(machine=machine(), rows=rows), indent=1))
    plot(rows, RESULTS / "long_runs.png")
    print("wrote", path)


if __name__ == "__main__":
    main()
