"""Forward-mode Jacobians need memory independent of the number of steps.

The Jacobian of the final profile with respect to every parameter (12 tangents),
taken with `jax.jacfwd` through 1,000 and 64,000 five-day steps: through
`ebm.integrate_fixed` (a `lax.scan`), and through `ebm.integrate` under
`adjoint="forward"` (diffrax's `ForwardMode`, Kvaerno5 with its step capped at five
days, so that it takes about as many steps). For contrast, the reverse-mode
Jacobian (`jax.jacrev`) through `integrate` under the recursive adjoint. Reports
XLA's temporary memory and, for the forward-mode Jacobians, the time of one run
after compilation; writes
benchmarks/results/forward_memory.json.

Run: python benchmarks/forward_memory.py [--steps 1000 64000]
"""

import argparse
import json
import pathlib
import time

import diffrax
import jax
from _machine import machine

import ebm


RESULTS = pathlib.Path(__file__).parent / "results"
DT = 5.0 / 365.25


def jacobians(steps: int) -> dict:
    years = steps * DT
    # Steps capped at DT: the controller then takes DT almost every step.
    controller = diffrax.PIDController(rtol=1e-8, atol=1e-8, dtmax=DT)
    constant = dict(stepsize_controller=controller, dt0=DT)

    def fixed(params):
        return ebm.integrate_fixed(params, dt=DT, steps=steps, checkpoint="none").T

    def adaptive(adjoint):
        def run(params):
            return ebm.integrate(
                params, years=years, adjoint=adjoint, max_steps=2 * steps, **constant
            ).T

        return run

    return {
        "integrate_fixed, jacfwd": jax.jacfwd(fixed),
        "integrate adjoint='forward', jacfwd": jax.jacfwd(adaptive("forward")),
        "integrate adjoint='recursive', jacrev": jax.jacrev(adaptive("recursive")),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=(1_000, 64_000))
    parser.add_argument(
        "--output", type=pathlib.Path, default=RESULTS / "forward_memory.json"
    )
    arguments = parser.parse_args()
    params = ebm.Params()
    rows = []
    for steps in arguments.steps:
        for name, fn in jacobians(steps).items():
            compiled = jax.jit(fn).lower(params).compile()
            memory = ebm.CompiledMemory.of(compiled)
            seconds = None
            if "jacfwd" in name:
                # The reverse-mode row is there for its memory; timing 12 reverse
                # passes through 64,000 implicit steps would take many minutes.
                jax.block_until_ready(compiled(params))
                start = time.perf_counter()
                jax.block_until_ready(compiled(params))
                seconds = time.perf_counter() - start
            row = dict(
                steps=steps,
                method=name,
                temporary_megabytes=memory.temporary_megabytes,
                seconds=seconds,
            )
            rows.append(row)
            timing = "not timed" if seconds is None else f"{seconds:8.3f} s"
            print(
                f"{steps:>8,d} steps  {name:<38} {memory.temporary_megabytes:10.4f} MB"
                f"  {timing}"
            )
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    record = dict(
        benchmark="forward_memory",
        command="python benchmarks/forward_memory.py --steps "
        + " ".join(map(str, arguments.steps)),
        model="default 60-cell EBM, dt = 5 days, Jacobian of T (60) wrt 12 parameters",
        machine=machine(),
        rows=rows,
    )
    arguments.output.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
