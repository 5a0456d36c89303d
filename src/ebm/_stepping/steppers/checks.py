"""What a fixed-step run checks of its stepper: the step against the stability limit
at the start, the step's error estimate added up over the run, and the run's result.

The limits are checked at the start only; later in a run (the seasonal insolation
moving over the ice edge) the error estimate is what notices a step gone wrong.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._custom_types import Scalar, Temperature
from ..._results import RESULTS
from ..._zonal.model import EnergyBalanceModel
from ..._zonal.params import Params
from .base import AbstractStepper
from .explicit_euler import ExplicitEuler
from .flat import FlatModel


ERROR_MEMORY = 1.0
"""Years over which a step's error estimate is remembered (e-folding; see
`accumulate_error`)."""


def stability_advice(stepper: AbstractStepper, model=None) -> tuple[str, str]:
    """What bounds `stepper`'s step (a formula) and the other stepper to use (for a
    model of the protocol stepped as a `FlatModel`, in terms of its Jacobian: the
    steppers' own words are the zonal model's)."""
    if isinstance(model, FlatModel):
        bound = "set by the eigenvalues of the model's Jacobian at the start"
        if isinstance(stepper, ExplicitEuler):
            return bound, "stepper='rosenbrock' or 'implicit' (L-stable)"
        return bound, "a smaller `dt`"
    return stepper.stability_bound, stepper.stability_alternative


@eqx.filter_jit
def stability_limit(
    stepper: AbstractStepper, model: EnergyBalanceModel, params: Params, T0
) -> Scalar:
    """`stepper.stability_limit`, not differentiated (it only decides a check)."""
    dynamic, static = eqx.partition((model, params, T0), eqx.is_inexact_array)
    model, params, T0 = eqx.combine(jax.lax.stop_gradient(dynamic), static)
    return stepper.stability_limit(model, params, T0)


def check_stability(
    stepper: AbstractStepper,
    model: EnergyBalanceModel,
    params: Params,
    T0: Temperature,
    dt,
    throw: bool,
    steps_per_year: int | None = None,
) -> Scalar | None:
    """`stepper`'s stability limit at `T0`, years, when it can be known now (else
    `None`: a traced run finds it and reports `RESULTS.unstable_step`).

    **Raises:**

    - `ValueError` (with `throw`): when `dt` is above the limit, naming `dt` (or
        `steps_per_year`, when given), its value, the limit, what sets it and the
        fix.
    """
    leaves = jax.tree.leaves((model, params, T0, dt))
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return None
    # One compiled program (kept by the persistent cache), not one per operation.
    limit = _known_stability_limit(stepper, model, params, T0)
    if not throw or float(dt) <= float(limit):
        return limit
    dt, limit = float(dt), float(limit)
    formula, alternative = stability_advice(stepper, model)
    name = type(stepper).__name__
    where = f"{name}'s stability limit here is {limit:.4g} years, {formula}"
    if steps_per_year is None:
        raise ValueError(
            f"`dt` = {dt:.4g} years is unstable: {where}. Use `dt` <= {limit:.4g} "
            f"years, or {alternative}."
        )
    raise ValueError(
        f"`steps_per_year` = {steps_per_year} (dt = {dt:.4g} years) is unstable: "
        f"{where}. Use `steps_per_year` >= {math.ceil(1.0 / limit)}, or "
        f"{alternative}."
    )


_known_stability_limit = eqx.filter_jit(stability_limit)


def resolve_error_tolerance(error_tolerance, stepper: AbstractStepper):
    """`error_tolerance` as a float array, or the stepper's default for `None`.

    **Raises:**

    - `ValueError`: unless it is a positive number, K (`inf` turns the check off).
    """
    if error_tolerance is None:
        error_tolerance = default_error_tolerance(stepper)
    valid = not isinstance(error_tolerance, bool)
    if valid and not isinstance(error_tolerance, jax.core.Tracer):
        value = np.asarray(error_tolerance)
        valid = (
            value.shape == ()
            and np.issubdtype(value.dtype, np.number)
            and bool(value > 0)
        )
    if not valid:
        raise ValueError(
            "`error_tolerance` must be None or a positive number of K (inf to turn "
            f"the check off), got {error_tolerance!r}."
        )
    # An array, so that runs with other tolerances share the compiled program.
    return jnp.asarray(error_tolerance, dtype=float)


def fixed_step_result(
    finite, step_error, unstable, error_tolerance, otherwise=RESULTS.successful
) -> RESULTS:
    """The result of a fixed-step run, the likeliest cause first: a step above the
    stability limit, then a non-finite state, then a step that did not solve its
    own equations (an infinite error estimate), then an error estimate (the largest
    of `accumulate_error`'s, K) above `error_tolerance` (NaN counts as above), else
    `otherwise`. An infinite `error_tolerance` turns both checks off (the switches
    as steps, widths 0, leave some of `SeaIceEuler`'s steps unsolved)."""
    inaccurate = jnp.logical_not(step_error <= error_tolerance)
    result = RESULTS.where(inaccurate, RESULTS.inaccurate_step, otherwise)
    unsolved = jnp.isposinf(step_error) & jnp.isfinite(error_tolerance)
    result = RESULTS.where(unsolved, RESULTS.unsolved_step, result)
    result = RESULTS.where(finite, result, RESULTS.nonfinite_state)
    return RESULTS.where(unstable, RESULTS.unstable_step, result)


def step_with_error(stepper, model, state, t, T, params, dt):
    """`stepper.step`, and its error estimate (zero if it has none), not
    differentiated."""
    output = stepper.step(model, state, t, T, params, dt)
    if not (isinstance(output, tuple) and len(output) == 2):
        raise TypeError(
            f"{type(stepper).__name__}.step must return a pair (new T, local error "
            "estimate or None), as ebm.AbstractStepper.step documents; got "
            f"{type(output).__name__}."
        )
    T_next, error = output
    if error is None:
        return T_next, jnp.zeros_like(T)
    return T_next, jax.lax.stop_gradient(error)


def accumulate_error(error, local_error, dt):
    """The run's estimated error in each cell, K, after a step with `local_error`.

    Each cell's local errors are added with their signs, as the true error adds
    them (over a seasonal cycle, a first-order step's errors change sign with the
    curvature of `T` and largely cancel), and forgotten over `ERROR_MEMORY` (a
    year; the model forgets a perturbation on its relaxation time `C / B`, 0.66
    years for a 10 m mixed layer). For the Euler steppers this tracks the error of
    the run itself (within a factor of two on the seasonal model).
    """
    return error * jnp.exp(-dt / ERROR_MEMORY) + local_error


def default_error_tolerance(stepper: AbstractStepper) -> float:
    """`error_tolerance`'s default, K: the stepper's own (10 for `Rosenbrock2`,
    whose estimate overstates its error; 1 for the Euler steppers)."""
    return stepper.default_error_tolerance
