"""Ensemble throughput on a GPU: members per second at 10^4, 10^5 and 10^6 members.

Three workloads, each through `ebm.ensemble` in blocks (memory flat in the member
count), the members' parameters spread over a range:

- `tcr+gradient`: the two-layer model's TCR and its gradient with respect to every
    parameter (exact solution of 1pctCO2), gamma in [0.5, 1.5];
- `historical`: the two-layer model's historical run (AR6 forcing, 1750-2019,
    solved exactly) with ECS and TCR, as `examples/prior_ensemble.py` does, the
    feedback in [0.8, 2.0];
- `zonal equilibrium+gradient`: the zonal model's equilibrium on 60 cells and the
    gradient of its global mean with respect to every parameter, D in [0.3, 0.8].

For each workload and member count: the first call (compilation included) and the
median of `--repeats` calls after it, as members per second. Without a GPU it says
so and measures nothing, unless `--allow-cpu` (a smoke run with small `--members`).
Writes benchmarks/results/gpu_ensemble.json and .png.

Run: python benchmarks/gpu_ensemble.py [--members 10000 100000 1000000]
    [--zonal-members 10000 100000] [--block-size 65536] [--repeats 3] [--allow-cpu]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time


RESULTS = pathlib.Path(__file__).parent / "results"


def workloads(ebm, jax, jnp):
    """`{name: (make_members(n), task, kwargs)}` for `ebm.ensemble`."""
    two = ebm.TwoLayerModel(forcing=ebm.OnePercentCO2())
    historical = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    times, _ = ebm.observed_warming(1850, 2019)

    def spread(params, name, low, high):
        def make(n):
            values = jnp.linspace(low, high, n)
            return params.__class__(
                **{
                    field: values
                    if field == name
                    else jnp.broadcast_to(getattr(params, field), (n,))
                    for field in params.field_names()
                }
            )

        return make

    def tcr_and_gradient(p):
        value, gradient = jax.value_and_grad(lambda q: ebm.tcr(q, two))(p)
        return {"tcr": value, "gradient": gradient}

    def historical_run(p):
        warming = ebm.historical_warming(p, historical, times)
        return {
            "warming": warming[-10:].mean(),
            "ecs": ebm.ecs(p, historical),
            "tcr": ebm.tcr(p, historical),
        }

    return {
        "tcr+gradient": (spread(two.Params(), "gamma", 0.5, 1.5), tcr_and_gradient, {}),
        "historical": (
            spread(historical.Params(F2x=3.93), "feedback", 0.8, 2.0),
            historical_run,
            {},
        ),
        "zonal equilibrium+gradient": (
            spread(ebm.Params(), "D", 0.3, 0.8),
            "equilibrium",
            {"gradient": "global_mean"},
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--members", type=int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    parser.add_argument(
        "--zonal-members",
        type=int,
        nargs="+",
        default=[10_000, 100_000],
        help="member counts of the 60-cell equilibria (10000 100000)",
    )
    parser.add_argument("--block-size", type=int, default=65_536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--allow-cpu", action="store_true", help="measure on CPU (a smoke run)"
    )
    arguments = parser.parse_args()
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import jax
    import jax.numpy as jnp
    from _machine import machine

    import ebm

    platform = jax.devices()[0].platform
    if platform != "gpu" and not arguments.allow_cpu:
        print(
            f"no GPU here (JAX's devices: {jax.devices()}): nothing measured; "
            "--allow-cpu runs it on CPU"
        )
        return
    rows = []
    for name, (make, task, kwargs) in workloads(ebm, jax, jnp).items():
        counts = (
            arguments.zonal_members if name.startswith("zonal") else arguments.members
        )
        for count in counts:
            members = make(count)
            block = min(arguments.block_size, count)

            def call():
                result = ebm.ensemble(
                    members, task=task, block_size=block, on_failure="raise", **kwargs
                )
                jax.block_until_ready(result.result)
                return result

            began = time.perf_counter()
            call()
            first = time.perf_counter() - began
            seconds = []
            for _ in range(arguments.repeats):
                began = time.perf_counter()
                call()
                seconds.append(time.perf_counter() - began)
            rate = count / statistics.median(seconds)
            rows.append(
                dict(
                    workload=name,
                    members=count,
                    block_size=block,
                    first_call_s=first,
                    median_s=statistics.median(seconds),
                    members_per_s=rate,
                )
            )
            print(f"{name}: {count:,} members, {rate:,.0f} members/s", flush=True)
    RESULTS.mkdir(exist_ok=True)
    record = dict(
        machine=machine(),
        devices=[str(d) for d in jax.devices()],
        command="python benchmarks/gpu_ensemble.py " + " ".join(sys.argv[1:]),
        rows=rows,
    )
    path = RESULTS / "gpu_ensemble.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    plot(rows, RESULTS / "gpu_ensemble.png", record["devices"][0])
    print(f"wrote {path}")


def plot(rows, path, device) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for name in dict.fromkeys(row["workload"] for row in rows):
        mine = [row for row in rows if row["workload"] == name]
        ax.loglog(
            [row["members"] for row in mine],
            [row["members_per_s"] for row in mine],
            "o-",
            label=name,
        )
    ax.set(xlabel="members", ylabel="members per second", title=device)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
