"""The seasonal cycle of `ebm.SeaIceModel`, as Wagner & Eisenman (2015) draw it
(their Fig. 2): the surface temperature and the ice thickness through the year
against latitude, and the ice edge."""

import numpy as np

from .._constants import DAYS_PER_YEAR
from .._edges.plot import _axes, _failure, _mark_failure, _save, year_axis_label


def plot_sea_ice(cycle, model, params, *, ax=None, path=None, title=None):
    """Three panels of an `ebm.SeaIceModel`'s periodic state (or spin-up's year):
    the surface temperature against the time of year and latitude, with the ice
    edge and the edge of the melting ice surface (red; between them the ice's
    surface is at its melting point); the ice thickness likewise (for ice without
    thermodynamics, which has none, the surface enthalpy, and the title says so);
    and the ice edge's latitude through the year.

    **Arguments:**

    - `cycle`: an `ebm.PeriodicState` of `model`.
    - `model`: the `ebm.SeaIceModel`.
    - `params`: its parameters (for the thickness).
    - `ax`: three matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.
    - `title`: the figure's title.

    **Returns:**

    The matplotlib `Figure` drawn on.

    **Raises:**

    - `TypeError`: for a `model` that is not an `ebm.SeaIceModel`, or a `cycle`
        that is not its `ebm.PeriodicState`.
    """
    import jax

    from .._steady.periodic_models import PeriodicState
    from .model import SeaIceModel
    from .surface import MELTING_POINT

    if not isinstance(model, SeaIceModel):
        raise TypeError(
            f"`model` must be an ebm.SeaIceModel, got {type(model).__name__}."
        )
    if not isinstance(cycle, PeriodicState) or "E" not in cycle.states:
        raise TypeError(
            "`cycle` must be the ebm.PeriodicState of an ebm.SeaIceModel "
            "(ebm.periodic_equilibrium or ebm.seasonal_spinup), got "
            f"{type(cycle).__name__}."
        )
    fig, axes = _axes(ax, 3, figsize=(15, 4.2))
    axes = list(np.ravel(np.asarray(axes, object)))
    t = np.asarray(cycle.t) * DAYS_PER_YEAR
    lat = np.asarray(model.lat)
    edge = np.degrees(np.arcsin(np.asarray(jax.vmap(model.ice_edge)(cycle.states))))
    T = np.asarray(cycle.T)
    if model.thermodynamics:
        thickness = jax.vmap(lambda y: model.thickness(y, params))(cycle.states)
        second = (np.asarray(thickness), "ice thickness (m)", "Blues")
    else:
        # Ice without thermodynamics has no thickness: its enthalpy, ice below 0.
        E = np.asarray(cycle.states["E"])
        second = (E, "surface enthalpy (W yr m-2; ice below 0)", "RdBu_r")
    panels = (
        (axes[0], T, "surface temperature (degC)", "coolwarm"),
        (axes[1], *second),
    )
    for panel, values, label, cmap in panels:
        mesh = panel.pcolormesh(t, lat, values.T, shading="nearest", cmap=cmap)
        fig.colorbar(mesh, ax=panel, label=label)
        panel.plot(t, edge, "k", lw=1.2, label="ice edge")
        panel.set_xlabel(year_axis_label(model.year_start))
        panel.set_ylabel("latitude (degrees north)")
    # The ice's surface melts where T0 >= Tm, where the blended T is at least
    # Tm - melt_width log 2 (Tm itself, for a width of 0).
    melting = MELTING_POINT - max(float(params.melt_width) * np.log(2.0), 1e-6)
    if model.thermodynamics and np.nanmin(T) < melting < np.nanmax(T):
        axes[0].contour(t, lat, T.T, [melting], colors="r", linewidths=0.8)
        # (A contour has no legend entry of its own.)
        axes[0].plot([], [], "r", lw=0.8, label="edge of the melting ice surface")
    for panel in axes[:2]:
        panel.legend(loc="lower left", fontsize=8)
    axes[2].plot(t, edge, "k")
    axes[2].set_xlabel(year_axis_label(model.year_start))
    axes[2].set_ylabel("ice edge (degrees north)")
    axes[2].set_ylim(0, 90)
    title = title or "sea ice through the year"
    if not model.thermodynamics:
        title = f"{title} (ice without thermodynamics: T = E / cw)"
    _mark_failure(fig, title, _failure(cycle), figure=True)
    _save(fig, path)
    return fig
