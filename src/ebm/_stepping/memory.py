"""What a compiled function costs, as the compiler books it.

`jax.jit(fn).lower(*args).compile()` gives XLA's executable for the current backend;
its `memory_analysis()` reports the buffers XLA assigned, and `cost_analysis()` its
operation counts where the backend provides them.

Which figures mean what:

- `temporary_bytes` is the peak of the buffers XLA allocates while the executable
    runs, beyond its arguments and outputs: on every backend, this is the memory a
    gradient's stored residuals and checkpoints occupy, and the figure to compare
    between schedules. On CPU it is exact for the buffers XLA plans; it does not
    include the Python process, JAX's runtime, or allocations inside custom calls
    (LAPACK's workspaces).
- `argument_bytes`, `output_bytes`: the inputs and outputs, the same for every
    schedule of one problem.
- `host_temporary_bytes`: buffers placed in host memory by offloading policies
    (pinned host memory on accelerators; on CPU the "host" is the same RAM).
- `flops`: XLA's estimate of floating-point operations from `cost_analysis()`. On CPU
    it counts the operations of one pass through each loop body, not times its trip
    count, so it is a per-iteration figure there, not a total; `None` where the
    backend reports nothing.
"""

import statistics
import time

import equinox as eqx
import jax
import numpy as np

from .._zonal.params import Params
from .checkpoints.names import default_schedules, schedule_name
from .integrate import integrate_fixed


class CompiledMemory(eqx.Module):
    """The compiler's figures for one function; bytes, and FLOPs where known."""

    temporary_bytes: int
    argument_bytes: int
    output_bytes: int
    generated_code_bytes: int
    host_temporary_bytes: int
    flops: float | None

    @property
    def temporary_megabytes(self) -> float:
        return self.temporary_bytes / 1e6

    @staticmethod
    def of(compiled: jax.stages.Compiled) -> "CompiledMemory":
        """The figures of an executable from `jax.jit(fn).lower(...).compile()`."""
        memory = compiled.memory_analysis()
        try:
            costs = compiled.cost_analysis()
        except NotImplementedError:
            costs = None
        if isinstance(costs, list):
            costs = costs[0] if costs else None
        flops = None if not costs or "flops" not in costs else float(costs["flops"])
        return CompiledMemory(
            temporary_bytes=int(memory.temp_size_in_bytes),
            argument_bytes=int(memory.argument_size_in_bytes),
            output_bytes=int(memory.output_size_in_bytes),
            generated_code_bytes=int(memory.generated_code_size_in_bytes),
            host_temporary_bytes=int(getattr(memory, "host_temp_size_in_bytes", 0)),
            flops=flops,
        )


def compiled_memory(fn, *args, **kwargs) -> CompiledMemory:
    """Compile `fn(*args, **kwargs)` and report the compiler's memory and FLOPs.

    Array arguments are traced and everything else is static, as with
    `eqx.filter_jit`; `fn` is compiled for the default backend. Pass
    `jax.grad(loss)` to measure a gradient.

    **Arguments:**

    - `fn`: the function.
    - `*args`, `**kwargs`: example arguments (their shapes and dtypes matter).

    **Returns:**

    An `ebm.CompiledMemory`.
    """
    dynamic, static = eqx.partition((args, kwargs), eqx.is_array)

    def call(dynamic):
        args, kwargs = eqx.combine(dynamic, static)
        return fn(*args, **kwargs)

    return CompiledMemory.of(jax.jit(call).lower(dynamic).compile())


DEFAULT_SCHEDULES = default_schedules()
"""What `memory_table` measures by default: each schedule at the sizes its class asks
for (`memory_table_sizes`): `"none"`, `"step"`, `"sqrt"`, `("nested", 3)`, ...,
`("binomial", 8)`, ..., `"recursive"`, `("recursive", 8)`."""


def _timed(compiled, params, repeats: int, max_seconds: float):
    """Median wall time over `repeats` runs after a first run, the runs, the output.

    When the first run takes longer than `max_seconds`, it is the only one.
    """
    start = time.perf_counter()
    output = jax.block_until_ready(compiled(params))
    first = time.perf_counter() - start
    if first > max_seconds:
        return first, 1, output
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        output = jax.block_until_ready(compiled(params))
        times.append(time.perf_counter() - start)
    return statistics.median(times), repeats, output


def memory_table(
    steps=(1_000, 4_000, 16_000, 64_000),
    schedules=DEFAULT_SCHEDULES,
    *,
    params=None,
    model=None,
    dt: float = 5.0 / 365.25,
    stepper="imex",
    repeats: int = 5,
    max_timed_bytes: int = 4 * 10**9,
    max_seconds: float = 60.0,
    progress=print,
) -> list[dict]:
    """Memory and time of the forward pass and of the gradient under each schedule.

    For each number of steps, the forward pass (`ebm.integrate_fixed` to the final
    global mean) and `jax.grad` of it under every schedule are compiled; each gets
    XLA's temporary memory and the median wall time over `repeats` runs, both also as
    ratios to the forward pass, and the largest difference of each gradient from the
    first one run (relative to its largest component). Gradients whose temporary
    memory exceeds `max_timed_bytes` are compiled (which allocates nothing) but not
    run: their row has `"seconds": None` and `"skipped"` says why.

    **Arguments:**

    - `steps`: the run lengths.
    - `schedules`: `checkpoint` values for `ebm.integrate_fixed`.
    - `params`: default `ebm.Params()`; `model` (default: the default model), `dt`
        (years), `stepper` as for `ebm.integrate_fixed`.
    - `repeats`: timed runs per entry (the median is reported).
    - `max_timed_bytes`: the largest temporary memory that is run.
    - `max_seconds`: an entry whose first run takes longer is timed by that run
        alone (its row has `"runs": 1`).
    - `progress`: called with one line per entry (`None` for silence).

    **Returns:**

    A list of dicts, one per (steps, schedule), the forward pass as schedule
    `"forward"`.
    """
    params = Params() if params is None else params
    rows = []
    for count in steps:

        def loss(params, checkpoint="none", count=count):
            run = integrate_fixed(
                params,
                dt=dt,
                steps=count,
                model=model,
                stepper=stepper,
                checkpoint=checkpoint,
            )
            return run.global_mean

        forward = jax.jit(loss).lower(params).compile()
        forward_memory = CompiledMemory.of(forward)
        forward_seconds, _, _ = _timed(forward, params, repeats, max_seconds)
        forward_row = dict(
            steps=count,
            schedule="forward",
            temporary_megabytes=forward_memory.temporary_megabytes,
            memory_ratio=1.0,
            seconds=forward_seconds,
            time_ratio=1.0,
        )
        rows.append(forward_row)
        if progress is not None:
            progress(format_row(forward_row))
        reference = None
        for checkpoint in schedules:
            gradient = jax.jit(jax.grad(lambda p, c=checkpoint: loss(p, c)))
            compiled = gradient.lower(params).compile()
            memory = CompiledMemory.of(compiled)
            row = dict(
                steps=count,
                schedule=schedule_name(checkpoint),
                temporary_megabytes=memory.temporary_megabytes,
                memory_ratio=memory.temporary_bytes
                / max(forward_memory.temporary_bytes, 1),
            )
            if memory.temporary_bytes > max_timed_bytes:
                row |= dict(seconds=None, skipped="temporary memory over the limit")
            else:
                seconds, runs, value = _timed(compiled, params, repeats, max_seconds)
                value = np.array([float(leaf) for leaf in jax.tree.leaves(value)])
                # Every schedule is exact: the first gradient run is the reference.
                reference = value if reference is None else reference
                difference = np.max(np.abs(value - reference)) / np.max(
                    np.abs(reference)
                )
                row |= dict(
                    seconds=seconds,
                    runs=runs,
                    repeats=repeats,
                    time_ratio=seconds / forward_seconds,
                    max_relative_difference=float(difference),
                )
            del compiled
            rows.append(row)
            if progress is not None:
                progress(format_row(row))
    return rows


def format_row(row: dict) -> str:
    seconds = row.get("seconds")
    if seconds is None:
        timing = f"not run: {row['skipped']}"
    else:
        timing = f"{seconds:9.4f} s ({row['time_ratio']:6.2f} x fwd)"
        if row.get("runs", 0) < row.get("repeats", 0):
            timing += f" ({row['runs']} run, over the time budget)"
        if "max_relative_difference" in row:
            timing += f"  diff {row['max_relative_difference']:.1e}"
    return (
        f"{row['steps']:>9,d} steps  {row['schedule']:<18} "
        f"{row['temporary_megabytes']:12.4f} MB ({row['memory_ratio']:10.1f} x fwd)  "
        + timing
    )
