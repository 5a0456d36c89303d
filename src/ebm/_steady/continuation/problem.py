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
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, PyTree

from ..._custom_types import Scalar
from ..._model.parameters import AbstractParams
from ..._model.protocol import AbstractModel
from ..._zonal.equilibrium import budget_and_jacobian
from ..._zonal.model import EnergyBalanceModel
from ..._zonal.params import Params


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


class AbstractSteadyProblem(AbstractBranchProblem):
    """The steady states of a model as a parameter varies: `G(y) = F(x; lambda)`,
    with `x` the model's state as one vector. A subclass gives `F` and what a point
    reports; `residual`, `row_weights` and `leading_eigenvalue` follow."""

    @abc.abstractmethod
    def equations(self, x, params) -> Float[Array, " n"]:
        """`F(x)`: the tendency (or energy budget) of the state vector `x`."""

    @abc.abstractmethod
    def weights(self, x, params) -> Float[Array, " n"]:
        """What each equation is multiplied by in the corrector (the root is
        unchanged)."""

    @abc.abstractmethod
    def eigenvalue(self, x, params) -> Scalar:
        """The leading eigenvalue (largest real part) of `dF/dx`."""

    @abc.abstractmethod
    def describe(self, x, params) -> dict:
        """What a point reports: `T` (degC), `global_mean` (degC), `ice_edge` and
        `ice_edge_south` (degrees north; NaN where the model has none)."""

    @abc.abstractmethod
    def state_of(self, x) -> PyTree:
        """The model's state of the vector `x`."""

    def residual(self, y):
        return self.equations(y[:-1], self.params_at(y[-1]))

    def row_weights(self, y):
        return self.weights(y[:-1], self.params_at(y[-1]))

    def leading_eigenvalue(self, y):
        return self.eigenvalue(y[:-1], self.params_at(y[-1]))


class Problem(AbstractSteadyProblem):
    """The zonal model's energy budget `F(T)` and its bordered systems in the
    continuation's variables `y = (T, mu)`."""

    temperature_units: ClassVar[str] = "degC"
    eigenvalue_units: ClassVar[str] = "W m-2 K-1"
    profile_dims: ClassVar[tuple[str, ...]] = ("lat",)

    model: EnergyBalanceModel
    params: Params
    parameter: str = eqx.field(static=True)
    origin: Scalar
    scale: Scalar

    def equations(self, x, params):
        return self.model.energy_budget(x, params)

    def weights(self, x, params):
        return row_scale(self.model, params, x)

    def eigenvalue(self, x, params):
        _, jacobian = budget_and_jacobian(self.model, params, x)
        return jacobian.leading_eigenvalue()

    def describe(self, x, params):
        return dict(
            T=x,
            global_mean=self.model.grid.global_mean(x),
            ice_edge=self.model.ice_edge(x, params),
            ice_edge_south=self.model.ice_edge(x, params, "south"),
        )

    def state_of(self, x):
        return x


def _leading_real_part(matrix):
    # On the host: XLA has no nonsymmetric eigensolver off the CPU. A point the
    # corrector failed on (NaN) is rejected by the walk; its eigenvalue is NaN.
    matrix = np.asarray(matrix)
    if not np.all(np.isfinite(matrix)):
        return np.asarray(np.nan, matrix.dtype)
    return np.max(np.linalg.eigvals(matrix).real).astype(matrix.dtype)


class ModelProblem(AbstractSteadyProblem):
    r"""The steady states of any model of the protocol: its tendency
    $f(t, y; \lambda) = 0$ under the forcing of time `t`, held, with the state
    flattened into one vector (`jax.flatten_util.ravel_pytree` of `like`). Its
    Jacobian is dense (`jax.jacfwd`): for states of up to a few hundred entries.
    Each equation is weighted by the inverse of its row's largest Jacobian entry
    (per year), so that one tolerance serves states of any units and time scales."""

    model: AbstractModel
    params: AbstractParams
    parameter: str = eqx.field(static=True)
    origin: Scalar
    scale: Scalar
    t: Scalar
    like: PyTree

    # The Jacobian of a tendency per year.
    eigenvalue_units: ClassVar[str] = "yr-1"

    @property
    def temperature_units(self) -> str:
        """`"K"` for a model whose temperatures are anomalies (its temperature
        variables in K), else `"degC"`."""
        units = {v.units for v in self.model.variables} & {"K", "degC"}
        return "K" if units == {"K"} else "degC"

    @property
    def profile_dims(self) -> tuple[str, ...]:
        """The dimensions of the model's first state variable."""
        return tuple(self.model.variables[0].dims)

    def state_of(self, x):
        return ravel_pytree(self.like)[1](x)

    def equations(self, x, params):
        return ravel_pytree(self.model(self.t, self.state_of(x), params))[0]

    def jacobian_matrix(self, x, params):
        return jax.jacfwd(self.equations)(x, params)

    def weights(self, x, params):
        largest = jnp.max(jnp.abs(self.jacobian_matrix(x, params)), axis=1)
        return 1.0 / jnp.maximum(largest, jnp.finfo(x.dtype).tiny)

    def eigenvalue(self, x, params):
        matrix = jax.lax.stop_gradient(self.jacobian_matrix(x, params))
        shape = jax.ShapeDtypeStruct((), matrix.dtype)
        return jax.pure_callback(
            _leading_real_part, shape, matrix, vmap_method="sequential"
        )

    def describe(self, x, params):
        state = self.state_of(x)
        edge = self.model.ice_edge_latitude(self.t, state, params)
        nan = jnp.full((), jnp.nan, x.dtype)
        return dict(
            T=self.model.temperature(self.t, state, params),
            global_mean=self.model.mean_temperature(self.t, state, params),
            ice_edge=nan if edge is None else edge,
            ice_edge_south=nan,
        )
