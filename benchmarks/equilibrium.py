"""Cost of an equilibrium and its implicit gradient against resolution.

For n_lat = 60, 360, 1000, 10,000 and 100,000: compile time, then the median wall
time over repeated runs of `ebm.equilibrium` plus `jax.grad` of its global mean with
respect to every parameter, and XLA's temporary memory for that function
(`jax.jit(f).lower(...).compile().memory_analysis().temp_size_in_bytes`).
Writes benchmarks/results/equilibrium.json.

Run: python benchmarks/equilibrium.py [--sizes 60 360 ...] [--repeats 5]
"""

import argparse
import json
import pathlib
import platform
import statistics
import time

import jax

import ebm


RESULTS = pathlib.Path(__file__).parent / "results"


def value_and_gradient(params, grid):
    def global_mean(params):
        state = ebm.equilibrium(params, grid=grid)
        return state.global_mean, state

    (mean, state), gradient = jax.value_and_grad(global_mean, has_aux=True)(params)
    return mean, state.ice_edge, state.num_steps, gradient


def measure(n_lat: int, repeats: int) -> dict:
    grid = ebm.Grid(n_lat)
    params = ebm.Params()
    fn = jax.jit(lambda p: value_and_gradient(p, grid))
    start = time.perf_counter()
    compiled = fn.lower(params).compile()
    compile_seconds = time.perf_counter() - start
    memory = compiled.memory_analysis()
    jax.block_until_ready(compiled(params))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        mean, edge, steps, gradient = jax.block_until_ready(compiled(params))
        times.append(time.perf_counter() - start)
    return dict(
        n_lat=n_lat,
        compile_seconds=compile_seconds,
        median_seconds=statistics.median(times),
        min_seconds=min(times),
        repeats=repeats,
        temp_bytes=int(memory.temp_size_in_bytes),
        temp_megabytes=memory.temp_size_in_bytes / 1e6,
        global_mean=float(mean),
        ice_edge=float(edge),
        iterations=int(steps),
        d_global_mean_dD=float(gradient.D),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[60, 360, 1000, 10_000, 100_000]
    )
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args()
    rows = []
    for n_lat in arguments.sizes:
        row = measure(n_lat, arguments.repeats)
        rows.append(row)
        print(
            f"n_lat={n_lat:7d}  compile {row['compile_seconds']:6.2f} s  "
            f"run {1e3 * row['median_seconds']:9.2f} ms  "
            f"temp {row['temp_megabytes']:8.2f} MB  iterations {row['iterations']:3d}  "
            f"T={row['global_mean']:.6f} edge={row['ice_edge']:.4f} "
            f"dT/dD={row['d_global_mean_dD']:.6f}",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "equilibrium.json"
    machine = dict(
        platform=platform.platform(),
        cpus=jax.local_device_count(),
        backend=jax.default_backend(),
        jax=jax.__version__,
    )
    path.write_text(json.dumps(dict(machine=machine, rows=rows), indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
