"""Matplotlib figures. Imported lazily: nothing in the numerical core needs it.

Every helper follows one convention, as matplotlib's own `Axes` methods and
seaborn's functions do:

- the result to draw comes first, positionally (with whatever else the drawing
    cannot be computed without, such as the model whose heat transport is drawn);
- everything else is keyword-only: `params=` where the parameters only label the
    figure (the freezing temperature `Tf`; default `ebm.Params()`), `ax=` to draw
    into the user's axes, `path=` to save, and the helper's own options;
- `ax=` is one `matplotlib.axes.Axes` for a one-panel figure, and for a figure of
    several panels a sequence of that many axes, in the order the docstring lists
    them (what `plt.subplots(1, 2)` returns). Without it the helper makes a new
    figure;
- each returns the `matplotlib.figure.Figure` it drew on (`ax.figure` when `ax` is
    given), and saves that whole figure when `path` is given.

No helper switches matplotlib's backend or calls `plt.show()`.
"""

import numpy as np


def _pyplot():
    # The user's backend is left as it is: in Jupyter (`%matplotlib inline`) the
    # figure shows, and the user's own next figure too. Without a display,
    # matplotlib itself falls back to Agg; the `ebm` command asks for Agg.
    import matplotlib.pyplot as plt

    return plt


def year_axis_label(year_start: str = "1 January") -> str:
    """The label of a time-of-year axis, in days from the start of the model's year
    (`year_start`): one convention for every seasonal figure."""
    return f"day of the year (days from {year_start})"


def _axes(ax, panels: int, *, nrows: int = 1, **subplots):
    """The figure to draw on and its `panels` axes: the user's `ax`, or a new figure.

    `panels` axes are laid out `nrows` by `panels // nrows` in a new figure; `ax`,
    when given, is one axes (`panels == 1`) or a sequence of `panels` axes.
    """
    if ax is None:
        fig, made = _pyplot().subplots(
            nrows, panels // nrows, layout="constrained", **subplots
        )
        return fig, made
    if panels == 1:
        if not hasattr(ax, "figure"):
            raise ValueError(
                f"`ax` must be one matplotlib axes for this figure, got {ax!r}."
            )
        return ax.figure, ax
    axes = [ax] if hasattr(ax, "figure") else list(np.ravel(np.asarray(ax, object)))
    if len(axes) != panels:
        raise ValueError(
            f"`ax` must be a sequence of {panels} matplotlib axes for this figure's "
            f"{panels} panels, got {len(axes)}."
        )
    return axes[0].figure, axes


def _freezing(params) -> float:
    """The freezing threshold `Tf` of `params` (default `ebm.Params()`), degC."""
    from .._zonal.params import Params

    return float((Params() if params is None else params).Tf)


def _save(fig, path) -> None:
    if path is not None:
        fig.savefig(path, dpi=120)


def _failure(result) -> str | None:
    """`"not converged: <why>"` when `result.result` is a failure code, else `None`:
    a failed solve's last iterate must not be drawn as if it were the answer."""
    code = getattr(result, "result", None)
    if code is None:
        return None
    from .._results import RESULTS

    failed = ~np.asarray(code == RESULTS.successful)
    if not failed.any():
        return None
    if failed.ndim:
        return f"not converged: {int(failed.sum())} of {failed.size} failed"
    # The message's first sentence: a title has no room for the advice after it.
    return f"not converged: {RESULTS[code].split('. ')[0].rstrip('.')}"


def _mark_failure(ax, title: str, failure: str | None, *, figure=False) -> None:
    """Set the title, with the failure (if any) on a line of its own, in red."""
    setter = ax.suptitle if figure else ax.set_title
    if failure is None:
        setter(title)
    else:
        setter(f"{title}\n{failure}", color="tab:red")


def plot_equilibrium(equilibrium, *, params=None, ax=None, path=None, label=None):
    """Plot an equilibrium profile T(lat), with the freezing threshold and ice edge.

    **Arguments:**

    - `equilibrium`: an `ebm.Equilibrium` (or anything with `.lat`, `.T`,
        `.ice_edge`, `.global_mean`, and optionally `.ice_edge_south`; without it
        the southern edge is drawn as the northern one's mirror).
    - `params`: the `ebm.Params` it was computed with, for the `Tf` line (default
        `ebm.Params()`).
    - `ax`: a matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.
    - `label`: legend label for the profile.

    **Returns:**

    The matplotlib `Figure` drawn on. A state that did not converge (`result` not
    successful) is drawn dashed and red, and the title and legend say
    `not converged: <why>`.
    """
    fig, ax = _axes(ax, 1, figsize=(6, 4))
    freezing = _freezing(params)
    lat, T = np.asarray(equilibrium.lat), np.asarray(equilibrium.T)
    edge = float(equilibrium.ice_edge)
    south = float(getattr(equilibrium, "ice_edge_south", -edge))
    failure = _failure(equilibrium)
    # Drawn over a previous profile (`ax=`), the edge takes its profile's colour,
    # its label goes above the last one, and `Tf` is drawn once.
    previous_edges = sum(text.get_text().startswith("ice edge") for text in ax.texts)
    if failure is None:
        (line,) = ax.plot(lat, T, label=label or "equilibrium T")
    else:
        (line,) = ax.plot(
            lat,
            T,
            "--",
            color="tab:red",
            label=f"{label or 'T'} ({failure})",
        )
    if not any(other.get_label() == "Tf" for other in ax.get_lines()):
        ax.axhline(freezing, color="0.6", ls=":", label="Tf")
    for value in (edge, south):
        if 0 < abs(value) < 90:
            ax.axvline(value, color=line.get_color(), ls="--", lw=1)
    symmetric = abs(edge + south) < 0.05
    if 0 < edge < 90:
        ax.annotate(
            f"ice edge {edge:.1f}°" if symmetric else f"ice edge {edge:.1f}°N",
            (edge, freezing),
            # Equatorward of the edge, inside the axes however close to the pole.
            xytext=(-4, 6 + 14 * previous_edges),
            textcoords="offset points",
            ha="right",
            color=line.get_color() if previous_edges else None,
        )
    if not symmetric and 0 < -south < 90:
        ax.annotate(
            f"ice edge {-south:.1f}°S",
            (south, freezing),
            xytext=(4, 6 + 14 * previous_edges),
            textcoords="offset points",
            ha="left",
            color=line.get_color() if previous_edges else None,
        )
    ax.set_xlabel("latitude (°N)")
    ax.set_ylabel("surface temperature (°C)")
    ax.set_xlim(-90, 90)
    ax.set_xticks(np.arange(-90, 91, 30))
    edges = (
        f"ice edge {edge:.1f}°N"
        if symmetric
        else f"ice edges {edge:.1f}°N, {-south:.1f}°S"
    )
    _mark_failure(
        ax, f"global mean {float(equilibrium.global_mean):.2f} °C, {edges}", failure
    )
    ax.legend(loc="lower center")
    _save(fig, path)
    return fig


def plot_memory_scaling(rows, *, ax=None, path=None):
    """Log-log memory against steps, one line per schedule; gradient time beside it.

    **Arguments:**

    - `rows`: the output of `ebm.memory_table` (or its JSON).
    - `ax`: two matplotlib axes to draw on, (memory, time) (default: a new figure).
    - `path`: if given, save the figure there.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    fig, (memory_ax, time_ax) = _axes(ax, 2, figsize=(11, 4.5))
    # A point measured again (a rerun with more repeats) is drawn once, from the
    # last run, and each line in order of steps.
    latest = {(row["schedule"], row["steps"]): row for row in rows}
    schedules = list(dict.fromkeys(row["schedule"] for row in rows))
    for schedule in schedules:
        mine = sorted(
            (row for (name, _), row in latest.items() if name == schedule),
            key=lambda row: row["steps"],
        )
        style = dict(color="black", lw=2.5) if schedule == "forward" else {}
        steps = [row["steps"] for row in mine]
        memory_ax.loglog(
            steps,
            [row["temporary_megabytes"] for row in mine],
            "o-",
            label=schedule,
            **style,
        )
        timed = [row for row in mine if row.get("seconds") is not None]
        time_ax.loglog(
            [row["steps"] for row in timed],
            [row["seconds"] for row in timed],
            "o-",
            label=schedule,
            **style,
        )
    memory_ax.set_xlabel("steps N")
    memory_ax.set_ylabel("XLA temporary memory (MB)")
    memory_ax.set_title("memory of the gradient, by checkpoint schedule")
    time_ax.set_xlabel("steps N")
    time_ax.set_ylabel("median wall time (s)")
    time_ax.set_title("time of the gradient")
    memory_ax.legend(fontsize="small", ncol=2)
    _save(fig, path)
    return fig


def perturbation(params, name: str) -> float:
    """1% of a parameter's value, or one unit for a parameter that is zero."""
    value = abs(float(getattr(params, name)))
    return 0.01 * value if value > 0 else 1.0


def plot_sensitivity(sensitivity, params, *, ax=None, path=None):
    """Sensitivity profiles: the change in T(lat) for a 1% change in each parameter.

    **Arguments:**

    - `sensitivity`: an `ebm.Sensitivity` of the output `"T"`.
    - `params`: the parameters it was taken at, which size the 1% changes (a
        parameter that is zero gets a change of one unit).
    - `ax`: a matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    plt = _pyplot()
    fig, ax = _axes(ax, 1, figsize=(7, 4.5))
    lat = np.asarray(sensitivity.lat)
    # One colour per parameter: the default cycle of ten repeats after ten.
    colours = plt.get_cmap("tab20").colors
    for index, name in enumerate(sensitivity.names):
        step = perturbation(params, name)
        change = np.asarray(sensitivity[name]) * step
        if np.max(np.abs(change)) > 0:
            style = "-" if index < len(colours) else "--"
            ax.plot(
                lat,
                change,
                style,
                color=colours[index % len(colours)],
                label=f"{name} + {step:.3g}",
            )
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xlabel("latitude (°N)")
    ax.set_ylabel("change in T (K)")
    ax.set_xlim(-90, 90)
    ax.set_xticks(np.arange(-90, 91, 30))
    ax.set_title("equilibrium response to a 1% change in each parameter")
    ax.legend(fontsize="small", ncol=2)
    _save(fig, path)
    return fig


def plot_fit(result, target, initial, fitted, *, ax=None, path=None):
    """Target, initial and fitted profiles, and the loss curve of an `ebm.fit`.

    **Arguments:**

    - `result`: the `ebm.FitResult`.
    - `target`: the target profile, degC.
    - `initial`, `fitted`: `ebm.Equilibrium`s at the initial and fitted parameters.
    - `ax`: two matplotlib axes to draw on, (profiles, loss) (default: a new
        figure).
    - `path`: if given, save the figure there.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    fig, (profile_ax, loss_ax) = _axes(ax, 2, figsize=(11, 4.2))
    lat = np.asarray(fitted.lat)
    profile_ax.plot(lat, np.asarray(target), "k.", label="target")
    for state, style, name in ((initial, "--", "initial"), (fitted, "-", "fitted")):
        failure = _failure(state)
        profile_ax.plot(
            lat,
            np.asarray(state.T),
            style,
            label=name if failure is None else f"{name} ({failure})",
        )
    profile_ax.set_xlabel("latitude (°N)")
    profile_ax.set_ylabel("surface temperature (°C)")
    profile_ax.set_xlim(-90, 90)
    profile_ax.legend()
    losses = np.asarray(result.loss_history)
    loss_ax.semilogy(np.arange(len(losses)), np.maximum(losses, 1e-300), "o-")
    loss_ax.set_xlabel("optimiser step")
    loss_ax.set_ylabel("area-weighted mean squared misfit (K²)")
    fitted_values = ", ".join(
        f"{name} = {float(getattr(result.params, name)):.6g}" for name in result.fitted
    )
    _mark_failure(
        loss_ax,
        fitted_values,
        None
        if result.converged
        else f"not converged: gradient above gtol after {result.num_steps} steps",
    )
    _save(fig, path)
    return fig


_FOLD_NAMES = {"S0": "S0 (W m-2)", "forcing": "forcing (W m-2)", "D": "D (W m-2 K-1)"}


def plot_branch(branch, *, ax=None, path=None, label=None, color=None, annotate=True):
    """Plot a branch of equilibria: ice edge and global mean against the parameter
    (the global mean alone for a model without sea ice).

    Stable points are drawn solid, unstable dashed; folds are marked with their
    parameter values.

    **Arguments:**

    - `branch`: an `ebm.Branch`.
    - `ax`: two matplotlib axes to draw on, (ice edge, global mean), e.g. a
        previous call's `figure.axes` to overlay branches (default: a new figure);
        one axes for a model without sea ice.
    - `path`: if given, save the figure there.
    - `label`: legend label.
    - `color`: line colour (default `"C0"`; give each overlaid branch its own).
    - `annotate`: label each fold with its parameter value.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    icy = not np.all(np.isnan(np.asarray(branch.ice_edge)))
    if icy:
        fig, axes = _axes(ax, 2, nrows=2, figsize=(7, 7), sharex=True)
        fields = (branch.ice_edge, branch.global_mean)
    else:
        fig, axes = _axes(ax, 1, figsize=(7, 4))
        axes, fields = [axes], (branch.global_mean,)
    values = np.asarray(branch.values)
    stable = np.asarray(branch.stable)
    color = "C0" if color is None else color
    for ax, field in zip(axes, fields):
        field = np.asarray(field)
        for segment in branch.segments():
            # Each segment is drawn up to the first point of the next, so the curve
            # is unbroken through the fold.
            end = min(segment.stop + 1, values.size)
            ax.plot(
                values[segment.start : end],
                field[segment.start : end],
                color=color,
                ls="-" if stable[segment.start] else "--",
                lw=2 if stable[segment.start] else 1.2,
            )
    for fold in branch.folds:
        value = float(fold.value)
        marked = (fold.ice_edge, fold.global_mean) if icy else (fold.global_mean,)
        for ax, y in zip(axes, marked):
            ax.plot(value, float(y), "o", color=color, ms=5)
        if not annotate:
            continue
        axes[0].annotate(
            f"{value:.1f}",
            (value, float(marked[0])),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=8,
        )
    # Proxy artists for the legend: stable, unstable, fold.
    axes[0].plot(
        [], [], color=color, lw=2, label=(label + ": " if label else "") + "stable"
    )
    axes[0].plot([], [], color=color, lw=1.2, ls="--", label="unstable")
    axes[0].plot([], [], "o", color=color, ms=5, label="fold")
    units = "°C" if branch.temperature_units == "degC" else branch.temperature_units
    axes[-1].set_ylabel(f"global mean temperature ({units})")
    name = branch.parameter
    if branch.parameter_units is not None:
        name = f"{name} ({branch.parameter_units})"
    axes[-1].set_xlabel(_FOLD_NAMES.get(branch.parameter, name))
    if not icy:
        axes[0].legend(loc="best", fontsize=8)
        _save(fig, path)
        return fig
    south = -np.asarray(branch.ice_edge_south)
    if np.all(np.isnan(south)):
        axes[0].set_ylabel("ice edge (°N)")
    elif np.nanmax(np.abs(south - np.asarray(branch.ice_edge)), initial=0.0) > 0.05:
        # An asymmetric model: the southern edge too, as a distance from the equator.
        axes[0].plot(values, south, color=color, ls=":", lw=1, label="ice edge (°S)")
        axes[0].set_ylabel("ice edge (°N; dotted: °S)")
    else:
        axes[0].set_ylabel("ice edge (°N)")
    axes[0].set_ylim(-3, 93)
    axes[0].set_yticks(np.arange(0, 91, 15))
    axes[0].legend(loc="upper left", fontsize=8)
    _save(fig, path)
    return fig


def _hovmoller(fig, ax, time, lat, T, freezing: float, label: str):
    """Temperature against time and latitude, symmetric colours, the `Tf` contour."""
    limit = float(np.max(np.abs(T)))
    mesh = ax.pcolormesh(
        time, lat, T.T, cmap="RdBu_r", vmin=-limit, vmax=limit, shading="nearest"
    )
    if T.min() < freezing < T.max():
        ax.contour(time, lat, T.T, levels=[freezing], colors="k", linewidths=0.8)
    fig.colorbar(mesh, ax=ax, label=f"{label} (°C); contour Tf = {freezing:g}")
    ax.set_ylabel("latitude (°N)")
    ax.set_yticks(np.arange(-90, 91, 30))


def plot_seasonal_cycle(cycle, *, params=None, ax=None, path=None, title=None):
    """A latitude-time (Hovmoller) plot of a seasonal cycle, and its amplitude.

    Left: temperature against day of year and latitude, with the `Tf` contour (the
    ice threshold) and each hemisphere's ice edge (the title gives their annual
    means and ranges). Right: the annual mean and half the
    seasonal range of each latitude.

    **Arguments:**

    - `cycle`: an `ebm.SeasonalCycle`.
    - `params`: the `ebm.Params` it was computed with, for the `Tf` contour
        (default `ebm.Params()`).
    - `ax`: two matplotlib axes to draw on, (latitude-time, profiles) (default: a
        new figure).
    - `path`: if given, save the figure there.
    - `title`: the figure's title.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    from .._constants import DAYS_PER_YEAR

    freezing = _freezing(params)
    fig, (hovmoller, profile) = _axes(ax, 2, figsize=(12, 4.5), width_ratios=(2.2, 1))
    day = np.asarray(cycle.t) * DAYS_PER_YEAR
    lat, T = np.asarray(cycle.lat), np.asarray(cycle.T)
    _hovmoller(fig, hovmoller, day, lat, T, freezing, "surface temperature")
    hovmoller.plot(
        day, np.asarray(cycle.ice_edge), color="tab:cyan", lw=2, label="ice edge (N)"
    )
    hovmoller.plot(
        day,
        np.asarray(cycle.ice_edge_south),
        color="tab:cyan",
        lw=2,
        ls="--",
        label="ice edge (S)",
    )
    hovmoller.set_xlabel(year_axis_label())
    hovmoller.set_xlim(0, DAYS_PER_YEAR)
    hovmoller.legend(loc="lower right")
    # A temperature (degC) and a temperature difference (K): two axes, each
    # labelled in its own units and coloured as its line.
    mean_line = profile.plot(lat, np.asarray(cycle.annual_mean), color="C0")
    profile.set_ylabel("annual mean (°C)", color="C0")
    profile.tick_params(axis="y", colors="C0")
    amplitude = profile.twinx()
    amplitude_line = amplitude.plot(lat, np.asarray(cycle.amplitude), color="C1")
    amplitude.set_ylabel("amplitude, half the seasonal range (K)", color="C1")
    amplitude.tick_params(axis="y", colors="C1")
    amplitude.set_ylim(bottom=0)
    profile.set_xlabel("latitude (°N)")
    profile.set_xticks(np.arange(-90, 91, 30))
    profile.legend(
        [*mean_line, *amplitude_line], ["annual mean", "amplitude"], loc="lower center"
    )
    _mark_failure(
        fig,
        title
        or (
            f"seasonal cycle: global mean {float(cycle.annual_global_mean):.2f} °C, "
            f"mean ice edges {float(cycle.annual_mean_ice_edge):.1f}°N "
            f"(range {float(cycle.ice_edge_range):.1f}°), "
            f"{-float(cycle.annual_mean_ice_edge_south):.1f}°S "
            f"(range {float(cycle.ice_edge_south_range):.1f}°)"
        ),
        _failure(cycle),
        figure=True,
    )
    _save(fig, path)
    return fig


def plot_heat_transport(equilibrium, params, model, *, ax=None, path=None):
    """Northward heat transport (PW) of an equilibrium against latitude.

    **Arguments:**

    - `equilibrium`: an `ebm.Equilibrium` (or anything with `.T`).
    - `params`, `model`: what it was computed with; the transport is computed from
        them.
    - `ax`: a matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    fig, ax = _axes(ax, 1, figsize=(6, 4))
    transport = np.asarray(model.heat_transport(equilibrium.T, params))
    ax.plot(np.asarray(model.grid.lat_bounds), transport)
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel("latitude (°N)")
    ax.set_ylabel("northward heat transport (PW)")
    ax.set_xlim(-90, 90)
    ax.set_xticks(np.arange(-90, 91, 30))
    _mark_failure(ax, f"peak {np.max(np.abs(transport)):.2f} PW", _failure(equilibrium))
    _save(fig, path)
    return fig


def plot_trajectory(trajectory, *, params=None, ax=None, path=None):
    """A latitude-time (Hovmoller) plot of a run saved at several times.

    **Arguments:**

    - `trajectory`: an `ebm.Trajectory` with saved times (`ts`, `Ts`).
    - `params`: the `ebm.Params` it was run with, for the `Tf` contour (default
        `ebm.Params()`).
    - `ax`: a matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.

    **Returns:**

    The matplotlib `Figure` drawn on.

    **Raises:**

    - `ValueError`: if the run saved no times.
    """
    if trajectory.Ts is None:
        raise ValueError(
            "`trajectory` has no saved times: integrate with `saveat=diffrax.SaveAt("
            "ts=...)` to plot it."
        )
    freezing = _freezing(params)
    fig, ax = _axes(ax, 1, figsize=(8, 4.5))
    years, lat = np.asarray(trajectory.ts), np.asarray(trajectory.lat)
    T = np.asarray(trajectory.Ts)
    _hovmoller(fig, ax, years, lat, T, freezing, "temperature")
    ax.set_xlabel("time (years)")
    failure = _failure(trajectory)
    if failure is not None:
        _mark_failure(ax, ax.get_title() or "run", failure)
    _save(fig, path)
    return fig
