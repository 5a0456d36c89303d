"""How much memory does a gradient through a long run need, and at what cost in time?

Differentiates the final global-mean temperature of N five-day steps of the default
model with respect to every parameter, under each checkpoint schedule of
`ebm.integrate_fixed`, and prints

1. what each schedule stores during the forward pass, from
   `jax.ad_checkpoint.print_saved_residuals` on a 16-step run;
2. the table of XLA temporary memory and median time, forward pass and gradients;

and draws the log-log figure (memory_scaling.png). The full-size table, up to a
million steps, is `python benchmarks/memory.py`.

Run: python examples/memory_scaling.py [--fast]
"""

import argparse
import collections
import contextlib
import io
import math
import re

import jax
import numpy as np

import ebm
from ebm._stepping.memory import DEFAULT_SCHEDULES, schedule_name


DT = 5.0 / 365.25
FAST_SCHEDULES = ("none", "step", "sqrt", ("binomial", 8), "recursive")
# The fast table: the plain gradient, the default and the least memory (each
# schedule and step count is a gradient compiled on its own).
FAST_TABLE = ("none", "sqrt", ("binomial", 8))


def stored_arrays(checkpoint, steps: int = 16) -> collections.Counter:
    """Shapes of the residuals reverse mode saves, as printed by JAX."""

    def loss(params):
        run = ebm.integrate_fixed(params, dt=DT, steps=steps, checkpoint=checkpoint)
        return run.global_mean

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        jax.ad_checkpoint.print_saved_residuals(loss, ebm.Params())
    shapes = re.findall(r"^([a-z]+\d+\[[\d,]*\])", printed.getvalue(), re.MULTILINE)
    return collections.Counter(shape for shape in shapes if shape.endswith("]"))


def describe(counter: collections.Counter) -> str:
    def size(shape):
        dims = re.search(r"\[([\d,]*)\]", shape).group(1)
        return math.prod(int(d) for d in dims.split(",") if d)

    big = {shape: n for shape, n in counter.items() if size(shape) >= 16}
    total = sum(size(shape) * n for shape, n in counter.items())
    listed = ", ".join(f"{n} x {shape}" for shape, n in sorted(big.items()))
    return f"{total:6d} numbers; arrays of 16+: {listed or '-'}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fast",
        action="store_true",
        help="small: residuals of 5 schedules, the table at N = 200, 800 for 3",
    )
    parser.add_argument("--plot", default="memory_scaling.png")
    arguments = parser.parse_args()

    schedules = FAST_SCHEDULES if arguments.fast else DEFAULT_SCHEDULES
    print("What reverse mode stores for a 16-step run (60 cells), by schedule:")
    for checkpoint in schedules:
        stored = describe(stored_arrays(checkpoint))
        print(f"  {schedule_name(checkpoint):<18} {stored}")

    steps = (200, 800) if arguments.fast else (1_000, 4_000, 16_000, 64_000)
    repeats = 1 if arguments.fast else 5
    print(f"\nMemory and time, forward pass and gradients ({repeats} runs each):")
    table = FAST_TABLE if arguments.fast else schedules
    rows = ebm.memory_table(steps, table, repeats=repeats)

    largest = max(steps)
    at_largest = {row["schedule"]: row for row in rows if row["steps"] == largest}
    gradients = {k: v for k, v in at_largest.items() if k != "forward"}
    smallest = min(gradients.values(), key=lambda row: row["temporary_megabytes"])
    plain = gradients["none"]
    time_ratio = smallest["seconds"] / plain["seconds"]
    print(
        f"\nAt {largest:,} steps the least memory is {smallest['schedule']}: "
        f"{smallest['temporary_megabytes']:.4f} MB, "
        f"{plain['temporary_megabytes'] / smallest['temporary_megabytes']:.0f} times "
        f"less than the plain gradient, in {time_ratio:.2f} times its time."
    )
    assert np.isfinite(smallest["temporary_megabytes"])
    ebm.plot_memory_scaling(rows, path=arguments.plot)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
