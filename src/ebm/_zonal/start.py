r"""Where a solve starts: the model from `model=` or `grid=`, and the first profile.

The named starts are profiles of $P_2(\sin\phi)$ about the freezing point, on either
side of the ice-albedo feedback's bistable range (see `initial_profile`).
"""

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import known_value
from .._custom_types import Temperature
from .grid import Grid, geometry
from .insolation.p2 import legendre_p2
from .model import EnergyBalanceModel, present_day_profile
from .params import Params


STARTS = ("present", "warm", "cold")


def initial_profile(
    start, params: Params, grid: Grid, name: str = "start"
) -> Temperature:
    """The starting profile for `start`, degC.

    - `"present"`: climlab's `12 - 40 P2(sin lat)`: warm tropics, polar ice.
    - `"warm"`: ice-free, from `Tf + 20` K at the poles to `Tf + 42.5` K at the
        equator.
    - `"cold"`: a snowball, from `Tf - 50` K at the poles to `Tf - 27.5` K at the
        equator.
    - an array of shape `(n_lat,)`: used as it is.

    **Raises:**

    - `ValueError`: for an unknown name, or an array of the wrong shape or with
        non-finite values.
    """
    if isinstance(start, str):
        if start == "present":
            return present_day_profile(grid)
        # On the host where `Tf` is known: no program to compile for the start.
        p2 = legendre_p2(geometry(grid.n_lat)["sin_lat"])
        Tf = known_value(params.Tf)
        Tf = params.Tf if Tf is None else np.asarray(Tf)
        if start == "warm":
            return jnp.asarray(Tf + 35.0 - 15.0 * p2)
        if start == "cold":
            return jnp.asarray(Tf - 35.0 - 15.0 * p2)
        raise ValueError(
            f"`{name}` must be one of {STARTS} or an array of shape ({grid.n_lat},), "
            f"got {start!r}."
        )
    return check_profile(name, start, grid)


def check_profile(name: str, T, grid: Grid) -> Temperature:
    """`T` as a float array, checked to have shape `(n_lat,)` and finite values."""
    try:
        T = jnp.asarray(T, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be one of {STARTS} or an array of shape ({grid.n_lat},) "
            f"(degC), got {T!r}."
        ) from None
    if T.shape != (grid.n_lat,):
        raise ValueError(
            f"`{name}` must have shape ({grid.n_lat},) to match `n_lat`, "
            f"got shape {T.shape}."
        )
    if not isinstance(T, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(T))):
        raise ValueError(f"`{name}` must be finite everywhere, got {T}.")
    return T


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
    carries its own), or the zonal one from `model=` or `grid=`."""
    from .._model.protocol import AbstractModel

    if isinstance(model, AbstractModel) and not isinstance(model, EnergyBalanceModel):
        if grid is not None:
            raise ValueError(
                "`grid` is the zonal model's; a model of the protocol carries its own "
                f"(got grid={grid} and {type(model).__name__})."
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
