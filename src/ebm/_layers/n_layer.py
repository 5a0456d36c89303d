r"""The n-layer model of Cummins et al. (2020), FaIR 2.x's energy-balance model: a
surface layer over n - 1 ocean layers (equations in `ebm._layers.base`)."""

import functools

import equinox as eqx
import jax.numpy as jnp

from .._checks import as_python_number
from .._model.declarations import Parameter
from .._model.parameters import AbstractParams, params_class
from .._model.protocol import Variable
from .._scenarios.base import AbruptCO2, AbstractScenario, with_scenario_parameters
from .base import AbstractLayerModel
from .two_layer import PARAMETERS


@functools.cache
def _n_layer_params(layers: int) -> type[AbstractParams]:
    capacities = (7.3, 106.0) if layers == 2 else (7.3, 30.0, *[100.0] * (layers - 2))
    exchanges = (1.13, 0.73) if layers == 2 else (1.13, 1.5, *[0.7] * (layers - 2))
    declarations = [
        Parameter(
            f"C{k + 1}",
            capacities[k],
            "W yr m-2 K-1",
            f"heat capacity of layer {k + 1}",
            lower=0.0,
            lower_open=True,
            transform="log",
        )
        for k in range(layers)
    ]
    # The climate feedback parameter (FaIR's kappa1) has the name it has in
    # every model, `feedback`; the exchanges between layers are kappa2..kappan.
    declarations += [
        Parameter(
            "feedback" if k == 0 else f"kappa{k + 1}",
            exchanges[k],
            "W m-2 K-1",
            "climate feedback parameter lambda"
            if k == 0
            else f"heat exchange coefficient between layers {k} and {k + 1}",
            lower=0.0,
            lower_open=True,
            transform="log",
        )
        for k in range(layers)
    ]
    declarations += [p for p in PARAMETERS if p.name in ("efficacy", "F2x")]
    return params_class(
        f"NLayer{layers}Params",
        declarations,
        doc=(
            f"The parameters of `ebm.NLayerModel({layers})`. The defaults are "
            "illustrative, not a calibration."
        ),
    )


class NLayerModel(AbstractLayerModel):
    """The n-layer model of Cummins et al. (2020), as FaIR 2.x runs it (see
    `ebm._layers.base`): heat capacities `C1..Cn`, the climate feedback
    parameter `feedback` (FaIR's `kappa1`, as in every ebm model), the exchange
    coefficients `kappa2..kappan` between layers, the efficacy on the exchange into
    the deepest layer, and `F2x`.

    State: `{"T": surface anomaly (scalar), "T_deep": the anomalies of layers
    2..n, shape (n - 1,)}`, K.

    **Arguments:**

    - `layers`: the number of layers n >= 2 (default 3, FaIR's).
    - `forcing`: an `ebm.AbstractScenario` (default `ebm.AbruptCO2()`).
    """

    n: int = eqx.field(static=True)

    def __init__(self, layers: int = 3, forcing: AbstractScenario | None = None):
        layers = as_python_number(layers)
        if isinstance(layers, bool) or not isinstance(layers, int) or layers < 2:
            raise ValueError(f"`layers` must be an integer >= 2, got {layers!r}.")
        self.n = layers
        self.forcing = AbruptCO2() if forcing is None else forcing

    @property
    def layers(self) -> int:
        return self.n

    @property
    def variables(self) -> tuple[Variable, ...]:
        return (
            Variable("T", "K", "surface temperature anomaly"),
            Variable("T_deep", "K", "temperature anomaly of ocean layers", ("layer",)),
        )

    @property
    def Params(self) -> type[AbstractParams]:
        return with_scenario_parameters(_n_layer_params(self.n), self.forcing)

    def coefficients(self, params):
        n = self.n
        C = jnp.stack([getattr(params, f"C{k + 1}") for k in range(n)])
        exchanges = [getattr(params, f"kappa{k + 1}") for k in range(1, n)]
        kappa = jnp.stack([params.feedback, *exchanges])
        return C, kappa, params.efficacy

    def to_vector(self, y):
        return jnp.concatenate([jnp.reshape(y["T"], (1,)), y["T_deep"]])

    def from_vector(self, v):
        return {"T": v[0], "T_deep": v[1:]}
