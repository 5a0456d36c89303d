"""Plots of projections (`ebm.project`) and emulations (`ebm.emulate`)."""

import numpy as np

from .plot import _axes, _save


_COLOURS = {
    "ssp119": "#00a9cf",
    "ssp126": "#003466",
    "ssp245": "#f69320",
    "ssp370": "#df0000",
    "ssp434": "#2274ae",
    "ssp460": "#b0724e",
    "ssp534-over": "#92397a",
    "ssp585": "#980002",
    "ssp370-lowNTCF": "#e9a0a0",
}
"""The scenarios' colours, as AR6's figures draw them."""


def plot_projection(projection, *, ax=None, path=None, title=None):
    """Each scenario's warming against time: the weighted median over the draws
    and its 5-95 % range, shaded; AR6's assessed ranges of the 20-year means
    (Table SPM.1) as bars where it has them, and the observed warming
    (`ebm.observed_warming`).

    **Arguments:**

    - `projection`: an `ebm.Projection` with its runs (`keep_runs=True`).
    - `ax`: a matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.
    - `title`: the axes' title.

    **Returns:**

    The matplotlib `Figure` drawn on.

    **Raises:**

    - `TypeError`: for a result that is not an `ebm.Projection`.
    - `ValueError`: for a projection that kept only its periods' means.
    """
    from .._analysis.project import AR6_PROJECTIONS, Projection, weighted_quantiles

    if not isinstance(projection, Projection):
        raise TypeError(
            f"`projection` must be an ebm.Projection, got {type(projection).__name__}."
        )
    if projection.warming is None:
        raise ValueError(
            "`projection` kept only its periods' means: project with keep_runs=True "
            "to plot the runs."
        )
    fig, ax = _axes(ax, 1, figsize=(8, 5))
    time = np.asarray(projection.time)
    weights = np.where(np.asarray(projection.ok), np.asarray(projection.weights), 0.0)
    for s, scenario in enumerate(projection.scenarios):
        runs = np.asarray(projection.warming[s])
        bands = np.array(
            [
                weighted_quantiles(runs[:, k], weights, (0.05, 0.5, 0.95))
                for k in range(time.size)
            ]
        )
        colour = _COLOURS.get(scenario, f"C{s}")
        ax.fill_between(time, bands[:, 0], bands[:, 2], color=colour, alpha=0.2, lw=0)
        ax.plot(time, bands[:, 1], color=colour, lw=1.5, label=scenario)
        assessed = AR6_PROJECTIONS.get(scenario)
        if assessed is None:
            continue
        for offset, (first, last) in enumerate(projection.periods):
            key = f"{first}-{last}"
            if key not in assessed:
                continue
            low, best, high = assessed[key]
            x = 0.5 * (first + last + 1) + 1.5 * (s - len(projection.scenarios) / 2)
            ax.errorbar(
                [x],
                [best],
                yerr=[[best - low], [high - best]],
                fmt="o",
                ms=3,
                color=colour,
                alpha=0.8,
                label="AR6 assessed (Table SPM.1)" if s == offset == 0 else None,
            )
    from .._scenarios.historical import observed_warming

    observed_times, observed = observed_warming()
    ax.plot(
        observed_times,
        observed,
        color="k",
        lw=0.8,
        label="observed (AR6 assessed GMST)",
    )
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xlabel("year")
    ax.set_ylabel("warming above 1850-1900 (K)")
    ax.set_xlim(time[0], time[-1] + 1)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(
        title or f"projections: median and 5-95 % of {weights.size} draws; bars: AR6",
        fontsize=10,
    )
    _save(fig, path)
    return fig


def plot_emulation(emulations, *, ax=None, path=None, title=None):
    """One emulation (`ebm.Emulation`): the CMIP6 model's annual-mean warming and
    top-of-atmosphere imbalance in abrupt-4xCO2 against the years, with the
    emulator's. Several: each emulator's TCR against its CMIP6 model's own (from
    the 1pctCO2 run it was not fitted to) and its ECS against the Gregory estimate.

    **Arguments:**

    - `emulations`: an `ebm.Emulation`, or a sequence of them.
    - `ax`: two matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.
    - `title`: the figure's title.

    **Returns:**

    The matplotlib `Figure` drawn on.

    **Raises:**

    - `TypeError`: for anything but emulations.
    """
    from .._analysis.emulate import Emulation

    single = isinstance(emulations, Emulation)
    emulations = [emulations] if single else list(emulations)
    if not emulations or not all(isinstance(e, Emulation) for e in emulations):
        raise TypeError("`emulations` must be an ebm.Emulation or a sequence of them.")
    fig, axes = _axes(ax, 2, figsize=(11, 4.2))
    left, right = np.ravel(np.asarray(axes, object))
    if single:
        (emulation,) = emulations
        years = np.asarray(emulation.years)
        for panel, data, fitted, label, units in (
            (left, emulation.T, emulation.T_fit, "warming T", "K"),
            (right, emulation.N, emulation.N_fit, "TOA imbalance N", "W m-2"),
        ):
            panel.plot(years, np.asarray(data), ".", ms=3, color="0.4", label="CMIP6")
            panel.plot(years, np.asarray(fitted), color="C3", label="emulator")
            panel.set_xlabel("year of abrupt-4xCO2")
            panel.set_ylabel(f"{label} ({units})")
            panel.legend(fontsize=8)
        left.set_title(
            f"{emulation.name}: rmse {float(emulation.rmse_T):.3f} K", fontsize=10
        )
        right.set_title(f"rmse {float(emulation.rmse_N):.3f} W m-2", fontsize=10)
    else:
        for panel, x, y, xlabel, ylabel in (
            (
                left,
                [float(e.tcr_cmip6) for e in emulations],
                [float(e.tcr) for e in emulations],
                "CMIP6 model's TCR, 1pctCO2 years 61-80 (K)",
                "emulator's TCR (K)",
            ),
            (
                right,
                [float(e.ecs_gregory) for e in emulations],
                [float(e.ecs) for e in emulations],
                "Gregory estimate of ECS, abrupt-4xCO2 years 1-150 (K)",
                "emulator's ECS (K)",
            ),
        ):
            panel.plot(x, y, "o", ms=4, color="C0")
            finite = [v for v in x + y if np.isfinite(v)]
            if finite:
                span = (min(finite) * 0.9, max(finite) * 1.1)
                panel.plot(span, span, color="0.6", lw=0.8, label="1:1")
                panel.legend(fontsize=8)
            panel.set_xlabel(xlabel)
            panel.set_ylabel(ylabel)
        left.set_title(f"{len(emulations)} CMIP6 models emulated", fontsize=10)
    if title:
        fig.suptitle(title)
    _save(fig, path)
    return fig
