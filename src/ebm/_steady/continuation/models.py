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
    from ..._model.start import check_zonal_params, resolve_model
    from ..steady_state import _forcing_time, surface_equivalent

    if model is None or isinstance(model, EnergyBalanceModel):
        if t is not None:
            raise ValueError(
                "`t` is for a model under a forcing scenario; the zonal model's "
                f"forcing is its parameter `forcing`, got t={t!r}."
            )
        check_zonal_params(params, resolve_model(model, grid))
        return params, model, start
    if not isinstance(model, AbstractModel):
        raise TypeError(
            "`model` must be an ebm model (ebm.EnergyBalanceModel or "
            f"ebm.DeepOceanModel here), got {type(model).__name__}."
        )
    if not isinstance(model, DeepOceanModel):
        raise ValueError(
            "ebm.continuation and ebm.fold walk the zonal model and "
            f"ebm.DeepOceanModel, not {type(model).__name__}. The global layer "
            "models are linear (one steady state, F / feedback, for each parameter "
            "value, and no fold): sweep ebm.equilibrium under jax.vmap instead."
        )
    if grid is not None:
        raise ValueError(
            f"`grid` is for the zonal model; {type(model).__name__} carries its "
            "surface model's."
        )
    params = check_model_params(params, model)
    # The walk is the surface's, with the scenario's forcing added to its
    # `forcing`: that parameter, and those of the scenario (F2x, ...), would be
    # walked and reported shifted by it.
    surface_names = model.surface.Params.field_names()
    walkable = tuple(n for n in surface_names if n != "forcing")
    if parameter not in walkable:
        if parameter != "forcing" and parameter not in model.Params.field_names():
            raise ValueError(
                f"`parameter` must be a parameter of the model, one of {walkable}, "
                f"got {parameter!r}."
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
    surface_params = surface_equivalent(params, model, _forcing_time(model, t))
    if isinstance(start, dict):
        start = start["T"]
    return surface_params, model.surface, start
