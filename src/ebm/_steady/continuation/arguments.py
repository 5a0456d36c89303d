"""The arguments that `ebm.continuation` and `ebm.fold` share, checked one way.

Values known when the call is made are checked at once, with a `ValueError` that
names the argument; values traced under `jit` (`ebm.fold` is traceable) are checked
against the same conditions by `eqx.error_if` in the caller's program
(`check_traced`), so that the walk's own program holds no check.
"""

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
from jax.flatten_util import ravel_pytree

from ..._checks import refuse_if
from ..._model.parameters import params_checked
from ..._model.protocol import as_model_state
from ..._zonal.params import Params
from ..._zonal.start import resolve_model
from ..equilibrium import equilibrium
from .problem import ModelProblem, Problem, with_parameter


DEFAULT_CORRECTOR = optx.Newton(rtol=1e-10, atol=1e-10, linear_solver=lx.LU())
DEFAULT_FOLD_SOLVER = optx.Newton(rtol=1e-12, atol=1e-10, linear_solver=lx.LU())


def _check_parameter(params: Params, parameter: str) -> None:
    names = type(params).field_names()
    if parameter not in names:
        raise ValueError(f"`parameter` must be one of {names}, got {parameter!r}.")
    if type(params).declaration(parameter).profile is not None:
        raise ValueError(
            f"`parameter` must be a scalar parameter to walk in, got {parameter!r}, "
            "a profile: walk in a scalar that scales it (a term of your own with a "
            "factor), or in another parameter, and differentiate the result with "
            f"respect to {parameter!r}."
        )


def walk_arguments(
    params: Params, parameter: str, stop, guess, bounds, parameter_scale
) -> tuple:
    """`stop`, `bounds` and `parameter_scale` checked, and as the compiled walk takes
    them (see `_as_arrays`). `guess` is `ebm.fold`'s (`None` for a walk).

    **Raises:**

    - `ValueError`: for an unknown `parameter`; neither or both of `stop` and
        `guess`; a `guess` in another parameter; `stop` not finite or equal to the
        start, `bounds` that do not contain the start, or `parameter_scale` <= 0
        (where they are concrete; inside `jit`, `setup` checks them); `stop` or
        `bounds` where `parameter` is out of its range.
    """
    _check_parameter(params, parameter)
    if stop is None and guess is None:
        raise ValueError(
            "Give either `stop` (the value to walk towards) or, to `ebm.fold`, "
            "`guess` (a fold found before); got neither."
        )
    if stop is not None and guess is not None:
        raise ValueError(
            "Give either `stop` (to walk) or `guess` (to refine it), not both."
        )
    if guess is not None and guess.parameter != parameter:
        raise ValueError(
            f"`guess` is a fold in {guess.parameter!r}, but `parameter` is "
            f"{parameter!r}."
        )
    for name, value in (("stop", stop), ("parameter_scale", parameter_scale)):
        if isinstance(value, (str, bool)):
            raise TypeError(f"`{name}` must be a number, got {value!r}.")
    if guess is None:
        origin = getattr(params, parameter)
        _check_bounds(origin, stop, bounds, parameter_scale)
        _check_range(params, parameter, stop, bounds)
    return _as_arrays(getattr(params, parameter), stop, bounds, parameter_scale)


def _bounds(origin, stop, bounds):
    """`(low, high)`: `bounds`, or by default from the start to `stop`."""
    if bounds is None:
        return jnp.minimum(origin, stop), jnp.maximum(origin, stop)
    low, high = bounds
    return jnp.asarray(low, float), jnp.asarray(high, float)


def setup(params, parameter, stop, bounds, start, grid, model, parameter_scale, t):
    """Inside `jit`: the problem, the start point `y0`, the direction and the bounds
    (`bounds` and `parameter_scale` as `walk_arguments` made them, and checked by
    `check_traced`), and the result of the starting equilibrium's solve. A failed
    start does not raise here (its `y0` is NaN, and the walk does not start): the
    entry points report it as they report the walk's own failures, by `throw`.
    `t` is `None` for the zonal model, else the time whose forcing is held."""
    origin = jnp.asarray(getattr(params, parameter), float)
    scale = jnp.asarray(parameter_scale, float)
    with params_checked():  # by the entry point, before tracing
        if t is None:
            model = resolve_model(model, grid)
            start = equilibrium(params, model=model, start=start, throw=False)
            problem = Problem(model, params, parameter, origin, scale)
            x0 = start.T
        else:
            start = equilibrium(params, model=model, start=start, t=t, throw=False)
            like = as_model_state(model, params, start.state)
            problem = ModelProblem(
                model, params, parameter, origin, scale, jnp.asarray(t, float), like
            )
            x0 = ravel_pytree(like)[0]
    y0 = jnp.concatenate([x0, jnp.zeros(1, x0.dtype)])
    direction = jnp.where(stop >= origin, 1.0, -1.0)
    return problem, y0, direction, bounds, start.result


def model_problem(params, parameter, model, t, state) -> ModelProblem:
    """The problem of a protocol model around its `state` (refining a fold from a
    guess: the parameter's origin at its current value, unit scale)."""
    origin = jnp.asarray(getattr(params, parameter), float)
    return ModelProblem(
        model, params, parameter, origin, jnp.ones_like(origin), t, state
    )


def check_traced(params: Params, parameter: str, stop, bounds, parameter_scale):
    """`params`, once the checks of `walk_arguments` hold where a value they
    involve is a tracer (known under eager `grad`: a `ValueError` now; traced
    under the caller's `jit`: an `eqx.error_if` threaded on); concrete values were
    checked by `walk_arguments` itself. `stop`, `bounds` and
    `parameter_scale` are as `walk_arguments` returns them."""
    involved = (params, stop, bounds, parameter_scale)
    if not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(involved)):
        return params
    origin = jnp.asarray(getattr(params, parameter), float)
    low, high = bounds
    params = refuse_if(
        params,
        ~with_parameter(params, parameter, low).in_range()
        | ~with_parameter(params, parameter, high).in_range(),
        f"Continuation in {parameter}: `stop` and `bounds` must stay where "
        f"`{parameter}` is {params.allowed_range(parameter)}.",
    )
    return refuse_if(
        params,
        ~jnp.isfinite(stop)
        | (stop == origin)
        | ~(low < high)
        | (origin < low)
        | (origin > high)
        | ~(parameter_scale > 0),
        f"Continuation in {parameter}: `stop` must be finite and differ from the "
        "start, `bounds` must contain the start, and `parameter_scale` must be > 0.",
    )


def _check_bounds(origin, stop, bounds, parameter_scale) -> None:
    """Eager checks of the values that are concrete (the rest is checked in jit)."""

    def concrete(x):
        return x is not None and not isinstance(x, jax.core.Tracer)

    if concrete(stop) and not np.isfinite(float(stop)):
        raise ValueError(f"`stop` must be finite, got {stop}.")
    if concrete(stop) and concrete(origin) and float(stop) == float(origin):
        raise ValueError(
            f"`stop` must differ from the starting value {float(origin)} of the "
            "parameter."
        )
    if bounds is not None and all(concrete(b) for b in bounds):
        low, high = (float(b) for b in bounds)
        inside = (not concrete(origin)) or low <= float(origin) <= high
        if not (low < high and inside):
            raise ValueError(
                "`bounds` must be (low, high) with low < high around the starting "
                f"value of the parameter, got {bounds}."
            )
    if concrete(parameter_scale) and not float(parameter_scale) > 0:
        raise ValueError(f"`parameter_scale` must be > 0, got {parameter_scale}.")


def _check_range(params: Params, parameter: str, stop, bounds) -> None:
    """`stop` and `bounds` must lie where `parameter` is valid: the walk would cross
    into parameters the model refuses (e.g. D < 0, where it has no equilibria)."""
    ends = [("stop", stop)] if bounds is None else [("bounds", b) for b in bounds]
    for argument, value in ends:
        if value is None:
            continue
        allowed = params.out_of_range(parameter, value)
        if allowed is not None:
            raise ValueError(
                f"Continuation in {parameter}: `{argument}` reaches {parameter} = "
                f"{float(value)}, but `{parameter}` must be {allowed}; stop the walk "
                "inside that range."
            )


def _as_arrays(origin, stop, bounds, parameter_scale):
    """Floats as arrays, so that new values do not recompile; for a walk (`stop`
    given), the defaults of `bounds` and `parameter_scale` made explicit, so that a
    call with them and one without share the compiled program."""
    if stop is not None:
        stop = jnp.asarray(stop, float)
        origin = jax.lax.stop_gradient(jnp.asarray(origin, float))
        bounds = _bounds(origin, stop, bounds)
        if parameter_scale is None:
            parameter_scale = (bounds[1] - bounds[0]) / 100
    if bounds is not None:
        bounds = tuple(jnp.asarray(b, float) for b in bounds)
    if parameter_scale is not None:
        parameter_scale = jnp.asarray(parameter_scale, float)
    return stop, bounds, parameter_scale
