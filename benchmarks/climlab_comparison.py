"""The same model in ebm and in climlab: agreement of the equilibrium, and speed.

climlab's `EBM` (90 cells, step-function ice albedo, its default 4-day time step) is
integrated until a year changes no cell by more than 1e-6 K. ebm solves the same
configuration: 90 cells, the cell-centred albedo (`ebm.SmoothIceAlbedo`) with a
transition 0.01 K wide, which is climlab's step to within the tolerance. Records the
largest temperature difference, the global means and ice edges, and the times
(climlab's spin-up; ebm's `equilibrium` after compilation, median of 7, and with
compilation; and ebm's gradient with respect to every parameter, which climlab
cannot give).

Then the grey-body configuration of `tests/test_climlab.py` (climlab's `Boltzmann`
OLR, emissivity 0.69, tau 0.95, ebm's ice_width 1e-3 K) at 90, 180 and 360 cells in
both models, to the same 1e-6 K a year in climlab: the global means and ice edges,
so that the test's tolerances can be read against climlab's own spread across
resolution.
climlab's ice edge is the bound of its first ice-covered cell, so it moves in steps
of the cell width; ebm's interpolates between the centres that straddle `Tf`.

Writes benchmarks/results/climlab_comparison.json and climlab_comparison.png.
Needs climlab (`pip install climlab six pooch`). `--resolutions-only` runs only the
grey-body resolutions (no timings) and updates that part of the JSON.

Run: python benchmarks/climlab_comparison.py [--resolutions-only]
"""

import argparse
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
RESOLUTIONS = (90, 180, 360)
GREY_BODY = dict(eps=0.69, tau=0.95)
# A step to within 1e-3 K, as climlab's: at 360 cells a cell centre sits 0.012 K
# from Tf, where a width of 0.01 K would still blend the two albedos.
ICE_WIDTH = 1e-3


def _climlab():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optional Fortran extensions it lacks
        import climlab
    return climlab


def _spin_up(model):
    """Integrate a climlab model a year at a time until no cell changes by more
    than `TOLERANCE`; its final temperature, the years and the seconds taken."""
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
    return T, years, time.perf_counter() - started


def climlab_equilibrium():
    climlab = _climlab()
    model = climlab.EBM()
    T, years, seconds = _spin_up(model)
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


def grey_body_resolutions():
    """climlab's EBM with `Boltzmann` OLR and ebm's `GreyBodyLongwave`, at each of
    `RESOLUTIONS`: global means, ice edges, and their largest difference."""
    climlab = _climlab()
    from climlab.radiation import Boltzmann

    rows = {}
    for n_lat in RESOLUTIONS:
        reference = climlab.EBM(num_lat=n_lat)
        reference.remove_subprocess("LW")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            longwave = Boltzmann(**GREY_BODY, state=reference.state, **reference.param)
        reference.add_subprocess("LW", longwave)
        T_reference, years, _ = _spin_up(reference)
        model = ebm.EnergyBalanceModel(
            grid=ebm.Grid(n_lat),
            albedo=ebm.SmoothIceAlbedo(),
            longwave=ebm.GreyBodyLongwave(),
        )
        params = model.Params(emissivity=GREY_BODY["eps"], ice_width=ICE_WIDTH)
        state = ebm.equilibrium(params, model=model)
        rows[str(n_lat)] = dict(
            climlab=dict(
                global_mean=float(climlab.global_mean(reference.Ts)),
                ice_edge=float(np.max(reference.icelat)),
                years=years,
            ),
            ebm=dict(
                global_mean=float(state.global_mean),
                ice_edge=float(state.ice_edge),
                converged=bool(state.result == ebm.RESULTS.successful),
            ),
            max_abs_difference_K=float(np.max(np.abs(state.T - T_reference))),
        )
        print(f"grey body, {n_lat} cells: {rows[str(n_lat)]}")

    def spread(model, key):
        values = [row[model][key] for row in rows.values()]
        return max(values) - min(values)

    return dict(
        configuration=dict(
            **GREY_BODY, ice_width=ICE_WIDTH, tolerance_K_per_year=TOLERANCE
        ),
        resolutions=rows,
        spread={
            f"{model}_{key}": spread(model, key)
            for model in ("climlab", "ebm")
            for key in ("global_mean", "ice_edge")
        },
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--resolutions-only",
        action="store_true",
        help="only the grey-body resolutions, merged into the existing JSON",
    )
    arguments = parser.parse_args()
    path = RESULTS / "climlab_comparison.json"
    if arguments.resolutions_only:
        saved = json.loads(path.read_text())
        saved["grey_body_resolutions"] = grey_body_resolutions()
        saved["grey_body_resolutions"]["command"] = (
            "python benchmarks/climlab_comparison.py --resolutions-only"
        )
        path.write_text(json.dumps(saved, indent=2) + "\n")
        print(f"spread: {saved['grey_body_resolutions']['spread']}")
        return
    saved = dict(
        machine=machine(),
        command="python benchmarks/climlab_comparison.py",
        climlab=climlab_equilibrium(),
        ebm=ebm_equilibrium(),
        grey_body_resolutions=grey_body_resolutions(),
    )
    difference = np.asarray(saved["ebm"]["T"]) - np.asarray(saved["climlab"]["T"])
    saved["max_abs_difference_K"] = float(np.max(np.abs(difference)))
    saved["speedup"] = saved["climlab"]["seconds"] / saved["ebm"]["seconds"]
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(saved, indent=2) + "\n")
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
