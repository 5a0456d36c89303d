"""Plots of a run of a model other than the zonal one (see `_edges/plot.py` for
the zonal model's)."""

import numpy as np

from .plot import _axes, _failure, _mark_failure, _save


def plot_run(run, *, ax=None, path=None, title=None):
    """Each variable of a run against time: one line per scalar variable and per
    layer of a layered one (an `ebm.Run` of an ocean-layer model), and for each
    variable on latitudes (the zonal model over a deep ocean) or on a coordinate of
    its own (`ebm.SeaIceModel`'s `x = sin(latitude)`) a panel of its change from
    the first saved time against time and that coordinate. For an
    `ebm.PeriodicState`, the same through the year, with each variable on
    latitudes drawn as it is (a Hovmoller diagram of the seasonal cycle).

    **Arguments:**

    - `run`: an `ebm.Run` with saved times (`ts`, `states`), or an
        `ebm.PeriodicState`.
    - `ax`: a matplotlib axes to draw on, or a sequence of one per panel (default:
        a new figure).
    - `path`: if given, save the figure there.
    - `title`: the first panel's title.

    **Returns:**

    The matplotlib `Figure` drawn on.

    **Raises:**

    - `TypeError`: for a result that is not an `ebm.Run` or `ebm.PeriodicState`.
    - `ValueError`: if the run saved no times, or `ax` is not one axes per panel.
    """
    from .._layers.run import Run
    from .._steady.periodic_models import PeriodicState

    periodic = isinstance(run, PeriodicState)
    if not isinstance(run, Run) and not periodic:
        raise TypeError(
            "`run` must be an ebm.Run (ebm.integrate of a model other than the zonal "
            "one) or an ebm.PeriodicState (its seasonal cycle), got "
            f"{type(run).__name__}."
        )
    if not periodic and run.states is None:
        raise ValueError(
            "`run` has no saved times: integrate with `saveat=diffrax.SaveAt(ts=...)` "
            "to plot it."
        )
    default_title = "seasonal cycle" if periodic else "run"
    on_lat = [v for v in run.variables if _space(v) is not None]
    lines = [v for v in run.variables if _space(v) is None]
    panels = len(on_lat) + (1 if lines else 0)
    fig, axes = _axes(ax, panels, figsize=(7 * panels, 4.5))
    axes = [axes] if panels == 1 else list(np.ravel(np.asarray(axes, object)))
    years = np.asarray(run.t if periodic else run.ts)
    time_label = "time of year (years from 1 January)" if periodic else "time (years)"
    if lines:
        line_ax = axes[-1]
        for variable in lines:
            values = np.asarray(run.states[variable.name]).reshape(len(years), -1)
            for k in range(values.shape[1]):
                label = variable.long_name
                if values.shape[1] > 1:
                    label += f", {variable.dims[0]} {k + 2}"
                line_ax.plot(
                    years, values[:, k], label=label, ls="-" if k == 0 else "--"
                )
        line_ax.set_xlabel(time_label)
        line_ax.set_ylabel(" / ".join(sorted({v.units for v in lines})))
        line_ax.legend(loc="upper left", fontsize=8)
    for variable, panel in zip(on_lat, axes):
        from .._model.grid import Grid

        values = np.asarray(run.states[variable.name])
        coordinate = _space(variable)
        if coordinate == "lat":
            # ebm's grids are uniform in latitude: the cells follow from their number.
            lat = np.asarray(Grid(values.shape[-1]).lat)
            space_label = "latitude (degrees north)"
        else:
            lat = np.asarray(coordinate.values)
            space_label = (
                f"{coordinate.long_name} ({coordinate.name}, {coordinate.units})"
            )
        if periodic:
            mesh = panel.pcolormesh(
                years, lat, values.T, shading="nearest", cmap="coolwarm"
            )
            label = f"{variable.name} ({variable.units})"
        else:
            change = values - values[:1]
            limit = float(np.nanmax(np.abs(change))) or 1.0
            mesh = panel.pcolormesh(
                years,
                lat,
                change.T,
                shading="nearest",
                cmap="RdBu_r",
                vmin=-limit,
                vmax=limit,
            )
            # (degC and K differ by an offset, which a change does not have.)
            units = "K" if variable.units in ("degC", "K") else variable.units
            label = f"{variable.name}: change ({units})"
        fig.colorbar(mesh, ax=panel, label=label)
        panel.set_title(variable.long_name, fontsize=9)
        panel.set_xlabel(time_label)
        panel.set_ylabel(space_label)
    if panels == 1:
        _mark_failure(axes[0], title or default_title, _failure(run))
    else:
        _mark_failure(fig, title or default_title, _failure(run), figure=True)
    _save(fig, path)
    return fig


def _space(variable):
    """`"lat"` for a variable on latitudes, the `ebm.Coordinate` of a variable on
    another one-dimensional space with values of its own (`x = sin(latitude)`), or
    `None` for a scalar or layered one (drawn as lines)."""
    if "lat" in variable.dims:
        return "lat"
    if len(variable.dims) == 1 and variable.coordinates:
        return variable.coordinates[0]
    return None
