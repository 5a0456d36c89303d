r"""The global two-layer model of Held et al. (2010) and Geoffroy et al. (2013):

$$C \dot T = F(t) - \lambda T - \epsilon \gamma (T - T_d), \qquad
C_d \dot T_d = \gamma (T - T_d),$$

with the surface (mixed layer, atmosphere and land) anomaly $T$ and the deep-ocean
anomaly $T_d$ (K). $\epsilon = 1$ is Held et al.'s model; $\epsilon \ne 1$ the
efficacy of deep-ocean heat uptake of Geoffroy et al. (2013, Part II). The
equilibrium climate sensitivity is $F_{2x} / \lambda$.
"""

import jax.numpy as jnp

from .._model.declarations import Parameter
from .._model.parameters import AbstractParams, params_class
from .._model.protocol import Variable
from .._scenarios.base import with_scenario_parameters
from .base import AbstractLayerModel


PARAMETERS = (
    Parameter(
        "feedback",
        1.13,
        "W m-2 K-1",
        "climate feedback parameter lambda",
        lower=0.0,
        lower_open=True,
        transform="log",
    ),
    Parameter(
        "gamma",
        0.73,
        "W m-2 K-1",
        "heat exchange coefficient between the surface and the deep ocean",
        lower=0.0,
        lower_open=True,
        transform="log",
    ),
    Parameter(
        "C",
        7.3,
        "W yr m-2 K-1",
        "heat capacity of the surface layer",
        lower=0.0,
        lower_open=True,
        transform="log",
    ),
    Parameter(
        "C_deep",
        106.0,
        "W yr m-2 K-1",
        "heat capacity of the deep ocean",
        lower=0.0,
        lower_open=True,
        transform="log",
    ),
    Parameter(
        "efficacy",
        1.0,
        "1",
        "efficacy of deep-ocean heat uptake",
        lower=0.0,
        lower_open=True,
        transform="log",
    ),
    Parameter(
        "F2x",
        3.45,
        "W m-2",
        "effective radiative forcing of doubled CO2",
        lower=0.0,
        lower_open=True,
        transform="log",
    ),
)

TwoLayerParams = params_class(
    "TwoLayerParams",
    PARAMETERS,
    doc=(
        "The parameters of `ebm.TwoLayerModel`. The defaults are of the size "
        "Geoffroy et al. (2013) calibrate for CMIP5 models (ECS = F2x / feedback "
        "= 3.05 K); they are not one model's calibration."
    ),
)


class TwoLayerModel(AbstractLayerModel):
    """The global two-layer model (see the module docstring).

    State: `{"T": surface anomaly, "T_deep": deep-ocean anomaly}`, both scalars in
    K. Parameters: `ebm.TwoLayerParams` (`feedback`, `gamma`, `C`, `C_deep`,
    `efficacy`, `F2x`).

    **Arguments:**

    - `forcing`: an `ebm.AbstractScenario` (default `ebm.AbruptCO2()`, abrupt
        quadrupling).
    """

    @property
    def layers(self) -> int:
        return 2

    @property
    def variables(self) -> tuple[Variable, ...]:
        return (
            Variable("T", "K", "surface temperature anomaly"),
            Variable("T_deep", "K", "deep-ocean temperature anomaly"),
        )

    @property
    def Params(self) -> type[AbstractParams]:
        return with_scenario_parameters(TwoLayerParams, self.forcing)

    def coefficients(self, params):
        C = jnp.stack([params.C, params.C_deep])
        kappa = jnp.stack([params.feedback, params.gamma])
        return C, kappa, params.efficacy

    def to_vector(self, y):
        return jnp.stack([y["T"], y["T_deep"]])

    def from_vector(self, v):
        return {"T": v[0], "T_deep": v[1]}
