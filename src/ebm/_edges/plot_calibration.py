"""A historical calibration (`ebm.calibrate_historical`): the posterior predictive
warming against the observations, and the posteriors of ECS and TCR against the
IPCC AR6 assessed ranges."""

import numpy as np

from .plot import _axes, _save


def plot_calibration(draws, *, runs=None, ax=None, path=None):
    """Three panels: the warming of the posterior's draws (5-95 % and median)
    against the observed warming, K above 1850-1900; the histograms of ECS and TCR
    with AR6's likely and very likely ranges shaded.

    **Arguments:**

    - `draws`: an `ebm.Posterior` from `ebm.calibrate_historical`.
    - `runs`: the draws' warming at the observed times, `(runs, times)` (default:
        `ebm.predictive_warming(draws, times)` of 200 draws).
    - `ax`: three matplotlib axes to draw on (default: a new figure).
    - `path`: if given, save the figure there.

    **Returns:**

    The matplotlib `Figure` drawn on.
    """
    from .._analysis.calibration import AR6_RANGES, predictive_warming

    log_posterior = draws.log_posterior
    times = np.asarray(log_posterior.problem.times)
    observed = np.asarray(log_posterior.observed["global_mean"])
    runs = predictive_warming(draws, times) if runs is None else np.asarray(runs)
    fig, axes = _axes(ax, 3, figsize=(13, 3.8), width_ratios=(2, 1, 1))
    first = axes[0]
    low, mid, high = np.percentile(runs, [5, 50, 95], axis=0)
    first.fill_between(times, low, high, color="C0", alpha=0.3, label="posterior 5-95%")
    first.plot(times, mid, color="C0", label="posterior median")
    first.plot(times, observed, color="k", lw=1, label="observed (AR6 GMST)")
    first.set(xlabel="year", ylabel="warming above 1850-1900 (K)")
    first.legend(loc="upper left", fontsize=8)
    for panel, name in zip(axes[1:], ("ecs", "tcr")):
        values = np.asarray(draws[name]).ravel()
        panel.hist(values[np.isfinite(values)], bins=40, color="C0", density=True)
        ranges = AR6_RANGES[name]
        panel.axvspan(
            *ranges["very likely"], color="0.85", zorder=-2, label="very likely"
        )
        panel.axvspan(*ranges["likely"], color="0.7", zorder=-1, label="likely (AR6)")
        panel.set(xlabel=f"{name.upper()} (K)", yticks=[])
        panel.legend(fontsize=8)
    _save(fig, path)
    return fig
