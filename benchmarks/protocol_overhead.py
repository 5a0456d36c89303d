"""The zonal model's speed at a revision before the model protocol and now, in one
run: whether `ebm.AbstractModel` (issue 36) slowed today's model.

For each source tree (a `git worktree` of `--before`, and this checkout), one fresh
process times the second and later calls (compiled programs, so run time only) of:
an equilibrium and its implicit gradient (60 cells), a 10-year run and its gradient
under the recursive adjoint (18 cells), and the first call of each (compile time
included). Minimum over `--repeats` calls; the two trees alternate, run by run, so
that a busy machine slows both alike. Writes benchmarks/results/protocol_overhead.json
and a bar chart of the ratios.

Run: python benchmarks/protocol_overhead.py [--before a8de08f] [--repeats 20]
[--rounds 2]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile


RESULTS = pathlib.Path(__file__).parent / "results"
ROOT = pathlib.Path(__file__).resolve().parent.parent

_MEASURE = r"""
import json, sys, time
import jax
import ebm

repeats = int(sys.argv[1])
params = ebm.Params()
big, small = ebm.Grid(60), ebm.Grid(18)
years = jax.numpy.asarray(10.0)


def equilibrium(p):
    return ebm.equilibrium(p, grid=big).global_mean


def run(p):
    return ebm.integrate(p, years=years, grid=small).global_mean


cases = {
    "equilibrium": jax.jit(equilibrium),
    "equilibrium_gradient": jax.jit(jax.grad(equilibrium)),
    "run_10_years": jax.jit(run),
    "run_10_years_gradient": jax.jit(jax.grad(run)),
}
out = {}
for name, fn in cases.items():
    start = time.perf_counter()
    jax.block_until_ready(fn(params))
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(params))
        times.append(time.perf_counter() - start)
    out[name] = {"first_call_seconds": first, "min_seconds": min(times)}
print(json.dumps(out))
"""


def measure(source: pathlib.Path, repeats: int) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(source / "src"),
        "EBM_COMPILATION_CACHE": "off",
    }
    finished = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="a8de08f", help="revision before")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from _machine import machine

    with tempfile.TemporaryDirectory() as folder:
        before = pathlib.Path(folder) / "before"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before),
             arguments.before],
            check=True, capture_output=True,
        )  # fmt: skip
        try:
            rounds = {"before": [], "now": []}
            for _ in range(arguments.rounds):
                rounds["before"].append(measure(before, arguments.repeats))
                rounds["now"].append(measure(ROOT, arguments.repeats))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force",
                 str(before)],
                check=False, capture_output=True,
            )  # fmt: skip
    best = {
        tree: {
            case: {
                key: min(r[case][key] for r in results)
                for key in ("first_call_seconds", "min_seconds")
            }
            for case in results[0]
        }
        for tree, results in rounds.items()
    }
    ratios = {
        case: {
            key: best["now"][case][key] / best["before"][case][key]
            for key in ("first_call_seconds", "min_seconds")
        }
        for case in best["now"]
    }
    record = dict(
        command="python benchmarks/protocol_overhead.py "
        f"--before {arguments.before} --repeats {arguments.repeats} "
        f"--rounds {arguments.rounds}",
        before=arguments.before,
        machine=machine(),
        best=best,
        ratio_now_over_before=ratios,
    )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "protocol_overhead.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    for case, ratio in ratios.items():
        print(
            f"{case:24s} run {ratio['min_seconds']:5.2f}x   "
            f"first call {ratio['first_call_seconds']:5.2f}x   (now / before)"
        )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 3))
    names = list(ratios)
    positions = range(len(names))
    axis.barh(
        [p - 0.2 for p in positions],
        [ratios[n]["min_seconds"] for n in names],
        height=0.4,
        label="run time",
    )
    axis.barh(
        [p + 0.2 for p in positions],
        [ratios[n]["first_call_seconds"] for n in names],
        height=0.4,
        label="first call",
    )
    axis.axvline(1.0, color="k", linewidth=0.8)
    axis.set_yticks(list(positions), names)
    axis.set_xlabel(f"time now / time at {arguments.before}")
    axis.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(RESULTS / "protocol_overhead.png", dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
