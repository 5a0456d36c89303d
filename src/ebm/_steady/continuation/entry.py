"""The entry points: `ebm.continuation` (a branch) and `ebm.fold` (one fold,
traceable and differentiable).

Both check their arguments the same way (`arguments.py`), walk the branch from the
stable equilibrium reached from `start` (`walk.py`) and refine the folds they pass
on the extended system (`extended.py`). `continuation` runs eagerly, as the number
of points is known only at the end; `fold` is one compiled program.
"""

from typing import NoReturn

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jax.flatten_util import ravel_pytree

from ..._model.parameters import check_params
from ..._model.protocol import AbstractModel
from ..._progress import progress_meter
from ..._results import RESULTS, nan_unless_successful, raise_if_failed
from ..._zonal.grid import Grid
from ..._zonal.params import Params
from ..._zonal.start import resolve_model
from .arguments import (
    DEFAULT_CORRECTOR,
    DEFAULT_FOLD_SOLVER,
    check_traced,
    model_problem,
    setup,
    walk_arguments,
)
from .extended import fold_guess, refine_fold, refine_from_walk
from .models import on_the_surface
from .problem import AbstractSteadyProblem, Problem
from .results import Branch, Fold
from .walk import NO_START, Walk, WalkSettings, walk_branch


def _raise(message: str) -> NoReturn:
    """A failed solve raises `EquinoxRuntimeError` from every entry point of ebm:
    inside `jit` (`ebm.fold`, `ebm.equilibrium`) no other type can be raised, so
    `continuation`, which runs eagerly, raises the same."""
    raise eqx.EquinoxRuntimeError(message)


@eqx.filter_jit
def _continuation_walk(
    params, parameter, stop, bounds, start, grid, model, scale, t, s, meter
):
    problem, y0, direction, bounds, start_result = setup(
        params, parameter, stop, bounds, start, grid, model, scale, t
    )
    walk = walk_branch(
        problem,
        y0,
        direction,
        bounds,
        s,
        stop_at_fold=False,
        start_result=start_result,
        meter=meter,
    )
    return problem, walk, walk.result(stop_at_fold=False)


def continuation(
    params: Params,
    parameter: str = "S0",
    *,
    stop,
    bounds=None,
    start="present",
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    t=None,
    parameter_scale=None,
    step: float = 1.0,
    min_step: float = 1e-7,
    max_step: float = 5.0,
    target_turn: float = 0.05,
    max_turn: float = 0.3,
    corrector: optx.AbstractRootFinder = DEFAULT_CORRECTOR,
    corrector_steps: int = 12,
    max_points: int = 2000,
    fold_solver: optx.AbstractRootFinder = DEFAULT_FOLD_SOLVER,
    fold_steps: int = 64,
    save_profiles: bool = False,
    throw: bool = True,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> Branch:
    """Trace the branch of equilibria through `params` as `parameter` varies.

    Starts at the stable equilibrium of `params` reached from `start` (as
    `ebm.equilibrium`), walks towards `stop` by pseudo-arclength continuation, around
    any folds, until the parameter leaves `bounds`; then refines each fold passed.
    See `ebm._steady.continuation` for the method.

    **Arguments:**

    - `params`: the parameters; `getattr(params, parameter)` is where the walk
        starts.
    - `parameter`: the name of any scalar field of `params` (default `"S0"`).
    - `stop`: the value to walk towards first.
    - `bounds`: `(low, high)`: the walk ends where the branch leaves this interval,
        with a point exactly on the bound (default: from the start to `stop`).
        A hysteresis loop needs bounds wider than the start: e.g. start warm at
        high S0 and walk down; the branch returns through the snowball.
    - `start`: which equilibrium to start from: `"present"`, `"warm"`, `"cold"` or
        a profile (see `ebm.equilibrium`).
    - `grid`, `model`: as for `ebm.equilibrium`. `model` may be any model of the
        protocol with `params` its `model.Params`: an `ebm.DeepOceanModel`'s
        steady states are its surface model's equilibria under the scenario's
        forcing at time `t` (default: the scenario's start), with the deep ocean
        at the surface's temperature, so the branch, its folds and their `T` are
        the surface's (`parameter` must be one of the surface model's); any other
        model's (the sea ice with `S1 = 0`, a model of your own) are the roots of
        its tendency under the forcing of time `t`, walked with a dense Jacobian,
        each point's stability the largest real part of its eigenvalues (per
        year). The layer models are linear and refused.
    - `t`: for a model with a forcing scenario, the time whose forcing holds (as
        for `ebm.equilibrium`).
    - `parameter_scale`: the change of the parameter that counts as one unit of
        arclength, as 1 K of RMS temperature change does (default: 1/100 of
        `bounds`).
    - `step`, `min_step`, `max_step`: first, smallest and largest step, in arclength.
    - `target_turn`, `max_turn`: the angle (radians) the tangent should turn per
        step, and the most it may; steps shrink where the branch bends.
    - `corrector`, `corrector_steps`: the root-finder for each point and its
        iteration limit.
    - `max_points`: the most points to store.
    - `fold_solver`, `fold_steps`: the root-finder for the extended fold system.
    - `save_profiles`: keep every point's temperature profile in `Branch.T`.
    - `throw`: raise if the starting equilibrium was not found, the walk failed
        (step too small) or a fold did not converge; if `False`, return with
        `result` (and each fold's `result`) set.
    - `progress`: `True` for a progress bar on stderr (the points walked out of
        `max_points`: a walk that ends on a bound sooner closes the bar at 100%),
        or any `diffrax.AbstractProgressMeter`, as for `ebm.integrate`.

    **Returns:**

    An `ebm.Branch`. Not traceable: the number of points is known only at the end,
    so call it outside `jit`/`vmap` (use `ebm.fold` for a traceable, differentiable
    tipping point). A step can pass over a feature shorter than itself: folds closer
    together than `max_step` may be missed (lower it to resolve them).

    **Raises:**

    - `ValueError`: for an unknown `parameter`; `stop` not finite, equal to the
        start or where `parameter` is out of its range; `bounds` that do not
        contain the start or leave that range; `parameter_scale` <= 0; a walk
        setting out of its range; an unknown `start`; or both `grid` and `model`.
        The same argument is refused the same way by `ebm.fold`.
    - `EquinoxRuntimeError` (a `RuntimeError`; with `throw=True`): if the starting
        equilibrium was not found, the walk failed or a fold refinement did not
        converge, as from `ebm.fold` and `ebm.equilibrium`.
    """
    settings = WalkSettings(
        step,
        min_step,
        max_step,
        target_turn,
        max_turn,
        corrector,
        corrector_steps,
        max_points,
    )
    params, model, start, t = on_the_surface(params, parameter, model, grid, start, t)
    params = check_params(params)
    stop, bounds, parameter_scale = walk_arguments(
        params, parameter, stop, None, bounds, parameter_scale
    )
    params = check_traced(params, parameter, stop, bounds, parameter_scale)
    problem, walk, result = _continuation_walk(
        params,
        parameter,
        stop,
        bounds,
        start,
        grid,
        model,
        parameter_scale,
        t,
        settings,
        progress_meter(progress),
    )
    count = int(walk.count)
    # Everything below works on the walk's whole (max_points-long) arrays and cuts
    # them to `count` on the host, then puts them back on the device as they are: a
    # cut inside a compiled function, an eager slice of a device array, or
    # `jnp.asarray` of the host array would compile again for every new number of
    # points.
    fields = _branch_fields(problem, walk)
    if not save_profiles:
        del fields["T"]
    host = jax.tree.map(lambda x: np.asarray(x)[:count], fields)
    if throw and walk.status == NO_START:
        _raise(
            f"Continuation in {parameter}: the starting equilibrium at {parameter} "
            f"= {float(host['values'][0])} was not found: {RESULTS[result]}"
        )
    if throw and result == RESULTS.step_too_small:
        _raise(
            f"Continuation in {parameter} failed at {parameter} = "
            f"{float(host['values'][-1])} after {count} points: {RESULTS[result]}"
        )
    signs = np.sign(host["slope"])
    fold_indices = np.flatnonzero(signs[1:] != signs[:-1])
    folds = []
    for index in fold_indices:
        refined = refine_from_walk(
            problem, walk, jnp.asarray(index), settings, fold_solver, fold_steps
        )
        if throw and refined.result != RESULTS.successful:
            _raise(
                f"The fold near {parameter} = {float(host['values'][index])} did not "
                f"converge: {RESULTS[refined.result]}"
            )
        folds.append(refined)
    values = host["values"]
    if result == RESULTS.successful:
        # The walk ended on a bound: say so exactly, not to within a rounding.
        low, high = (float(b) for b in bounds)
        last = float(values[-1])
        values = values.copy()
        values[-1] = low if abs(last - low) < abs(last - high) else high
    return Branch(
        parameter=parameter,
        values=jax.device_put(values),
        global_mean=jax.device_put(host["global_mean"]),
        ice_edge=jax.device_put(host["ice_edge"]),
        ice_edge_south=jax.device_put(host["ice_edge_south"]),
        leading_eigenvalue=jax.device_put(host["leading_eigenvalue"]),
        stable=jax.device_put(host["leading_eigenvalue"] < 0),
        slope=jax.device_put(host["slope"]),
        arclength=jax.device_put(host["arclength"]),
        T=jax.device_put(host["T"]) if save_profiles else None,
        folds=tuple(folds),
        result=result,
        num_points=count,
        temperature_units=problem.temperature_units,
        eigenvalue_units=problem.eigenvalue_units,
        profile_dims=problem.profile_dims,
        parameter_units=type(params).declaration(parameter).units,
    )


@eqx.filter_jit
def _branch_fields(problem: AbstractSteadyProblem, walk: Walk) -> dict:
    """The branch's outputs at every slot of the walk (those past `count` unused)."""
    values = problem.value(walk.y[:, -1])
    described = jax.vmap(lambda y: problem.describe(y[:-1], problem.params_at(y[-1])))(
        walk.y
    )
    return dict(
        values=values,
        leading_eigenvalue=walk.leading_eigenvalue,
        slope=walk.tangent[:, -1] * problem.scale,
        arclength=jnp.cumsum(walk.step),
        **described,
    )


def fold(
    params: Params,
    parameter: str = "S0",
    *,
    stop=None,
    guess: Fold | None = None,
    bounds=None,
    start="present",
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    t=None,
    parameter_scale=None,
    step: float = 1.0,
    min_step: float = 1e-7,
    max_step: float = 5.0,
    target_turn: float = 0.05,
    max_turn: float = 0.3,
    corrector: optx.AbstractRootFinder = DEFAULT_CORRECTOR,
    corrector_steps: int = 12,
    max_points: int = 2000,
    fold_solver: optx.AbstractRootFinder = DEFAULT_FOLD_SOLVER,
    fold_steps: int = 64,
    throw: bool = True,
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> Fold:
    """The first fold on the branch through `params` towards `stop`, differentiably.

    Walks the branch as `ebm.continuation` does (without derivatives) until `dlambda/ds`
    changes sign, then solves the extended system `F = 0, J v = 0, mean(v^2) = 1` for
    the fold. The fold's `value`, `T` and diagnostics are differentiable with
    respect to every field of `params` (implicitly, through the extended system; the
    continued parameter itself has zero derivative). E.g. the snowball fold and its
    sensitivity to diffusivity:

    ```python
    snowball = ebm.fold(params, "S0", stop=1000.0)
    dS0_dD = jax.grad(lambda p: ebm.fold(p, "S0", stop=1000.0).value)(params).D
    ```

    **Arguments:**

    - `params`, `parameter`, `stop`, `bounds`, `start`, `grid`, `model`, `t`, and the
        walk's settings: as for `ebm.continuation`.
    - `guess`: a fold found before (e.g. `branch.folds[i]`): refine from it instead
        of walking (the walk's arguments are then unused). Newton's method on the
        extended system needs a guess close to the fold: for parameters far from
        the guess's, walk (`stop=`), or follow the fold by small steps.
        Give `stop` or `guess`.
    - `fold_solver`, `fold_steps`: the root-finder for the extended system.
    - `throw`: raise if the starting equilibrium was not found, the walk failed, no
        fold was found or the extended system did not converge; if `False`, return
        with `result` set and every float output NaN (their derivatives too).
    - `progress`: the walk's progress, as for `ebm.continuation` (nothing is walked
        from a `guess`).

    **Returns:**

    An `ebm.Fold`.

    **Raises:**

    - `ValueError`: for neither or both of `stop` and `guess`, a `guess` in another
        parameter, and every argument that `ebm.continuation` refuses, the same
        way (inside `jit`, where `stop`, `bounds` or `parameter_scale` is traced,
        they are checked by an `EquinoxRuntimeError`).
    - `EquinoxRuntimeError` (a `RuntimeError`; with `throw=True`): the starting
        equilibrium was not found, the walk failed, no fold before the branch left
        `bounds`, or the extended system did not converge.
    """
    settings = WalkSettings(
        step,
        min_step,
        max_step,
        target_turn,
        max_turn,
        corrector,
        corrector_steps,
        max_points,
    )
    params, model, start, t = on_the_surface(params, parameter, model, grid, start, t)
    params = check_params(params)
    stop, bounds, parameter_scale = walk_arguments(
        params, parameter, stop, guess, bounds, parameter_scale
    )
    if guess is None:
        params = check_traced(params, parameter, stop, bounds, parameter_scale)
    refined = _fold(
        params,
        parameter,
        stop,
        guess,
        bounds,
        start,
        grid,
        model,
        parameter_scale,
        t,
        settings,
        fold_solver,
        fold_steps,
        throw,
        progress_meter(progress),
    )
    return raise_if_failed(refined, refined.result) if throw else refined


@eqx.filter_jit
def _fold(
    params,
    parameter,
    stop,
    guess,
    bounds,
    start,
    grid,
    model,
    parameter_scale,
    t,
    settings: WalkSettings,
    fold_solver,
    fold_steps,
    throw,
    meter,
) -> Fold:
    if guess is None:
        frozen = jax.lax.stop_gradient(params)
        problem, y0, direction, bounds, start_result = setup(
            frozen, parameter, stop, bounds, start, grid, model, parameter_scale, t
        )
        walk = walk_branch(
            problem,
            y0,
            direction,
            bounds,
            settings,
            stop_at_fold=True,
            start_result=start_result,
            meter=meter,
        )
        index = jnp.maximum(walk.count - 2, 0)
        x, v, value, side = fold_guess(problem, walk, index, settings)
        walked = walk.result(stop_at_fold=True)
    else:
        if t is None:
            problem = Problem(resolve_model(model, grid), params, parameter, 0.0, 1.0)
        else:
            problem = model_problem(params, parameter, model, t, guess.state)
        walked = RESULTS.successful
        x, v, value, side = jax.lax.stop_gradient(
            (ravel_pytree(guess.state)[0], guess.null_vector, guess.value, guess.side)
        )
    # The fold is refined, and differentiated, in the caller's parameters.
    problem = eqx.tree_at(lambda p: p.params, problem, params)
    refined = refine_fold(problem, x, v, value, side, fold_solver, fold_steps)
    result = RESULTS.where(walked == RESULTS.successful, refined.result, walked)
    refined = eqx.tree_at(lambda f: f.result, refined, result)
    if throw:
        return refined
    return nan_unless_successful(result, refined, params)
