"""Where a solve starts: the model from `model=` or `grid=`; the named first
profiles are the model's own (`initial_profile`, in `model.py`)."""

from .grid import Grid
from .model import (
    STARTS as STARTS,
    EnergyBalanceModel,
    check_profile as check_profile,
    initial_profile as initial_profile,
)


def resolve_model(model: EnergyBalanceModel | None, grid: Grid | None):
    """The model to use, from `model=` or `grid=` (not both)."""
    if grid is not None and not isinstance(grid, Grid):
        raise TypeError(
            f"`grid` must be an ebm.Grid (e.g. ebm.Grid({grid!r}) for that many "
            f"cells), got {type(grid).__name__}."
        )
    if model is None:
        return EnergyBalanceModel(grid=Grid() if grid is None else grid)
    if not isinstance(model, EnergyBalanceModel):
        raise TypeError(
            "This entry point takes the zonal model (an ebm.EnergyBalanceModel), got "
            f"{type(model).__name__}. The other models of the protocol run under "
            "ebm.integrate, ebm.integrate_fixed, ebm.equilibrium, ebm.ensemble, "
            "ebm.fit, ebm.sensitivity, ebm.hessian and ebm.posterior (and "
            "ebm.DeepOceanModel under ebm.continuation and ebm.fold), with ebm.ecs, "
            "ebm.tcr and ebm.gregory (see docs/hierarchy.md)."
        )
    if grid is not None and grid != model.grid:
        raise ValueError(
            f"Pass `grid` or `model`, not both: got grid={grid} and a model on "
            f"{model.grid}."
        )
    return model


def resolve_any_model(model, grid: Grid | None):
    """The model to use: any model of the protocol (`grid` is then refused: it
    carries its own), or the zonal one from `model=` or `grid=`.

    **Raises:**

    - `TypeError`: for a `model` that is not an ebm model, or a `grid` that is
        not an `ebm.Grid`.
    - `ValueError`: for a `grid` beside a model that carries its own.
    """
    from .._model.protocol import AbstractModel

    if model is not None and not isinstance(model, AbstractModel):
        raise TypeError(
            "`model` must be an ebm model: this entry point takes the zonal model "
            "(an ebm.EnergyBalanceModel, or `grid=` for the default one) or any "
            "other model of the protocol (an ebm.AbstractModel, such as "
            f"ebm.TwoLayerModel()), got {type(model).__name__}."
        )
    if isinstance(model, AbstractModel) and not isinstance(model, EnergyBalanceModel):
        if grid is not None:
            raise ValueError(
                f"`grid` is for the zonal model; {type(model).__name__} carries its "
                f"own state (`grid` is the zonal model's option; got grid={grid})."
            )
        return model
    return resolve_model(model, grid)


def model_grid(model) -> Grid | None:
    """The latitude grid of a zonal model (the surface's, over a deep ocean), or
    `None` for a global one."""
    grid = getattr(model, "grid", None)
    if grid is None:
        grid = getattr(getattr(model, "surface", None), "grid", None)
    return grid


def model_latitudes(model):
    """The cell centres of a model on latitudes (degrees north), or `None` for a
    global one."""
    grid = model_grid(model)
    return None if grid is None else grid.lat
