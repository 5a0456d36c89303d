"""Which models `ebm.continuation` and `ebm.fold` walk, and how.

The zonal model is walked as it is. An `ebm.DeepOceanModel`'s steady states are
its surface model's equilibria with the scenario's forcing at time `t` added (the
deep ocean at the surface's temperature, exchanging nothing: see
`surface_equivalent`), so its branch and its folds are those of the surface model,
and the deep ocean's temperature along them is the surface's. The global layer
models are linear: one steady state per parameter value (`F / feedback`), no fold.
"""

from ..._model.model import EnergyBalanceModel
from ..._model.protocol import AbstractModel


def on_the_surface(params, parameter: str, model, grid, start, t):
    """`(params, model, start)` for the walk: unchanged for the zonal model (where
    `t` must be `None`), the surface's for an `ebm.DeepOceanModel`.

    **Raises:**

    - `ValueError`: for `t` with the zonal model, `grid` with another model, a
        parameter that does not move a deep-ocean model's steady state, or a model
        with no folds to walk (the global layer models).
    - `TypeError`: for parameters that are not the model's.
    """
    from ..._layers.deep_ocean import DeepOceanModel
    from ..._layers.run import check_model_params
    from ..steady_state import _forcing_time, surface_equivalent

    if model is None or isinstance(model, EnergyBalanceModel):
        if t is not None:
            raise ValueError(
                "`t` is for a model under a forcing scenario; the zonal model's "
                f"forcing is its parameter `forcing`, got t={t!r}."
            )
        return params, model, start
    if not isinstance(model, DeepOceanModel):
        kind = "a model of the protocol" if isinstance(model, AbstractModel) else ""
        raise ValueError(
            "ebm.continuation and ebm.fold walk the zonal model and "
            f"ebm.DeepOceanModel; {type(model).__name__} is {kind or 'not a model'}"
            " whose branches they do not walk. The global layer models are linear "
            "(one steady state, F / feedback, for each parameter value, and no "
            "fold): sweep ebm.equilibrium under jax.vmap instead."
        )
    if grid is not None:
        raise ValueError(
            f"`grid` is for the zonal model; {type(model).__name__} carries its "
            "surface model's."
        )
    params = check_model_params(params, model)
    surface_names = model.surface.Params.field_names()
    if parameter not in surface_names:
        raise ValueError(
            f"`parameter` = {parameter!r} does not move ebm.DeepOceanModel's steady "
            "states (the deep ocean sits at the surface's temperature there); walk "
            f"one of its surface model's parameters: {tuple(surface_names)}."
        )
    surface_params = surface_equivalent(params, model, _forcing_time(model, t))
    if isinstance(start, dict):
        start = start["T"]
    return surface_params, model.surface, start
