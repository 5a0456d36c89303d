r"""The energy budget in the continuation's unknowns, and the systems solved on it.

The unknowns are $y = (T, \mu)$: the temperature on the `n` cell centres (degC) and
$\mu = (\lambda - \lambda_0)/s$, the continued parameter $\lambda$ in units of
`parameter_scale` $s$ away from its starting value $\lambda_0$. The equations are
the energy budget $F(T; \lambda) = 0$ (W m-2, one per cell). The inner product

$$\langle a, b\rangle = \tfrac{1}{n}\sum_i a_{T,i} b_{T,i} + a_\mu b_\mu$$

makes a step an RMS change of temperature in K, or of the parameter in units of
$s$. On it rest the tangent of the branch (a bordered linear system, regular at a
fold where $J = \partial F/\partial T$ is not), the corrector onto the branch
(Newton's method on $F$ and one linear condition) and each point's stability (the
leading eigenvalue of the tridiagonal $J$, probed matrix-free).
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx
from jaxtyping import Array, Float

from ..._custom_types import Scalar
from ..._zonal.model import EnergyBalanceModel
from ..._zonal.params import Params
from ..equilibrium import budget_and_jacobian


def with_parameter(params: Params, parameter: str, value) -> Params:
    """`params` with the field `parameter` set to `value`."""
    return eqx.tree_at(lambda p: getattr(p, parameter), params, value)


def row_scale(model: EnergyBalanceModel, params: Params, T) -> Float[Array, " lat"]:
    """`1 / |J_ii|`, K per W m-2: scales each energy budget into a temperature error.

    On fine grids the budget is a small difference of diffusive fluxes of size
    `|J_ii| |T|`, and its rounding floor grows like `1/dlat^2`; scaled by the
    diagonal, the floor is `eps |T|` on every grid, so one tolerance in kelvin
    serves all resolutions. The root is unchanged. Not differentiated.
    """
    diagonal = budget_and_jacobian(model, params, T)[1].diagonal
    return 1.0 / jnp.maximum(jnp.abs(diagonal), jnp.finfo(T.dtype).tiny)


class AbstractBranchProblem(eqx.Module):
    """Equations `G(y) = 0` in the unknowns `y = (state, mu)` of a walk, and the
    bordered systems solved on them: the tangent of the branch and the corrector
    onto it (see `walk.py`). A subclass gives the residual, the weights of its rows
    in the corrector and each point's leading eigenvalue (positive where the point
    is unstable)."""

    params: eqx.AbstractVar[Params]
    parameter: eqx.AbstractVar[str]
    origin: eqx.AbstractVar[Scalar]
    scale: eqx.AbstractVar[Scalar]

    @abc.abstractmethod
    def residual(self, y) -> Float[Array, " n"]:
        """`G(y)`, one equation per entry of the state."""

    @abc.abstractmethod
    def row_weights(self, y) -> Float[Array, " n"]:
        """What each equation is multiplied by in the corrector (not differentiated;
        the root is unchanged)."""

    @abc.abstractmethod
    def leading_eigenvalue(self, y) -> Scalar:
        """The point's leading eigenvalue (or exponent): positive where unstable."""

    def value(self, mu):
        """The parameter's value at `mu`."""
        return self.origin + self.scale * mu

    def params_at(self, mu):
        """The parameters with the continued one at `mu`."""
        return with_parameter(self.params, self.parameter, self.value(mu))

    def metric(self, t):
        """`<t, .>` as a row vector."""
        n = t.shape[0] - 1
        return jnp.concatenate([t[:-1] / n, t[-1:]])

    def norm(self, t):
        return jnp.sqrt(self.metric(t) @ t)

    def tangent(self, y, previous):
        """The unit tangent at `y`, oriented along `previous`."""
        jacobian = jax.jacfwd(self.residual)(y)
        bordered = jnp.concatenate([jacobian, self.metric(previous)[None]])
        unit = jnp.zeros_like(y).at[-1].set(1.0)
        direction = lx.linear_solve(
            lx.MatrixLinearOperator(bordered), unit, lx.LU(), throw=False
        ).value
        return direction / self.norm(direction)

    def correct(self, guess, row, target, corrector: optx.AbstractRootFinder, steps):
        """Solve `G(y) = 0`, `row . y = target` from `guess`."""
        weights = jax.lax.stop_gradient(self.row_weights(guess))

        def fn(y, _):
            return jnp.concatenate(
                [weights * self.residual(y), (row @ y - target)[None]]
            )

        solution = optx.root_find(
            fn, corrector, guess, None, max_steps=steps, throw=False
        )
        ok = (solution.result == optx.RESULTS.successful) & jnp.all(
            jnp.isfinite(solution.value)
        )
        return solution.value, ok


class Problem(AbstractBranchProblem):
    """`F` and its bordered systems in the continuation's variables `y = (T, mu)`."""

    model: EnergyBalanceModel
    params: Params
    parameter: str = eqx.field(static=True)
    origin: Scalar
    scale: Scalar

    def residual(self, y):
        return self.model.energy_budget(y[:-1], self.params_at(y[-1]))

    def row_weights(self, y):
        return row_scale(self.model, self.params_at(y[-1]), y[:-1])

    def leading_eigenvalue(self, y):
        _, jacobian = budget_and_jacobian(self.model, self.params_at(y[-1]), y[:-1])
        return jacobian.leading_eigenvalue()
