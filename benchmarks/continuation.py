"""The hysteresis loop in S0: its cost, and its convergence with resolution.

1. Resolution study: the whole loop (S0 from 2000 down to 1000 W m-2, from an
   ice-free start) at n_lat = 60, 90, 180, 360, 720, for ice_width 1 K and 0.25 K:
   the four folds (refined on the extended system) and the present-day ice edge
   (S0 = 1365.2) on the warm branch, with the time of the loop.
2. The same loop with the cell-centred albedo (climlab's choice) at 1 K, steps
   capped at 0.5: the number of grid-scale folds on the staircase it walks.
3. The loop at n_lat = 90 after compilation, timed `--repeats` times.

Writes benchmarks/results/continuation.json and continuation.png.

Run: python benchmarks/continuation.py [--n-lat 60 90 180 360 720] [--repeats 5]
     python benchmarks/continuation.py --plot-only
"""

import argparse
import json
import pathlib
import statistics
import time

from _machine import machine

import ebm


RESULTS = pathlib.Path(__file__).parent / "results"
HIGH, LOW = 2000.0, 1000.0
FOLD_NAMES = ("small-cap, low", "small-cap, high", "snowball", "snowball melts")


def loop(n_lat, width, model=None, **settings):
    params = ebm.Params(S0=HIGH, ice_width=width)
    grid = None if model is not None else ebm.Grid(n_lat=n_lat)
    started = time.perf_counter()
    branch = ebm.continuation(
        params, "S0", stop=LOW, start="warm", grid=grid, model=model, **settings
    )
    return branch, time.perf_counter() - started


def resolution_row(n_lat, width):
    branch, seconds = loop(n_lat, width)
    present = ebm.equilibrium(
        ebm.Params(ice_width=width), grid=ebm.Grid(n_lat=n_lat), near_fold=None
    )
    return dict(
        n_lat=n_lat,
        ice_width=width,
        points=branch.num_points,
        seconds_with_compilation=seconds,
        result=str(branch.result == ebm.RESULTS.successful),
        folds=[
            dict(
                S0=float(f.value),
                ice_edge=float(f.ice_edge),
                global_mean=float(f.global_mean),
                residual=float(f.residual),
            )
            for f in branch.folds
        ],
        present_day_ice_edge=float(present.ice_edge),
    )


def pinned_row(n_lat):
    model = ebm.EnergyBalanceModel(
        grid=ebm.Grid(n_lat=n_lat), albedo=ebm.SmoothIceAlbedo()
    )
    branch, seconds = loop(n_lat, 1.0, model=model, max_step=0.5, max_points=20000)
    values = [float(f.value) for f in branch.folds]
    return dict(
        n_lat=n_lat,
        points=branch.num_points,
        folds=len(values),
        lowest_fold_S0=min(values),
        seconds_with_compilation=seconds,
    )


def timing(repeats):
    loop(90, 1.0)
    times = [loop(90, 1.0)[1] for _ in range(repeats)]
    branch, _ = loop(90, 1.0)
    return dict(
        n_lat=90,
        points=branch.num_points,
        seconds_median=statistics.median(times),
        seconds_all=times,
    )


def roles(folds):
    """The four folds of the loop by role; grid-scale extras are left out."""
    values = [f["S0"] for f in folds]
    snowball = min(range(len(folds)), key=values.__getitem__)
    return dict(
        zip(FOLD_NAMES, (folds[0], folds[1], folds[snowball], folds[-1]), strict=True)
    )


def plot(rows, path):
    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), layout="constrained")
    panels = dict(zip(FOLD_NAMES, (axes[0], axes[0], axes[1], axes[2]), strict=True))
    for width, marker in ((1.0, "o"), (0.25, "s")):
        mine = [r for r in rows if r["ice_width"] == width]
        n = [r["n_lat"] for r in mine]
        for name, ax in panels.items():
            values = [roles(r["folds"])[name]["S0"] for r in mine]
            ax.plot(n, values, marker=marker, label=f"{name}, {width} K")
    sizes = sorted({r["n_lat"] for r in rows})
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("n_lat")
        ax.set_ylabel("fold S0 (W m-2)")
        ax.legend(fontsize=8)
    axes[0].set_title("small-ice-cap folds")
    axes[1].set_title("snowball fold")
    axes[2].set_title("snowball melts")
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-lat", type=int, nargs="+", default=[60, 90, 180, 360, 720])
    parser.add_argument("--pinned-n-lat", type=int, nargs="+", default=[60, 90, 180])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--plot-only", action="store_true", help="redraw from the saved JSON"
    )
    arguments = parser.parse_args()
    if arguments.plot_only:
        saved = json.loads((RESULTS / "continuation.json").read_text())
        plot(saved["resolution"], RESULTS / "continuation.png")
        return

    rows = []
    for n_lat in arguments.n_lat:
        for width in (1.0, 0.25):
            row = resolution_row(n_lat, width)
            rows.append(row)
            folds = "  ".join(
                f"{f['S0']:9.3f} ({f['ice_edge']:5.2f})" for f in row["folds"]
            )
            print(
                f"n_lat {n_lat:4d} width {width:4.2f}: {row['points']:4d} points "
                f"{row['seconds_with_compilation']:6.1f} s  folds S0 (edge): {folds}  "
                f"present-day edge {row['present_day_ice_edge']:.3f}",
                flush=True,
            )
    pinned = []
    for n_lat in arguments.pinned_n_lat:
        row = pinned_row(n_lat)
        pinned.append(row)
        print(
            f"cell-centred albedo, n_lat {n_lat}: {row['folds']} folds, lowest at "
            f"S0 = {row['lowest_fold_S0']:.3f} ({row['points']} points)",
            flush=True,
        )
    timed = timing(arguments.repeats)
    print(
        f"whole loop at n_lat 90 after compilation: {timed['seconds_median']:.3f} s "
        f"(median of {arguments.repeats}; {timed['points']} points)"
    )

    RESULTS.mkdir(exist_ok=True)
    output = dict(
        machine=machine(),
        command="python benchmarks/continuation.py",
        resolution=rows,
        cell_centred_albedo=pinned,
        loop_timing=timed,
    )
    (RESULTS / "continuation.json").write_text(json.dumps(output, indent=2) + "\n")
    plot(rows, RESULTS / "continuation.png")
    print(f"wrote {RESULTS / 'continuation.json'} and continuation.png")


if __name__ == "__main__":
    main()
