"""What each entry point costs on its first call, and on the calls after it.

For every public entry point (and the gradients through them), in a fresh Python
process each: the first call (tracing, XLA compilation and the run), the second call
with new parameter values (same grid and settings: it must compile nothing), and the
steady state (the median of further calls with new values). The number of XLA
compilations of each call is counted from JAX's compile events; the first call's
compile seconds are their sum. Writes benchmarks/results/call_latency.json and
call_latency.png.

Run: python benchmarks/call_latency.py [--only equilibrium fit ...] [--repeats 5]
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time


RESULTS = pathlib.Path(__file__).parent / "results"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


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


def measure(name: str, repeats: int) -> dict:
    """Run in a fresh process: the three costs of one entry point."""
    import jax

    import ebm

    compiles = []

    def listener(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            compiles.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    fn = case(name)
    values = [ebm.Params(D=0.555 + 0.01 * i, B=2.0 + 0.005 * i) for i in range(9)]

    def timed(params):
        compiles.clear()
        start = time.perf_counter()
        jax.block_until_ready(fn(params))
        return time.perf_counter() - start, len(compiles), sum(compiles)

    first, first_compiles, compile_seconds = timed(values[0])
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


def plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = [row["entry_point"] for row in rows]
    y = np.arange(len(rows))
    figure, axis = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    for offset, key, label in (
        (-0.27, "first_seconds", "first call"),
        (0.0, "second_seconds", "second call, new values"),
        (0.27, "steady_seconds", "steady state"),
    ):
        axis.barh(y + offset, [row[key] for row in rows], height=0.27, label=label)
    axis.set_yticks(y, names)
    axis.invert_yaxis()
    axis.set_xscale("log")
    axis.set_xlabel("seconds")
    axis.legend(loc="lower right", fontsize=8)
    axis.set_title("ebm: cost of each call (60 cells)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="entry points to measure")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        print(json.dumps(measure(arguments.worker, arguments.repeats)))
        return
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from _machine import machine

    names = arguments.only or list(NAMES)
    rows = []
    for name in names:
        done = subprocess.run(
            [sys.executable, __file__, "--worker", name, "--repeats",
             str(arguments.repeats)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{name:27s} first {row['first_seconds']:6.2f} s "
            f"({row['first_compilations']:3d} compilations, "
            f"{row['first_compile_seconds']:5.2f} s)  second "
            f"{1e3 * row['second_seconds']:8.2f} ms ({row['second_compilations']})  "
            f"steady {1e3 * row['steady_seconds']:8.2f} ms",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "call_latency.json"
    path.write_text(json.dumps(dict(machine=machine(), rows=rows), indent=2))
    plot(rows, RESULTS / "call_latency.png")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
