"""Runs one fixed ensemble on forced host devices and saves every output array.

Run by tests/test_ensemble.py in subprocesses (the device count is fixed when JAX
starts, so the sharded runs need processes of their own):

    python tests/ensemble_worker.py OUT.npz --host-devices 4 --devices 1 4
    python tests/ensemble_worker.py OUT.npz --host-devices 2 --devices 4 \\
        --coordinator localhost:PORT --num-processes 2 --process-id 0
"""

import argparse
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--host-devices", type=int, required=True)
    parser.add_argument("--devices", type=int, nargs="+", required=True)
    parser.add_argument("--coordinator")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    args = parser.parse_args()
    os.environ["XLA_FLAGS"] = (
        f"--xla_force_host_platform_device_count={args.host_devices}"
    )
    import jax

    if args.coordinator is not None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        # The processes must all connect within `initialization_timeout`, each must
        # send a heartbeat within `heartbeat_timeout_seconds` (a process busy
        # compiling on a loaded machine can miss JAX's 100 s), and at exit each waits
        # `shutdown_timeout_seconds` at a barrier for the others to finish (JAX's
        # 300 s, which a process left behind on a busy 2-core machine has missed).
        jax.distributed.initialize(
            coordinator_address=args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
            initialization_timeout=1800,
            heartbeat_timeout_seconds=1800,
            shutdown_timeout_seconds=1800,
        )
    import numpy as np

    import ebm

    # Ten members in blocks of two: the last device's shard is part padding. Member 0
    # (S0 = 1240, past the snowball fold) does not converge in 40 steps, so a failure
    # is sharded too.
    members = ebm.sweep(D=np.linspace(0.3, 0.8, 10), S0=np.linspace(1240.0, 1400.0, 10))
    saved = {}
    for devices in args.devices:
        runs = {
            "equilibrium": ebm.ensemble(
                members,
                gradient="global_mean",
                devices=devices,
                block_size=2,
                max_steps=40,
                on_failure="ignore",
            ),
            "integrate_fixed": ebm.ensemble(
                members,
                "integrate_fixed",
                gradient="ice_edge",
                devices=devices,
                block_size=2,
                # A 2-year run whose steps are within the fixed-step error check
                # for every member (dt = 0.05 is refused for S0 = 1382 and 1400).
                dt=0.025,
                steps=80,
                on_failure="ignore",
            ),
        }
        for task, run in runs.items():
            leaves = jax.tree_util.tree_flatten_with_path((run.result, run.gradient))
            for path, leaf in leaves[0]:
                key = f"{devices}/{task}{jax.tree_util.keystr(path)}"
                saved[key] = np.asarray(leaf)
            saved[f"{devices}/{task}/ok"] = np.asarray(run.ok)
    saved["process_count"] = np.asarray(jax.process_count())
    saved["device_count"] = np.asarray(jax.device_count())
    if jax.process_index() == 0:
        np.savez(args.output, **saved)


if __name__ == "__main__":
    sys.exit(main())
