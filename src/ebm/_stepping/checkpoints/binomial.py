r"""`BinomialCheckpoint(c)`: the optimal offline binomial (revolve) schedule.

It stores $c$ states, $cs$ for a state of size $s$, whatever the number of steps $N$,
and recomputes the fewest steps possible with that memory: it is the offline optimal
schedule of Griewank (1992) and `revolve` (Griewank & Walther 2000). For $N$ known in
advance and $c$ checkpoints, with $r$ the smallest integer such that
$N \le \binom{c+r}{c}$, every step is recomputed at most $r$ times and the total
number of recomputations is the minimum possible. Memory is then independent of $N$
while the time grows like $r \approx$ (log N) / (log c) at fixed $c$.

It is a `custom_vjp` whose backward pass runs the schedule in a `lax.while_loop`:
reverse mode only (`grad`, `vjp`).

**The split rule.** To reverse $n$ steps from a stored state with $f$ free slots
($s = f + 1$ states in all), advance $m$ steps, store that state, reverse the last
$n - m$ steps with $f - 1$ free slots, then the first $m$ with $f$. With
$\beta(s, r) = \binom{s+r}{s}$ the most steps that $s$ states can reverse with at most
$r$ recomputations of each, and $r$ minimal with $n \le \beta(s, r)$, the choice

$$m = \max\bigl(n - \beta(s-1, r),\ \beta(s, r-2),\ 1\bigr)$$

attains the minimal total (checked against exhaustive dynamic programming in the
tests).
"""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .base import AbstractCheckpoint, _is_count


def _split_rule(steps, states, repetitions, capacity, maximum):
    # capacity = beta(states, repetitions), the first binomial(states + r, states)
    # to reach `steps`; the two betas of the rule follow from it exactly.
    total = states + repetitions
    tail_capacity = capacity * states // total  # beta(states - 1, repetitions)
    head_capacity = capacity * repetitions // total  # beta(states, repetitions - 1)
    head_two_before = head_capacity * (repetitions - 1) // maximum(total - 1, 1)
    return maximum(maximum(steps - tail_capacity, head_two_before), 1)


def split(steps, free):
    """Where the binomial schedule stores next, reversing `steps` with `free` slots.

    For traced integers (inside the backward pass); `static_split` for Python ones.
    """
    states = free + 1

    def more(carry):
        repetitions, capacity = carry
        return repetitions + 1, capacity * (states + repetitions + 1) // (
            repetitions + 1
        )

    repetitions, capacity = jax.lax.while_loop(
        lambda carry: carry[1] < steps, more, (jnp.asarray(0), jnp.asarray(1))
    )
    return _split_rule(steps, states, repetitions, capacity, jnp.maximum)


def static_split(steps: int, free: int) -> int:
    """`split` for Python integers."""
    states, repetitions, capacity = free + 1, 0, 1
    while capacity < steps:
        repetitions += 1
        capacity = capacity * (states + repetitions) // repetitions
    return _split_rule(steps, states, repetitions, capacity, max)


def binomial_spine(steps: int, checkpoints: int) -> list[tuple[int, int]]:
    """The frames `(start, end)` left on the stack by the forward sweep.

    Frame `k` starts at the state held in slot `k`; the forward pass stores those
    states on its way, so the first advance of each is not repeated.
    """
    frames = []
    start, free = 0, checkpoints - 1
    while free > 0 and steps - start > 1:
        middle = start + static_split(steps - start, free)
        frames.append((start, middle))
        start, free = middle, free - 1
    frames.append((start, steps))
    return frames


def binomial_recomputations(steps: int, checkpoints: int) -> int:
    """Forward steps the binomial schedule's backward pass recomputes (in Python)."""
    spine = binomial_spine(steps, checkpoints)
    total = 0
    stack = [(start, end, checkpoints - 1 - k) for k, (start, end) in enumerate(spine)]
    while stack:
        start, end, free = stack.pop()
        length = end - start
        if length == 1:
            continue
        middle = start + (length - 1 if free == 0 else static_split(length, free))
        total += middle - start
        stack.append((start, middle, free))
        if end - middle > 1:
            stack.append((middle, end, free - 1))
    return total


class BinomialCheckpoint(AbstractCheckpoint):
    """The optimal offline binomial (revolve) schedule with `checkpoints` states.

    Memory: `checkpoints` copies of the state, whatever the number of steps. Time: the
    fewest recomputations possible with that memory (see the module docstring).
    Reverse mode only (`grad`, `vjp`); use a nested schedule for forward mode.

    **Arguments:**

    - `checkpoints`: states held at once, including the initial one (>= 1).
    """

    checkpoints: int = 32

    name: ClassVar[str] = "binomial"
    size_field: ClassVar[str] = "checkpoints"
    supports_forward_mode: ClassVar[bool] = False
    memory_table_sizes: ClassVar[tuple[int, ...]] = (8, 32)

    def __check_init__(self):
        if not _is_count(self.checkpoints):
            raise ValueError(
                "BinomialCheckpoint `checkpoints` must be an integer >= 1, got "
                f"{self.checkpoints!r}."
            )

    def loop(self, step, x0, args, steps):
        return _binomial_loop((x0, args), step, steps, self.checkpoints)


def _advance(step, x, args, start, end):
    return jax.lax.fori_loop(start, end, lambda i, x: step(i, x, args), x)


@eqx.filter_custom_vjp
def _binomial_loop(x0_args, step, steps, checkpoints):
    x0, args = x0_args
    return _advance(step, x0, args, 0, steps)


@_binomial_loop.def_fwd
def _binomial_loop_fwd(perturbed, x0_args, step, steps, checkpoints):
    del perturbed
    x0, args = x0_args
    spine = binomial_spine(steps, checkpoints)
    starts, ends = jnp.asarray(spine).T

    def segment(x, bounds):
        start, end = bounds
        return _advance(step, x, args, start, end), x

    # One loop over the spine's frames, keeping the state at the start of each.
    x, stored = jax.lax.scan(segment, x0, (starts, ends))
    return x, stored


@_binomial_loop.def_bwd
def _binomial_loop_bwd(stored, x_bar, perturbed, x0_args, step, steps, checkpoints):
    x0, args = x0_args
    spine = binomial_spine(steps, checkpoints)
    # Cotangents only for what is differentiated; those leaves may arrive as JAX
    # literals (a Python float under jax.grad), so they are made arrays here.
    diff_args, static_args = eqx.partition(args, perturbed[1])
    diff_args = jax.tree.map(jnp.asarray, diff_args)
    slots = jax.tree.map(
        lambda s: (
            jnp.zeros((checkpoints,) + s.shape[1:], s.dtype).at[: len(spine)].set(s)
        ),
        stored,
    )
    starts = jnp.zeros(checkpoints, int).at[: len(spine)].set([s for s, _ in spine])
    ends = jnp.zeros(checkpoints, int).at[: len(spine)].set([e for _, e in spine])
    args_bar = jax.tree.map(jnp.zeros_like, diff_args)
    x_bar = jax.tree.map(
        lambda b, x: jnp.zeros_like(x) if b is None else b,
        x_bar,
        x0,
        is_leaf=lambda b: b is None,
    )

    def cond(carry):
        return carry[0] >= 0

    def body(carry):
        top, starts, ends, slots, x_bar, args_bar = carry
        start, end = starts[top], ends[top]
        length = end - start
        free = checkpoints - 1 - top
        # Without a free slot, advance to the last step (no split to compute).
        advance = jax.lax.cond(
            free > 0,
            lambda: split(length, jnp.maximum(free, 1)),
            lambda: length - 1,
        )
        middle = start + jnp.where(length == 1, 0, advance)
        x = jax.tree.map(lambda s: s[top], slots)
        x = _advance(step, x, args, start, middle)
        youturn = end - middle == 1

        def adjoint_step(x_bar, args_bar):
            def stepped(x, diff_args):
                return step(middle, x, eqx.combine(diff_args, static_args))

            _, vjp = jax.vjp(stepped, x, diff_args)
            x_bar, step_args_bar = vjp(x_bar)
            return x_bar, jax.tree.map(jnp.add, args_bar, step_args_bar)

        x_bar, args_bar = jax.lax.cond(
            youturn, adjoint_step, lambda *a: a, x_bar, args_bar
        )
        ends = ends.at[top].set(middle)
        push = jnp.logical_not(youturn)
        following = jnp.minimum(top + 1, checkpoints - 1)
        slots = jax.tree.map(
            lambda s, v: s.at[following].set(jnp.where(push, v, s[following])),
            slots,
            x,
        )
        starts = starts.at[following].set(jnp.where(push, middle, starts[following]))
        ends = ends.at[following].set(jnp.where(push, end, ends[following]))
        top = jnp.where(push, top + 1, jnp.where(middle == start, top - 1, top))
        return top, starts, ends, slots, x_bar, args_bar

    carry = (jnp.asarray(len(spine) - 1), starts, ends, slots, x_bar, args_bar)
    *_, x_bar, args_bar = jax.lax.while_loop(cond, body, carry)
    return x_bar, args_bar
