r"""Fitting parameters to observations, and sensitivities of outputs to parameters.

**Fitting.** `fit` minimises the area-weighted mean squared misfit

$$L(\theta) = \frac{\sum_i w_i\,(T_i(\theta) - T^{obs}_i)^2}{\sum_i w_i}
\quad (\text{K}^2)$$

of either the equilibrium profile (gradients by implicit differentiation: one linear
solve per evaluation, whatever the spin-up) or snapshots of a transient run
(gradients through the diffrax adjoint chosen), with an optax optimizer. The
parameters are optimised in an unconstrained space: $\log$ for those that must be
positive (`B`, `D`, `S0`, `water_depth`, `ice_width`), $\mathrm{logit}$ for the
albedos `a0` and `ai` (in (0, 1)), unchanged for the others; so every iterate is a
physically valid `Params`.

**Sensitivities.** `sensitivity` is the Jacobian of an output with respect to every
(or chosen) parameter in forward mode (`jax.jacfwd`): through the implicit solve of
an equilibrium, or through a run under `diffrax.ForwardMode`, whose memory does not
grow with the number of steps.
"""

import warnings
from collections.abc import Callable, Sequence

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float

from .._checks import check_count, check_threshold
from .._model.grid import Grid
from .._model.model import EnergyBalanceModel
from .._model.parameters import check_params, params_checked
from .._model.params import Params
from .._progress import HostProgress
from .._results import RESULTS, raise_if_failed
from .._steady.equilibrium import (
    NearFoldWarning,
    _near_fold_message,
    equilibrium,
    initial_profile,
    resolve_model,
)
from .._stepping.integrate import integrate


# One instance, so that repeated fits reuse the compiled step: an optax optimizer's
# functions are static arguments of the jitted step, compared by identity.
_DEFAULT_OPTIMIZER = optax.adam(0.05)


def to_unconstrained(name: str, value, container: type[Params] = Params):
    """The optimiser's coordinate for parameter `name` (its declared transform)."""
    return container.declaration(name).to_unconstrained(value)


def from_unconstrained(name: str, coordinate, container: type[Params] = Params):
    """The inverse of `to_unconstrained`."""
    return container.declaration(name).from_unconstrained(coordinate)


def with_values(params: Params, values: dict) -> Params:
    """`params` with the fields named in `values` replaced."""
    names = tuple(values)
    return eqx.tree_at(
        lambda p: tuple(getattr(p, name) for name in names),
        params,
        tuple(jnp.asarray(values[name], float) for name in names),
    )


def check_names(
    names: Sequence[str], argument: str, container: type[Params] = Params
) -> tuple[str, ...]:
    """`names` as a tuple, every one a parameter of `container`.

    **Raises:**

    - `ValueError`: naming `argument`, for an unknown or repeated name.
    """
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    known = container.field_names()
    unknown = [name for name in names if name not in known]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"`{argument}` must be distinct names of Params fields {known}, got "
            f"{names!r}."
        )
    return names


class FitResult(eqx.Module):
    """The result of `ebm.fit`.

    **Attributes:**

    - `params`: the fitted `Params` (fields not fitted are as given).
    - `fitted`: the names of the fitted fields.
    - `loss_history`: the loss (K^2) before each step and at the end.
    - `converged`: whether the gradient norm in the optimiser's coordinates fell to
        `gtol` within `steps` steps.
    - `num_steps`: optimiser steps taken.
    """

    params: Params
    fitted: tuple[str, ...] = eqx.field(static=True)
    loss_history: np.ndarray
    converged: bool
    num_steps: int


def misfit(T, target, grid: Grid):
    """Area-weighted mean squared difference, K^2 (over the last axis, then mean)."""
    return jnp.mean(grid.global_mean((T - target) ** 2))


def fit(
    params: Params,
    target,
    *,
    fit: Sequence[str] = ("D",),
    through: str = "equilibrium",
    times=None,
    T0=None,
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
    start="present",
    adjoint="recursive",
    optimizer: optax.GradientTransformation | None = None,
    steps: int = 300,
    gtol: float = 1e-7,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> FitResult:
    """Fit the named parameters to a target profile or to snapshots of a run.

    **Arguments:**

    - `params`: the starting parameters (and the values of the fields not fitted).
    - `target`: degC; for `through="equilibrium"` a profile of shape `(n_lat,)`, for
        `through="trajectory"` snapshots of shape `(len(times), n_lat)`.
    - `fit`: the `Params` fields to fit (default `("D",)`).
    - `through`: `"equilibrium"` (misfit of `ebm.equilibrium(params).T`, implicit
        gradients) or `"trajectory"` (misfit of `ebm.integrate` at `times`, from
        `T0`, gradients under `adjoint`).
    - `times`: years of the snapshots, increasing, > 0 (trajectory only).
    - `T0`: initial profile of the run (trajectory only; default `"present"`).
    - `grid`, `model`: as for `ebm.equilibrium`.
    - `start`: the equilibrium's start (equilibrium only).
    - `adjoint`: `integrate`'s adjoint for the trajectory's gradient.
    - `optimizer`: an optax optimizer (default `optax.adam(0.05)`);
        `optax.lbfgs()` converges much faster on these smooth problems. The
        optimiser step is compiled once per optimizer object: create it once and
        pass the same object to repeated fits (a new `optax.lbfgs()` each call
        compiles the step again, as its functions are new).
    - `steps`: most optimiser steps.
    - `gtol`: converged when the gradient's norm in the optimiser's coordinates
        (log, logit or plain per field, see the module docstring) is below this.
    - `progress`: `True` for a progress bar on stderr (optimiser steps out of
        `steps`, with each step's loss and gradient norm), or any
        `diffrax.AbstractProgressMeter` (told the fraction of `steps` taken).

    **Returns:**

    An `ebm.FitResult`.

    **Raises:**

    - `ValueError`: for an unknown `through` or field name, a target of the wrong
        shape or with non-finite values, missing or bad `times`, bad `steps`, or a
        fitted parameter that the model's energy budget (through `"equilibrium"`) or
        tendency (through `"trajectory"`) does not depend on, such as the orbit
        under the default `P2Insolation`, or `water_depth` through an equilibrium.
    - `RuntimeError`: when the model fails to converge at an iterate (the message
        names the parameter values).
    """
    params = check_params(params)
    names = check_names(fit, "fit", type(params))
    check_count("steps", steps, 1)
    model = resolve_model(model, grid)
    grid = model.grid
    target = _check_target(target)
    loss_fn = _loss_function(
        params, target, names, through, times, T0, model, start, adjoint
    )
    _check_fitted_parameters_enter(params, names, through, times, T0, model, start)
    if optimizer is None:
        optimizer = _DEFAULT_OPTIMIZER
    elif not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(
            "`optimizer` must be an optax optimizer (an optax.GradientTransformation"
            f", e.g. optax.adam(0.05)), got {optimizer!r}."
        )
    coordinates = {
        name: to_unconstrained(name, getattr(params, name), type(params))
        for name in names
    }
    # optax's init leaves some scalars weakly typed (Python numbers), which its
    # update returns strongly typed: without this the step would compile twice.
    state = jax.tree.map(_strongly_typed, optimizer.init(coordinates))

    history, converged, step = [], False, 0
    with HostProgress(progress, steps, "step") as meter:
        for step in range(steps):
            try:
                new_coordinates, new_state, loss, norm = _fit_step(
                    loss_fn, optimizer, coordinates, state
                )
            except eqx.EquinoxRuntimeError as error:
                raise _failed(step, names, coordinates, type(params)) from error
            history.append(float(loss))
            meter.step(
                step + 1, f"loss {float(loss):.3e} K^2, |grad| {float(norm):.2e}"
            )
            if not np.isfinite(float(loss)):
                raise _not_converged(step, names, coordinates, type(params))
            if not np.isfinite(float(norm)):
                raise _failed(step, names, coordinates, type(params))
            if float(norm) <= gtol:
                converged = True
                break
            coordinates, state = new_coordinates, new_state
        else:
            step = steps
            # The last iterate's loss from the compiled step itself (its update
            # unused), not from a second compiled program.
            history.append(float(_fit_step(loss_fn, optimizer, coordinates, state)[2]))
            if not np.isfinite(history[-1]):
                raise _not_converged(step, names, coordinates, type(params))
    fitted = with_values(
        params,
        {
            name: from_unconstrained(name, coordinates[name], type(params))
            for name in names
        },
    )
    return FitResult(
        params=fitted,
        fitted=names,
        loss_history=np.asarray(history),
        converged=converged,
        num_steps=step,
    )


def _check_target(target) -> Array:
    """`target` as a float array, every value finite (a NaN would otherwise surface
    as an unconverged model many steps later)."""
    try:
        array = np.asarray(target, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"`target` must be an array of temperatures (degC), got {target!r}."
        ) from error
    bad = ~np.isfinite(array)
    if np.any(bad):
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"`target` must be finite everywhere, got {int(bad.sum())} non-finite "
            f"value(s), the first {array[first]} at index {first}. Fill or drop the "
            "missing cells (the misfit has no mask)."
        )
    return jnp.asarray(array)


def _term_outputs(model: EnergyBalanceModel, T, params: Params, t, through: str):
    """Each term of the model's budget (and heat capacity, for a run) at `T`."""
    grid = model.grid
    outputs = {
        "insolation": model.insolation(params, grid, t),
        "albedo": model.albedo(T, params, grid),
        "longwave": model.longwave(T, params, grid),
        "transport": model.transport.convergence(T, params, grid),
        "forcing": model.forcing(params, grid, t),
    }
    if through == "trajectory":
        outputs["heat_capacity"] = model.heat_capacity(params, grid)
    return outputs


@eqx.filter_jit
def _term_dependence(model, T, params, t, through, names):
    """For each term, whether its output moves with each named parameter (a
    forward-mode derivative that is not exactly zero)."""

    def outputs(values):
        return _term_outputs(model, T, with_values(params, values), t, through)

    values = {name: getattr(params, name) for name in names}
    jacobian = jax.jacfwd(outputs)(values)
    return {
        term: {name: jnp.any(by_name[name] != 0) for name in names}
        for term, by_name in jacobian.items()
    }


def _check_fitted_parameters_enter(params, names, through, times, T0, model, start):
    """Refuse a fitted parameter that the solved equation does not depend on: its
    gradient is exactly zero, and the fit would 'converge' at step 0."""
    if through == "equilibrium":
        T, t = initial_profile(start, params, model.grid), None
    else:
        T = initial_profile("present" if T0 is None else T0, params, model.grid, "T0")
        t = jnp.asarray(0.0)
    dependence = _term_dependence(
        model, T, jax.lax.stop_gradient(params), t, through, names
    )
    unused = [
        name
        for name in names
        if not any(bool(by_name[name]) for by_name in dependence.values())
    ]
    if not unused:
        return
    every = type(params).field_names()
    used = _term_dependence(model, T, params, t, through, every)
    described = "; ".join(
        (
            "the uniform forcing: forcing"
            if term == "forcing"
            else f"{term} ({type(getattr(model, term)).__name__}): "
            + (", ".join(name for name in every if bool(by_name[name])) or "none")
        )
        for term, by_name in used.items()
    )
    solved = (
        "equilibrium (its energy budget; the heat capacity does not set it)"
        if through == "equilibrium"
        else "run (its tendency)"
    )
    orbital = ("eccentricity", "obliquity", "long_peri")
    hint = (
        " The orbital parameters enter only through an orbital insolation "
        "(ebm.DailyInsolation, ebm.AnnualMeanInsolation)."
        if any(name in orbital for name in unused)
        else ""
    )
    raise ValueError(
        f"`fit` names {', '.join(f'`{name}`' for name in unused)}, which this "
        f"model's {solved} does not depend on: its gradient is zero and the fit "
        f"would stop at once. The terms and the parameters they use: {described}."
        f"{hint}"
    )


def _failed(step, names, coordinates, container) -> RuntimeError:
    return RuntimeError(
        f"ebm.fit: the model failed at step {step}, near "
        f"{_describe(names, coordinates, container)} (for example a "
        "singular Jacobian near a fold, where two equilibria meet, which makes the "
        "gradient NaN). Start closer, fit fewer parameters, or resolve the ice edge "
        "better (larger ice_width or n_lat)."
    )


def _not_converged(step, names, coordinates, container) -> RuntimeError:
    return RuntimeError(
        f"ebm.fit: the model did not converge at step {step}, with "
        f"{_describe(names, coordinates, container)}: its equilibrium or run failed or "
        "was not finite there. Start closer, or fit fewer parameters."
    )


def _describe(names, coordinates, container) -> str:
    def value(name):
        value = np.asarray(from_unconstrained(name, coordinates[name], container))
        if value.ndim == 0:
            return f"{float(value):.6g}"
        return f"a profile in [{value.min():.6g}, {value.max():.6g}]"

    return ", ".join(f"{name}={value(name)}" for name in names)


def snapshots(params: Params, years, times, model, T0, adjoint):
    """The profiles of a run from `T0` at `times` (years), and whether it
    succeeded (no error raised: a failed run is for the caller to reject)."""
    run = integrate(
        params,
        years=years,
        model=model,
        T0=T0,
        adjoint=adjoint,
        saveat=diffrax.SaveAt(ts=times),
        throw=False,
    )
    return run.Ts, run.result == RESULTS.successful


class _Loss(eqx.Module):
    """`coordinates -> misfit` (K^2) of the fitted parameters at `coordinates` (the
    optimiser's unconstrained space).

    A Module rather than a closure, so that `eqx.filter_jit` finds the compiled
    optimiser step again on the next `fit` with the same settings: the parameters,
    target and snapshot times are traced arrays, the names and options static.
    """

    params: Params
    target: Array
    model: EnergyBalanceModel
    names: tuple[str, ...] = eqx.field(static=True)
    through: str = eqx.field(static=True)
    times: Array | None
    years: float | None = eqx.field(static=True)
    T0: object
    start: object
    adjoint: object

    def output(self, params: Params):
        """The fitted profile(s) of `params`, and whether the solve succeeded."""
        # The coordinates map into each parameter's range; one that does not (a NaN
        # from the optimiser) fails as an unconverged solve does, below.
        with params_checked():
            if self.through == "equilibrium":
                state = equilibrium(
                    params, model=self.model, start=self.start, throw=False
                )
                return state.T, state.converged
            return snapshots(
                params, self.years, self.times, self.model, self.T0, self.adjoint
            )

    def __call__(self, coordinates):
        values = {
            name: from_unconstrained(name, coordinates[name], type(self.params))
            for name in self.names
        }
        params = with_values(self.params, values)
        T, converged = self.output(params)
        converged = converged & params.in_range()
        # An unconverged solve is an infinite loss, so that a line search backs off
        # instead of the fit stopping; no derivative flows through it.
        T = jnp.where(converged, T, jax.lax.stop_gradient(T))
        return jnp.where(converged, misfit(T, self.target, self.model.grid), jnp.inf)


def _loss_function(
    params, target, names, through, times, T0, model, start, adjoint
) -> _Loss:
    n_lat = model.grid.n_lat
    if through == "equilibrium":
        if target.shape != (n_lat,):
            raise ValueError(
                f"`target` must be a profile of shape ({n_lat},) for "
                f"through='equilibrium', got shape {target.shape}."
            )
        years = None
    elif through == "trajectory":
        if times is None:
            raise ValueError("through='trajectory' needs `times` (years) for `target`.")
        times = np.asarray(times, float)
        if times.ndim != 1 or np.any(times <= 0) or np.any(np.diff(times) <= 0):
            raise ValueError(
                f"`times` must be increasing and positive (years), got {times}."
            )
        if target.shape != (len(times), n_lat):
            raise ValueError(
                f"`target` must have shape ({len(times)}, {n_lat}) (times, lat) for "
                f"through='trajectory', got shape {target.shape}."
            )
        years, times = float(times[-1]), jnp.asarray(times)
    else:
        raise ValueError(
            f"`through` must be 'equilibrium' or 'trajectory', got {through!r}."
        )
    return _Loss(
        params, target, model, names, through, times, years, T0, start, adjoint
    )


def _strongly_typed(leaf):
    """An array leaf with its dtype made explicit (not weakly typed)."""
    if isinstance(leaf, jax.Array) and leaf.weak_type:
        return jnp.asarray(leaf, dtype=leaf.dtype)
    return leaf


@eqx.filter_jit
def _fit_step(loss: _Loss, optimizer: optax.GradientTransformation, coordinates, state):
    """One optimiser step: `(coordinates, state, loss, |gradient|)`."""
    value, gradient = jax.value_and_grad(loss)(coordinates)
    # optax's L-BFGS mixes int32 and int64 indices, which a user's strict
    # promotion setting (as in ebm's tests) would refuse inside optax itself.
    with jax.numpy_dtype_promotion("standard"):
        updates, state = optimizer.update(
            gradient, state, coordinates, value=value, grad=gradient, value_fn=loss
        )
    norm = optax.tree.norm(gradient)
    return optax.apply_updates(coordinates, updates), state, value, norm


# --- Sensitivities ---------------------------------------------------------------

OUTPUTS = ("T", "global_mean", "ice_edge", "ice_edge_south")


class Sensitivity(eqx.Module):
    """Derivatives of one output with respect to parameters (from `ebm.sensitivity`).

    **Attributes:**

    - `output`: `"T"`, `"global_mean"`, `"ice_edge"` or `"ice_edge_south"`.
    - `value`: the output itself (degC, or degrees north for an ice edge).
    - `names`: the parameters, in order.
    - `jacobian`: `{name: d output / d name}`, each shaped like `value`.
    - `lat`: cell centres, degrees north.
    """

    output: str = eqx.field(static=True)
    value: Array
    names: tuple[str, ...] = eqx.field(static=True)
    jacobian: dict[str, Array]
    lat: Float[Array, " lat"]

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
    model: EnergyBalanceModel | None = None,
    start="present",
    near_fold: float | None = 1e-2,
) -> Sensitivity:
    """Forward-mode Jacobian of an output with respect to parameters.

    **Arguments:**

    - `params`: where to differentiate.
    - `output`: `"T"` (the profile), `"global_mean"`, `"ice_edge"` or
        `"ice_edge_south"` (degrees north).
    - `names`: the parameters (default: every `Params` field).
    - `through`: `"equilibrium"` (implicit differentiation of the root-find) or
        `"trajectory"` (the state after `years` from `T0`, under
        `diffrax.ForwardMode`: memory independent of the number of steps).
    - `years`, `T0`: the run (trajectory only).
    - `grid`, `model`, `start`, `near_fold`: as for `ebm.equilibrium`: through an
        equilibrium within `near_fold` of a fold, the derivatives grow without
        bound, and it warns (`ebm.NearFoldWarning`; not inside `jit`).

    **Returns:**

    An `ebm.Sensitivity`; `result[name]` is `d output / d name`.

    **Raises:**

    - `ValueError`: for an unknown `output`, `through` or name, or a trajectory
        without `years`.
    """
    params = check_params(params)
    check_threshold("near_fold", near_fold, optional=True)
    container = type(params)
    names = check_names(
        container.field_names() if names is None else names, "names", container
    )
    model = resolve_model(model, grid)
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
        lat=model.grid.lat,
    )


class _Output(eqx.Module):
    """`values -> (output, diagnostics)`: the output of `params` with the named
    fields replaced by `values`, and the equilibrium's `(leading_eigenvalue,
    condition_number)` (not differentiated; `None` for a run), to warn near a fold.

    A Module rather than a closure, so that `eqx.filter_jit` finds the compiled
    program again on the next call with the same settings (a new closure each
    call recompiled the Jacobian or Hessian every time).
    """

    params: Params
    model: EnergyBalanceModel
    output: str | Callable = eqx.field(static=True)
    through: str = eqx.field(static=True)
    years: object
    T0: object
    start: object
    adjoint: str = eqx.field(static=True)

    def __call__(self, values):
        params = with_values(self.params, values)
        # Checked by the entry point before tracing; the solve's result is returned
        # (with the diagnostics) and checked there too, so that the compiled
        # program holds no check (see `ebm._results.raise_if_failed`).
        with params_checked():
            if self.through == "equilibrium":
                state = equilibrium(
                    params, model=self.model, start=self.start, throw=False
                )
                diagnostics = (state.leading_eigenvalue, state.condition_number)
            else:
                state = integrate(
                    params,
                    years=self.years,
                    model=self.model,
                    T0=self.T0,
                    adjoint=self.adjoint,
                    throw=False,
                )
                diagnostics = None
        if callable(self.output):
            value = self.output(state, params)
        else:
            value = getattr(state, self.output)
        return value, (jax.lax.stop_gradient(diagnostics), state.result)


def _output_function(params, output, names, through, years, T0, model, start, adjoint):
    """`values -> (output, diagnostics)` (see `_Output`), and `values`."""
    if not callable(output) and output not in OUTPUTS:
        raise ValueError(f"`output` must be one of {OUTPUTS}, got {output!r}.")
    if through not in ("equilibrium", "trajectory"):
        raise ValueError(
            f"`through` must be 'equilibrium' or 'trajectory', got {through!r}."
        )
    if through == "trajectory" and years is None:
        raise ValueError("through='trajectory' needs `years`.")
    fn = _Output(params, model, output, through, years, T0, start, adjoint)
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
    names: Sequence[str] = ("D", "B"),
    through: str = "equilibrium",
    years=None,
    T0=None,
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
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
    - `names`: one or more `Params` fields (default `("D", "B")`).
    - `through`, `years`, `T0`, `grid`, `model`, `start`, `near_fold`: as for
        `ebm.sensitivity` (second derivatives near a fold grow faster still).

    **Returns:**

    An `ebm.Hessian`.

    **Raises:**

    - `ValueError`: for a non-scalar `output`, unknown names, a profile given as
        an array (`D_bounds`), or as `sensitivity`.
    """
    params = check_params(params)
    check_threshold("near_fold", near_fold, optional=True)
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
    model = resolve_model(model, grid)
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
    gradient_fn = jax.grad(fn, has_aux=True)
    gradient, diagnostics = gradient_fn(values)
    matrix, _ = jax.jacfwd(gradient_fn, has_aux=True)(values)
    return gradient, matrix, diagnostics


@eqx.filter_jit
def _value_and_jacfwd(fn, values):
    def with_value(values):
        output, diagnostics = fn(values)
        return output, (output, diagnostics)

    jacobian, (value, diagnostics) = jax.jacfwd(with_value, has_aux=True)(values)
    return (value, diagnostics), jacobian
