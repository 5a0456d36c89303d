"""Which models `ebm.continuation` and `ebm.fold` walk, and how.

The zonal model is walked as it is. Any other model says which zonal model's
branch its steady states are (`model.walked_model`): an `ebm.DeepOceanModel`'s are
its surface model's equilibria with the scenario's forcing at time `t` added, so
its branch and its folds are those of the surface model. A model whose steady
states are no zonal model's (the global layer models are linear: one steady state
per parameter value, no fold) refuses.
"""

from ..._model.protocol import AbstractModel
from ..._zonal.model import EnergyBalanceModel


def on_the_surface(params, parameter: str, model, grid, start, t):
    """`(params, model, start)` for the walk: unchanged for the zonal model (where
    `t` must be `None`), the surface's for an `ebm.DeepOceanModel`.

    **Raises:**

    - `ValueError`: for `t` with the zonal model, `grid` with another model, a
        parameter that does not move a deep-ocean model's steady state, or a model
        with no folds to walk (the global layer models).
    - `TypeError`: for parameters that are not the model's.
    """
    from ..._stepping.run import check_model_params
    from ..._zonal.start import check_zonal_params, resolve_model
    from ..steady_state import _forcing_time

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
    if grid is not None:
        raise ValueError(
            f"`grid` is for the zonal model; {type(model).__name__} carries its "
            "surface model's."
        )
    params = check_model_params(params, model)
    return model.walked_model(params, parameter, _forcing_time(model, t), start)
