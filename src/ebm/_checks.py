"""Checks of the discrete settings that every entry point takes (counts, limits)."""

import equinox as eqx
import jax
import numpy as np


def check_count(name: str, value, minimum: int) -> None:
    """`value` must be a Python integer of at least `minimum` (a count of something)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")


def check_threshold(name: str, value, *, optional: bool = False) -> None:
    """`value` must be a positive, finite Python or numpy real number (a tolerance
    or a threshold set by the user), or `None` where `optional`."""
    if value is None and optional:
        return
    number = value if isinstance(value, (int, float, np.floating, np.integer)) else None
    if isinstance(value, bool) or number is None or not 0 < number < np.inf:
        allowed = "a positive, finite number" + (" or None" if optional else "")
        raise ValueError(f"`{name}` must be {allowed}, got {value!r}.")


def known_value(x):
    """The value of `x` if it is known while tracing (eagerly, or under eager `grad`
    and `jacfwd`), else `None` (inside `jit`)."""
    if not isinstance(x, jax.core.Tracer):
        return x
    # JAX has no public API that reads a traced value that is known (`jax.core` is
    # outside its compatibility policy, and `jax.core.is_concrete` is deprecated).
    # `Tracer.to_concrete_value` is what `bool(x)` and `int(x)` use, reached without
    # importing `jax._src`; should a later JAX drop it, nothing is known here: no
    # warning (and `integrate` takes its budget for traced runs), no error.
    to_concrete_value = getattr(x, "to_concrete_value", None)
    return None if to_concrete_value is None else to_concrete_value()


def refuse_if(x, bad, message: str, error: type[Exception] = ValueError):
    """`x`, once `bad` is false: checked now where its value is known (raising
    `error(message)`), else by an `eqx.error_if` threaded onto `x` in the caller's
    program (an entry point's own compiled program holds no such check, which
    would compile to a host callback that JAX's persistent cache refuses)."""
    known = known_value(bad)
    if known is None:
        return eqx.error_if(x, bad, message)
    if np.any(np.asarray(known)):
        raise error(message)
    return x


def as_python_number(value):
    """`value` as a Python `int` or `float` where it is a NumPy integer or floating
    scalar (a static field must hold a Python number, or equinox warns of an array
    set as static); anything else as it is, for the field's check to name."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def check_positive_number(name: str, value) -> None:
    """`value` must be a positive, finite Python real number (not a bool).

    **Raises:**

    - `ValueError`: naming `name` and `value`.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value < np.inf
    ):
        raise ValueError(f"`{name}` must be a positive number, got {value!r}.")
