"""The entry points' speed at an earlier revision and now, in one run: whether the
model protocol (`ebm.AbstractModel`, issue 36, `--before a8de08f`) or the entry
points' one path through it (issue 53, `--before 1ce6c17`) slowed them.

For each source tree (a `git worktree` of `--before`, and this checkout), one fresh
process times the second and later calls (compiled programs, so run time only) of:
the zonal model's equilibrium and its implicit gradient (60 cells), a 10-year run
and its gradient under the recursive adjoint (18 cells), 200 fixed steps and
their gradient (18 cells), its fold in S0 and the fold's gradient, a whole branch
(`ebm.continuation`, eager, 18 cells) and the seasonal cycle (daily insolation,
12 cells, 100 steps a year, eager); the
two-layer model's steady state and its gradient, and a 150-year 1 % a year run and
its gradient; the sea-ice model's periodic state (20 boxes, 100 steps a year); and
the first call of each (compile time included). A case the earlier revision lacks
is left out. Minimum over `--repeats` calls; the two trees alternate, run by run, so
that a busy machine slows both alike. Writes benchmarks/results/<--name>.json
(default protocol_overhead) and a bar chart of the ratios.

Run: python benchmarks/protocol_overhead.py [--before a8de08f] [--repeats 20]
[--rounds 2] [--name protocol_overhead]
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


def fold(p):
    return ebm.fold(p, "S0", stop=1000.0, grid=small).value


def branch(p):
    return ebm.continuation(p, "S0", stop=1000.0, grid=small).values


cases = {
    "equilibrium": (jax.jit(equilibrium), params),
    "equilibrium_gradient": (jax.jit(jax.grad(equilibrium)), params),
    "run_10_years": (jax.jit(run), params),
    "run_10_years_gradient": (jax.jit(jax.grad(run)), params),
    "fold": (jax.jit(fold), params),
    "fold_gradient": (jax.jit(jax.grad(fold)), params),
    "continuation": (branch, params),
}
if hasattr(ebm, "integrate_fixed"):
    seasonal = ebm.seasonal_model(ebm.Grid(12))

    def fixed(p):
        return ebm.integrate_fixed(p, dt=0.01, steps=200, grid=small).global_mean

    def cycle(p):
        return ebm.periodic_equilibrium(
            p, model=seasonal, steps_per_year=100
        ).annual_global_mean

    cases.update(
        fixed_steps=(jax.jit(fixed), params),
        fixed_steps_gradient=(jax.jit(jax.grad(fixed)), params),
        seasonal_periodic=(cycle, params),
    )
if hasattr(ebm, "TwoLayerModel"):
    two, ramp = ebm.TwoLayerModel(), ebm.TwoLayerModel(forcing=ebm.OnePercentCO2())

    def steady(p):
        return ebm.equilibrium(p, model=two).T

    def ramp_run(p):
        return ebm.integrate(p, model=ramp, years=jax.numpy.asarray(150.0)).T

    cases.update(
        two_layer_equilibrium=(jax.jit(steady), two.Params()),
        two_layer_equilibrium_gradient=(jax.jit(jax.grad(steady)), two.Params()),
        two_layer_run_150_years=(jax.jit(ramp_run), two.Params()),
        two_layer_run_gradient=(jax.jit(jax.grad(ramp_run)), two.Params()),
    )
if hasattr(ebm, "SeaIceModel"):
    ice = ebm.SeaIceModel(20)

    def periodic(p):
        return ebm.periodic_equilibrium(p, model=ice, steps_per_year=100).residual

    cases["sea_ice_periodic"] = (periodic, ebm.SeaIceParams())
out = {}
for name, (fn, params) in cases.items():
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
    parser.add_argument("--name", default="protocol_overhead", help="output name")
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
    # Only the cases both revisions have.
    best["now"] = {
        case: row for case, row in best["now"].items() if case in best["before"]
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
        f"--rounds {arguments.rounds} --name {arguments.name}",
        before=arguments.before,
        machine=machine(),
        best=best,
        ratio_now_over_before=ratios,
    )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{arguments.name}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    for case, ratio in ratios.items():
        print(
            f"{case:24s} run {ratio['min_seconds']:5.2f}x   "
            f"first call {ratio['first_call_seconds']:5.2f}x   (now / before)"
        )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 1.5 + 0.4 * len(ratios)))
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
    figure.savefig(RESULTS / f"{arguments.name}.png", dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
