"""Plots of a run of a model other than the zonal one (see `_edges/plot.py` for
the zonal model's)."""

import numpy as np

from .._constants import DAYS_PER_YEAR
from .plot import _axes, _failure, _mark_failure, _save, year_axis_label


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
    from .._steady.periodic_models import PeriodicState
    from .._stepping.run import Run

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
    panels = run_panels(run)
    fig, axes = _axes(ax, panels, figsize=(7 * panels, 4.5))
    axes = [axes] if panels == 1 else list(np.ravel(np.asarray(axes, object)))
    if periodic:
        years = np.asarray(run.t) * DAYS_PER_YEAR
        time_label = year_axis_label(run.year_start)
    else:
        years = np.asarray(run.ts)
        time_label = "time (years)"
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
        from .._zonal.grid import Grid

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


def run_panels(run) -> int:
    """How many panels `plot_run` draws for `run`: one per variable on a space, and
    one for the scalar and layered variables' lines."""
    spaces = [_space(v) is not None for v in run.variables]
    return sum(spaces) + (1 if not all(spaces) else 0)


def plot_gregory(regression, *, ax=None, path=None, title=None):
    """The Gregory diagram of `abrupt-4xCO2`: each year's mean top-of-atmosphere
    imbalance N against its mean warming T, the regression line, its intercept
    (the effective forcing of quadrupled CO2) and where it crosses N = 0 (twice the
    effective climate sensitivity).

    **Arguments:**

    - `regression`: an `ebm.Gregory` (from `ebm.gregory`).
    - `ax`: a matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.
    - `title`: the axes' title.

    **Returns:**

    The matplotlib `Figure` drawn on.

    **Raises:**

    - `TypeError`: for a result that is not an `ebm.Gregory`.
    """
    from .._layers.metrics import Gregory

    if not isinstance(regression, Gregory):
        raise TypeError(
            f"`regression` must be an ebm.Gregory (ebm.gregory), got "
            f"{type(regression).__name__}."
        )
    fig, ax = _axes(ax, 1, figsize=(6, 4.5))
    T, N = np.asarray(regression.T), np.asarray(regression.N)
    forcing = float(regression.forcing)
    feedback = float(regression.feedback)
    sensitivity = float(regression.effective_sensitivity)
    ax.scatter(T, N, s=12, color="C0", label=f"years 1-{T.size}, annual means")
    crossing = forcing / feedback
    line = np.linspace(0.0, max(crossing, float(np.max(T))), 50)
    ax.plot(
        line,
        forcing - feedback * line,
        color="C1",
        label=f"regression: F = {forcing:.2f} W m-2, feedback {feedback:.2f} W m-2 K-1",
    )
    ax.plot([crossing], [0.0], "ko", label=f"N = 0: 2 x ECS_eff = {crossing:.2f} K")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlim(left=0.0)
    ax.set_ylim(bottom=min(0.0, float(np.min(N))) - 0.2)
    ax.set_xlabel("annual-mean warming T (K)")
    ax.set_ylabel("annual-mean TOA imbalance N (W m-2)")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(
        title
        or f"Gregory regression, abrupt-4xCO2: effective sensitivity "
        f"{sensitivity:.2f} K",
        fontsize=10,
    )
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
