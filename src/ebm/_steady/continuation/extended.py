r"""Folds, refined by Newton's method on the extended system.

A fold is where the walk's $d\lambda/ds$ changes sign, between two of its points.
Regula falsi along the branch between them brings a guess close to it, and Newton's
method on the extended system (Moore & Spence 1980; Seydel, *Practical Bifurcation
and Stability Analysis*)

$$F(T; \lambda) = 0, \qquad J(T; \lambda)\,v = 0, \qquad \tfrac{1}{n}v\cdot v = 1,$$

$2n + 1$ equations for $(T, v, \lambda)$, whose Jacobian is regular at a generic fold,
refines it. So the fold's parameter value $\lambda^*(\theta)$ is a smooth function of
every other parameter $\theta$, differentiated by the implicit function theorem
through the same system (`optimistix.ImplicitAdjoint`'s method; see
`ebm._numerics.implicit`). The energy budget and $J v$ are scaled by `row_scale`
(K per W m-2), so that one tolerance in kelvin serves every grid.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx

from ..._numerics.implicit import ImplicitAdjoint
from ..._results import RESULTS, nan_unless_successful
from .problem import AbstractSteadyProblem, with_parameter
from .results import Fold
from .walk import Walk, WalkSettings


def fold_guess(
    problem: AbstractSteadyProblem,
    walk: Walk,
    index,
    settings: WalkSettings,
    iterations=12,
):
    """A guess `(x, v, value, side)` (`x` the state as a vector) at the fold
    between points `index` and next.

    The walk's two points bracket the sign change of `dmu/ds`; regula falsi on it
    (the kept end's value halved at each step, an Illinois-type safeguard against
    one-sided convergence), with each trial point corrected onto the branch at a given
    distance `sigma` along the first point's tangent, brings the guess close enough
    to the fold for Newton's method on the extended system, however long the step
    that passed it. The tangent there is the null vector to first order.
    """
    y, tangent = walk.y, walk.tangent
    y0, t0, y1, t1 = y[index], tangent[index], y[index + 1], tangent[index + 1]
    row = problem.metric(t0)
    sigma1 = row @ (y1 - y0)

    def on_branch(sigma):
        fraction = sigma / sigma1
        point, _ = problem.correct(
            y0 + fraction * (y1 - y0),
            row,
            row @ y0 + sigma,
            settings.corrector,
            settings.corrector_steps,
        )
        return point, problem.tangent(point, t0)

    def falsi(_, bracket):
        a, phi_a, b, phi_b, point, t = bracket
        sigma = (a * phi_b - b * phi_a) / (phi_b - phi_a)
        point, t = on_branch(sigma)
        phi = t[-1]
        same_as_a = jnp.sign(phi) == jnp.sign(phi_a)
        # Illinois: halve the value kept at the end that did not move.
        a, phi_a, phi_b = (
            jnp.where(same_as_a, sigma, a),
            jnp.where(same_as_a, phi, phi_a),
            jnp.where(same_as_a, phi_b / 2, phi_b),
        )
        b, phi_b, phi_a = (
            jnp.where(same_as_a, b, sigma),
            jnp.where(same_as_a, phi_b, phi),
            jnp.where(same_as_a, phi_a, phi_a / 2),
        )
        return a, phi_a, b, phi_b, point, t

    zero = jnp.zeros((), y0.dtype)
    bracket = (zero, t0[-1], sigma1, t1[-1], y0, t0)
    *_, point, t = jax.lax.fori_loop(0, iterations, falsi, bracket)
    v = t[:-1] / jnp.sqrt(jnp.mean(t[:-1] ** 2))
    # dlambda/ds > 0 before the fold: the branches lie below it.
    side = -jnp.sign(t0[-1] * problem.scale).astype(int)
    return point[:-1], v, problem.value(point[-1]), side


def _extended_system(z, args):
    problem, scale = args
    n = (z.shape[0] - 1) // 2
    x, v, value = z[:n], z[n : 2 * n], z[-1]
    at_fold = with_parameter(problem.params, problem.parameter, value)
    budget, jv = jax.jvp(lambda x: problem.equations(x, at_fold), (x,), (v,))
    return jnp.concatenate([scale * budget, scale * jv, (jnp.mean(v**2) - 1.0)[None]])


def refine_fold(
    problem: AbstractSteadyProblem,
    x,
    v,
    value,
    side,
    solver: optx.AbstractRootFinder,
    max_steps: int,
) -> Fold:
    """The fold near `(x, v, value)` (`x` the state as a vector), by Newton's method
    on the extended system; differentiable with respect to `problem.params`
    (implicitly)."""
    z0 = jnp.concatenate([x, v, jnp.asarray(value, x.dtype)[None]])
    params, parameter = problem.params, problem.parameter
    scale = problem.weights(x, with_parameter(params, parameter, value))
    solution = optx.root_find(
        _extended_system,
        solver,
        z0,
        (problem, jax.lax.stop_gradient(scale)),
        max_steps=max_steps,
        adjoint=ImplicitAdjoint(linear_solver=lx.LU()),
        throw=False,
    )
    z = solution.value
    n = x.shape[0]
    x, v, value = z[:n], z[n : 2 * n], z[-1]
    at_fold = with_parameter(params, parameter, value)
    residual = _extended_system(jax.lax.stop_gradient(z), (problem, jnp.ones_like(x)))
    return Fold(
        parameter=parameter,
        value=value,
        null_vector=v,
        side=jnp.asarray(side),
        residual=jnp.max(jnp.abs(residual[:-1])),
        result=RESULTS.promote(solution.result),
        num_steps=solution.stats["num_steps"],
        state=problem.state_of(x),
        **problem.describe(x, at_fold),
    )


@eqx.filter_jit
def refine_from_walk(
    problem: AbstractSteadyProblem,
    walk: Walk,
    index,
    settings: WalkSettings,
    solver: optx.AbstractRootFinder,
    max_steps: int,
) -> Fold:
    """The fold that the walk passed between its points `index` and `index + 1`."""
    x, v, value, side = fold_guess(problem, walk, index, settings)
    fold = refine_fold(problem, x, v, value, side, solver, max_steps)
    return nan_unless_successful(fold.result, fold, problem.params)
