"""What each entry point costs on its first call, and on the calls after it, with
and without the persistent compilation cache.

For every public entry point (and the gradients through them), in a fresh Python
process each: the first call (tracing, XLA compilation and the run), the second call
with new parameter values (same grid and settings: it must compile nothing), and the
steady state (the median of further calls with new values). The number of XLA
compilations of each call is counted from JAX's compile events; the first call's
compile seconds are their sum. Then, with `ebm.enable_compilation_cache` on an
empty directory, the first call in a new process (a cold cache: it compiles and
writes), and in another new process on the same directory (a warm cache: it reads),
with the programs read, counted from JAX's cache events. The same for the command
`ebm equilibrium --no-plot` (wall time of the whole process, cold and warm cache),
and the time of `import ebm` beside that of the libraries it is built on (the
minimum of 5 processes each). Writes benchmarks/results/call_latency.json and
call_latency.png.

Run: python benchmarks/call_latency.py [--only equilibrium fit ...] [--repeats 5]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


RESULTS = pathlib.Path(__file__).parent / "results"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


def case(name: str):
    """The function of `Params` that the entry point `name` is timed as; anything it
    needs (a fit's target) is made here, before the timing, by other programs."""
    import diffrax
    import jax
    import jax.numpy as jnp

    import ebm

    if name.startswith("fit"):
        truth = ebm.Params(D=0.4)
        if name == "fit":
            target = ebm.integrate(truth, years=200.0).T
            return lambda p: ebm.fit(p, target, steps=3).loss_history
        times = jnp.array([0.5, 1.0])
        run = ebm.integrate(truth, years=1.0, saveat=diffrax.SaveAt(ts=times))
        return lambda p: (
            ebm.fit(p, run.Ts, through="trajectory", times=times, steps=3).loss_history
        )
    S0 = jnp.linspace(1340.0, 1380.0, 8)
    return {
        "equilibrium": lambda p: ebm.equilibrium(p).T,
        "grad equilibrium": jax.grad(lambda p: ebm.equilibrium(p).global_mean),
        "integrate": lambda p: ebm.integrate(p, years=10.0).T,
        "grad integrate": jax.grad(lambda p: ebm.integrate(p, years=10.0).global_mean),
        "integrate_fixed": lambda p: ebm.integrate_fixed(p, dt=0.05, steps=200).T,
        "grad integrate_fixed": jax.grad(
            lambda p: ebm.integrate_fixed(p, dt=0.05, steps=200).global_mean
        ),
        "sensitivity": lambda p: ebm.sensitivity(p).jacobian,
        "hessian": lambda p: ebm.hessian(p).matrix,
        "continuation": lambda p: ebm.continuation(p, stop=1000.0).values,
        "fold": lambda p: ebm.fold(p, stop=1000.0).value,
        "grad fold": jax.grad(lambda p: ebm.fold(p, stop=1000.0).value),
        "periodic_equilibrium": lambda p: ebm.periodic_equilibrium(p).T,
        "grad periodic_equilibrium": jax.grad(
            lambda p: ebm.periodic_equilibrium(p).annual_global_mean
        ),
        "seasonal_spinup": lambda p: ebm.seasonal_spinup(p, years=5).T,
        "ensemble": lambda p: (
            ebm.ensemble(ebm.sweep(p, S0=S0), gradient="global_mean").gradient
        ),
    }[name]


NAMES = (
    "equilibrium",
    "grad equilibrium",
    "integrate",
    "grad integrate",
    "integrate_fixed",
    "grad integrate_fixed",
    "fit",
    "fit trajectory",
    "sensitivity",
    "hessian",
    "continuation",
    "fold",
    "grad fold",
    "periodic_equilibrium",
    "grad periodic_equilibrium",
    "seasonal_spinup",
    "ensemble",
)


def measure(name: str, repeats: int, cache: str | None) -> dict:
    """Run in a fresh process: the three costs of one entry point (with `cache`, a
    cache directory, the first call alone, and the programs it read)."""
    import jax

    import ebm

    if cache is not None:
        ebm.enable_compilation_cache(cache)
    compiles, hits = [], []

    def listener(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            compiles.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    jax.monitoring.register_event_listener(
        lambda event, **kwargs: hits.append(1) if event == CACHE_HIT_EVENT else None
    )
    fn = case(name)
    values = [ebm.Params(D=0.555 + 0.01 * i, B=2.0 + 0.005 * i) for i in range(9)]

    def timed(params):
        compiles.clear()
        hits.clear()
        start = time.perf_counter()
        jax.block_until_ready(fn(params))
        return time.perf_counter() - start, len(compiles), sum(compiles)

    first, first_compiles, compile_seconds = timed(values[0])
    if cache is not None:
        return dict(first_seconds=first, programs_read=len(hits))
    second, second_compiles, _ = timed(values[1])
    steady = [timed(params) for params in values[2 : 2 + repeats]]
    return dict(
        entry_point=name,
        first_seconds=first,
        first_compilations=first_compiles,
        first_compile_seconds=compile_seconds,
        second_seconds=second,
        second_compilations=second_compiles,
        steady_seconds=statistics.median(t for t, _, _ in steady),
        steady_compilations=max(c for _, c, _ in steady),
    )


def _worker(name: str, repeats: int, cache: str | None = None) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--repeats", str(repeats)]
    if cache is not None:
        command += ["--cache", cache]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def with_cache(name: str) -> dict:
    """The first call with an empty cache (new process), then with it (another)."""
    with tempfile.TemporaryDirectory() as cache:
        cold = _worker(name, 0, cache)
        warm = _worker(name, 0, cache)
    return dict(
        cold_cache_first_seconds=cold["first_seconds"],
        warm_cache_first_seconds=warm["first_seconds"],
        warm_cache_programs_read=warm["programs_read"],
    )


def _wall(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def command_rows(repeats: int) -> list[dict]:
    """`ebm equilibrium --no-plot`, the whole process: cold cache, warm cache."""
    rows = []
    for arguments in (["equilibrium", "--no-plot"],):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "EBM_COMPILATION_CACHE": cache}
            command = [sys.executable, "-m", "ebm", *arguments]
            cold = _wall(command, env)
            warm = [_wall(command, env) for _ in range(repeats)]
        rows.append(
            dict(
                command="ebm " + " ".join(arguments),
                cold_cache_seconds=cold,
                warm_cache_seconds=min(warm),
            )
        )
    return rows


def import_row(repeats: int = 5) -> dict:
    """The least of `repeats` processes' `import` of ebm, and of its libraries."""

    def least(statement):
        code = (
            "import time; start = time.perf_counter(); "
            f"{statement}; print(time.perf_counter() - start)"
        )
        return min(
            float(
                subprocess.run(
                    [sys.executable, "-c", code],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(repeats)
        )

    libraries = least("import diffrax, optimistix, lineax")
    package = least("import ebm")
    return dict(
        import_ebm_seconds=package,
        import_libraries_seconds=libraries,
        above_libraries_seconds=package - libraries,
    )


def plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = [row["entry_point"] for row in rows]
    y = np.arange(len(rows))
    figure, axis = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    bars = (
        ("first_seconds", "first call"),
        ("cold_cache_first_seconds", "first call, cold cache"),
        ("warm_cache_first_seconds", "first call, warm cache"),
        ("second_seconds", "second call, new values"),
        ("steady_seconds", "steady state"),
    )
    height = 0.8 / len(bars)
    for index, (key, label) in enumerate(bars):
        offset = (index - (len(bars) - 1) / 2) * height
        axis.barh(y + offset, [row[key] for row in rows], height=height, label=label)
    axis.set_yticks(y, names)
    axis.invert_yaxis()
    axis.set_xscale("log")
    axis.set_xlabel("seconds")
    axis.legend(loc="lower right", fontsize=7)
    axis.set_title("ebm: cost of each call (60 cells)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="entry points to measure")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        row = measure(arguments.worker, arguments.repeats, arguments.cache)
        print(json.dumps(row))
        return
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from _machine import machine

    names = arguments.only or list(NAMES)
    rows = []
    for name in names:
        row = {**_worker(name, arguments.repeats), **with_cache(name)}
        rows.append(row)
        print(
            f"{name:27s} first {row['first_seconds']:6.2f} s "
            f"({row['first_compilations']:3d} compilations, "
            f"{row['first_compile_seconds']:5.2f} s), cold cache "
            f"{row['cold_cache_first_seconds']:6.2f} s, warm cache "
            f"{row['warm_cache_first_seconds']:6.2f} s "
            f"({row['warm_cache_programs_read']} read)  second "
            f"{1e3 * row['second_seconds']:8.2f} ms ({row['second_compilations']})  "
            f"steady {1e3 * row['steady_seconds']:8.2f} ms",
            flush=True,
        )
    commands = command_rows(arguments.repeats)
    for row in commands:
        print(
            f"{row['command']:27s} cold cache {row['cold_cache_seconds']:.2f} s, "
            f"warm cache {row['warm_cache_seconds']:.2f} s (least of "
            f"{arguments.repeats})"
        )
    imports = import_row()
    print(
        f"import ebm {imports['import_ebm_seconds']:.2f} s, of which "
        f"{imports['above_libraries_seconds']:.2f} s above diffrax, optimistix "
        "and lineax"
    )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "call_latency.json"
    path.write_text(
        json.dumps(
            dict(machine=machine(), rows=rows, commands=commands, imports=imports),
            indent=2,
        )
    )
    plot(rows, RESULTS / "call_latency.png")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
