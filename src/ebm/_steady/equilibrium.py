r"""Equilibria of the energy-balance model, by root-finding, differentiated implicitly.

An equilibrium is a root of the energy budget, $F(T^*;\theta) = 0$ (W m-2, one
equation per cell), found with `optimistix.root_find` and the globalised
`ebm.PseudoTransientContinuation` root-finder, which follows the model's own
dynamics from the start and accepts only stable roots. Heat capacity does not enter:
it sets how fast the model gets there, not where.

Derivatives come from the implicit function theorem,

$$\frac{\partial T^*}{\partial\theta} = -J^{-1}\frac{\partial F}{\partial\theta},
\qquad J = \frac{\partial F}{\partial T}\Big|_{T^*},$$

through an implicit adjoint (`optimistix.ImplicitAdjoint`'s, whose failed solve
gives NaN derivatives instead of raising inside the program): one linear solve at
the equilibrium, however long the spin-up would have taken. The solve is
matrix-free. The Jacobian's tridiagonal part is found from three Jacobian-vector
products; when every term of the model is one of ebm's own (each local in latitude
or coupling neighbours only), that is the whole Jacobian and the solve is direct.
For any other term it is GMRES on the Jacobian-vector product, preconditioned by the
tridiagonal part (`ebm.TridiagonalPreconditionedGMRES`). Memory and work are
O(n_lat); no dense Jacobian is formed.

Near a fold (see `ebm.continuation`) the leading eigenvalue $\lambda_1$ of $J$ tends
to zero like the square root of the distance to the fold, and so does every
derivative's denominator: $\partial T^*/\partial\theta$ grows like $1/|\lambda_1|$
(the global mean's dT/dS0 is 0.36 K per W m-2 at 10 W m-2 above the snowball fold,
59 at 1e-4 W m-2). `Equilibrium` reports $\lambda_1$ and the condition number of
$J$, and `equilibrium` warns (`ebm.NearFoldWarning`) when $|\lambda_1|$ is below
`near_fold`.
"""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int

from .._checks import check_count, check_threshold, known_value
from .._custom_types import Scalar, Temperature
from .._model.protocol import AbstractModel
from .._numerics.implicit import ImplicitAdjoint
from .._numerics.pseudo_transient import PseudoTransientContinuation
from .._numerics.tridiagonal import (
    ProbedTridiagonal,
    TridiagonalMatrix,
    TridiagonalPreconditionedGMRES,
    probe_tridiagonal,
)
from .._results import (
    RESULTS,
    nan_unless_successful,
    raise_if_failed,
    with_result_names,
)
from .._zonal.grid import Grid
from .._zonal.model import (
    EnergyBalanceModel,
    has_tridiagonal_jacobian,
)
from .._zonal.params import Params
from .._zonal.start import (
    resolve_any_model,
    resolve_model,
)


# The implicit adjoint for any model; for one whose Jacobian is tridiagonal by
# construction, the same solve done directly.
DEFAULT_ADJOINT = ImplicitAdjoint(linear_solver=TridiagonalPreconditionedGMRES())
_TRIDIAGONAL_ADJOINT = ImplicitAdjoint(linear_solver=ProbedTridiagonal())


def default_adjoint(model: EnergyBalanceModel) -> ImplicitAdjoint:
    """The implicit adjoint `equilibrium` uses by default for `model`."""
    # The same solution without compiling GMRES (about half the compile time of
    # the first gradient), which would be skipped at run time anyway.
    return _TRIDIAGONAL_ADJOINT if has_tridiagonal_jacobian(model) else DEFAULT_ADJOINT


class NearFoldWarning(RuntimeWarning):
    """An equilibrium is so close to a fold that its implicit gradient is unreliable."""


def _near_fold_message(leading_eigenvalue, condition_number, threshold) -> str | None:
    leading_eigenvalue = np.asarray(leading_eigenvalue)
    condition_number = np.asarray(condition_number)
    near = np.abs(leading_eigenvalue) < threshold
    if not np.any(near):
        return None
    return (
        "ebm.equilibrium: the equilibrium is close to a fold: leading eigenvalue "
        f"{leading_eigenvalue[near].ravel()[0]:.3g} W m-2 K-1 (|.| < near_fold = "
        f"{threshold:g}), condition number {condition_number[near].ravel()[0]:.3g}. "
        "Its derivatives grow like 1/|eigenvalue| and are ill-conditioned; the "
        "tipping point itself is `ebm.fold`."
    )


class Equilibrium(eqx.Module):
    """An equilibrium of the energy-balance model.

    **Attributes:**

    - `T`: temperature on cell centres, degC.
    - `lat`: cell centres, degrees north.
    - `global_mean`: area-weighted mean temperature, degC.
    - `ice_edge`: northern-hemisphere ice edge, degrees north (90 ice-free, 0
        snowball).
    - `ice_edge_south`: southern-hemisphere ice edge, degrees north (-90 ice-free,
        0 snowball).
    - `residual`: largest absolute energy budget at `T`, W m-2.
    - `leading_eigenvalue`: largest eigenvalue of the Jacobian of the energy budget,
        W m-2 K-1; negative for a stable state, and tending to zero at a fold. Not
        differentiated.
    - `condition_number`: the lowest eigenvalue of the Jacobian over the leading one;
        for a stable state (every eigenvalue negative) the largest over the smallest
        absolute eigenvalue: how much the implicit solve can amplify errors. It
        grows with resolution like 1/dlat^2 and without bound at a fold. Not
        differentiated.
    - `stable`: whether `leading_eigenvalue < 0`.
    - `result`: an `ebm.RESULTS`; `RESULTS.successful` when converged.
    - `num_steps`: root-finder iterations taken.
    - `restarts`: unstable roots rejected on the way.
    """

    T: Temperature
    lat: Float[Array, " lat"]
    global_mean: Scalar
    ice_edge: Scalar
    ice_edge_south: Scalar
    residual: Scalar
    leading_eigenvalue: Scalar
    condition_number: Scalar
    stable: Bool[Array, ""]
    result: RESULTS
    num_steps: Int[Array, ""]
    restarts: Int[Array, ""]

    def __repr__(self) -> str:
        return with_result_names(self)

    @property
    def converged(self) -> Bool[Array, ""]:
        """Whether the root-find succeeded."""
        return self.result == RESULTS.successful

    @property
    def state(self) -> dict[str, Temperature]:
        """The model's state by variable name, as every steady result gives it
        (`ebm.SteadyState.state`): `{"T": T}`."""
        return {"T": self.T}


def budget_and_jacobian(
    model: EnergyBalanceModel, params: Params, T: Temperature
) -> tuple[Temperature, TridiagonalMatrix]:
    """The energy budget at `T` (W m-2) and the tridiagonal part of its Jacobian
    (W m-2 K-1, from three Jacobian-vector products): the diagnostics of a state,
    not differentiated."""
    T, params = jax.lax.stop_gradient((T, params))
    budget, linear = jax.linearize(lambda x: model.energy_budget(x, params), T)
    return budget, probe_tridiagonal(linear, T.shape[0], T.dtype)


def _energy_budget(T, args):
    model, params = args
    return model.energy_budget(T, params)


def equilibrium(
    params: Params,
    *,
    grid: Grid | None = None,
    model: AbstractModel | None = None,
    start="present",
    solver: optx.AbstractRootFinder = PseudoTransientContinuation(),
    adjoint: optx.AbstractAdjoint = DEFAULT_ADJOINT,
    max_steps: int = 256,
    near_fold: float | None = 1e-2,
    throw: bool = True,
    t: float | None = None,
):
    """The stable equilibrium reached from `start`, found by a root-find.

    **Arguments:**

    - `params`: the physical parameters (`model.Params` for a model other than the
        zonal one).
    - `grid`: the latitude grid (default `ebm.Grid()`, 60 cells). Give `grid` or
        `model`, not both.
    - `model`: an `ebm.EnergyBalanceModel`, for swapped physical terms; or any
        model of the protocol (`ebm.TwoLayerModel`, `ebm.NLayerModel`,
        `ebm.DeepOceanModel`, one of your own), whose steady state under the
        forcing of time `t` is returned as an `ebm.SteadyState` (see
        docs/hierarchy.md).
    - `start`: which branch: `"present"` (default; climlab's initial profile, polar
        ice), `"warm"` (ice-free), `"cold"` (snowball), or a profile of shape
        `(n_lat,)`. The result is the stable state that a long `ebm.integrate` from
        the same start reaches. For another model of the protocol, a state of it
        (default its `initial_state`); for `ebm.DeepOceanModel`, the surface's
        branch as above.
    - `t`: for a model with a forcing scenario, the time (years, on the
        scenario's clock) whose forcing is held (default the scenario's start:
        the k x CO2 steady state of `ebm.AbruptCO2(k)`, the pre-industrial one of
        `ebm.OnePercentCO2()`). The zonal model's forcing is its `forcing`
        parameter, and it takes no `t`.
    - `solver`: the root-finder (default `ebm.PseudoTransientContinuation()`, which
        follows the model's dynamics from `start` and accepts only stable roots), or
        any `optimistix.AbstractRootFinder` (e.g. `optx.Newton`); a root it finds
        that is unstable is reported as `RESULTS.unstable_equilibrium`.
    - `adjoint`: how to differentiate (default implicit: a direct solve with the
        Jacobian's probed tridiagonal when every term of the model is one of ebm's
        own, whose Jacobians are at most tridiagonal; matrix-free GMRES
        preconditioned by it for any other term). A linear solve that fails (a
        singular Jacobian, at a fold) gives NaN derivatives.
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

    An `ebm.Equilibrium`. `jax.grad` and `jax.jacfwd` of any of its float fields
    (except `leading_eigenvalue`) with respect to `params` work.

    **Raises:**

    - `ValueError`: for an unknown `start`, one of the wrong shape or not finite,
        `max_steps` not an integer >= 1, or `near_fold` not a positive number.
    - `TypeError`: for a `grid`, `model`, `solver` or `adjoint` of another kind, or
        a `throw` that is not a bool.
    - `EquinoxRuntimeError` (with `throw=True`): when the solve did not converge
        to a stable root, or produced non-finite values. (Raised on the host when
        the call returns; under the caller's own `jit` or `vmap`, by the
        `eqx.error_if` this threads onto the result.)
    """
    check_count("max_steps", max_steps, 1)
    check_threshold("near_fold", near_fold, optional=True)
    if isinstance(model, AbstractModel) and not isinstance(model, EnergyBalanceModel):
        return _protocol_equilibrium(
            params, model, grid, start, solver, adjoint, max_steps, near_fold, throw, t
        )
    if t is not None:
        raise ValueError(
            "`t` chooses the time of a forcing scenario; the zonal model's forcing is "
            f"its `forcing` parameter (W m-2), and it takes no `t` (got t={t!r})."
        )
    model = resolve_model(model, grid)
    params = model.checked_params(params)
    # Checked here, not inside jit, so that a bad start is a ValueError at once.
    T0 = model.start_state(params, start)
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
        adjoint = default_adjoint(model)
    state = _equilibrium(params, model, T0, solver, adjoint, max_steps, throw)
    if throw:
        state = raise_if_failed(state, state.result)
    if near_fold is not None:
        leading_eigenvalue = known_value(state.leading_eigenvalue)
        condition_number = known_value(state.condition_number)
        if leading_eigenvalue is not None and condition_number is not None:
            message = _near_fold_message(
                leading_eigenvalue, condition_number, near_fold
            )
            if message is not None:
                warnings.warn(message, NearFoldWarning, stacklevel=2)
    return state


def _protocol_equilibrium(
    params, model, grid, start, solver, adjoint, max_steps, near_fold, throw, t
):
    from .steady_state import model_equilibrium

    resolve_any_model(model, grid)
    chosen = {
        "solver": eqx.tree_equal(solver, PseudoTransientContinuation()) is not True,
        "adjoint": eqx.tree_equal(adjoint, DEFAULT_ADJOINT) is not True,
    }
    for name, given in chosen.items():
        if given:
            raise ValueError(
                f"`{name}` is the zonal model's option: the steady state of "
                f"{type(model).__name__} is found by Newton's method (the surface "
                "equilibrium's defaults for ebm.DeepOceanModel) and differentiated "
                "implicitly."
            )
    if not isinstance(throw, bool):
        raise TypeError(f"`throw` must be True or False, got {throw!r}.")
    if isinstance(start, str) and start not in model.start_names:
        raise ValueError(
            f"`start` for {type(model).__name__} is a state of the model (default "
            f"its initial state) or one of {model.start_names}; the other branches "
            f"by name are the zonal model's, got {start!r}."
        )
    return model_equilibrium(
        params,
        model,
        start=start,
        t=t,
        max_steps=max_steps,
        near_fold=near_fold,
        throw=throw,
    )


@eqx.filter_jit
def _equilibrium(params, model, T0, solver, adjoint, max_steps, throw):
    grid = model.grid
    solution = optx.root_find(
        _energy_budget,
        solver,
        T0,
        (model, params),
        max_steps=max_steps,
        adjoint=adjoint,
        throw=False,
    )
    T = solution.value
    budget, jacobian = budget_and_jacobian(model, params, T)
    leading_eigenvalue = jacobian.leading_eigenvalue()
    condition_number = jnp.abs(jacobian.lowest_eigenvalue()) / jnp.abs(
        leading_eigenvalue
    )
    stable = leading_eigenvalue < 0
    result = RESULTS.promote(solution.result)
    # A root-finder other than the default may converge onto a saddle.
    result = RESULTS.where(
        (result == RESULTS.successful) & ~stable, RESULTS.unstable_equilibrium, result
    )
    outputs = (
        T,
        grid.global_mean(T),
        model.ice_edge(T, params),
        model.ice_edge(T, params, "south"),
    )
    if not throw:
        outputs = nan_unless_successful(result, outputs, params)
    T, global_mean, ice_edge, ice_edge_south = outputs
    return Equilibrium(
        T=T,
        lat=grid.lat,
        global_mean=global_mean,
        ice_edge=ice_edge,
        ice_edge_south=ice_edge_south,
        residual=jnp.max(jnp.abs(budget)),
        leading_eigenvalue=leading_eigenvalue,
        condition_number=condition_number,
        stable=stable,
        result=result,
        num_steps=solution.stats["num_steps"],
        # Only ebm's own root-finder restarts.
        restarts=solution.stats.get("restarts", jnp.array(0)),
    )
