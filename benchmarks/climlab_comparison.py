"""The same model in ebm and in climlab: agreement of the equilibrium, and speed.

climlab's `EBM` (90 cells, step-function ice albedo, its default 4-day time step) is
integrated until a year changes no cell by more than 1e-6 K. ebm solves the same
configuration: 90 cells, the cell-centred albedo (`ebm.SmoothIceAlbedo`) with a
transition 0.01 K wide, which is climlab's step to within the tolerance. Records the
largest temperature difference, the global means and ice edges, and the times
(climlab's spin-up; ebm's `equilibrium` after compilation, median of 7, and with
compilation; and ebm's gradient with respect to every parameter, which climlab
cannot give).

Writes benchmarks/results/climlab_comparison.json and climlab_comparison.png.
Needs climlab (`pip install climlab six pooch`).

Run: python benchmarks/climlab_comparison.py
"""

import json
import pathlib
import statistics
import time
import warnings

import jax
import numpy as np
from _machine import machine

import ebm


RESULTS = pathlib.Path(__file__).parent / "results"
TOLERANCE = 1e-6  # K per year


def climlab_equilibrium():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optional Fortran extensions it lacks
        import climlab

    model = climlab.EBM()
    started = time.perf_counter()
    years = 0
    previous = np.asarray(model.Ts).ravel().copy()
    while True:
        model.integrate_years(1, verbose=False)
        years += 1
        T = np.asarray(model.Ts).ravel().copy()
        if np.max(np.abs(T - previous)) < TOLERANCE:
            break
        previous = T
    seconds = time.perf_counter() - started
    return dict(
        version=climlab.__version__,
        lat=np.asarray(model.lat).tolist(),
        T=T.tolist(),
        global_mean=float(climlab.global_mean(model.Ts)),
        ice_edge=float(np.max(model.icelat)),
        years=years,
        seconds=seconds,
        timestep_days=float(model.timestep) / 86400,
    )


def ebm_equilibrium():
    model = ebm.EnergyBalanceModel(grid=ebm.Grid(90), albedo=ebm.SmoothIceAlbedo())
    params = ebm.Params(ice_width=0.01)
    started = time.perf_counter()
    state = jax.block_until_ready(ebm.equilibrium(params, model=model))
    first = time.perf_counter() - started
    times = []
    for _ in range(7):
        started = time.perf_counter()
        jax.block_until_ready(ebm.equilibrium(params, model=model))
        times.append(time.perf_counter() - started)
    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=model).global_mean)
    gradient(params)
    started = time.perf_counter()
    jax.block_until_ready(gradient(params))
    gradient_seconds = time.perf_counter() - started
    return dict(
        T=np.asarray(state.T).tolist(),
        global_mean=float(state.global_mean),
        ice_edge=float(state.ice_edge),
        seconds_with_compilation=first,
        seconds=statistics.median(times),
        gradient_seconds=gradient_seconds,
    )


def plot(saved, path):
    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, (profile, difference) = plt.subplots(
        1, 2, figsize=(11, 4), layout="constrained"
    )
    lat = np.asarray(saved["climlab"]["lat"])
    climlab_T, ebm_T = np.asarray(saved["climlab"]["T"]), np.asarray(saved["ebm"]["T"])
    profile.plot(lat, climlab_T, "k.", label=f"climlab {saved['climlab']['version']}")
    profile.plot(lat, ebm_T, "-", label="ebm")
    profile.set_xlabel("latitude (°N)")
    profile.set_ylabel("equilibrium temperature (°C)")
    profile.legend()
    difference.plot(lat, ebm_T - climlab_T)
    difference.set_xlabel("latitude (°N)")
    difference.set_ylabel("ebm - climlab (K)")
    fig.savefig(path, dpi=120)


def main():
    saved = dict(
        machine=machine(),
        command="python benchmarks/climlab_comparison.py",
        climlab=climlab_equilibrium(),
        ebm=ebm_equilibrium(),
    )
    difference = np.asarray(saved["ebm"]["T"]) - np.asarray(saved["climlab"]["T"])
    saved["max_abs_difference_K"] = float(np.max(np.abs(difference)))
    saved["speedup"] = saved["climlab"]["seconds"] / saved["ebm"]["seconds"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "climlab_comparison.json").write_text(json.dumps(saved, indent=2) + "\n")
    plot(saved, RESULTS / "climlab_comparison.png")
    c, e = saved["climlab"], saved["ebm"]
    print(
        f"climlab: {c['years']} years to 1e-6 K/year in {c['seconds']:.2f} s; global "
        f"mean {c['global_mean']:.6f} C, ice edge {c['ice_edge']:.1f}\n"
        f"ebm: {e['seconds'] * 1e3:.2f} ms ({e['seconds_with_compilation']:.1f} s "
        f"with compilation), gradient {e['gradient_seconds'] * 1e3:.1f} ms; global "
        f"mean {e['global_mean']:.6f} C, ice edge {e['ice_edge']:.2f}\n"
        f"largest difference {saved['max_abs_difference_K']:.1e} K; ebm "
        f"{saved['speedup']:.0f}x faster"
    )


if __name__ == "__main__":
    main()
