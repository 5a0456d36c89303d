r"""`ebm.equilibrium`: the steady state of any model, one path for all.

The entry point checks what every model shares (the parameters, the time whose
forcing is held, the root-finder, the adjoint) and asks the model
(`model.steady_state`): the zonal model finds its stable equilibrium by
pseudo-transient continuation with branch selection (`_zonal/equilibrium.py`), the
zonal model over a deep ocean from its surface's; any other model answers `None`
and is solved by Newton's method on its tendency (`steady_state.py`). Each is
differentiated implicitly: one linear solve at the steady state.
"""

import equinox as eqx
import optimistix as optx

from .._checks import check_count, check_threshold
from .._model.protocol import AbstractModel
from .._stepping.run import check_model_params
from .._zonal.equilibrium import (
    DEFAULT_ADJOINT as DEFAULT_ADJOINT,
    DEFAULT_SOLVER as DEFAULT_SOLVER,
    Equilibrium as Equilibrium,
    NearFoldWarning as NearFoldWarning,
)
from .._zonal.grid import Grid
from .._zonal.params import Params
from .._zonal.start import resolve_any_model
from .steady_state import held_time, newton_steady_state


def equilibrium(
    params: Params,
    *,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    solver: optx.AbstractRootFinder = DEFAULT_SOLVER,
    adjoint: optx.AbstractAdjoint = DEFAULT_ADJOINT,
    max_steps: int = 256,
    near_fold: float | None = 1e-2,
    throw: bool = True,
    t: float | None = None,
):
    """The stable equilibrium reached from `start`, found by a root-find: the
    model's own (`model.steady_state`; the zonal model's), or Newton's method on
    its tendency.

    **Arguments:**

    - `params`: the physical parameters (`model.Params` for a model other than the
        zonal one).
    - `grid`: the latitude grid (default `ebm.Grid()`, 60 cells). Give `grid` or
        `model`, not both.
    - `model`: an `ebm.EnergyBalanceModel`, for swapped physical terms; or any
        model of the protocol (`ebm.TwoLayerModel`, `ebm.NLayerModel`,
        `ebm.DeepOceanModel`, one of your own), whose steady state under the
        forcing of time `t` is returned as an `ebm.SteadyState` (see
        docs/hierarchy.md). A model that finds its steady state its own way says
        so in its `steady_state` method.
    - `start`: which branch: `"present"` (default; climlab's initial profile, polar
        ice), `"warm"` (ice-free), `"cold"` (snowball), or a profile of shape
        `(n_lat,)`. The result is the stable state that a long `ebm.integrate` from
        the same start reaches. For another model of the protocol, a state of it
        (default its `initial_state`); for `ebm.DeepOceanModel`, the surface's
        branch as above.
    - `t`: for a model with a forcing scenario, the time (years, on the
        scenario's clock) whose forcing is held (default the scenario's start:
        the k x CO2 steady state of `ebm.AbruptCO2(k)`, the pre-industrial one of
        `ebm.OnePercentCO2()`). A model forced by a parameter
        (`model.forcing_parameter`: the zonal model's `forcing`) takes no `t`.
    - `solver`: the root-finder (default `ebm.PseudoTransientContinuation()`, which
        follows the model's dynamics from `start` and accepts only stable roots), or
        any `optimistix.AbstractRootFinder` (e.g. `optx.Newton`); a root it finds
        that is unstable is reported as `RESULTS.unstable_equilibrium`. For the
        zonal model (the surface of `ebm.DeepOceanModel`); the other models are
        solved by Newton's method and refuse it.
    - `adjoint`: how to differentiate (default implicit, the model's
        `steady_adjoint()`: for the zonal model a direct solve with the
        Jacobian's probed tridiagonal when every term of the model is one of ebm's
        own, whose Jacobians are at most tridiagonal, matrix-free GMRES
        preconditioned by it for any other term; a dense solve for a small
        model). A linear solve that fails (a singular Jacobian, at a fold) gives
        NaN derivatives.
    - `max_steps`: root-finder iteration limit (an integer >= 1).
    - `near_fold`: warn (`ebm.NearFoldWarning`) when the leading eigenvalue is
        within this of zero, W m-2 K-1 (default 1e-2: derivatives amplified 200
        times over the no-feedback response 1/B); `None` never warns. It warns
        when the eigenvalue is known as the call returns: eagerly, and under eager
        `jax.grad` or `jax.jacfwd`. Inside `jit` (and `vmap`) nothing is known while
        tracing: check `leading_eigenvalue` or `condition_number` there.
    - `throw`: if `True` (default), raise when the root-find fails; if `False`,
        return with `result` set to the failure code, and `T`, `global_mean` and
        `ice_edge` (and their derivatives) NaN.

    **Returns:**

    An `ebm.Equilibrium` for the zonal model, an `ebm.SteadyState` for the
    others (what the model's `steady_state` returns). `jax.grad` and `jax.jacfwd`
    of any of its float fields (except `leading_eigenvalue`) with respect to
    `params` work.

    **Raises:**

    - `ValueError`: for an unknown `start`, one of the wrong shape or not finite,
        `max_steps` not an integer >= 1, `near_fold` not a positive number, a `t`
        outside the scenario or given to a model forced by a parameter, or a
        `solver` for a model solved by Newton's method.
    - `TypeError`: for a `grid`, `model`, `solver` or `adjoint` of another kind, or
        a `throw` that is not a bool.
    - `EquinoxRuntimeError` (with `throw=True`): when the solve did not converge
        to a stable root, or produced non-finite values. (Raised on the host when
        the call returns; under the caller's own `jit` or `vmap`, by the
        `eqx.error_if` this threads onto the result.)
    """
    check_count("max_steps", max_steps, 1)
    check_threshold("near_fold", near_fold, optional=True)
    model = resolve_any_model(model, grid)
    params = check_model_params(params, model)
    t = held_time(model, t)
    if not isinstance(solver, optx.AbstractRootFinder):
        raise TypeError(
            "`solver` must be an optimistix root-finder (default "
            f"ebm.PseudoTransientContinuation()), got {solver!r}."
        )
    if not isinstance(adjoint, optx.AbstractAdjoint):
        raise TypeError(
            "`adjoint` must be an optimistix adjoint (default: implicit, "
            f"optimistix.ImplicitAdjoint), got {adjoint!r}."
        )
    if not isinstance(throw, bool):
        raise TypeError(f"`throw` must be True or False, got {throw!r}.")
    # Equal, not only identical: `eqx.filter_jit` rebuilds the Modules it is given,
    # so the default arrives as a copy through a caller's compiled function.
    if eqx.tree_equal(adjoint, DEFAULT_ADJOINT) is True:
        adjoint = model.steady_adjoint()
    own = model.steady_state(
        params,
        t,
        start,
        solver=solver,
        adjoint=adjoint,
        max_steps=max_steps,
        near_fold=near_fold,
        throw=throw,
    )
    if own is not None:
        return own
    return newton_steady_state(
        model,
        params,
        t,
        start,
        solver_given=eqx.tree_equal(solver, DEFAULT_SOLVER) is not True,
        adjoint=adjoint,
        max_steps=max_steps,
        throw=throw,
    )
