r"""Implicit differentiation of a root, whose failure is a NaN rather than a raise.

At a root $y^*(\theta)$ of $f(y, \theta) = 0$ the implicit function theorem gives
the tangent

$$\dot y = -\Big(\frac{\partial f}{\partial y}\Big)^{-1}
\frac{\partial f}{\partial\theta}\,\dot\theta,$$

one linear solve with the Jacobian at the root (transposed for reverse mode). This
is `optimistix.ImplicitAdjoint`, with one difference: optimistix solves with
`lineax.linear_solve(..., throw=True)`, which threads an `eqx.error_if` into the
derivative's program; that check compiles to a host callback, and JAX's persistent
compilation cache keeps no program that holds one. Here the solve (and, for
reverse mode, its transpose, through `jax.lax.custom_linear_solve`) runs with
`throw=False` and a failed one (a singular Jacobian, a Krylov method that did not
converge) gives NaN tangents, so the derivative says it failed by its value and its
program can be cached.
"""

import functools as ft

import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.custom_derivatives
import jax.numpy as jnp
import lineax as lx
import optimistix as optx


class ImplicitAdjoint(optx.AbstractAdjoint):
    """`optimistix.ImplicitAdjoint` whose failed linear solve gives NaN tangents.

    **Arguments:**

    - `linear_solver`: the `lineax.AbstractLinearSolver` for the Jacobian at the
        root (and its transpose).
    """

    linear_solver: lx.AbstractLinearSolver

    def apply(self, primal_fn, rewrite_fn, inputs, tags):
        inputs = inputs + (ft.partial(eqxi.while_loop, kind="lax"),)
        return implicit_jvp(primal_fn, rewrite_fn, inputs, tags, self.linear_solver)


def implicit_jvp(fn_primal, fn_rewrite, inputs, tags, linear_solver):
    """`fn_primal(inputs)`, whose first output (the root) has the tangents of the
    implicit function theorem on `fn_rewrite(root, residual, inputs) = 0`.

    As `optimistix.implicit_jvp`, with a failed linear solve giving NaN tangents.
    """
    root, residual = _implicit(fn_primal, fn_rewrite, inputs, tags, linear_solver)
    return root, jax.tree.map(eqxi.nondifferentiable_backward, residual)


@eqx.filter_custom_jvp
def _implicit(fn_primal, fn_rewrite, inputs, tags, linear_solver):
    del fn_rewrite, tags, linear_solver
    return jax.tree.map(jnp.asarray, fn_primal(inputs))


def _for_jacobian(root, args):
    fn_rewrite, residual, inputs = args
    return fn_rewrite(root, residual, inputs)


def _is_none(x) -> bool:
    return x is None


@_implicit.def_jvp
def _implicit_jvp(primals, tangents):
    fn_primal, fn_rewrite, inputs, tags, linear_solver = primals
    t_inputs = tangents[2]
    no_tangent = jax.tree.map(_is_none, t_inputs, is_leaf=_is_none)
    nondiff, diff = eqx.partition(inputs, no_tangent, is_leaf=_is_none)
    root, residual = implicit_jvp(fn_primal, fn_rewrite, inputs, tags, linear_solver)

    def rewrite_of(differentiated):
        return fn_rewrite(root, residual, eqx.combine(differentiated, nondiff))

    operator = lx.JacobianLinearOperator(
        _for_jacobian, root, (fn_rewrite, residual, inputs), tags=tags
    )
    _, rewrite_tangent = jax.jvp(rewrite_of, (diff,), (t_inputs,))
    solver = linear_solver
    if not isinstance(solver, FailedAs):
        solver = FailedAs(solver, jnp.nan)

    # `lax.custom_linear_solve`, not `lineax.linear_solve` alone: reverse mode
    # transposes the solve, and lineax's transpose checks its result with an
    # `eqx.error_if` unconditionally; here the transpose is a solve of its own,
    # with `throw=False`.
    def solve(matvec, vector):
        del matvec
        return lx.linear_solve(operator, vector, solver, throw=False).value

    def transpose_solve(vecmat, vector):
        del vecmat
        transposed = operator.transpose()
        return lx.linear_solve(transposed, vector, solver, throw=False).value

    solution = jax.lax.custom_linear_solve(
        operator.mv, rewrite_tangent, solve, transpose_solve
    )
    t_root = jax.tree.map(jnp.negative, solution)
    # The residual (solver statistics, integers among them) is not differentiated.
    t_residual = jax.custom_derivatives.zero_from_primal(residual, symbolic_zeros=True)
    return (root, residual), (t_root, t_residual)


class FailedAs(lx.AbstractLinearSolver):
    """`solver`, whose failed or non-finite solution is replaced by `value`
    everywhere, and reported as successful (the value says it).

    **Arguments:**

    - `solver`: any `lineax.AbstractLinearSolver`.
    - `value`: what a failed solution becomes: NaN (the default adjoints: the
        derivative is undefined there, and says so), or zero (the posterior's
        gradient, which must stay finite; see `ebm.posterior`).
    """

    solver: lx.AbstractLinearSolver
    value: float

    def init(self, operator, options):
        return self.solver.init(operator, options)

    def compute(self, state, vector, options):
        solution, result, stats = self.solver.compute(state, vector, options)
        finite = [jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(solution)]
        ok = (result == lx.RESULTS.successful) & jnp.all(jnp.asarray(finite))
        solution = jax.tree.map(
            lambda leaf: jnp.where(ok, leaf, jnp.full_like(leaf, self.value)),
            solution,
        )
        return solution, lx.RESULTS.successful, stats

    def transpose(self, state, options):
        state, options = self.solver.transpose(state, options)
        return state, options

    def conj(self, state, options):
        return self.solver.conj(state, options)

    def assume_full_rank(self):
        return self.solver.assume_full_rank()
