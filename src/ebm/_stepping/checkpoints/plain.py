"""`NoCheckpoint`: a plain `lax.scan`, whose reverse pass stores every step's
residuals (several arrays per step) and recomputes nothing."""

from typing import ClassVar

import jax
import jax.numpy as jnp

from .base import AbstractCheckpoint


class NoCheckpoint(AbstractCheckpoint):
    """A plain `lax.scan`: reverse mode stores every step's residuals."""

    name: ClassVar[str] = "none"
    memory_table_sizes: ClassVar[tuple[None, ...]] = (None,)

    def loop(self, step, x0, args, steps):
        def body(x, i):
            return step(i, x, args), None

        return jax.lax.scan(body, x0, jnp.arange(steps))[0]
