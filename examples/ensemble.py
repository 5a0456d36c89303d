"""A parameter ensemble: equilibria and their gradients over a grid of (D, S0).

Every member is an equilibrium and the gradient of its global mean with respect to
every parameter, computed by `ebm.ensemble` on every device (vmap in blocks, the
members sharded over a `jax.sharding.Mesh`). Members next to the snowball fold
converge slowly, and with the few root-finder steps allowed here two of the 900 do
not: they are reported, left out of the statistics and marked on the maps, without
touching the others.

One machine (all its devices; `--host-devices 4` forces four CPU devices):

    python examples/ensemble.py [--fast] [--host-devices 4]

Several hosts, after `jax.distributed.initialize` (here two processes on one
machine, each with two CPU devices; on a cluster, run one process per host with the
first host's address as the coordinator):

    python examples/ensemble.py --host-devices 2 --coordinator localhost:12355 \\
        --num-processes 2 --process-id 0 &
    python examples/ensemble.py --host-devices 2 --coordinator localhost:12355 \\
        --num-processes 2 --process-id 1

Every process computes its own devices' members and receives them all; process 0
prints, and writes `ensemble.nc` and `ensemble.png`.
"""

import argparse
import os
import time


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="a 6 x 6 grid")
    parser.add_argument("--n-d", type=int, default=30, help="values of D")
    parser.add_argument("--n-s0", type=int, default=30, help="values of S0")
    parser.add_argument("--host-devices", type=int, help="force this many CPU devices")
    parser.add_argument("--coordinator", help="host:port of process 0")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    arguments = parse()
    if arguments.host_devices is not None:
        os.environ["XLA_FLAGS"] = (
            f"--xla_force_host_platform_device_count={arguments.host_devices}"
        )
    import jax

    if arguments.coordinator is not None:
        # CPU devices of several processes talk through gloo; GPUs need nothing.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        # The processes must all connect within `initialization_timeout`, each must
        # send a heartbeat within `heartbeat_timeout_seconds` (a process busy
        # compiling on a loaded machine can miss JAX's 100 s), and at exit each waits
        # `shutdown_timeout_seconds` at a barrier for the others to finish (JAX's
        # 300 s, which a process left behind on a busy 2-core machine has missed).
        jax.distributed.initialize(
            coordinator_address=arguments.coordinator,
            num_processes=arguments.num_processes,
            process_id=arguments.process_id,
            initialization_timeout=1800,
            heartbeat_timeout_seconds=1800,
            shutdown_timeout_seconds=1800,
        )
    import numpy as np

    import ebm

    n_d, n_s0 = (6, 6) if arguments.fast else (arguments.n_d, arguments.n_s0)
    D = np.linspace(0.2, 1.0, n_d)
    S0 = np.linspace(1250.0, 1450.0, n_s0)
    members = ebm.sweep(D=D, S0=S0, product=True)
    start = time.perf_counter()
    run = ebm.ensemble(
        members, gradient="global_mean", max_steps=64, on_failure="ignore"
    )
    seconds = time.perf_counter() - start
    if jax.process_index() != 0:
        return

    count = run.num_members
    print(
        f"{count} members ({n_d} D x {n_s0} S0) on {jax.device_count()} devices "
        f"({jax.process_count()} processes): {seconds:.2f} s, compilation included"
    )
    print(f"{len(run.failures)} failed" + (", e.g.:" if run.failures else ""))
    for member, reason in list(run.failures.items())[:3]:
        print(
            f"  member {member} (D={float(run.params.D[member]):.3f}, "
            f"S0={float(run.params.S0[member]):.1f}): {reason[:90]}"
        )
    mean, ok = run.mean("global_mean")
    spread, _ = run.std("global_mean")
    print(
        f"global mean over the {ok} converged members: {mean:.2f} +- {spread:.2f} degC"
    )
    sensitivity, _ = run.quantile("d_global_mean_d_S0", [0.1, 0.5, 0.9])
    print(
        "d(global mean)/dS0, 10/50/90%: "
        + " / ".join(f"{value:.4f}" for value in sensitivity)
        + " K per W m-2"
    )
    ebm.save(run, "ensemble.nc")
    print("wrote ensemble.nc")
    plot(run, n_d, n_s0, D, S0)


def plot(run, n_d, n_s0, D, S0) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    shape = (n_d, n_s0)
    fields = (
        (np.asarray(run.result.global_mean), "global mean (degC)"),
        (np.asarray(run.result.ice_edge), "ice edge (degN)"),
        (np.asarray(run.gradient.S0), "d(global mean)/dS0 (K per W m-2)"),
    )
    figure, axes = plt.subplots(1, 3, figsize=(14, 4))
    failed = ~np.asarray(run.ok).reshape(shape)
    for axis, (values, title) in zip(axes, fields):
        image = axis.pcolormesh(S0, D, values.reshape(shape), shading="nearest")
        figure.colorbar(image, ax=axis)
        rows, columns = np.nonzero(failed)
        axis.plot(S0[columns], D[rows], "kx", markersize=4, label="failed")
        axis.set_xlabel("S0 (W m-2)")
        axis.set_ylabel("D (W m-2 K-1)")
        axis.set_title(title)
    axes[0].legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    figure.savefig("ensemble.png", dpi=110)
    print("wrote ensemble.png")


if __name__ == "__main__":
    main()
