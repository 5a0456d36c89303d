r"""Sensitivities of outputs to parameters: Jacobians and Hessians.

`sensitivity` is the Jacobian of an output with respect to every (or chosen)
parameter in forward mode (`jax.jacfwd`): through the implicit solve of an
equilibrium, or through a run under `diffrax.ForwardMode`, whose memory does not
grow with the number of steps. `hessian` is forward over reverse
(`jax.jacfwd(jax.grad(...))`) of a scalar output.
"""

import warnings
from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import check_threshold
from .._model.parameters import with_values
from .._model.protocol import AbstractModel
from .._results import raise_if_failed
from .._zonal.equilibrium import NearFoldWarning, _near_fold_message
from .._zonal.grid import Grid
from .._zonal.params import Params
from .._zonal.start import model_latitudes, resolve_any_model
from .forward import ForwardProblem, check_names, check_through


def resolve(params, model, grid):
    """`(params, model)`, checked: the zonal model from `model=` or `grid=`, or any
    model of the protocol with its own parameters."""
    from .._stepping.run import check_model_params

    model = resolve_any_model(model, grid)
    return check_model_params(params, model), model


class Sensitivity(eqx.Module):
    """Derivatives of one output with respect to parameters (from `ebm.sensitivity`).

    **Attributes:**

    - `output`: `"T"`, `"global_mean"`, `"ice_edge"` or `"ice_edge_south"`.
    - `value`: the output itself (degC, or degrees north for an ice edge).
    - `names`: the parameters, in order.
    - `jacobian`: `{name: d output / d name}`, each shaped like `value`.
    - `lat`: cell centres, degrees north (`None` for a global model).
    """

    output: str = eqx.field(static=True)
    value: Array
    names: tuple[str, ...] = eqx.field(static=True)
    jacobian: dict[str, Array]
    lat: Float[Array, " lat"] | None

    def __getitem__(self, name: str) -> Array:
        return self.jacobian[name]


def sensitivity(
    params: Params,
    output: str = "global_mean",
    *,
    names: Sequence[str] | None = None,
    through: str = "equilibrium",
    years=None,
    T0=None,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    near_fold: float | None = 1e-2,
) -> Sensitivity:
    """Forward-mode Jacobian of an output with respect to parameters.

    **Arguments:**

    - `params`: where to differentiate.
    - `output`: `"T"` (the profile), `"global_mean"`, `"ice_edge"` or
        `"ice_edge_south"` (degrees north); for another model of the protocol
        `"T"` (its surface temperature) or `"global_mean"`.
    - `names`: the parameters (default: every field of `params`).
    - `through`: `"equilibrium"` (implicit differentiation of the root-find) or
        `"trajectory"` (the state after `years` from `T0`, under
        `diffrax.ForwardMode`: memory independent of the number of steps).
    - `years`, `T0`: the run (trajectory only).
    - `grid`, `model`, `start`, `near_fold`: as for `ebm.equilibrium` (any model
        of the protocol, with `params` its `model.Params`; through an equilibrium,
        its steady state under the forcing of the scenario's start): through an
        equilibrium within `near_fold` of a fold, the derivatives grow without
        bound, and it warns (`ebm.NearFoldWarning`; not inside `jit`).

    **Returns:**

    An `ebm.Sensitivity`; `result[name]` is `d output / d name`.

    **Raises:**

    - `ValueError`: for an unknown `output`, `through` or name, or a trajectory
        without `years`.
    """
    params, model = resolve(params, model, grid)
    check_threshold("near_fold", near_fold, optional=True)
    container = type(params)
    names = check_names(
        container.field_names() if names is None else names, "names", container
    )
    fn, values = _output_function(
        params, output, names, through, years, T0, model, start, "forward"
    )
    (value, (diagnostics, result)), jacobian = _value_and_jacfwd(fn, values)
    value, jacobian = raise_if_failed((value, jacobian), result)
    _warn_near_fold(diagnostics, near_fold)
    return Sensitivity(
        output=output,
        value=value,
        names=names,
        jacobian=jacobian,
        lat=model_latitudes(model),
    )


class _Output(eqx.Module):
    """`values -> (output, diagnostics)`: the output of `params` with the named
    fields replaced by `values`, and the equilibrium's `(leading_eigenvalue,
    condition_number)` (not differentiated; `None` for a run) with the solve's
    result, to warn near a fold and to raise on a failed solve.

    A Module rather than a closure, so that `eqx.filter_jit` finds the compiled
    program again on the next call with the same settings (a new closure each
    call recompiled the Jacobian or Hessian every time).
    """

    params: Params
    output: str | Callable = eqx.field(static=True)
    problem: ForwardProblem

    def __call__(self, values):
        params = with_values(self.params, values)
        solution = self.problem.solve(params)
        if callable(self.output):
            value = self.output(solution.state, params)
        else:
            value = getattr(solution.state, self.output)
        diagnostics = jax.lax.stop_gradient(solution.diagnostics)
        return value, (diagnostics, solution.result)


def _output_function(params, output, names, through, years, T0, model, start, adjoint):
    """`values -> (output, diagnostics)` (see `_Output`), and `values`."""
    if not callable(output) and output not in model.outputs:
        raise ValueError(
            f"`output` must be one of {model.outputs} for {type(model).__name__}, got "
            f"{output!r}."
        )
    check_through(through)
    if through == "trajectory" and years is None:
        raise ValueError("through='trajectory' needs `years`.")
    if through == "equilibrium":
        problem = ForwardProblem(model, through, start=start)
    else:
        problem = ForwardProblem(model, through, years=years, T0=T0, adjoint=adjoint)
    fn = _Output(params, output, problem)
    return fn, {name: getattr(params, name) for name in names}


def _warn_near_fold(diagnostics, near_fold) -> None:
    """Warn as `ebm.equilibrium` does (not inside jit, where nothing is known)."""
    if diagnostics is None or near_fold is None:
        return
    leading_eigenvalue, condition_number = diagnostics
    if isinstance(leading_eigenvalue, jax.core.Tracer):
        return
    message = _near_fold_message(leading_eigenvalue, condition_number, near_fold)
    if message is not None:
        warnings.warn(message, NearFoldWarning, stacklevel=3)


class Hessian(eqx.Module):
    """Second derivatives of a scalar output (from `ebm.hessian`).

    **Attributes:**

    - `output`: `"global_mean"`, `"ice_edge"` or `"ice_edge_south"`.
    - `names`: the parameters, in order.
    - `gradient`: first derivatives, in the order of `names`.
    - `matrix`: `matrix[i, j] = d2 output / d names[i] d names[j]`.
    """

    output: str = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    gradient: Float[Array, " n"]
    matrix: Float[Array, "n n"]


def hessian(
    params: Params,
    output: str | Callable = "global_mean",
    *,
    names: Sequence[str] | None = None,
    through: str = "equilibrium",
    years=None,
    T0=None,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    near_fold: float | None = 1e-2,
) -> Hessian:
    """Hessian of a scalar output with respect to the named parameters.

    Forward over reverse (`jax.jacfwd(jax.grad(...))`): through the implicit solve
    of an equilibrium, or through a run under `diffrax.DirectAdjoint` (the adjoint
    that supports both modes).

    **Arguments:**

    - `params`: where to differentiate.
    - `output`: `"global_mean"`, `"ice_edge"` or `"ice_edge_south"`, or a
        function `fn(state, params)` of the `ebm.Equilibrium` (or
        `ebm.Trajectory`) and the parameters that returns a scalar (a log
        likelihood, say).
    - `names`: one or more fields of `params` (default `("D", "B")` for the
        zonal model, every field for another model of the protocol).
    - `through`, `years`, `T0`, `grid`, `model`, `start`, `near_fold`: as for
        `ebm.sensitivity` (second derivatives near a fold grow faster still).

    **Returns:**

    An `ebm.Hessian`.

    **Raises:**

    - `ValueError`: for a non-scalar `output`, unknown names, a profile given as
        an array (`D_bounds`), or as `sensitivity`.
    """
    params, model = resolve(params, model, grid)
    check_threshold("near_fold", near_fold, optional=True)
    if names is None:
        names = model.varied_by_default or type(params).field_names()
    names = check_names(names, "names", type(params))
    if output == "T":
        raise ValueError(
            "`output` must be a scalar ('global_mean', 'ice_edge' or "
            f"'ice_edge_south') or a function, got {output!r}."
        )
    profiles = [name for name in names if np.ndim(getattr(params, name)) > 0]
    if profiles:
        raise ValueError(
            f"`names` must be parameters with one value each for a Hessian matrix, "
            f"got {profiles[0]!r} of shape {np.shape(getattr(params, profiles[0]))}: "
            "take `jax.hessian` of your own function of the profile instead."
        )
    fn, values = _output_function(
        params, output, names, through, years, T0, model, start, "direct"
    )
    gradient, matrix, (diagnostics, result) = _gradient_and_hessian(fn, values)
    gradient, matrix = raise_if_failed((gradient, matrix), result)
    _warn_near_fold(diagnostics, near_fold)
    return Hessian(
        output=output,
        names=names,
        gradient=jnp.stack([gradient[name] for name in names]),
        matrix=jnp.stack(
            [jnp.stack([matrix[row][column] for column in names]) for row in names]
        ),
    )


@eqx.filter_jit
def _gradient_and_hessian(fn, values):
    # The gradient is the primal of the Hessian's forward pass: one reverse pass in
    # the program, not a second copy of it for the gradient alone.
    gradient_fn = jax.grad(fn, has_aux=True)

    def with_gradient(values):
        gradient, diagnostics = gradient_fn(values)
        return gradient, (gradient, diagnostics)

    matrix, (gradient, diagnostics) = jax.jacfwd(with_gradient, has_aux=True)(values)
    return gradient, matrix, diagnostics


@eqx.filter_jit
def _value_and_jacfwd(fn, values):
    def with_value(values):
        output, diagnostics = fn(values)
        return output, (output, diagnostics)

    jacobian, (value, diagnostics) = jax.jacfwd(with_value, has_aux=True)(values)
    return (value, diagnostics), jacobian
