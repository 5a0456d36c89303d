"""Which models `ebm.continuation` and `ebm.fold` walk, and how.

The zonal model is walked as it is. Any other model is asked first
(`model.walked_model`) whether its steady states are a zonal model's branch: an
`ebm.DeepOceanModel`'s are its surface model's equilibria with the scenario's
forcing at time `t` added, so its branch and its folds are those of the surface
model; the global layer models refuse (linear: one steady state per parameter
value, no fold). Every other model (`None`, the default) is walked on its own
tendency, held at time `t` (`problem.ModelProblem`).
"""

from ..._model.protocol import AbstractModel
from ..._zonal.model import EnergyBalanceModel


def on_the_surface(params, parameter: str, model, grid, start, t):
    """`(params, model, start, t)` for the walk: unchanged for the zonal model
    (where `t` must be `None`, and stays so), the surface's for an
    `ebm.DeepOceanModel` (`t` then `None`), and for any other model its own, with
    the time whose forcing is held.

    **Raises:**

    - `ValueError`: for `t` with the zonal model, `grid` with another model, a
        parameter that does not move a deep-ocean model's steady state, or a model
        with no folds to walk (the global layer models).
    - `TypeError`: for parameters that are not the model's.
    """
    from ..._stepping.run import check_model_params
    from ..._zonal.start import resolve_model
    from ..steady_state import _forcing_time

    if model is None or isinstance(model, EnergyBalanceModel):
        if t is not None:
            raise ValueError(
                "`t` is for a model under a forcing scenario; the zonal model's "
                f"forcing is its parameter `forcing`, got t={t!r}."
            )
        resolve_model(model, grid).checked_params(params)
        return params, model, start, None
    if not isinstance(model, AbstractModel):
        raise TypeError(
            "`model` must be an ebm model (an ebm.AbstractModel), got "
            f"{type(model).__name__}."
        )
    if grid is not None:
        raise ValueError(
            f"`grid` is for the zonal model; {type(model).__name__} carries its "
            "surface model's."
        )
    params = check_model_params(params, model)
    t = _forcing_time(model, t)
    walked = model.walked_model(params, parameter, t, start)
    if walked is None:
        return params, model, start, t
    return (*walked, None)
