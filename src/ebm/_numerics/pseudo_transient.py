r"""A globalised root-finder that follows the model's own dynamics to a stable root.

Pseudo-transient continuation (Kelley & Keyes 1998) solves $F(T) = 0$ by implicit
Euler steps in a pseudo-time $\tau$,

$$(\sigma_k I - J_k)\,\delta_k = F(T_k), \qquad T_{k+1} = T_k + \delta_k,$$

with $J_k$ the Jacobian of $F$ (tridiagonal, probed matrix-free, see
`ebm._tridiagonal`) and $\sigma_k = 1/\Delta\tau_k$ in W m-2 K-1. Small steps
($\sigma$ large) follow the physical trajectory $C\,dT/dt = F$ from the start, so the
iteration lands in the same basin as a long time integration; where the model is
close to linear over a step, $\sigma \to 0$ and the iteration becomes Newton's
method, with quadratic convergence.

The pseudo-time step is controlled as an integrator controls its time step, by an
estimate of how wrong the step was: the step's linear model predicts the residual
$F_k + J_k\delta_k = \sigma_k\delta_k$ at $T_{k+1}$, and the mismatch, expressed as
the correction it would make to a step of the same size,
$\eta_{k+1} = \|(\sigma_k I - J_{k+1})^{-1}(F(T_{k+1}) - \sigma_k\delta_k)\|_\infty$
(K), sets $\sigma_{k+1} = \sigma_k\,(\eta_{k+1}/\eta_0)^{1/2}$ (the mismatch is
quadratic in the step), with the change bounded by `max_growth` either way and
$\eta_0$ = `nonlinearity`. Switched evolution relaxation, the classical rule
$\sigma_{k+1} = \sigma_k\|F_{k+1}\|/\|F_k\|$, ties the step to the residual instead,
and fails where the residual grows while the dynamics is smooth: after the ghost
of a vanished equilibrium next to a fold, the residual grows by orders of magnitude
as the state accelerates away, $\sigma$ with it, and the iteration then crawls
(hundreds to thousands of iterations) to a state that is easy once found.

Implicit Euler with large steps also converges to unstable equilibria (saddles),
and this model has them next to its stable states (the small-ice-cap instability);
with a sharp ice-albedo transition its Jacobian has unstable directions along the
way too. So every step keeps $\sigma \ge 2\lambda$, where $\lambda$ bounds the
largest eigenvalue of $J_k$ from above when it is positive (a Sturm count, then
bisection, each O(n)): implicit Euler then amplifies an unstable direction as the
true dynamics does, by a factor of at most 2 per step, instead of converging onto the
saddle. Near a stable root all eigenvalues are negative, the floor is zero, and the
iteration is Newton's. A root is accepted only where no eigenvalue is positive; should
the iteration still reach an unstable one, it restarts from the start with that
root's floor kept for good.

Convergence is declared when the Newton correction $\|J^{-1}F\|_\infty$ is below
`atol + rtol |T|` (K): the distance to the root, to first order.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int, PyTree

from .tridiagonal import probe_tridiagonal


class _PseudoTransientState(eqx.Module):
    start: Float[Array, " n"]
    shift: Float[Array, ""]
    shift_floor: Float[Array, ""]
    newton_size: Float[Array, ""]
    predicted_residual: Float[Array, " n"]
    leading_eigenvalue_bound: Float[Array, ""]
    converged: Bool[Array, ""]
    restarts: Int[Array, ""]
    nonfinite: Bool[Array, ""]


class PseudoTransientContinuation(optx.AbstractRootFinder):
    """Pseudo-transient continuation with a stability check on the root.

    See the module docstring for the method. `y` must be a single 1-d array.

    **Arguments:**

    - `rtol`, `atol`: convergence tolerances on the Newton correction, relative and
        absolute (K).
    - `norm`: the norm for the tolerances (default: max norm).
    - `initial_shift`: `sigma_0`, W m-2 K-1: the inverse of the first pseudo-time
        step. 50 W m-2 K-1 is a 10-day step of a 10 m water column.
    - `max_growth`: the most the pseudo-time step may grow (or shrink) per iteration.
    - `nonlinearity`: the target mismatch between a step's linear model and the
        residual it reaches, as a correction to the step, K (see the module
        docstring).
    - `max_restarts`: how many unstable roots may be rejected before giving up.
    """

    rtol: float = 1e-10
    atol: float = 1e-10
    norm: Callable[[PyTree], Array] = optx.max_norm
    initial_shift: float = 50.0
    max_growth: float = 4.0
    max_restarts: int = 4
    nonlinearity: float = 0.1

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        del fn, args, options, f_struct, aux_struct, tags
        inf = jnp.array(jnp.inf, y.dtype)
        return _PseudoTransientState(
            start=y,
            shift=jnp.array(self.initial_shift, y.dtype),
            shift_floor=jnp.array(0.0, y.dtype),
            newton_size=inf,
            predicted_residual=jnp.full_like(y, jnp.nan),
            leading_eigenvalue_bound=jnp.array(jnp.nan, y.dtype),
            converged=jnp.array(False),
            restarts=jnp.array(0),
            nonfinite=jnp.array(False),
        )

    def step(self, fn, y, args, options, state: _PseudoTransientState, tags):
        del options, tags
        residual, linear, aux = jax.linearize(lambda x: fn(x, args), y, has_aux=True)
        jacobian = probe_tridiagonal(linear, y.shape[0], y.dtype)

        # Implicit Euler amplifies an unstable direction, as the dynamics does, only
        # while sigma > lambda; at sigma >= 2 lambda the amplification is at most 2.
        unstable_bound = jacobian.leading_eigenvalue_bound()
        floor = jnp.maximum(state.shift_floor, 2 * unstable_bound)

        # How far the last step's linear model was off, as the correction it makes
        # to a step of the same pseudo-time (K). The shift follows it, as an
        # error-controlled time step would: the pseudo-time step grows while the
        # model is close to linear over a step and shrinks where it is not.
        mismatch = jacobian.shifted(state.shift).solve(
            residual - state.predicted_residual
        )
        nonlinearity = self.norm(mismatch)
        factor = jnp.sqrt(nonlinearity / self.nonlinearity)
        factor = jnp.where(jnp.isfinite(factor), factor, 1.0)
        factor = jnp.clip(factor, 1 / self.max_growth, self.max_growth)
        shift = jnp.maximum(state.shift * factor, floor)

        newton_correction = jacobian.shifted(0.0).solve(residual)
        scale = self.atol + self.rtol * jnp.abs(y)
        newton_size = self.norm(newton_correction / scale)
        close = newton_size < 1
        unstable = close & (unstable_bound > 0)
        converged = close & ~unstable

        step = jacobian.shifted(shift).solve(residual)
        # The linear model's residual after the step: F + J step = shift * step.
        predicted_residual = jnp.where(converged | unstable, jnp.nan, shift * step)
        new_y = jnp.where(converged, y - newton_correction, y + step)
        # A safety net: should the iteration still reach an unstable root, start
        # again with that root's floor kept for good.
        new_floor = jnp.where(
            unstable,
            jnp.maximum(state.shift_floor, 2 * unstable_bound),
            state.shift_floor,
        )
        new_y = jnp.where(unstable, state.start, new_y)
        new_shift = jnp.where(
            unstable, jnp.maximum(self.initial_shift, new_floor), shift
        )
        nonfinite = ~jnp.all(jnp.isfinite(new_y))
        new_state = _PseudoTransientState(
            start=state.start,
            shift=new_shift,
            shift_floor=new_floor,
            newton_size=newton_size,
            predicted_residual=predicted_residual,
            leading_eigenvalue_bound=unstable_bound,
            converged=converged,
            restarts=state.restarts + unstable.astype(int),
            nonfinite=nonfinite,
        )
        return new_y, new_state, aux

    def terminate(self, fn, y, args, options, state: _PseudoTransientState, tags):
        del fn, y, args, options, tags
        gave_up = state.restarts > self.max_restarts
        result = optx.RESULTS.where(
            state.nonfinite,
            optx.RESULTS.nonfinite,
            optx.RESULTS.where(
                gave_up, optx.RESULTS.nonlinear_divergence, optx.RESULTS.successful
            ),
        )
        return state.converged | gave_up | state.nonfinite, result

    def postprocess(self, fn, y, aux, args, options, state, tags, result):
        del fn, args, options, tags, result
        stats: dict[str, Any] = {
            "restarts": state.restarts,
            "leading_eigenvalue_bound": state.leading_eigenvalue_bound,
        }
        return y, aux, stats
