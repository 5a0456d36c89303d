r"""NUTS for `ebm.posterior` (blackjax): preconditioning at the mode, Stan's window
adaptation, sampling, and the chains' diagnostics.

The sampled coordinates $z$ are standardised first, $z = c + L u$, by the mode $c$
of the log posterior and the Cholesky factor $L$ of its Laplace covariance; the
adaptation and the draws work on $u$.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array

from .._results import RESULTS
from .log_posterior import LogPosterior


def failed_transition(info):
    """Whether a NUTS transition stopped at a point of log density -inf: the
    trajectory diverges there, and blackjax ends it with that point outermost."""
    ends = (info.trajectory_leftmost_state, info.trajectory_rightmost_state)
    finite = jnp.isfinite(ends[0].logdensity) & jnp.isfinite(ends[1].logdensity)
    return info.is_divergent & ~finite


class Standardized(eqx.Module):
    """The log posterior on standardised coordinates $u$, flat: the sampled
    coordinates are $z = c + L u$, with $c$ the mode of the log posterior on $z$
    and $L L^\top$ the inverse of its negative Hessian there (the Laplace
    covariance), so that the posterior of $u$ has scales of order one.

    Stan's window adaptation, which blackjax follows, regularises each estimate of
    the inverse mass matrix toward $10^{-3} I$, as if the posterior's scales were of
    order one. On $z$ they are not: the narrow direction of a ridge in (A, B, D)
    has a standard deviation of $10^{-4}$ or less, and the regularisation there
    would be thousands of times the posterior's variance, forcing the step size
    down. The map is linear, so its log-Jacobian is a constant and is dropped."""

    log_posterior: LogPosterior
    centre: Array
    scale: Array

    def coordinates(self, u) -> dict:
        """The sampled coordinates `{name: z}` of the flat `u`."""
        return unflatten(self.log_posterior, self.centre + self.scale @ u)

    def __call__(self, u):
        return self.log_posterior(self.coordinates(u))


def flatten(log_posterior: LogPosterior, coordinates: dict):
    return jnp.concatenate(
        [jnp.ravel(coordinates[name]) for name in log_posterior.names]
    )


def unflatten(log_posterior: LogPosterior, flat) -> dict:
    out, offset = {}, 0
    for name, shape in zip(log_posterior.names, log_posterior.shapes):
        size = math.prod(shape)
        out[name] = flat[offset : offset + size].reshape(shape)
        offset += size
    return out


@eqx.filter_jit
def precondition(log_posterior: LogPosterior, start, max_steps: int = 256):
    """The centre $c$ and scale $L$ of `Standardized`: BFGS from `start` (flat
    coordinates) to the mode of the sampled density, then the Cholesky factor of
    the inverse of its negative Hessian there (exact through an equilibrium; by
    central differences of the gradient, steps $10^{-4}(1 + |z|)$, through a run).
    Where the search fails the centre is `start`; where the negative Hessian is not
    positive definite the scale is the identity (the coordinates as they are)."""

    def loss(flat, _):
        return -log_posterior(unflatten(log_posterior, flat))

    solution = optx.minimise(
        loss,
        optx.BFGS(rtol=1e-8, atol=1e-8),
        start,
        max_steps=max_steps,
        throw=False,
    )
    found = (solution.result == optx.RESULTS.successful) & jnp.isfinite(
        loss(solution.value, None)
    )
    centre = jnp.where(found, solution.value, start)
    if log_posterior.through == "equilibrium":
        # Exact: forward over reverse through the implicit gradient.
        curvature = jax.hessian(lambda flat: loss(flat, None))(centre)
    else:
        # Central differences of the gradient, column by column: reverse mode
        # only, which every adjoint of a run supports (forward mode is not). The
        # 2n points go through one gradient in the program, in batches of at most
        # 8 (padded with the centre to whole batches, so no second copy of the
        # gradient is compiled for a remainder).
        gradient = jax.grad(lambda flat: loss(flat, None))
        size = centre.size
        steps = 1e-4 * (1.0 + jnp.abs(centre))
        shifts = jnp.concatenate([jnp.diag(steps), -jnp.diag(steps)])
        batch = min(8, 2 * size)
        padding = -(2 * size) % batch
        shifts = jnp.concatenate([shifts, jnp.zeros((padding, size))])
        gradients = jax.lax.map(
            lambda shift: gradient(centre + shift), shifts, batch_size=batch
        )
        columns = gradients[:size] - gradients[size : 2 * size]
        curvature = columns / (2.0 * steps[:, None])
    curvature = 0.5 * (curvature + curvature.T)
    covariance = jnp.linalg.inv(curvature)
    scale = jnp.linalg.cholesky(0.5 * (covariance + covariance.T))
    usable = jnp.all(jnp.isfinite(scale)) & jnp.all(jnp.isfinite(curvature))
    scale = jnp.where(usable, scale, jnp.eye(start.size))
    return centre, scale, found, usable


@eqx.filter_jit
def find_mode(log_posterior: LogPosterior, start, max_steps):
    def loss(coordinates, _):
        return -log_posterior.log_density(coordinates, jacobian=False)

    solution = optx.minimise(
        loss,
        optx.BFGS(rtol=1e-10, atol=1e-10),
        start,
        max_steps=max_steps,
        throw=False,
    )
    return solution.value, RESULTS.promote(solution.result)


@eqx.filter_jit
def initial_log_density(log_posterior: LogPosterior, flat):
    """The log density at the flat coordinates `flat`."""
    return log_posterior(unflatten(log_posterior, flat))


@eqx.filter_jit
def chain_log_densities(target: Standardized, positions):
    """The log density at each chain's standardised start, `(chains,)`."""
    return jax.vmap(target)(positions)


@eqx.filter_jit
def warmup(log_posterior, keys, positions, num_warmup, target_acceptance, doublings):
    import blackjax

    def one(key, position):
        adaptation = blackjax.window_adaptation(
            blackjax.nuts,
            log_posterior,
            is_mass_matrix_diagonal=False,
            target_acceptance_rate=target_acceptance,
            max_num_doublings=doublings,
            adaptation_info_fn=failed_info,
        )
        (state, parameters), failed = adaptation.run(
            key, position, num_steps=num_warmup
        )
        return state, parameters, failed

    with jax.numpy_dtype_promotion("standard"):
        return jax.vmap(one)(keys, positions)


def failed_info(state, info, adaptation_state):
    """Keep only whether each warm-up step failed (blackjax keeps every state by
    default)."""
    del state, adaptation_state
    return failed_transition(info)


@eqx.filter_jit
def sample(log_posterior, keys, states, parameters, num_steps, doublings):
    import blackjax

    def one(key, state, parameters):
        kernel = blackjax.nuts(
            log_posterior,
            step_size=parameters["step_size"],
            inverse_mass_matrix=parameters["inverse_mass_matrix"],
            max_num_doublings=doublings,
        )

        def step(state, key):
            state, info = kernel.step(key, state)
            return state, (
                state.position,
                state.logdensity,
                info.is_divergent,
                failed_transition(info),
                info.acceptance_rate,
                info.num_integration_steps,
            )

        key, scan_key = jax.random.split(key)
        state, record = jax.lax.scan(step, state, jax.random.split(scan_key, num_steps))
        return key, state, record

    with jax.numpy_dtype_promotion("standard"):
        return jax.vmap(one)(keys, states, parameters)


def split_rhat(draws) -> Array:
    """Split R-hat of `(chains, draws, ...)` draws: each chain's halves as two
    chains, then Gelman and Rubin's potential scale reduction (blackjax's)."""
    from blackjax.diagnostics import potential_scale_reduction

    draws = jnp.asarray(draws)
    half = draws.shape[1] // 2
    halves = jnp.concatenate([draws[:, :half], draws[:, half : 2 * half]], axis=0)
    with jax.numpy_dtype_promotion("standard"):
        return potential_scale_reduction(halves)


def effective_sample_size(draws) -> Array:
    """Effective sample size of `(chains, draws, ...)` draws (blackjax's)."""
    from blackjax.diagnostics import effective_sample_size as ess

    with jax.numpy_dtype_promotion("standard"):
        return ess(jnp.asarray(draws))
