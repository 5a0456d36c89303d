"""Chord iterations that stop at the floating-point resolution of the state."""

import diffrax
import jax.numpy as jnp
import optimistix as optx

from .tridiagonal import ProbedTridiagonal


# Corrections below this many units of the state's floating-point resolution are
# rounding: the iterate is a root to working precision.
ROUNDOFF_UNITS = 1e3


class ResolvedChord(diffrax.VeryChord):
    """`diffrax.VeryChord` that accepts an iterate whose correction is rounding.

    The chord iteration judges convergence by the rate `r = |d_k| / |d_{k-1}|` of
    its corrections `d_k`, measured in units of the tolerance `atol + rtol |y|`,
    and reports divergence where `r > 2`. Started at a steady state (a spun-up
    climate), the corrections are rounding, about `eps |y|`, and their ratio is
    noise, and a step that was accurate is rejected as divergent (at random, again
    and again over a long run). Here a correction smaller than
    `ROUNDOFF_UNITS * eps / rtol` tolerance units (the largest value rounding can
    give, `eps |y| / (atol + rtol |y|) <= eps / rtol`, with room for the linear
    solve's conditioning) ends the iteration as converged.
    """

    def terminate(self, fn, y, args, options, state, tags):
        terminate, result = super().terminate(fn, y, args, options, state, tags)
        resolution = ROUNDOFF_UNITS * jnp.finfo(state.diffsize.dtype).eps
        rounding = (
            (state.step >= 1)
            & (state.result == optx.RESULTS.successful)
            & (state.diffsize * self.rtol < resolution)
        )
        return terminate | rounding, optx.RESULTS.where(
            rounding, optx.RESULTS.successful, result
        )


def tridiagonal_root_finder() -> ResolvedChord:
    """Chord iterations whose linear solves use the probed tridiagonal Jacobian, at
    the step-size controller's tolerances."""
    return diffrax.with_stepsize_controller_tols(ResolvedChord)(
        linear_solver=ProbedTridiagonal()
    )
