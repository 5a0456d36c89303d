r"""A continuous adjoint solved against a checkpointed forward state.

For $\dot y = f(t, y, \theta)$ on $[t_0, t_1]$ and a loss $L$ of the saved states
$y(\tau_j)$, the adjoint $a(t) = \partial L / \partial y(t)$ and the parameter
gradient $\mu$ obey, backwards in time,

$$\dot a = -\left(\frac{\partial f}{\partial y}\right)^{\!T} a, \qquad
\dot \mu = -\left(\frac{\partial f}{\partial \theta}\right)^{\!T} a, \qquad
a(t_1) = 0,\ \mu(t_1) = 0,$$

with a jump $a \mathrel{+}= \partial L / \partial y(\tau_j)$ at each saved time;
then $\partial L / \partial y_0 = a(t_0)$ and $\partial L / \partial \theta = \mu(t_0)$.
For diffusion $-\partial f / \partial y$ is a positive diffusion operator, so the
adjoint equation is diffusive backwards in time and well-posed. The state it needs,
$y(t)$, is not: integrating the model backwards (`diffrax.BacksolveAdjoint`) is the
backward heat equation, whose rounding errors grow like $e^{t/\tau}$.

So the state comes from the forward direction (SciMLSensitivity's
`InterpolatingAdjoint(checkpointing=true)`):

1. The forward pass stores the state, with the solver's and the step-size
   controller's state, every `segment_steps` steps (and at every saved time).
2. The backward pass takes the segments from the last: it re-solves the forward
   state over the segment from its checkpoint (the same steps as the forward pass),
   keeps every step's state, and interpolates it by the cubic Hermite polynomial
   through the step's end values and slopes $f$, the dense output of diffrax's
   implicit solvers; then it integrates $(a, \mu)$ over the segment with its own
   error control (`rtol`, `atol`) against that interpolant.

The adjoint equation is as stiff as the model, so its default solver is the
implicit-explicit `KenCarp5`: implicit in $a$ (its Jacobian
$-(\partial f/\partial y)^T$ is tridiagonal for a local model, solved by
`ebm.ProbedTridiagonal`), explicit in the quadrature $\mu$, which does not feed back.

Memory: one state per checkpoint, about `max_steps / segment_steps` of them, plus
one segment's `segment_steps` states; never one per step. The gradient is the
derivative of the exact solution, approximated to the tolerances (a *continuous*
gradient); the recursive adjoint's is the exact derivative of the discrete solution.
The two agree to about the solvers' tolerances.
"""

import functools as ft
import math
import typing

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu

# The pieces of diffrax that its own BacksolveAdjoint is built from: its while loops
# and the guard that only saved states receive cotangents. They are private, so
# pyproject.toml pins diffrax to the minor version tested, and
# tests/test_interpolating_adjoint.py names them.
from diffrax._adjoint import _inner_loop, _only_transpose_ys, _outer_loop
from jax.flatten_util import ravel_pytree

from .._numerics.chord import tridiagonal_root_finder


# What `SaveAt(t0=..., ts=..., t1=...)` saves: the state itself (diffrax's default
# `SubSaveAt.fn`).
_SAVE_STATE = diffrax.SubSaveAt(t1=True).fn


def _vector_field(terms, t, y, args):
    """`f(t, y, args)` of an ordinary differential equation's terms (an `ODETerm`, a
    `MultiTerm` of them, or diffrax's wrappers of either): their product with a
    unit time control."""
    return terms.vf_prod(t, y, args, terms.contr(t, t + 1.0))


def _hermite(ts, ys, slopes, count, t):
    """The cubic Hermite interpolant through the saved steps, at time `t`."""
    index = jnp.clip(jnp.searchsorted(ts, t, side="right") - 1, 0, count - 2)
    t_left, t_right = ts[index], ts[index + 1]
    width = t_right - t_left
    s = (t - t_left) / width
    h00 = (1 + 2 * s) * (1 - s) ** 2
    h10 = s * (1 - s) ** 2
    h01 = s**2 * (3 - 2 * s)
    h11 = s**2 * (s - 1)
    return (
        h00 * ys[index]
        + h10 * width * slopes[index]
        + h01 * ys[index + 1]
        + h11 * width * slopes[index + 1]
    )


def default_segment_steps(max_steps: int) -> int:
    """`sqrt(max_steps)` rounded up to a power of two (at least 16): memory of the
    checkpoints and of one segment then balance."""
    return max(16, 2 ** math.ceil(0.5 * math.log2(max_steps)))


class InterpolatingAdjoint(diffrax.AbstractAdjoint):
    r"""Backpropagate through `diffrax.diffeqsolve` by the continuous adjoint
    equation, solved backwards against the forward state re-solved from checkpoints.

    The continuous adjoint for problems that `diffrax.BacksolveAdjoint` cannot do:
    diffusive ones, whose backward-in-time state is unstable (see the module
    docstring for the equations). Reverse mode only (`jax.grad`, `jax.vjp`);
    gradients with respect to `y0` and the inexact arrays of `args`. The vector
    field's closure (`terms`) is not differentiated: put parameters in `args`.

    **Arguments:**

    - `segment_steps`: forward steps between checkpoints (default
        `default_segment_steps(max_steps)`, about `sqrt(max_steps)`). Memory is
        about `(max_steps / segment_steps + segment_steps)` states.
    - `rtol`, `atol`: tolerances of the adjoint equation's step control (on `a`
        and on the parameter quadrature `mu`).
    - `solver`: the adjoint equation's solver (default `KenCarp5`, implicit in
        `a` with tridiagonal stage solves, explicit in `mu`). An
        implicit-explicit solver gets the pair (quadrature, adjoint) as a
        `MultiTerm`; any other solver gets their sum.
    """

    segment_steps: int | None = None
    rtol: float = 1e-10
    atol: float = 1e-10
    solver: diffrax.AbstractSolver | None = None

    def __check_init__(self):
        if self.segment_steps is not None and (
            isinstance(self.segment_steps, bool)
            or not isinstance(self.segment_steps, int)
            or self.segment_steps < 2
        ):
            raise ValueError(
                "`segment_steps` must be an integer >= 2 (forward steps between "
                f"checkpoints), got {self.segment_steps!r}."
            )
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 < value < 1:
                raise ValueError(f"`{name}` must be in (0, 1), got {value!r}.")

    def loop(
        self,
        *,
        args,
        terms,
        solver,
        stepsize_controller,
        event,
        saveat,
        t0,
        t1,
        dt0,
        max_steps,
        throw,
        init_state,
        passed_solver_state,
        passed_controller_state,
        progress_meter,
    ):
        subs = saveat.subs
        if not isinstance(subs, diffrax.SubSaveAt):
            raise NotImplementedError(
                "InterpolatingAdjoint does not support `SaveAt(subs=...)`."
            )
        if saveat.dense or subs.steps or subs.fn is not _SAVE_STATE:
            raise NotImplementedError(
                "InterpolatingAdjoint supports SaveAt(t0=..., ts=..., t1=...) only, "
                "not `steps=True`, `dense=True` or `fn=...`."
            )
        if event is not None:
            raise NotImplementedError("InterpolatingAdjoint does not support events.")
        if max_steps is None:
            raise ValueError(
                "InterpolatingAdjoint needs `max_steps` (it sizes the checkpoints)."
            )
        if not isinstance(init_state.y, jax.Array) or init_state.y.ndim != 1:
            raise NotImplementedError(
                "InterpolatingAdjoint needs `y0` to be a single one-dimensional array."
            )
        del passed_solver_state, passed_controller_state
        y = init_state.y
        init_state = eqx.tree_at(lambda s: s.y, init_state, object())
        init_state = eqx.tree_at(
            lambda s: (s.solver_state, s.controller_state),
            init_state,
            replace_fn=jax.lax.stop_gradient,
            is_leaf=lambda x: x is None,
        )
        final_state, aux_stats = _loop_interpolating(
            (y, args),
            self=self,
            terms=terms,
            solver=solver,
            stepsize_controller=stepsize_controller,
            saveat=saveat,
            t0=t0,
            t1=t1,
            dt0=dt0,
            max_steps=max_steps,
            throw=throw,
            init_state=init_state,
            progress_meter=progress_meter,
        )
        return _only_transpose_ys(final_state), aux_stats


@eqx.filter_custom_vjp
def _loop_interpolating(y__args, *, self, terms, init_state, throw, **kwargs):
    del throw
    y, args = y__args
    init_state = eqx.tree_at(lambda s: s.y, init_state, y)
    return self._loop(
        args=args,
        terms=terms,
        init_state=init_state,
        event=None,
        inner_while_loop=ft.partial(_inner_loop, kind="lax"),
        outer_while_loop=ft.partial(_outer_loop, kind="lax"),
        **kwargs,
    )


@_loop_interpolating.def_fwd
def _loop_interpolating_fwd(perturbed, y__args, **kwargs):
    del perturbed
    final_state, aux_stats = _loop_interpolating(y__args, **kwargs)
    save_state = final_state.save_state
    checkpoints = _checkpoints(y__args, save_state.ts, **kwargs)
    return (final_state, aux_stats), (save_state.ts, checkpoints)


class _Checkpoint(eqx.Module):
    """The forward state where a segment starts, and where it ends."""

    t_start: jax.Array
    t_end: jax.Array
    y: jax.Array
    solver_state: object
    controller_state: object
    # The saved time the segment ends on, if it does (-1: none).
    saved_index: jax.Array


def _segment_steps(self, max_steps):
    if self.segment_steps is None:
        return default_segment_steps(max_steps)
    return self.segment_steps


def _number_of_segments(max_steps, segment_steps, saved):
    # A restarted segment takes a step or two more than the uninterrupted run.
    return math.ceil(max_steps / segment_steps) + saved + 1


def _checkpoints(
    y__args,
    saved_ts,
    *,
    self,
    terms,
    solver,
    stepsize_controller,
    t0,
    t1,
    dt0,
    max_steps,
    **kwargs,
):
    """Run forwards again in segments of `segment_steps` steps, each ended early at
    the next saved time, and return every segment's start (a `_Checkpoint` batch)."""
    del kwargs
    y0, args = y__args
    segment_steps = _segment_steps(self, max_steps)
    count = _number_of_segments(max_steps, segment_steps, saved_ts.shape[0])
    solve = _segment_solver(terms, solver, stepsize_controller, args)
    # The controller and solver states' structure, from a zero-length solve.
    first = solve(t0, t0, y0, None, None, dt0, 2)
    state0 = (
        jnp.asarray(t0, y0.dtype),
        y0,
        first.solver_state,
        first.controller_state,
        jnp.array(0),
    )

    def segment(state, _):
        t, y, solver_state, controller_state, next_saved = state
        has_saved = next_saved < saved_ts.shape[0]
        target = jnp.where(
            has_saved, saved_ts[jnp.minimum(next_saved, saved_ts.shape[0] - 1)], t1
        )
        target = jnp.minimum(target, t1)
        run = t < target

        def advance():
            solution = solve(
                t, target, y, solver_state, controller_state, None, segment_steps
            )
            return (
                solution.ts[-1],
                solution.ys[-1],
                solution.solver_state,
                solution.controller_state,
            )

        def stay():
            return t, y, solver_state, controller_state

        t_end, y_end, solver_end, controller_end = jax.lax.cond(run, advance, stay)
        reached = has_saved & (t_end >= target)
        checkpoint = _Checkpoint(
            t_start=t,
            t_end=t_end,
            y=y,
            solver_state=solver_state,
            controller_state=controller_state,
            saved_index=jnp.where(reached, next_saved, -1),
        )
        # Several saved times may coincide: each is reached by one (empty) segment.
        next_saved = jnp.where(reached, next_saved + 1, next_saved)
        return (t_end, y_end, solver_end, controller_end, next_saved), checkpoint

    # The last segment's end short of `t1` means the steps ran out (the backward
    # pass then fails with a message).
    _, checkpoints = jax.lax.scan(segment, state0, None, length=count)
    return checkpoints


def _segment_solver(terms, solver, stepsize_controller, args):
    def solve(t_start, t_end, y, solver_state, controller_state, dt0, budget, **saves):
        saveat = diffrax.SaveAt(
            solver_state=True, controller_state=True, **(saves or {"t1": True})
        )
        return diffrax.diffeqsolve(
            terms,
            solver,
            t_start,
            t_end,
            dt0,
            y,
            args,
            saveat=saveat,
            stepsize_controller=stepsize_controller,
            solver_state=solver_state,
            controller_state=controller_state,
            max_steps=budget,
            throw=False,
        )

    return solve


@_loop_interpolating.def_bwd
def _loop_interpolating_bwd(
    residuals,
    grad_final_state__aux_stats,
    perturbed,
    y__args,
    *,
    self,
    terms,
    solver,
    stepsize_controller,
    saveat,
    t0,
    t1,
    dt0,
    max_steps,
    throw,
    init_state,
    progress_meter,
):
    del perturbed, saveat, t0, dt0, init_state, progress_meter
    saved_ts, checkpoints = residuals
    grad_final_state, _ = grad_final_state__aux_stats
    y0, args = y__args
    grad_ys = grad_final_state.save_state.ys
    if grad_ys is None:
        grad_ys = jnp.zeros(saved_ts.shape + y0.shape, y0.dtype)
    diff_args, static_args = eqx.partition(args, eqx.is_inexact_array)
    flat_args, unravel = ravel_pytree(diff_args)
    n, p = y0.shape[0], flat_args.shape[0]
    segment_steps = _segment_steps(self, max_steps)
    budget = segment_steps + max(8, segment_steps // 8)
    solve = _segment_solver(terms, solver, stepsize_controller, args)
    adjoint_solver = (
        diffrax.KenCarp5(root_finder=tridiagonal_root_finder())
        if self.solver is None
        else self.solver
    )
    split = typing.get_origin(adjoint_solver.term_structure) is diffrax.MultiTerm
    controller = diffrax.PIDController(rtol=self.rtol, atol=self.atol)

    def field(t, y, flat):
        return _vector_field(terms, t, y, eqx.combine(unravel(flat), static_args))

    def segment(carry, checkpoint):
        a, mu, failed = carry
        index = jnp.clip(checkpoint.saved_index, 0, saved_ts.shape[0] - 1)
        a = a + jnp.where(checkpoint.saved_index >= 0, grad_ys[index], 0.0)
        t_end = checkpoint.t_end

        def integrate():
            forward = solve(
                checkpoint.t_start,
                t_end,
                checkpoint.y,
                checkpoint.solver_state,
                checkpoint.controller_state,
                None,
                budget,
                t0=True,
                steps=True,
            )
            count = 1 + forward.stats["num_accepted_steps"]
            ts, ys = forward.ts, forward.ys
            slopes = jax.vmap(lambda t, y: field(t, y, flat_args))(ts, ys)

            def state(s):
                return _hermite(ts, ys, slopes, count, t_end - s)

            # Backwards time s = t_end - t: da/ds = J^T a, dmu/ds = f_theta^T a.
            def adjoint_part(s, z, _):
                _, pullback = jax.vjp(
                    lambda y: field(t_end - s, y, flat_args), state(s)
                )
                return jnp.concatenate([pullback(z[:n])[0], jnp.zeros(p, z.dtype)])

            def quadrature_part(s, z, _):
                _, pullback = jax.vjp(
                    lambda flat: field(t_end - s, state(s), flat), flat_args
                )
                return jnp.concatenate([jnp.zeros(n, z.dtype), pullback(z[:n])[0]])

            if split:
                adjoint_terms = diffrax.MultiTerm(
                    diffrax.ODETerm(quadrature_part), diffrax.ODETerm(adjoint_part)
                )
            else:
                adjoint_terms = diffrax.ODETerm(
                    lambda s, z, _: adjoint_part(s, z, _) + quadrature_part(s, z, _)
                )
            backward = diffrax.diffeqsolve(
                adjoint_terms,
                adjoint_solver,
                0.0,
                t_end - checkpoint.t_start,
                None,
                jnp.concatenate([a, jnp.zeros(p, a.dtype)]),
                saveat=diffrax.SaveAt(t1=True),
                stepsize_controller=controller,
                max_steps=max_steps,
                throw=False,
            )
            z = backward.ys[-1]
            ok = (forward.result == diffrax.RESULTS.successful) & (
                backward.result == diffrax.RESULTS.successful
            )
            return z[:n], mu + z[n:], failed | ~ok

        return jax.lax.cond(
            t_end > checkpoint.t_start, integrate, lambda: (a, mu, failed)
        ), None

    start = (jnp.zeros_like(y0), jnp.zeros_like(flat_args), jnp.array(False))
    (a, mu, failed), _ = jax.lax.scan(segment, start, checkpoints, reverse=True)
    failed = failed | (checkpoints.t_end[-1] < t1)
    if throw:
        a = eqx.error_if(
            a,
            failed,
            "InterpolatingAdjoint: a segment of the backward pass failed (its "
            f"forward re-solve needed more than {budget} steps, or the adjoint "
            "equation more than max_steps). Give fewer segment_steps or more "
            "max_steps.",
        )
    else:
        a, mu = jtu.tree_map(lambda x: jnp.where(failed, jnp.nan, x), (a, mu))
    return a, unravel(mu)
