"""Wagner & Eisenman's (2015) hysteresis, by continuation: the branch of periodic
states of `ebm.SeaIceModel` in the forcing F, stable and unstable, for the full
model and its simpler variants (no seasonal cycle, `S1 = 0`; no sea-ice
thermodynamics, `thermodynamics=False`; neither).

Each variant's branch is walked by `ebm.periodic_continuation` from the periodic
state at the largest F (warm) down to the smallest, within those bounds, around
every fold; where the walk turns (a fold) the variant has two states over a range
of F and hysteresis, with the unstable periodic states between them. Each point's
annual-mean, summer (most poleward) and winter (most equatorward) ice edge, its
leading Floquet multiplier and the folds are written out.

Writes benchmarks/results/seaice_continuation.json and .png.

Run: python benchmarks/seaice_continuation.py [--n 25 50] [--steps-per-year 100]
"""

import argparse
import json
import pathlib
import time


RESULTS = pathlib.Path(__file__).parent / "results"

VARIANTS = {
    "full model": {"thermodynamics": True, "S1": None},
    "no seasonal cycle (S1 = 0)": {"thermodynamics": True, "S1": 0.0},
    "no sea-ice thermodynamics": {"thermodynamics": False, "S1": None},
    "neither": {"thermodynamics": False, "S1": 0.0},
}
# Without a seasonal cycle the walk, past its first fold, follows the ice cap's
# strongly unstable states (Floquet multipliers of 10^3 a year and more, with the
# default switches) in steps near `min_step`: a few hundred points show it.
SHORT_WALK = 300


def branch_rows(branch, model):
    """Each point's F, annual-mean, summer and winter ice edge (degrees north),
    Floquet multiplier and stability."""
    import jax
    import numpy as np

    x = np.asarray(jax.vmap(jax.vmap(model.ice_edge))(branch.cycles.states))
    latitude = np.degrees(np.arcsin(x))
    return {
        "F": np.asarray(branch.values).tolist(),
        "annual_mean": np.degrees(np.arcsin(x.mean(axis=1))).tolist(),
        "summer": latitude.max(axis=1).tolist(),
        "winter": latitude.min(axis=1).tolist(),
        "floquet_multiplier": np.asarray(branch.floquet_multiplier).tolist(),
        "stable": np.asarray(branch.stable).tolist(),
        "residual": np.asarray(branch.cycles.residual).tolist(),
    }


def loop_widths(folds):
    """The width in F of each loop: the folds in consecutive pairs (a branch that
    turns back at one fold turns forward again at the next)."""
    return [abs(a - b) for a, b in zip(folds[0::2], folds[1::2])]


def run_variant(variant, n, args):
    import jax.numpy as jnp

    import ebm

    model = ebm.SeaIceModel(n, thermodynamics=variant["thermodynamics"])
    values = {} if variant["S1"] is None else {"S1": variant["S1"]}
    params = model.Params(F=args.high, **values)
    # The walk starts from the ice-free climate: open water at 20 degC everywhere
    # (the model's own start, with ice poleward of 56 degrees, can fall into the
    # snowball without thermodynamics).
    warm = {"E": jnp.full(n, 20.0) * params.cw}
    start = time.perf_counter()
    branch = ebm.periodic_continuation(
        params,
        "F",
        stop=args.low,
        bounds=(args.low, args.high),
        model=model,
        start=warm,
        steps_per_year=args.steps_per_year,
        parameter_scale=args.parameter_scale,
        max_step=args.max_step,
        max_points=args.max_points if variant["S1"] is None else SHORT_WALK,
        throw=False,
        progress=True,
    )
    seconds = time.perf_counter() - start
    folds = branch.folds.tolist()
    return {
        "points": branch_rows(branch, model),
        "folds": folds,
        "loop_widths": loop_widths(folds),
        "result": str(ebm.RESULTS[branch.result]) or "successful",
        "num_points": branch.num_points,
        "seconds": seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n",
        type=int,
        nargs="+",
        default=[25, 50],
        help="boxes (the figure: the last)",
    )
    parser.add_argument("--steps-per-year", type=int, default=100)
    parser.add_argument("--low", type=float, default=-5.0)
    parser.add_argument("--high", type=float, default=15.0)
    parser.add_argument("--parameter-scale", type=float, default=0.4)
    parser.add_argument("--max-step", type=float, default=0.25)
    parser.add_argument("--max-points", type=int, default=3000)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    results = {}
    for n in args.n:
        results[n] = {}
        for name in args.variants:
            result = run_variant(VARIANTS[name], n, args)
            results[n][name] = result
            widths = result["loop_widths"]
            print(
                f"n = {n}, {name}: {result['num_points']} points in "
                f"{result['seconds']:.0f} s ({result['result']}), "
                f"{len(result['folds'])} folds, widest loop "
                f"{max(widths, default=0.0):.3f} W m-2 "
                f"(F = {[round(f, 2) for f in result['folds']]})",
                flush=True,
            )
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "machine": machine(),
        "settings": {
            "n": args.n,
            "steps_per_year": args.steps_per_year,
            "bounds": [args.low, args.high],
            "parameter_scale": args.parameter_scale,
            "max_step": args.max_step,
            "widths": "the defaults of ebm.SeaIceParams",
        },
        "resolutions": {str(n): variants for n, variants in results.items()},
    }
    (RESULTS / "seaice_continuation.json").write_text(json.dumps(payload, indent=1))
    plot(results[args.n[-1]], RESULTS / "seaice_continuation.png")


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5), sharex=True, sharey=True)
    for ax, (name, result) in zip(axes.flat, results.items()):
        points = result["points"]
        F = np.asarray(points["F"])
        stable = np.asarray(points["stable"], dtype=bool)
        for key, width in (("annual_mean", 1.8), ("summer", 0.8), ("winter", 0.8)):
            edge = np.asarray(points[key])
            ax.plot(F, np.where(stable, edge, np.nan), color="C0", lw=width)
            # Unstable points, and the segments joining them to their neighbours.
            unstable = ~stable | np.r_[~stable[1:], False] | np.r_[False, ~stable[:-1]]
            ax.plot(F, np.where(unstable, edge, np.nan), color="C3", lw=width, ls="--")
        for fold in result["folds"]:
            ax.axvline(fold, color="0.6", lw=0.6)
        widest = max(result["loop_widths"], default=0.0)
        ax.set_title(
            f"{name}: {len(result['folds'])} folds, widest loop {widest:.2f} W m-2",
            fontsize=9,
        )
        ax.set_ylim(-2, 92)
    for ax in axes[1]:
        ax.set_xlabel("forcing F (W m-2)")
    for ax in axes[:, 0]:
        ax.set_ylabel("ice edge (degrees N)")
    axes[0, 0].plot([], [], color="C0", label="stable")
    axes[0, 0].plot([], [], color="C3", ls="--", label="unstable")
    axes[0, 0].legend(fontsize=8, loc="lower right")
    fig.suptitle(
        "Periodic states continued in F: annual-mean (thick), summer and winter "
        "(thin) ice edge; grey lines: folds"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
