"""`RecursiveCheckpoint(c)`: diffrax's `RecursiveCheckpointAdjoint` driving the steps.

It stores $c$ states (equinox's online treeverse, Stumm & Walther 2010) and
recomputes near the fewest steps possible with them; reverse mode only (`grad`,
`vjp`), as diffrax's adjoint is.
"""

from typing import ClassVar

import diffrax
import jax
import jax.numpy as jnp

from .base import AbstractCheckpoint, Step, _is_count


class _IndexStepSolver(diffrax.AbstractSolver):
    """A diffrax solver whose step from `t` to `t + 1` is `step(t, x, args)`."""

    step_function: Step
    term_structure: ClassVar = diffrax.AbstractTerm
    interpolation_cls: ClassVar = diffrax.LocalLinearInterpolation

    def order(self, terms):
        del terms
        return 1

    def init(self, terms, t0, t1, y0, args):
        del terms, t0, t1, y0, args
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del terms, t1, solver_state, made_jump
        index = jnp.round(t0).astype(int)
        y1 = self.step_function(index, y0, args)
        return y1, None, dict(y0=y0, y1=y1), None, diffrax.RESULTS.successful

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)


class RecursiveCheckpoint(AbstractCheckpoint):
    """diffrax's `RecursiveCheckpointAdjoint(checkpoints)` driving the same steps.

    The loop runs as `diffrax.diffeqsolve` with unit steps in "time" = step index, so
    its reverse pass is diffrax's (equinox's online treeverse, Stumm & Walther 2010):
    optimal up to about `(c + 1)(c + 2) / 2` steps, a few extra recomputations beyond.

    **Arguments:**

    - `checkpoints`: as diffrax's (`None`: diffrax's default for a known number of
        steps N, `floor(sqrt(2 N + 1/4) - 1/2)`, about 357 at 64,000 steps).
    """

    checkpoints: int | None = None

    name: ClassVar[str] = "recursive"
    size_field: ClassVar[str] = "checkpoints"
    supports_forward_mode: ClassVar[bool] = False
    memory_table_sizes: ClassVar[tuple[int | None, ...]] = (None, 8)

    def __check_init__(self):
        if self.checkpoints is not None and not _is_count(self.checkpoints):
            raise ValueError(
                "RecursiveCheckpoint `checkpoints` must be None or an integer >= 1, "
                f"got {self.checkpoints!r}."
            )

    def loop(self, step, x0, args, steps):
        def never_called(t, y, args):
            del t, args
            return jax.tree.map(jnp.zeros_like, y)

        solution = diffrax.diffeqsolve(
            diffrax.ODETerm(never_called),
            _IndexStepSolver(step),
            t0=0.0,
            t1=float(steps),
            dt0=1.0,
            y0=x0,
            args=args,
            saveat=diffrax.SaveAt(t1=True),
            stepsize_controller=diffrax.ConstantStepSize(),
            adjoint=diffrax.RecursiveCheckpointAdjoint(self.checkpoints),
            max_steps=steps,
        )
        return jax.tree.map(lambda y: y[-1], solution.ys)
