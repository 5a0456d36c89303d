"""`StepCheckpoint`: `lax.scan` over `jax.checkpoint(step)`, whose reverse pass stores
each step's input, $Ns$ for $N$ steps of a state of size $s$, and recomputes each
step once."""

from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp

from .base import AbstractCheckpoint


class StepCheckpoint(AbstractCheckpoint):
    """`lax.scan` over `jax.checkpoint(step)`: stores each step's input only.

    **Arguments:**

    - `policy`: a `jax.checkpoint_policies` policy (default: save nothing but the
        input). The steppers name the model's tendency `"ebm_tendency"`, so
        `jax.checkpoint_policies.save_only_these_names("ebm_tendency")` keeps it
        instead of recomputing it.
    """

    policy: Callable[..., bool] | None = None

    name: ClassVar[str] = "step"
    memory_table_sizes: ClassVar[tuple[None, ...]] = (None,)

    def loop(self, step, x0, args, steps):
        checkpointed = jax.checkpoint(step, policy=self.policy)

        def body(x, i):
            return checkpointed(i, x, args), None

        return jax.lax.scan(body, x0, jnp.arange(steps))[0]
