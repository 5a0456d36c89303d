"""Ensemble throughput: equilibria plus gradients per second, against members and
devices.

Each member is `ebm.equilibrium` (60 cells) and `jax.grad` of its global mean with
respect to every parameter, by `ebm.ensemble(..., gradient="global_mean")`. The
members sweep D over [0.3, 0.8] and S0 over [1300, 1420] W m-2 together. For each
device count (1, 2, 4) and member count (1 to 10,000): the first call (compilation
included), then the median of `--repeats` calls after it. On CPU the devices are
forced host devices (`--xla_force_host_platform_device_count`), which share the
machine's cores; on a GPU machine `--platform gpu` uses its devices instead. The
baseline is a Python loop over members of one jitted equilibrium and gradient.
`cores_busy` is the process's CPU time over the wall time of a call.

Also the time of each piece of a member (`breakdown` in the JSON): the energy budget,
its tridiagonal Jacobian, one solve, the eigenvalue bound and the final eigenvalues,
vmapped over one block.

Writes benchmarks/results/ensemble_throughput.json and .png.

Run: python benchmarks/ensemble_throughput.py [--members 1 10 ...] [--devices 1 2 4]
    [--block-size 256] [--repeats 3] [--platform cpu|gpu] [--output NAME]
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time


RESULTS = pathlib.Path(__file__).parent / "results"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--members", type=int, nargs="+", default=[1, 10, 100, 1000, 10_000]
    )
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument(
        "--block-sizes", type=int, nargs="*", default=[16, 64, 256, 1024]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--loop-members", type=int, default=100, help="members of the loop baseline"
    )
    parser.add_argument("--platform", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--output", default="ensemble_throughput")
    return parser.parse_args()


def members_of(count: int):
    """`count` members sweeping D over [0.3, 0.8] and S0 over [1300, 1420] W m-2
    together (imported here: `main` sets the devices before jax is imported)."""
    import numpy as np

    import ebm

    return ebm.sweep(
        D=np.linspace(0.3, 0.8, count), S0=np.linspace(1300.0, 1420.0, count)
    )


def main() -> None:
    arguments = parse()
    if arguments.platform == "cpu":
        count = max(arguments.devices)
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={count}"
        os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import jax
    from _machine import machine

    import ebm

    available = len(jax.devices())
    devices = [d for d in arguments.devices if d <= available]

    def measure(count: int, device_count: int, block_size: int) -> dict:
        members = members_of(count)
        run = lambda: ebm.ensemble(  # noqa: E731
            members,
            gradient="global_mean",
            devices=device_count,
            block_size=block_size,
            on_failure="ignore",
        )
        start = time.perf_counter()
        first = run()
        first_seconds = time.perf_counter() - start
        times, busy = [], []
        for _ in range(arguments.repeats):
            start, cpu = time.perf_counter(), time.process_time()
            run()
            times.append(time.perf_counter() - start)
            busy.append((time.process_time() - cpu) / times[-1])
        seconds = statistics.median(times)
        return dict(
            members=count,
            devices=device_count,
            block_size=block_size,
            first_call_seconds=first_seconds,
            median_seconds=seconds,
            members_per_second=count / seconds,
            cores_busy=statistics.median(busy),
            failed=len(first.failures),
            mean_global_mean=float(first.mean("global_mean")[0]),
        )

    # The baseline: one jitted equilibrium and gradient per member, in a Python loop.
    single = jax.jit(
        jax.value_and_grad(lambda p: ebm.equilibrium(p, near_fold=None).global_mean)
    )
    loop_members = members_of(arguments.loop_members)
    each = [
        jax.tree.map(lambda x: x[i], loop_members)
        for i in range(arguments.loop_members)
    ]
    jax.block_until_ready(single(each[0]))
    start = time.perf_counter()
    for params in each:
        jax.block_until_ready(single(params))
    loop_seconds = time.perf_counter() - start
    loop = dict(
        members=arguments.loop_members,
        seconds=loop_seconds,
        members_per_second=arguments.loop_members / loop_seconds,
    )
    print(f"loop of single calls: {loop['members_per_second']:.1f} members/s")

    rows = []
    for device_count in devices:
        for count in arguments.members:
            row = measure(count, device_count, arguments.block_size)
            rows.append(row)
            print(
                f"devices {device_count}  members {count:6d}  "
                f"first {row['first_call_seconds']:7.2f} s  "
                f"then {row['median_seconds']:8.3f} s  "
                f"{row['members_per_second']:9.1f} members/s  "
                f"cores busy {row['cores_busy']:.2f}  failed {row['failed']}",
                flush=True,
            )
    breakdown = pieces(arguments.block_size, arguments.repeats)
    for name, value in breakdown["microseconds_per_member"].items():
        print(f"{name:40s} {value:8.2f} us per member", flush=True)
    block_rows = []
    largest = max(arguments.members)
    block_members = min(largest, 4096)
    for block_size in arguments.block_sizes:
        row = measure(block_members, 1, block_size)
        block_rows.append(row)
        print(
            f"block size {block_size:4d}  members {block_members}  "
            f"{row['members_per_second']:9.1f} members/s",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{arguments.output}.json"
    record = dict(
        machine=machine(),
        platform=arguments.platform,
        device_count=available,
        grid=60,
        per_member="equilibrium + jax.grad of the global mean (15 parameters)",
        rows=rows,
        block_sizes=block_rows,
        loop_of_single_calls=loop,
        breakdown=breakdown,
    )
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")
    plot(rows, RESULTS / f"{arguments.output}.png", arguments.platform)


def pieces(block_size: int, repeats: int) -> dict:
    """Where a member's time goes: each piece of an equilibrium and its gradient,
    vmapped over one block of members at the present-day start, in microseconds
    per member (the minimum over calls after the first), with the pseudo-transient
    iterations the block takes."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import ebm
    from ebm._numerics.tridiagonal import probe_tridiagonal

    members = members_of(block_size)
    model = ebm.EnergyBalanceModel()
    start = jnp.broadcast_to(ebm.present_day_profile(model.grid), (block_size, 60))

    def linearised(params, T):
        budget, linear = jax.linearize(lambda x: model.energy_budget(x, params), T)
        return budget, probe_tridiagonal(linear, T.shape[0], T.dtype)

    budget, jacobian = jax.jit(jax.vmap(linearised))(members, start)

    def equilibrium(params):
        return ebm.equilibrium(params, near_fold=None, throw=False)

    timed = {
        "energy budget": (lambda p, T: model.energy_budget(T, p), members, start),
        "sub-grid albedo": (
            lambda p, T: model.albedo(T, p, model.grid),
            members,
            start,
        ),
        "budget and its tridiagonal Jacobian": (linearised, members, start),
        "one tridiagonal solve": (
            lambda J, b: J.shifted(10.0).solve(b),
            jacobian,
            budget,
        ),
        "bound on a positive eigenvalue": (
            lambda J: J.leading_eigenvalue_bound(),
            jacobian,
        ),
        "leading and lowest eigenvalues": (
            lambda J: (J.leading_eigenvalue(), J.lowest_eigenvalue()),
            jacobian,
        ),
        "equilibrium": (lambda p: equilibrium(p).global_mean, members),
        "equilibrium and gradient": (
            jax.value_and_grad(lambda p: equilibrium(p).global_mean),
            members,
        ),
    }
    microseconds = {}
    for name, (function, *arguments) in timed.items():
        compiled = jax.jit(jax.vmap(function))
        jax.block_until_ready(compiled(*arguments))
        times = []
        for _ in range(max(repeats, 30)):
            start_time = time.perf_counter()
            jax.block_until_ready(compiled(*arguments))
            times.append(time.perf_counter() - start_time)
        microseconds[name] = min(times) / block_size * 1e6
    steps = np.asarray(jax.jit(jax.vmap(equilibrium))(members).num_steps)
    return dict(
        block_size=block_size,
        microseconds_per_member=microseconds,
        pseudo_transient_steps=dict(
            mean=float(steps.mean()), min=int(steps.min()), max=int(steps.max())
        ),
    )


def plot(rows: list[dict], path: pathlib.Path, platform: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    for device_count in sorted({row["devices"] for row in rows}):
        mine = [row for row in rows if row["devices"] == device_count]
        axes.loglog(
            [row["members"] for row in mine],
            [row["members_per_second"] for row in mine],
            marker="o",
            label=f"{device_count} device{'s' if device_count > 1 else ''}",
        )
    axes.set_xlabel("members")
    axes.set_ylabel("equilibria + gradients per second")
    axes.set_title(f"ebm.ensemble throughput ({platform}, 60 cells)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
