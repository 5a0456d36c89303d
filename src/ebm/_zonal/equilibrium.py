r"""Equilibria of the zonal energy-balance model (`ebm.equilibrium` of an
`ebm.EnergyBalanceModel`, the model's `steady_state`), by root-finding,
differentiated implicitly.

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

from .._checks import known_value
from .._custom_types import Scalar, Temperature
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


# `ebm.equilibrium`'s defaults. The default adjoint stands for the model's own
# (`model.steady_adjoint()`): for the zonal model, GMRES preconditioned by the
# Jacobian's tridiagonal part (any term), or, where the Jacobian is tridiagonal by
# construction, the same solve done directly.
DEFAULT_SOLVER = PseudoTransientContinuation()
DEFAULT_ADJOINT = ImplicitAdjoint(linear_solver=TridiagonalPreconditionedGMRES())
TRIDIAGONAL_ADJOINT = ImplicitAdjoint(linear_solver=ProbedTridiagonal())


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
    model, params, T: Temperature
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


def zonal_equilibrium(
    model, params, start, *, solver, adjoint, max_steps: int, near_fold, throw: bool
) -> "Equilibrium":
    """The stable equilibrium of the zonal `model` reached from `start` (a name or
    a profile), by the root-finder `solver`, differentiated by `adjoint`, `params`
    already checked (see `ebm.equilibrium`)."""
    # Checked here, not inside jit, so that a bad start is a ValueError at once.
    T0 = model.start_state(params, start)
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
                # From the caller of ebm.equilibrium (through the model's
                # steady_state).
                warnings.warn(message, NearFoldWarning, stacklevel=4)
    return state


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
