r"""What the global ocean-layer models share: a linear system driven by forcing.

A model of $n$ layers (a surface layer over $n - 1$ ocean layers) has temperature
anomalies $T_1 \dots T_n$ (K) and heat capacities $C_k$ (W yr m-2 K-1), and
exchanges heat between neighbouring layers with coefficients $\kappa_k$ (W m-2 K-1,
$\kappa_1$ the climate feedback parameter $\lambda$):

$$C_1 \dot T_1 = F(t) - \kappa_1 T_1 - \epsilon_1 \kappa_2 (T_1 - T_2),$$
$$C_k \dot T_k = \kappa_k (T_{k-1} - T_k) - \epsilon_k \kappa_{k+1} (T_k - T_{k+1}),$$
$$C_n \dot T_n = \kappa_n (T_{n-1} - T_n),$$

where the efficacy $\epsilon$ of the deep-ocean heat uptake multiplies the exchange
from layer $n - 1$ into layer $n$ ($\epsilon_{n-1} = \epsilon$, every other
$\epsilon_k = 1$): the convention of FaIR 2.x's `EnergyBalanceModel` and, for two
layers, of Geoffroy et al. (2013, Part II). The net downward flux at the top of the
atmosphere is

$$N = F - \kappa_1 T_1 - (\epsilon - 1)\,\kappa_n (T_{n-1} - T_n),$$

and the heat content $\sum_k C_k T_k$ (W yr m-2) changes at the rate $N$.
"""

import abc

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
from jaxtyping import Array, Float, PyTree

from .._custom_types import Scalar
from .._model.parameters import AbstractParams
from .._model.protocol import AbstractModel
from .._scenarios.base import AbruptCO2, AbstractScenario, check_scenario
from . import exact


class AbstractLayerModel(AbstractModel):
    """A global model of ocean layers (see the module docstring).

    Subclasses give `layers`, `variables`, `Params` and `coefficients`, and pack the
    state (`to_vector`, `from_vector`).
    """

    forcing: AbstractScenario = AbruptCO2()

    def __check_init__(self):
        check_scenario(self.forcing)

    @property
    @abc.abstractmethod
    def layers(self) -> int:
        """The number of layers, surface included."""

    @abc.abstractmethod
    def coefficients(self, params: AbstractParams):
        """`(C, kappa, efficacy)`: the heat capacities and exchange coefficients of
        the layers, top first (each of length `layers`), and the efficacy."""

    @abc.abstractmethod
    def to_vector(self, y: PyTree) -> Float[Array, " layers"]:
        """The state as the vector of layer temperatures, top first."""

    @abc.abstractmethod
    def from_vector(self, v: Float[Array, " layers"]) -> PyTree:
        """The state from the vector of layer temperatures."""

    def system(self, params: AbstractParams):
        """`(A, b)` with `dT/dt = A T + b F`: the layers' matrix (per year) and how
        the forcing enters (K per year per W m-2)."""
        C, kappa, efficacy = self.coefficients(params)
        n = self.layers
        epsilon = jnp.ones(n).at[n - 2].set(efficacy)
        # Heat flux from layer k down into layer k + 1, per kelvin of difference.
        down = epsilon[:-1] * kappa[1:]
        up = kappa[1:]
        diagonal = -jnp.concatenate([kappa[:1], jnp.zeros(n - 1)])
        diagonal = diagonal - jnp.concatenate([down, jnp.zeros(1)])
        diagonal = diagonal - jnp.concatenate([jnp.zeros(1), up])
        matrix = (jnp.diag(diagonal) + jnp.diag(down, k=1) + jnp.diag(up, k=-1)) / C[
            :, None
        ]
        forcing = jnp.zeros(n).at[0].set(1.0) / C
        return matrix, forcing

    def __call__(self, t, y: PyTree, params: AbstractParams) -> PyTree:
        matrix, forcing = self.system(params)
        v = self.to_vector(y)
        return self.from_vector(matrix @ v + forcing * self.forcing(t, params))

    def initial_state(self, params: AbstractParams) -> PyTree:
        """Every layer at the pre-industrial state (anomaly 0 K)."""
        del params
        return self.from_vector(jnp.zeros(self.layers))

    def check_exact(self) -> None:
        """Refuse `solver="exact"` under a forcing that is not linear in time
        between its kinks (the exact solution integrates it interval by interval).

        **Raises:**

        - `ValueError`: naming the forcing.
        """
        if not self.forcing.piecewise_linear:
            raise ValueError(
                "solver='exact' needs a forcing that is linear in time between its "
                f"kinks; {type(self.forcing).__name__} does not declare it "
                "(`piecewise_linear`)."
            )

    def exact_states(self, params: AbstractParams, y0: PyTree, t0, t1, save):
        """The matrix exponential's solution, interval by interval between the
        forcing's kinks and the saved times (`_layers/exact.py`)."""
        saved, final, intervals = exact.exact_states(
            self, params, self.to_vector(y0), t0, t1, save
        )
        return jax.vmap(self.from_vector)(saved), self.from_vector(final), intervals

    def walked_model(self, params: AbstractParams, parameter: str, t, start):
        """Refused: a layer model is linear, one steady state (`F / feedback`) for
        each parameter value, and no fold."""
        del params, parameter, t, start
        raise ValueError(
            "ebm.continuation and ebm.fold walk the zonal model and "
            f"ebm.DeepOceanModel, not {type(self).__name__}. The global layer "
            "models are linear (one steady state, F / feedback, for each parameter "
            "value, and no fold): sweep ebm.equilibrium under jax.vmap instead."
        )

    def surface_temperature(self, y: PyTree) -> Array:
        return jnp.asarray(y["T"])

    def toa_imbalance(self, t, y: PyTree, params: AbstractParams) -> Scalar:
        _, kappa, efficacy = self.coefficients(params)
        v = self.to_vector(y)
        uptake = kappa[-1] * (v[-2] - v[-1])
        return self.forcing(t, params) - kappa[0] * v[0] - (efficacy - 1.0) * uptake

    def heat_content(self, y: PyTree, params: AbstractParams) -> Scalar:
        C, _, _ = self.coefficients(params)
        return jnp.sum(C * self.to_vector(y))

    def jacobian(self, t, y, params) -> lx.AbstractLinearOperator:
        """The layers' matrix `A` (per year), as a dense operator on the state."""
        del t
        matrix, _ = self.system(params)
        structure = jax.eval_shape(lambda: self.from_vector(jnp.zeros(self.layers)))
        return lx.FunctionLinearOperator(
            lambda y: self.from_vector(matrix @ self.to_vector(y)), structure
        )

    def time_scales(self, params: AbstractParams, y=None):
        """`(fastest, slowest)` relaxation times of the layers' matrix, years (for
        concrete parameters)."""
        del y
        matrix, _ = self.system(params)
        # On the host: XLA has no nonsymmetric eigensolver off the CPU.
        rates = np.abs(np.linalg.eigvals(np.asarray(matrix)).real)
        return 1.0 / np.max(rates), 1.0 / np.min(rates)

    def equilibrium_state(self, params: AbstractParams, forcing) -> PyTree:
        """The steady state under a constant `forcing` (W m-2): every layer at
        `forcing / kappa_1` (the efficacy does not change it)."""
        matrix, b = self.system(params)
        return self.from_vector(-jnp.linalg.solve(matrix, b * forcing))
