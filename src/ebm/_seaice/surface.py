"""The sea-ice model's surface: its blended switches (the ice cover, the ice's
enthalpy, the melting surface's temperature) and the limits of Newton's method for
the surface temperature, shared by `ebm.SeaIceModel` and its stepper
`ebm.SeaIceEuler`. See `ebm._seaice.model` for the equations."""

import jax
import jax.numpy as jnp


MELTING_POINT = 0.0
"""The melting point of the ice surface, degC (WE15's $T_m$)."""

NEWTON_TOLERANCE = 1e-9
"""The largest residual, K, of the surface-temperature equations that Newton's
method accepts."""

NEWTON_STEPS = 40
"""Newton's iteration limit for the surface temperature, besides one iteration per
box of the grid: where the surface is at the melting point, the melting
temperature's switch has no slope, so that an iteration can move the edge of the
melting region by only about one box (a snowball's summer surface, cooled by
transport to the winter side, leaves the melting point box by box)."""

SMALLEST_STEP = 2.0**-20
"""The shortest fraction of Newton's step for the surface temperature that its
backtracking tries."""

NEWTON_FAILED = 1e-6
"""A residual, K, above which Newton's method for the surface temperature has
failed: the temperature is then NaN, and a step that needed it unsolved (its error
estimate infinite)."""


def _smooth(width, hard, smooth):
    """`smooth(width)` for a positive `width`, `hard` at width 0 (differentiable in
    both, with no NaN in the branch not taken)."""
    positive = width > 0
    return jnp.where(positive, smooth(jnp.where(positive, width, 1.0)), hard)


def ice_cover(E, width):
    """The blended ice cover `w`, 1 under ice (`E < 0`), 0 over open water."""
    return _smooth(
        width,
        jnp.where(E < 0, 1.0, 0.0),
        lambda w: 0.5 * (1.0 - jnp.tanh(E / w)),
    )


def ice_enthalpy(E, width):
    """The blended enthalpy of the ice, `e = max(-E, 0)`, W yr m-2."""
    return _smooth(width, jnp.maximum(-E, 0.0), lambda w: w * jax.nn.softplus(-E / w))


def below_melting(T0, width):
    """The blended `min(T0, Tm)`, `Tm - width log(1 + exp((Tm - T0) / width))`,
    degC (`Tm` = `MELTING_POINT`)."""
    return _smooth(
        width,
        jnp.minimum(T0, MELTING_POINT),
        lambda w: MELTING_POINT - w * jax.nn.softplus((MELTING_POINT - T0) / w),
    )
