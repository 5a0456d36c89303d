"""Wagner & Eisenman's (2015) hysteresis experiment: the periodic states of
`ebm.SeaIceModel` as the forcing F is swept down and up, for the full model and
its simpler variants (no seasonal cycle, `S1 = 0`; no sea-ice thermodynamics,
`thermodynamics=False`; neither).

For each variant, `ebm.periodic_sweep` follows the attracting periodic state from
the warm, ice-free climate at the largest F down to the smallest (cooling); then
up again from the cooling sweep's last state whose annual-mean ice edge is
equatorward of `--warming-start` degrees, or else its last before the snowball
(warming, from an ice cap); and up from the
cooling sweep's last state (the snowball, if it got there). Where the cooling and
warming sweeps disagree by more than a box, the variant has two attracting states
at that F: hysteresis. Each point's annual-mean, summer (least) and winter
(greatest) ice edge, and whether it converged, are written out.

Writes benchmarks/results/seaice_hysteresis.json and .png.

Run: python benchmarks/seaice_hysteresis.py [--n 100] [--step 1]
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


def sweep_edges(sweep, model):
    """Each point's annual-mean, least and greatest ice edge, degrees north, and
    whether it converged."""
    import jax
    import numpy as np

    x = np.asarray(jax.vmap(jax.vmap(model.ice_edge))(sweep.states))
    latitude = np.degrees(np.arcsin(x))
    return {
        "annual_mean": np.degrees(np.arcsin(x.mean(axis=1))).tolist(),
        "summer": latitude.max(axis=1).tolist(),
        "winter": latitude.min(axis=1).tolist(),
        "converged": np.asarray(sweep.converged).tolist(),
    }


def run_variant(variant, F, args):
    import numpy as np

    import ebm

    model = ebm.SeaIceModel(args.n, thermodynamics=variant["thermodynamics"])
    values = {} if variant["S1"] is None else {"S1": variant["S1"]}
    params = model.Params(F=float(F[-1]), **values)
    settings = dict(model=model, steps_per_year=args.steps_per_year)
    start = time.perf_counter()
    cooling = ebm.periodic_sweep(params, "F", F[::-1], **settings)
    cooling_edges = sweep_edges(cooling, model)
    mean = np.asarray(cooling_edges["annual_mean"])
    converged = np.asarray(cooling_edges["converged"], dtype=bool)
    capped = np.flatnonzero((mean < args.warming_start) & (mean > 0.0) & converged)
    if not capped.size:
        # The ice cap jumps to the snowball before it reaches that latitude: warm
        # from its last (most equatorward) state.
        capped = np.flatnonzero((mean > 0.0) & converged)[-1:]
    rows = {"cooling": {"F": F[::-1].tolist(), **cooling_edges}}
    starts = {}
    if capped.size:
        starts["warming"] = int(capped[0])
    starts["from the last cooling state"] = len(F) - 1
    for name, index in starts.items():
        up = F[::-1][: index + 1][::-1]
        state0 = {"E": cooling.state0["E"][index]}
        sweep = ebm.periodic_sweep(params, "F", up, start=state0, **settings)
        rows[name] = {"F": up.tolist(), **sweep_edges(sweep, model)}
    seconds = time.perf_counter() - start
    return {"rows": rows, "seconds": seconds, "hysteresis": hysteresis(rows, args.n)}


def hysteresis(rows, n):
    """The F at which cooling and warming reach annual-mean edges more than one box
    (at the pole, where boxes are widest in latitude) apart, both converged."""
    import numpy as np

    if "warming" not in rows:
        return []
    box = np.degrees(np.arccos(1.0 - 1.0 / n))
    cooling = dict(zip(rows["cooling"]["F"], rows["cooling"]["annual_mean"]))
    ok = dict(zip(rows["cooling"]["F"], rows["cooling"]["converged"]))
    found = []
    warming = rows["warming"]
    for F, edge, converged in zip(
        warming["F"], warming["annual_mean"], warming["converged"]
    ):
        if converged and ok.get(F) and abs(edge - cooling[F]) > box:
            found.append(F)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--steps-per-year", type=int, default=200)
    parser.add_argument("--low", type=float, default=-25.0)
    parser.add_argument("--high", type=float, default=15.0)
    parser.add_argument("--step", type=float, default=1.0)
    parser.add_argument(
        "--warming-start",
        type=float,
        default=40.0,
        help="the warming sweep starts from the cooling state whose annual-mean "
        "ice edge is first equatorward of this latitude, degrees (40)",
    )
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args()

    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    F = np.round(np.arange(args.low, args.high + 0.5 * args.step, args.step), 6)
    results = {}
    for name in args.variants:
        results[name] = run_variant(VARIANTS[name], F, args)
        print(
            f"{name}: {results[name]['seconds']:.0f} s, hysteresis at F = "
            f"{results[name]['hysteresis']}",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "machine": machine(),
        "settings": {
            "n": args.n,
            "steps_per_year": args.steps_per_year,
            "F": F.tolist(),
            "widths": "the defaults of ebm.SeaIceParams",
        },
        "variants": results,
    }
    (RESULTS / "seaice_hysteresis.json").write_text(json.dumps(payload, indent=1))
    plot(results, RESULTS / "seaice_hysteresis.png")


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5), sharex=True, sharey=True)
    colours = {
        "cooling": "C0",
        "warming": "C3",
        "from the last cooling state": "0.5",
    }
    for ax, (name, result) in zip(axes.flat, results.items()):
        for sweep, row in result["rows"].items():
            F = np.asarray(row["F"])
            ok = np.asarray(row["converged"], dtype=bool)
            colour = colours[sweep]
            mean = np.where(ok, row["annual_mean"], np.nan)
            ax.plot(F, mean, color=colour, lw=1.8, label=f"{sweep}, annual mean")
            for key in ("summer", "winter"):
                edge = np.where(ok, row[key], np.nan)
                ax.plot(F, edge, color=colour, lw=0.8, ls=":")
            if not ok.all():
                ax.plot(F[~ok], np.zeros((~ok).sum()), "x", color=colour)
        ax.set_title(name)
        ax.set_ylim(-2, 92)
    for ax in axes[1]:
        ax.set_xlabel("forcing F (W m-2)")
    for ax in axes[:, 0]:
        ax.set_ylabel("ice edge (degrees N)")
    axes[0, 0].legend(fontsize=7, loc="lower right")
    fig.suptitle(
        "Periodic states swept in F (dotted: summer and winter edges; x: not converged)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
