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

import equinox as eqx
import jax


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

    compiled = jax.jit(call).lower(dynamic).compile()
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
