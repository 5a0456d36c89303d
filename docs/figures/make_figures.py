"""The documentation's figures, each drawn by `ebm`'s own plot helpers.

`mkdocs build` runs every figure here (through `docs/hooks.py`) into a temporary
folder and serves it as `figures/<name>.png`; a page shows one with
`<!-- ebm:figure <name> -->`, which the hook replaces with the image, its caption and
the command that makes it:

    python docs/figures/make_figures.py [NAME ...] [--out FOLDER]

writes `<name>.png` for each name (default: all of them) into `FOLDER` (default:
the current folder).

Two kinds of figure. Results computed here, on coarse grids so the docs build stays
fast. And the benchmarks' figures, redrawn from the JSON they committed under
`benchmarks/results/` by each benchmark script's own `plot` (`python
benchmarks/<name>.py` measures again and rewrites the JSON).
"""

import argparse
import dataclasses
import functools
import importlib
import json
import pathlib
import sys
from collections.abc import Callable


ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"
COMMAND = "python docs/figures/make_figures.py"


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure: what its caption says, and how it is drawn into `path`."""

    caption: str
    draw: Callable[[pathlib.Path], None]
    # Where it comes from, for the line under the figure.
    source: str = ""


FIGURES: dict[str, Figure] = {}


def figure(caption: str, source: str = ""):
    def register(draw):
        FIGURES[draw.__name__] = Figure(caption, draw, source)
        return draw

    return register


def _pyplot():
    import matplotlib

    # A script without a display: nothing is shown, every figure is saved.
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@functools.cache
def _equilibrium():
    import ebm

    params = ebm.Params()
    return params, ebm.equilibrium(params)


# --- Results computed here ----------------------------------------------------------


@figure(
    "The equilibrium of `ebm.Params()` (climlab's defaults, 90 cells) from the "
    "present-day start: surface temperature against latitude, the freezing "
    "threshold `Tf` and the ice edge."
)
def equilibrium(path):
    import ebm

    params, state = _equilibrium()
    ebm.plot_equilibrium(state, params=params, path=path)


@figure(
    "The same equilibrium and its northward heat transport, drawn into one figure's "
    "two axes with `ax=`: the diffusive transport peaks in midlatitudes and "
    "vanishes at the poles."
)
def equilibrium_transport(path):
    import ebm

    params, state = _equilibrium()
    model = ebm.EnergyBalanceModel()
    fig, (left, right) = _pyplot().subplots(1, 2, figsize=(11, 4), layout="constrained")
    ebm.plot_equilibrium(state, params=params, ax=left)
    ebm.plot_heat_transport(state, params, model, ax=right, path=path)


@figure(
    "The snowball-Earth hysteresis: equilibria from S0 = 2000 down to 1000 W m-2 "
    "from the warm start (`ebm.continuation`, 60 cells), stable branches solid, "
    "unstable dashed, each fold marked with its S0."
)
def hysteresis(path):
    import ebm

    loop = ebm.continuation(ebm.Params(S0=2000.0), "S0", stop=1000.0, start="warm")
    fig = ebm.plot_branch(loop)
    fig.axes[0].set_title("ebm.continuation(ebm.Params(S0=2000.0), 'S0', stop=1000.0)")
    fig.savefig(path, dpi=120)


@figure(
    "A fit of the diffusivity D to the equilibrium at D = 0.3 (`ebm.fit` with "
    "`optax.lbfgs()`, 30 cells): the target, the profile at the initial D = 0.555 "
    "and at the fitted D, and the loss at each step."
)
def fit(path):
    import optax

    import ebm

    grid = ebm.Grid(30)
    start = ebm.Params()
    target = ebm.equilibrium(ebm.Params(D=0.3), grid=grid).T
    result = ebm.fit(start, target, fit=("D",), optimizer=optax.lbfgs(), grid=grid)
    ebm.plot_fit(
        result,
        target,
        ebm.equilibrium(start, grid=grid),
        ebm.equilibrium(result.params, grid=grid),
        path=path,
    )


@figure(
    "The sensitivity of the equilibrium profile to every parameter "
    "(`ebm.sensitivity(params, 'T')`, 30 cells): the change in T(lat) for a 1% "
    "change in each."
)
def sensitivity(path):
    import ebm

    params = ebm.Params()
    profiles = ebm.sensitivity(params, "T", grid=ebm.Grid(30))
    ebm.plot_sensitivity(profiles, params, path=path)


@figure(
    "The periodic seasonal cycle of `ebm.Params()` with daily insolation "
    "(`ebm.periodic_equilibrium`, 30 cells, 73 steps a year): temperature against "
    "day and latitude with the `Tf` contour and each hemisphere's ice edge; the annual "
    "mean and amplitude of each latitude."
)
def seasonal_cycle(path):
    import ebm

    params = ebm.Params()
    cycle = ebm.periodic_equilibrium(params, grid=ebm.Grid(30), steps_per_year=73)
    ebm.plot_seasonal_cycle(cycle, params=params, path=path)


@figure(
    "The surface warming of the global two-layer model (`ebm.TwoLayerModel()`, "
    "efficacy 1 and 1.3) and of the three-layer model (`ebm.NLayerModel(3)`) under "
    "abrupt-4xCO2 (left) and 1pctCO2 (right), each from `ebm.integrate`; the grey "
    "band is the TCR's averaging window, years 61-80."
)
def layer_responses(path):
    import diffrax
    import jax.numpy as jnp

    import ebm

    years = jnp.arange(151.0)
    models = {
        "two-layer": (ebm.TwoLayerModel(), {}),
        "two-layer, efficacy 1.3": (ebm.TwoLayerModel(), {"efficacy": 1.3}),
        "three-layer": (ebm.NLayerModel(3), {}),
    }
    fig, axes = _pyplot().subplots(1, 2, figsize=(11, 4), layout="constrained")
    for ax, (scenario, name) in zip(
        axes, ((ebm.AbruptCO2(4.0), "abrupt-4xCO2"), (ebm.OnePercentCO2(), "1pctCO2"))
    ):
        for label, (model, values) in models.items():
            model = _with_forcing(model, scenario)
            params = model.Params(**values)
            run = ebm.integrate(
                params, model=model, years=150.0, saveat=diffrax.SaveAt(ts=years)
            )
            ax.plot(run.ts, run.Ts, label=label)
        ax.set_title(name)
        ax.set_xlabel("year")
        ax.set_ylabel("surface warming (K)")
    axes[1].axvspan(60, 80, color="0.9", zorder=0)
    axes[0].legend(loc="lower right")
    fig.savefig(path, dpi=120)


def _with_forcing(model, scenario):
    import equinox as eqx

    return eqx.tree_at(lambda m: m.forcing, model, scenario)


@figure(
    "The Gregory plot of abrupt-4xCO2 (`ebm.gregory`, years 1-150): annual-mean "
    "top-of-atmosphere imbalance against warming for the two-layer model with "
    "efficacy 1 (a straight line through F4x and 2 ECS) and 1.3 (curved: the "
    "regression's effective sensitivity falls short of ECS)."
)
def gregory(path):
    import numpy as np

    import ebm

    model = ebm.TwoLayerModel()
    fig, ax = _pyplot().subplots(figsize=(6, 4.5), layout="constrained")
    for efficacy in (1.0, 1.3):
        params = model.Params(efficacy=efficacy)
        fit = ebm.gregory(params, model)
        line = ax.plot(fit.T, fit.N, "o", ms=3, label=f"efficacy {efficacy:g}")[0]
        T = np.linspace(0.0, 2 * float(fit.effective_sensitivity), 2)
        ax.plot(
            T,
            float(fit.forcing) - float(fit.feedback) * T,
            color=line.get_color(),
            lw=1,
            label=f"fit: effective sensitivity {float(fit.effective_sensitivity):.2f}"
            f" K (ECS {float(ebm.ecs(params, model)):.2f} K)",
        )
    ax.set_xlabel("annual-mean warming T (K)")
    ax.set_ylabel("annual-mean TOA imbalance N (W m-2)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)


@figure(
    "The grey-body model of Building your own model (`ebm.GreyBodyLongwave`, "
    "emissivity 0.69, 90 cells) against the default linear OLR: two calls of "
    "`ebm.plot_equilibrium` into one axes."
)
def grey_body(path):
    import ebm

    grid = ebm.Grid(90)
    model = ebm.EnergyBalanceModel(grid=grid, longwave=ebm.GreyBodyLongwave())
    params = model.Params(emissivity=0.69)
    grey = ebm.equilibrium(params, model=model)
    linear = ebm.equilibrium(ebm.Params(), grid=grid)
    fig, ax = _pyplot().subplots(figsize=(6, 4), layout="constrained")
    ebm.plot_equilibrium(linear, ax=ax, label="linear OLR, A + B T")
    ebm.plot_equilibrium(grey, params=params, ax=ax, label="grey body, emissivity 0.69")
    ax.set_title(
        f"global mean {float(linear.global_mean):.1f} °C (linear), "
        f"{float(grey.global_mean):.1f} °C (grey body)"
    )
    fig.savefig(path, dpi=120)


@figure(
    "The periodic state of `ebm.SeaIceModel(50)` at WE15's default parameters "
    "(`ebm.periodic_equilibrium`, 200 steps a year; `ebm.plot_sea_ice`): surface "
    "temperature with the ice edge (black) and the edge of the melting ice surface "
    "(red), ice thickness, and the ice edge through the year."
)
def sea_ice_cycle(path):
    import ebm

    model = ebm.SeaIceModel(50)
    params = model.Params()
    cycle = ebm.periodic_equilibrium(params, model=model, steps_per_year=200)
    ebm.plot_sea_ice(cycle, model, params, path=path)


# --- The benchmarks' figures, from their committed JSON ------------------------------


def _benchmark(name: str):
    """The benchmark script `benchmarks/<name>.py` as a module, for its `plot`."""
    # The scripts import their neighbour `_machine` as a top-level module.
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


def _saved(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def _from(script: str, json_name: str | None = None) -> str:
    return (
        f"measured by `python benchmarks/{script}.py` (which writes "
        f"`benchmarks/results/{json_name or script}.json`); redrawn from that file"
    )


@figure(
    "Memory and time of one gradient through N fixed steps, by checkpoint schedule "
    "(`ebm.plot_memory_scaling` of the committed table).",
    _from("memory"),
)
def memory(path):
    import ebm

    ebm.plot_memory_scaling(_saved("memory")["rows"], path=path)


@figure(
    "The cost of a call of each entry point (60 cells), each in a fresh process.",
    _from("call_latency"),
)
def call_latency(path):
    _benchmark("call_latency").plot(_saved("call_latency")["rows"], path)


@figure(
    "`ebm.equilibrium` next to the folds: the most root-finder iterations it takes "
    "to converge, against the number of cells, by start and ice width.",
    _from("equilibrium_robustness"),
)
def equilibrium_robustness(path):
    _benchmark("equilibrium_robustness").plot(
        _saved("equilibrium_robustness")["results"], path
    )


@figure(
    "d(global mean)/d(every parameter) through long runs (60 cells): memory and wall "
    "time against the years integrated, by adjoint.",
    _from("long_runs"),
)
def long_runs(path):
    _benchmark("long_runs").plot(_saved("long_runs")["rows"], path)


@figure(
    "The folds' S0 against the number of cells, for each ice width: the small ice "
    "cap's folds, the snowball fold and where the snowball melts.",
    _from("continuation"),
)
def continuation(path):
    _benchmark("continuation").plot(_saved("continuation")["resolution"], path)


@figure(
    "ROS2's largest error over the seasonal cycle against steps per year (slope -2), "
    "and the time of shooting and of spin-up against the mixed-layer depth.",
    _from("seasonal"),
)
def seasonal_benchmark(path):
    _benchmark("seasonal").plot(_saved("seasonal"), path)


@figure(
    "`ebm.ensemble` throughput (60 cells): equilibria and their gradients per second "
    "against the number of members, by number of devices.",
    _from("ensemble_throughput"),
)
def ensemble_throughput(path):
    saved = _saved("ensemble_throughput")
    _benchmark("ensemble_throughput").plot(saved["rows"], path, saved["platform"])


@figure(
    "Simulation-based calibration of NUTS on the historical problem: the rank of "
    "each true value among the posterior's draws, over replications from the "
    "priors; uniform when the sampler is calibrated.",
    _from("sbc_historical"),
)
def sbc_historical(path):
    saved = _saved("sbc_historical")
    _benchmark("sbc_historical").plot(
        saved["ranks"], saved["uniformity"], saved["settings"], path
    )


@figure(
    "One simulated year from the present-day profile: seconds and memory against "
    "the number of cells, by solver.",
    _from("high_resolution"),
)
def high_resolution(path):
    _benchmark("high_resolution").plot(_saved("high_resolution")["rows"], path)


@figure(
    "An equilibrium, and one with the gradient of its global mean, for the default "
    "model and each term swapped in, by number of cells.",
    _from("terms"),
)
def terms(path):
    _benchmark("terms").plot(_saved("terms")["rows"], path)


@figure(
    "ebm's equilibrium against climlab's `EBM_annual` on the same grid, and their "
    "difference.",
    _from("climlab_comparison"),
)
def climlab_comparison(path):
    _benchmark("climlab_comparison").plot(_saved("climlab_comparison"), path)


@figure(
    "`ebm.SeaIceModel` against Wagner & Eisenman's reference code at its default "
    "settings: the polar ice thickness and the ice edge through the 30th year from "
    "its start, with the reference's ghost layer as it is and ten times thinner.",
    _from("seaice_reference"),
)
def seaice_reference(path):
    _benchmark("seaice_reference").plot(_saved("seaice_reference")["rows"], path)


@figure(
    "Periodic states of `ebm.SeaIceModel` swept down and up in the forcing F "
    "(`ebm.periodic_sweep`), for the full model and its simpler variants: the "
    "annual-mean ice edge (thick) and its summer and winter extremes (dotted).",
    _from("seaice_hysteresis"),
)
def seaice_hysteresis(path):
    _benchmark("seaice_hysteresis").plot(_saved("seaice_hysteresis")["variants"], path)


@figure(
    "The branch of periodic states of `ebm.SeaIceModel` continued in the forcing F "
    "(`ebm.periodic_continuation`), for the full model and its simpler variants: "
    "the annual-mean ice edge (thick) and its summer and winter extremes (thin), "
    "stable (solid) and unstable (dashed), and the folds (grey).",
    _from("seaice_continuation"),
)
def seaice_continuation(path):
    saved = _saved("seaice_continuation")
    finest = str(saved["settings"]["n"][-1])
    _benchmark("seaice_continuation").plot(saved["resolutions"][finest], path)


@figure(
    "The two-layer model's posterior given the observed warming, projected through "
    "the SSPs: the median and 5-95 % range of its draws each year, and AR6's "
    "assessed 20-year means (Table SPM.1).",
    _from("ssp_projections"),
)
def ssp_projections(path):
    _benchmark("ssp_projections").plot_plumes(_saved("ssp_projections"), path)


@figure(
    "The gradient of the 2081-2100 warming under ssp245 (the posterior median) with "
    "respect to each year's forcing, by one reverse pass through the exact run.",
    _from("ssp_projections"),
)
def warming_gradient(path):
    _benchmark("ssp_projections").plot_gradient(_saved("ssp_projections"), path)


@figure(
    "Every shipped CMIP6 model emulated: the emulator's TCR against the model's own "
    "1pctCO2 run (out of sample), and the misfits of ebm's fit against those of AR6 "
    "Chapter 7's own tunings run through the same model.",
    _from("ssp_projections"),
)
def cmip6_emulations(path):
    _benchmark("ssp_projections").plot_emulations(_saved("ssp_projections"), path)


@figure(
    "Members per second of a 1750-2100 projection with its gradient "
    "(`ebm.ensemble`), and of FaIR 2.x's own ensemble path without one.",
    _from("projections"),
)
def projections_throughput(path):
    _benchmark("projections").plot(_saved("projections"), path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(FIGURES))
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."))
    arguments = parser.parse_args()
    unknown = sorted(set(arguments.names) - set(FIGURES))
    if unknown:
        parser.error(
            f"no figure {', '.join(unknown)}; the figures: {', '.join(FIGURES)}"
        )
    arguments.out.mkdir(parents=True, exist_ok=True)
    plt = _pyplot()
    for name in arguments.names or FIGURES:
        path = arguments.out / f"{name}.png"
        FIGURES[name].draw(path)
        plt.close("all")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
