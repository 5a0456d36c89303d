r"""Fitting parameters to observations.

**Fitting.** `fit` minimises the area-weighted mean squared misfit

$$L(\theta) = \frac{\sum_i w_i\,(T_i(\theta) - T^{obs}_i)^2}{\sum_i w_i}
\quad (\text{K}^2)$$

of either the equilibrium profile (gradients by implicit differentiation: one linear
solve per evaluation, whatever the spin-up) or snapshots of a transient run
(gradients through the diffrax adjoint chosen), with an optax optimizer. The
parameters are optimised in an unconstrained space: $\log$ for those that must be
positive (`B`, `D`, `S0`, `water_depth`, `ice_width`), $\mathrm{logit}$ for the
albedos `a0` and `ai` (in (0, 1)), unchanged for the others; so every iterate is a
physically valid `Params`. The model solve is `ForwardProblem`'s
(`ebm._analysis.forward`), shared with the sensitivities and the posterior.
"""

from collections.abc import Sequence

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array

from .._checks import check_count
from .._model.parameters import with_values
from .._progress import HostProgress
from .._zonal.grid import Grid
from .._zonal.model import EnergyBalanceModel
from .._zonal.params import Params
from .._zonal.start import model_grid
from .forward import (
    ForwardProblem,
    check_names,
    check_through,
    check_times,
    from_unconstrained,
    run_start,
    to_unconstrained,
)
from .sensitivity import resolve


# One instance, so that repeated fits reuse the compiled step: an optax optimizer's
# functions are static arguments of the jitted step, compared by identity.
_DEFAULT_OPTIMIZER = optax.adam(0.05)


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


def misfit(T, target, grid: Grid | None):
    """Area-weighted mean squared difference, K^2 (over the last axis, then mean;
    the plain mean for a global model, `grid` `None`)."""
    squares = (T - target) ** 2
    return jnp.mean(squares if grid is None else grid.global_mean(squares))


def fit(
    params: Params,
    target,
    *,
    fit: Sequence[str] | None = None,
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
        `through="trajectory"` snapshots of shape `(len(times), n_lat)`. For a model
        of the protocol other than the zonal one, its surface temperature (of the
        shape `model.surface_temperature` gives: `()` for a global model), and
        snapshots of it.
    - `fit`: the fields of `params` to fit (default `("D",)` for the zonal model;
        named for any other).
    - `through`: `"equilibrium"` (misfit of `ebm.equilibrium(params).T`, implicit
        gradients) or `"trajectory"` (misfit of `ebm.integrate` at `times`, from
        `T0`, gradients under `adjoint`).
    - `times`: years of the snapshots, increasing, > 0 (trajectory only; for a
        model with a forcing scenario, on its clock and after its start:
        calendar years for an `ebm.ForcingSeries`).
    - `T0`: initial profile of the run (trajectory only; default `"present"`).
    - `grid`, `model`: as for `ebm.equilibrium` (any model of the protocol, with
        `params` its `model.Params`).
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
    params, model = resolve(params, model, grid)
    if fit is None and model.fitted_by_default is None:
        raise ValueError(
            f"`fit` must name the parameters to fit for {type(model).__name__} (its "
            f"default, ('D',), is the zonal model's): one or more of "
            f"{type(params).field_names()}."
        )
    fit = model.fitted_by_default if fit is None else fit
    names = check_names(fit, "fit", type(params))
    check_count("steps", steps, 1)
    target = _check_target(target)
    loss_fn = _loss_function(
        params, target, names, through, times, T0, model, start, adjoint
    )
    run_from = "present" if T0 is None else T0
    model.check_fitted(
        params, names, through, start if through == "equilibrium" else run_from
    )
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
                new_coordinates, new_state, loss, norm, gradient = _fit_step(
                    loss_fn, optimizer, coordinates, state
                )
            except eqx.EquinoxRuntimeError as error:
                raise _failed(step, names, coordinates, type(params)) from error
            if step == 0:
                _check_gradient_moves(gradient, loss, names, model)
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


class _Loss(eqx.Module):
    """`coordinates -> misfit` (K^2) of the fitted parameters at `coordinates` (the
    optimiser's unconstrained space).

    A Module rather than a closure, so that `eqx.filter_jit` finds the compiled
    optimiser step again on the next `fit` with the same settings: the parameters,
    target and snapshot times are traced arrays, the names and options static.
    """

    params: Params
    target: Array
    names: tuple[str, ...] = eqx.field(static=True)
    problem: ForwardProblem

    def __call__(self, coordinates):
        values = {
            name: from_unconstrained(name, coordinates[name], type(self.params))
            for name in self.names
        }
        params = with_values(self.params, values)
        # The coordinates map into each parameter's range; one that does not (a NaN
        # from the optimiser) fails as an unconverged solve does, below.
        solution = self.problem.solve(params)
        T = solution.T
        converged = solution.ok & params.in_range()
        # An unconverged solve is an infinite loss, so that a line search backs off
        # instead of the fit stopping; no derivative flows through it.
        T = jnp.where(converged, T, jax.lax.stop_gradient(T))
        grid = model_grid(self.problem.model)
        return jnp.where(converged, misfit(T, self.target, grid), jnp.inf)


def _loss_function(
    params, target, names, through, times, T0, model, start, adjoint
) -> _Loss:
    check_through(through)
    t0 = run_start(model)
    shape = model.observable_shapes(params, t0)["T"]
    if through == "equilibrium":
        if target.shape != shape:
            raise ValueError(
                f"`target` must have the shape {shape} of the surface temperature "
                f"for through='equilibrium', got shape {target.shape}."
            )
        problem = ForwardProblem(model, through, start=start)
    else:
        if times is None:
            raise ValueError("through='trajectory' needs `times` (years) for `target`.")
        times = check_times(times, t0)
        if target.shape != (len(times), *shape):
            raise ValueError(
                f"`target` must have shape {(len(times), *shape)} (times, then the "
                f"surface temperature's) for through='trajectory', got shape "
                f"{target.shape}."
            )
        problem = ForwardProblem(
            model,
            through,
            years=float(times[-1]) - t0,
            times=jnp.asarray(times),
            T0=T0,
            adjoint=adjoint,
        )
    return _Loss(params, target, names, problem)


def _check_gradient_moves(gradient, loss, names, model) -> None:
    """For a model of the protocol, at the first step: refuse a fitted parameter
    that the solve does not depend on, whose gradient is zero to rounding (below
    `1e-9` of the loss per unit of its optimiser coordinate: for a log coordinate,
    a relative change of the parameter), on which the fit would stop at once. (The
    steady state of the layer models, for instance, does not move with their heat
    capacities, `gamma` or the efficacy; its implicit derivative is zero only to
    rounding.)"""
    loss = float(loss)
    if not loss > 0.0:
        return
    unused = [
        name
        for name in names
        if np.all(np.abs(np.asarray(gradient[name])) <= 1e-9 * loss)
    ]
    if unused:
        raise ValueError(
            f"`fit` names {', '.join(f'`{name}`' for name in unused)}, which "
            f"{type(model).__name__}'s solve does not depend on: its gradient at "
            "the start is zero to rounding, and the fit would stop at once."
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
    return optax.apply_updates(coordinates, updates), state, value, norm, gradient
