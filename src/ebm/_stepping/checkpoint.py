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

`NestedCheckpoint(2)` is the classic two-level $\sqrt N$ scheme. `BinomialCheckpoint` is
the offline optimal schedule of Griewank (1992) and `revolve` (Griewank & Walther
2000): for $N$ known in advance and $c$ checkpoints, with $r$ the smallest integer such
that $N \le \binom{c+r}{c}$, every step is recomputed at most $r$ times and the
total number of recomputations is the minimum possible. Memory is then independent of
$N$ while the time grows like $r \approx$ (log N) / (log c) at fixed $c$.

The nested and per-step schedules are `lax.scan` under `jax.checkpoint`, so JAX can
apply any transformation to them (`jvp`, `jacfwd`, `grad` of `grad`) and a checkpoint
`policy` decides which named intermediates to keep. The binomial schedule is a
`custom_vjp` whose backward pass runs the schedule in a `lax.while_loop`; it is
reverse-mode only, like diffrax's `RecursiveCheckpointAdjoint`.

**The split rule.** To reverse $n$ steps from a stored state with $f$ free slots
($s = f + 1$ states in all), advance $m$ steps, store that state, reverse the last
$n - m$ steps with $f - 1$ free slots, then the first $m$ with $f$. With
$\beta(s, r) = \binom{s+r}{s}$ the most steps that $s$ states can reverse with at most
$r$ recomputations of each, and $r$ minimal with $n \le \beta(s, r)$, the choice

$$m = \max\bigl(n - \beta(s-1, r),\ \beta(s, r-2),\ 1\bigr)$$

attains the minimal total (checked against exhaustive dynamic programming in the
tests).
"""

import abc
import functools
import math
from collections.abc import Callable
from typing import Any, ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int, PyTree


State = PyTree[Array]
Step = Callable[[Int[Array, ""], State, PyTree], State]


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class AbstractCheckpoint(eqx.Module):
    """A schedule for differentiating `steps` iterations of `step` in reverse mode."""

    @abc.abstractmethod
    def loop(self, step: Step, x0: State, args: PyTree, steps: int) -> State:
        """`x_N` from `x_0` by `x_{i+1} = step(i, x_i, args)`, `i = 0 .. steps-1`.

        `step` must be a pure function of its arguments: every array it uses that
        may carry a derivative comes in through `args`.
        """


class NoCheckpoint(AbstractCheckpoint):
    """A plain `lax.scan`: reverse mode stores every step's residuals."""

    def loop(self, step, x0, args, steps):
        def body(x, i):
            return step(i, x, args), None

        return jax.lax.scan(body, x0, jnp.arange(steps))[0]


class StepCheckpoint(AbstractCheckpoint):
    """`lax.scan` over `jax.checkpoint(step)`: stores each step's input only.

    **Arguments:**

    - `policy`: a `jax.checkpoint_policies` policy (default: save nothing but the
        input). The steppers name the model's tendency `"ebm_tendency"`, so
        `jax.checkpoint_policies.save_only_these_names("ebm_tendency")` keeps it
        instead of recomputing it.
    """

    policy: Callable[..., bool] | None = None

    def loop(self, step, x0, args, steps):
        checkpointed = jax.checkpoint(step, policy=self.policy)

        def body(x, i):
            return checkpointed(i, x, args), None

        return jax.lax.scan(body, x0, jnp.arange(steps))[0]


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


def resolve_checkpoint(checkpoint: Any) -> AbstractCheckpoint:
    """A schedule from its name or an instance.

    `"none"`, `"step"`, `"sqrt"`, `("nested", k)`, `("binomial", c)`,
    `"recursive"` or `("recursive", c)`, or an `AbstractCheckpoint`.
    """
    if isinstance(checkpoint, AbstractCheckpoint):
        return checkpoint
    named = {
        "none": NoCheckpoint,
        "step": StepCheckpoint,
        "sqrt": lambda: NestedCheckpoint(2),
        "binomial": BinomialCheckpoint,
        "recursive": RecursiveCheckpoint,
    }
    sized = {
        "nested": NestedCheckpoint,
        "binomial": BinomialCheckpoint,
        "recursive": RecursiveCheckpoint,
    }
    if isinstance(checkpoint, str) and checkpoint in named:
        return named[checkpoint]()
    if (
        isinstance(checkpoint, tuple)
        and len(checkpoint) == 2
        and checkpoint[0] in sized
        and isinstance(checkpoint[1], int)
        and not isinstance(checkpoint[1], bool)
    ):
        return sized[checkpoint[0]](checkpoint[1])
    raise ValueError(
        "`checkpoint` must be 'none', 'step', 'sqrt', ('nested', levels), "
        "('binomial', checkpoints), 'recursive', ('recursive', checkpoints) or an "
        f"ebm.AbstractCheckpoint instance, got {checkpoint!r}."
    )
