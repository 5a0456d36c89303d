import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import ebm


def tree_allclose(x, y, *, rtol=1e-7, atol=0.0) -> bool:
    """Whether two pytrees have the same structure and allclose leaves."""
    x_leaves, x_def = jax.tree.flatten(x)
    y_leaves, y_def = jax.tree.flatten(y)
    if x_def != y_def:
        return False
    return all(
        np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
        for a, b in zip(x_leaves, y_leaves)
    )


def replace(params: ebm.Params, name: str, value) -> ebm.Params:
    return eqx.tree_at(lambda p: getattr(p, name), params, jnp.asarray(value, float))


def finite_difference(fn, params: ebm.Params, name: str, *, relative_step=1e-6):
    """Fourth-order central difference of scalar `fn(params)` in the field `name`.

    The step is relative to the parameter's size (absolute for a zero parameter).
    Fourth order (two step sizes) keeps truncation below 1e-8 relative at steps
    large enough that the solves' own tolerances do not show.
    """
    value = float(getattr(params, name))
    step = relative_step * (abs(value) if value != 0 else 1.0)

    def at(offset):
        return float(fn(replace(params, name, value + offset)))

    return (8 * (at(step) - at(-step)) - (at(2 * step) - at(-2 * step))) / (12 * step)


def assert_gradient_matches_fd(
    fn, params, gradient, names, *, rtol=1e-6, atol=0.0, relative_step=1e-6
):
    """Each named component of `gradient` equals the finite difference of `fn`."""
    for name in names:
        expected = finite_difference(fn, params, name, relative_step=relative_step)
        actual = float(getattr(gradient, name))
        assert np.isclose(actual, expected, rtol=rtol, atol=atol), (
            f"d/d{name}: autodiff {actual!r} vs finite differences {expected!r}"
        )
