r"""Checkpoint schedules: how a fixed-step loop is differentiated in reverse mode.

A loop $x_{i+1} = \Phi(i, x_i)$, $i = 0, \dots, N-1$, has the reverse-mode gradient
$\bar x_i = (\partial\Phi/\partial x)^\top(i, x_i)\,\bar x_{i+1}$, which visits the
states in reverse order. A schedule decides which states the forward pass stores and
which the backward pass recomputes (Griewank & Walther, *Evaluating Derivatives*,
ch. 12). With $s$ the memory of one state and $N$ steps:

- `NoCheckpoint`: stores every step's residuals (several arrays per step); no
    recomputation; every JAX transformation.
- `StepCheckpoint`: stores every step's input, $Ns$; recomputes each step once;
    every transformation.
- `NestedCheckpoint(k)`: stores the inputs of $k$ levels of $b = \lceil N^{1/k}\rceil$
    chunks, about $kbs$; recomputes each step $k - 1$ times; every transformation.
- `BinomialCheckpoint(c)`: stores $c$ states, $cs$, whatever $N$; the fewest
    recomputations possible with that memory; `grad` and `vjp` only.
- `RecursiveCheckpoint(c)`: diffrax's `RecursiveCheckpointAdjoint`, $c$ states
    (equinox's online treeverse); near-minimal recomputations; `grad`, `vjp` only.

`NestedCheckpoint(2)` is the classic two-level $\sqrt N$ scheme.

The nested and per-step schedules are `lax.scan` under `jax.checkpoint`, so JAX can
apply any transformation to them (`jvp`, `jacfwd`, `grad` of `grad`) and a checkpoint
`policy` decides which named intermediates to keep. The binomial schedule is a
`custom_vjp` whose backward pass runs the schedule in a `lax.while_loop`; it is
reverse-mode only, like diffrax's `RecursiveCheckpointAdjoint`.

Each schedule class states its own facts as class attributes (its `name`, the field a
size sets, other names for a size, whether forward mode goes through it, the sizes
the memory table measures); the names `integrate_fixed(checkpoint=...)`, the seasonal
entry points and the `ebm` command take are built from them (`names.py`), so a new
schedule is one class and one entry in `names.CHECKPOINTS`' list.
"""

import abc
from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Int, PyTree


State = PyTree[Array]
Step = Callable[[Int[Array, ""], State, PyTree], State]


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class AbstractCheckpoint(eqx.Module):
    """A schedule for differentiating `steps` iterations of `step` in reverse mode.

    Subclass it with `loop`. A schedule that `integrate_fixed(checkpoint=...)` should
    also know by name sets `name` (and `size_field`, `aliases`) and is listed in
    `ebm._stepping.checkpoints.names`; one that cannot be differentiated in forward
    mode (a `custom_vjp`) sets `supports_forward_mode = False`, so that the entry
    points needing forward mode refuse it by name.
    """

    name: ClassVar[str | None] = None
    """The name `checkpoint=` takes (`"binomial"`), or `None`: by instance only."""

    size_field: ClassVar[str | None] = None
    """The field that `(name, size)` and `"name-size"` set (`"checkpoints"`), or
    `None` when the schedule has no size."""

    aliases: ClassVar[tuple[tuple[str, int], ...]] = ()
    """Other names for one size, as `(alias, size)` pairs (`("sqrt", 2)`)."""

    supports_forward_mode: ClassVar[bool] = True
    """Whether `jax.jvp` (and so `jax.jacfwd`, Newton-Krylov shooting) can go through
    `loop`; `False` for a schedule with a custom reverse pass."""

    memory_table_sizes: ClassVar[tuple[int | None, ...]] = ()
    """The sizes `ebm.memory_table` measures by default (`None`: the default size)."""

    @abc.abstractmethod
    def loop(self, step: Step, x0: State, args: PyTree, steps: int) -> State:
        """`x_N` from `x_0` by `x_{i+1} = step(i, x_i, args)`, `i = 0 .. steps-1`.

        `step` must be a pure function of its arguments: every array it uses that
        may carry a derivative comes in through `args`.
        """
