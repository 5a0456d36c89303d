r"""`NestedCheckpoint(k)`: $k$ nested `lax.scan`s, each level's chunks under
`jax.checkpoint`.

The forward pass stores the inputs of $k$ levels of $b = \lceil N^{1/k}\rceil$ chunks,
about $kbs$ for $N$ steps of a state of size $s$; the backward pass recomputes each
step $k - 1$ times. `NestedCheckpoint(2)` (`"sqrt"`) is the classic two-level
$\sqrt N$ scheme. Being scans under `jax.checkpoint`, every JAX transformation goes
through it.
"""

import functools
import math
from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp

from .base import AbstractCheckpoint, _is_count


@functools.cache
def chunk_sizes(steps: int, levels: int) -> tuple[int, ...]:
    """Chunk counts per level, outermost first, whose product covers `steps`.

    Each level takes a size within one of the `levels`-th root of what is left,
    choosing the combination with the smallest product: the padding (steps past
    `steps`, computed and discarded) stays under 10% for a thousand steps or more,
    where one size for every level could pad by half.
    """
    if levels == 1:
        return (steps,)
    root = steps ** (1.0 / levels)
    # At least 2 per level where there are steps enough, so that no level is empty.
    smallest = 2 if steps >= 2**levels else 1
    candidates = range(max(smallest, math.floor(root) - 1), math.ceil(root) + 2)
    options = [
        (size,) + chunk_sizes(-(-steps // size), levels - 1) for size in candidates
    ]
    return min(options, key=lambda sizes: (math.prod(sizes), max(sizes)))


class NestedCheckpoint(AbstractCheckpoint):
    """`levels` nested `lax.scan`s, each level's chunks under `jax.checkpoint`.

    The steps are grouped into about `b = steps ** (1 / levels)` chunks of `b`
    sub-chunks, ..., down to single steps (`chunk_sizes`); steps past `steps` (when
    the sizes' product exceeds it) are identity. The forward pass stores the input of
    every chunk at every level, about `levels * b` states; the backward pass
    recomputes each chunk once per level above it. `levels=2` is the two-level
    sqrt(N) scheme.

    **Arguments:**

    - `levels`: number of nesting levels, at least 1 (1 is a plain scan).
    - `policy`: a `jax.checkpoint_policies` policy for the checkpointed chunks.
    - `offload`: keep the stored chunk inputs in pinned host memory instead of device
        memory (JAX's offloading checkpoint policy); for accelerators.
    """

    levels: int = 2
    policy: Callable[..., bool] | None = None
    offload: bool = False

    name: ClassVar[str] = "nested"
    size_field: ClassVar[str] = "levels"
    aliases: ClassVar[tuple[tuple[str, int], ...]] = (("sqrt", 2),)
    memory_table_sizes: ClassVar[tuple[int, ...]] = (2, 3, 4)

    def __check_init__(self):
        if not _is_count(self.levels):
            raise ValueError(
                "NestedCheckpoint `levels` must be an integer >= 1, got "
                f"{self.levels!r}."
            )
        if self.offload and self.policy is not None:
            raise ValueError(
                "NestedCheckpoint: give either `policy` or `offload=True`, not both "
                "(offloading is itself a checkpoint policy)."
            )

    def loop(self, step, x0, args, steps):
        sizes = chunk_sizes(steps, self.levels)
        padded = math.prod(sizes) > steps
        policy = self.policy
        if self.offload:
            policy = jax.checkpoint_policies.save_and_offload_only_these_names(
                names_which_can_be_saved=(),
                names_which_can_be_offloaded=("ebm_checkpoint",),
                offload_src="device",
                offload_dst="pinned_host",
            )

        def single(start, x):
            if not padded:
                return step(start, x, args)
            # A select rather than a cond: cheaper per step than a branch, and the
            # padding is small (see `chunk_sizes`). Padded steps repeat the final
            # state's step and discard it.
            stepped = step(start, x, args)
            return jax.tree.map(
                lambda new, old: jnp.where(start < steps, new, old), stepped, x
            )

        run, stride = single, 1
        for level, size in enumerate(reversed(sizes), start=1):
            inner = run
            if level > 1:
                inner = _checkpointed_chunk(inner, policy, self.offload)

            def run(start, x, inner=inner, stride=stride, size=size):
                def body(x, chunk):
                    return inner(start + chunk * stride, x), None

                return jax.lax.scan(body, x, jnp.arange(size))[0]

            stride *= size

        return run(jnp.asarray(0), x0)


def _checkpointed_chunk(chunk, policy, offload):
    if not offload:
        return jax.checkpoint(chunk, policy=policy)

    # Offloading applies to named residuals, so the chunk's input is named and the
    # chunk wrapped once more, with the offloading policy.
    @jax.checkpoint
    def recomputed(start, x):
        return chunk(start, x)

    def named(start, x):
        x = jax.ad_checkpoint.checkpoint_name(x, "ebm_checkpoint")
        return recomputed(start, x)

    return jax.checkpoint(named, policy=policy)
