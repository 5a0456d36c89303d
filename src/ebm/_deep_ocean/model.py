r"""The zonal energy-balance model over a deep ocean: every cell of
`ebm.EnergyBalanceModel` (any of its terms: ice albedo, grey body, CO2, moist
transport, seasonal insolation) exchanges heat with a deep-ocean layer beneath it,
as the global two-layer model's surface does with its deep ocean:

$$C(\phi) \partial_t T = \mathcal{E}(T)(\phi, t) + F(t)
- \epsilon\gamma\,(T - T_d), \qquad C_d\,\partial_t T_d = \gamma\,(T - T_d),$$

where $\mathcal{E}$ is the zonal model's energy budget (absorbed solar - OLR +
transport + its own forcing term, W m-2), $F(t)$ the scenario's forcing, added
uniformly, and $\gamma$, $C_d$, $\epsilon$ are `gamma`, `C_deep` and `efficacy`, as
in `ebm.TwoLayerModel`. The deep ocean has no transport of its own. A run starts
from the surface model's stable equilibrium (from the present-day start), with the
deep ocean at the same temperature, so that nothing is exchanged until the forcing
acts.
"""

import functools
from typing import ClassVar

import diffrax
import equinox as eqx
from jaxtyping import PyTree

from .._constants import SECONDS_PER_YEAR
from .._custom_types import Scalar
from .._layers.two_layer import PARAMETERS
from .._model.parameters import AbstractParams, params_class
from .._model.protocol import AbstractModel, Variable
from .._scenarios.base import (
    AbruptCO2,
    AbstractScenario,
    check_scenario,
    with_scenario_parameters,
)
from .._steady.equilibrium import equilibrium
from .._steady.steady_state import SteadyState
from .._zonal.model import EnergyBalanceModel
from .._zonal.run import time_scales
from .._zonal.start import initial_profile


_DEEP = tuple(p for p in PARAMETERS if p.name in ("gamma", "C_deep", "efficacy", "F2x"))


@functools.cache
def params_of(surface: type[AbstractParams]) -> type[AbstractParams]:
    return params_class(
        "DeepOcean" + surface.__name__,
        _DEEP,
        base=surface,
        doc="The parameters of `ebm.DeepOceanModel`: its surface model's, and the "
        "deep ocean's `gamma`, `C_deep`, `efficacy` and `F2x`.",
    )


class DeepOceanModel(AbstractModel):
    """The zonal model over a deep ocean (see the module docstring).

    State: `{"T": surface temperature (lat), "T_deep": deep-ocean temperature
    (lat)}`, degC. Parameters: `model.Params`, the surface model's and `gamma`,
    `C_deep`, `efficacy`, `F2x`.

    **Arguments:**

    - `surface`: the zonal model (default `ebm.EnergyBalanceModel()`).
    - `forcing`: an `ebm.AbstractScenario`, added in every cell (default
        `ebm.AbruptCO2()`).
    """

    # Made per instance: a default built with the class would start JAX's backend
    # at `import ebm`, before the command line or the tests can set XLA's flags.
    surface: EnergyBalanceModel = eqx.field(default_factory=EnergyBalanceModel)
    forcing: AbstractScenario = AbruptCO2()

    start_names: ClassVar[tuple[str, ...]] = ("present", "warm", "cold")

    @property
    def switch_widths(self) -> tuple[str, ...]:
        """The surface model's."""
        return self.surface.switch_widths

    def __check_init__(self):
        if not isinstance(self.surface, EnergyBalanceModel):
            raise TypeError(
                "`surface` must be a zonal model, an ebm.EnergyBalanceModel (any of "
                "its terms; ebm.seasonal_model(grid) for a seasonal cycle), got "
                f"{type(self.surface).__name__}."
            )
        check_scenario(self.forcing)

    @property
    def variables(self) -> tuple[Variable, ...]:
        return (
            Variable("T", "degC", "surface temperature", ("lat",)),
            Variable("T_deep", "degC", "deep-ocean temperature", ("lat",)),
        )

    @property
    def Params(self) -> type[AbstractParams]:
        return with_scenario_parameters(params_of(self.surface.Params), self.forcing)

    def surface_params(self, params: AbstractParams) -> AbstractParams:
        """The surface model's parameters among `params`."""
        container = self.surface.Params
        return container(**{n: getattr(params, n) for n in container.field_names()})

    def _exchange(self, y, params) -> Scalar:
        """Heat flux from the surface into the deep ocean, W m-2, per cell."""
        return params.gamma * (y["T"] - y["T_deep"])

    def __call__(self, t, y: PyTree, params: AbstractParams) -> PyTree:
        grid = self.surface.grid
        surface = self.surface.tendency(y["T"], self.surface_params(params), t)
        flux = self.forcing(t, params) - params.efficacy * self._exchange(y, params)
        capacity = self.surface.heat_capacity(params, grid)
        return {
            "T": surface + flux * SECONDS_PER_YEAR / capacity,
            "T_deep": self._exchange(y, params) / params.C_deep,
        }

    def initial_state(self, params: AbstractParams) -> PyTree:
        """The surface model's stable equilibrium, with the deep ocean at it; for a
        seasonal surface (which has no equilibrium), the present-day profile
        (`ebm.present_day_profile`)."""
        surface_params = self.surface_params(params)
        if self.surface.insolation.seasonal:
            T = initial_profile("present", surface_params, self.surface.grid)
        else:
            T = equilibrium(surface_params, model=self.surface).T
        return {"T": T, "T_deep": T}

    def surface_temperature(self, y: PyTree):
        return y["T"]

    def global_mean(self, y: PyTree) -> Scalar:
        return self.surface.grid.global_mean(y["T"])

    def ice_edge_latitude(self, t, y: PyTree, params: AbstractParams) -> Scalar:
        """The surface's northern ice edge, degrees north."""
        del t
        return self.surface.ice_edge(y["T"], self.surface_params(params))

    def toa_imbalance(self, t, y: PyTree, params: AbstractParams) -> Scalar:
        surface = self.surface.toa_imbalance(t, y["T"], self.surface_params(params))
        uptake = self.surface.grid.global_mean(self._exchange(y, params))
        return surface + self.forcing(t, params) - (params.efficacy - 1.0) * uptake

    def heat_content(self, y: PyTree, params: AbstractParams) -> Scalar:
        surface = self.surface.heat_content(y["T"], self.surface_params(params))
        return surface + params.C_deep * self.surface.grid.global_mean(y["T_deep"])

    def time_scales(self, params: AbstractParams, y=None):
        """`(fastest, slowest)`: the surface's fastest radiative relaxation (what
        sizes the implicit solver's steps, as for `ebm.integrate` of the zonal
        model) and the deep ocean's `C_deep / gamma`, years."""
        if y is None:
            y = self.initial_state(params)
        scales = time_scales(self.surface_params(params), self.surface, y["T"])
        return scales.relaxation, params.C_deep / params.gamma

    def default_solver(self):
        """`diffrax.Kvaerno5()`: the transport is stiff."""
        return diffrax.Kvaerno5()

    def surface_equivalent(self, params: AbstractParams, t) -> AbstractParams:
        """The surface model's parameters whose zonal equilibrium is this model's
        steady state at time `t`: the scenario's forcing at `t` added to the
        surface's `forcing`. There the deep ocean is at the surface's temperature
        and exchanges nothing, so `gamma`, `C_deep` and the efficacy do not enter.

        **Raises:**

        - `TypeError`: for a surface model without a `forcing` parameter.
        """
        surface_params = self.surface_params(params)
        if "forcing" not in type(surface_params).field_names():
            raise TypeError(
                "The steady state of ebm.DeepOceanModel adds the scenario's forcing "
                "to its surface model's `forcing` parameter, and this surface model "
                "has none: give it an ebm.UniformForcing term."
            )
        added = surface_params.forcing + self.forcing(t, params)
        return eqx.tree_at(lambda p: p.forcing, surface_params, added)

    def steady_state(
        self,
        params: AbstractParams,
        t,
        start,
        *,
        solver,
        adjoint,
        max_steps: int,
        near_fold,
        throw: bool,
    ):
        """The surface's equilibrium (`ebm.equilibrium` of `self.surface`, its
        branches by name, from `start` or its `"T"`, by `solver` and `adjoint`)
        under `surface_equivalent`, with the deep ocean at it: an
        `ebm.SteadyState` whose `surface` is that equilibrium."""
        if isinstance(start, dict):
            start = start["T"]
        surface = equilibrium(
            self.surface_equivalent(params, t),
            model=self.surface,
            start="present" if start is None else start,
            solver=solver,
            adjoint=adjoint,
            max_steps=max_steps,
            near_fold=near_fold,
            throw=throw,
        )
        state = {"T": surface.T, "T_deep": surface.T}
        return SteadyState.of(
            self,
            params,
            state,
            t,
            surface=surface,
            result=surface.result,
            num_steps=surface.num_steps,
        )

    def steady_adjoint(self):
        """The surface model's (`self.surface.steady_adjoint()`)."""
        return self.surface.steady_adjoint()

    def walked_model(self, params: AbstractParams, parameter: str, t, start):
        """The surface model under `surface_equivalent`: the branch and folds of
        this model's steady states are the surface's, with the deep ocean at the
        surface's temperature along them. Its `forcing` and the scenario's
        parameters are refused (they would be walked and reported shifted by the
        forcing added to the surface's), as are `gamma`, `C_deep` and
        `efficacy`, which do not move the steady states.

        **Raises:**

        - `ValueError`: for a parameter that is not walked (see above).
        """
        surface_names = self.surface.Params.field_names()
        walkable = tuple(n for n in surface_names if n != "forcing")
        if parameter not in walkable:
            if parameter != "forcing" and parameter not in self.Params.field_names():
                raise ValueError(
                    "`parameter` must be a parameter of the model, one of "
                    f"{walkable}, got {parameter!r}."
                )
            moves = parameter not in ("gamma", "C_deep", "efficacy")
            reason = (
                "moves them through the forcing the walk adds to the surface's"
                if moves
                else "does not move them (the deep ocean sits at the surface's "
                "temperature there)"
            )
            raise ValueError(
                f"`parameter` = {parameter!r} {reason}: ebm.DeepOceanModel's steady "
                f"states are walked in one of {walkable}. To walk the forcing, walk "
                "`forcing` of the surface model (model.surface) with the scenario's "
                "forcing added to it."
            )
        if isinstance(start, dict):
            start = start["T"]
        return self.surface_equivalent(params, t), self.surface, start
