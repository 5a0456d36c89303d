"""Where `ebm.periodic_equilibrium` of `ebm.SeaIceModel` succeeds: resolutions
n = 10 to 400 against forcings F = -30 to +20 W m-2, with the paper's other
parameters, and the switches' widths at a tenth of their defaults.

Each case is one call, as a user makes it, `throw=False`:
`ebm.periodic_equilibrium(SeaIceParams(F=F), model=SeaIceModel(n))`, with its
default steps a year (365; `--steps-per-year` for others), spin-up, Newton budget
and retry (a failed shooting is shot again after `retry_years` more of spin-up).
Recorded per case: the result (its message where it failed), the seconds the
call took (compilation included for the first call at each n and step count,
marked `first`), the Newton steps of the last shooting, the periodic residual
(W yr m-2, the enthalpy's change over the year) and the annual hemispheric mean
temperature (degC); and the same for its first shooting alone (`retry_years=0`,
`first_shooting`), which tells whether the retry was needed (where it failed, the
call with the retry shoots once more after it: its seconds include both).

Writes benchmarks/results/seaice_robustness.json (after every case, so that an
interrupted run keeps its results) and a map of the outcomes
(benchmarks/results/seaice_robustness.png).

Run: python benchmarks/seaice_robustness.py [--n 10 25 ...] [--forcing -30 ...]
    [--narrow-n 25 100] [--steps-per-year N]
"""

import argparse
import json
import pathlib
import time


RESULTS = pathlib.Path(__file__).parent / "results"

N = (10, 25, 50, 100, 200, 400)
FORCING = (-30.0, -20.0, -10.0, -5.0, 0.0, 5.0, 10.0, 20.0)

NARROW = (
    {"F": -5.0, "steps_per_year": 4000},
    {"D": 0.4, "steps_per_year": 1000},
)
"""The cases of narrow switches (a tenth of the default widths) tried at each of
`--narrow-n`: the issue's two failures."""


def one(n, overrides, steps_per_year, seen):
    """The case as a user calls it, and its first shooting alone (`retry_years=0`,
    the same compiled program), to tell whether the retry was needed."""
    import ebm

    model = ebm.SeaIceModel(n)
    params = model.Params(**overrides)
    key = (n, steps_per_year)
    steps = {} if steps_per_year is None else {"steps_per_year": steps_per_year}
    first = key not in seen
    seen.add(key)
    once = _call(model, params, {**steps, "retry_years": 0})
    row = {
        "n": n,
        "overrides": overrides,
        "steps_per_year": steps_per_year,
        "first": first,
        "first_shooting": once,
    }
    # With its default retry: the first shooting again where it failed.
    row.update(once if once["successful"] else _call(model, params, steps))
    return row


def _call(model, params, options):
    import jax
    import numpy as np

    import ebm

    start = time.perf_counter()
    cycle = ebm.periodic_equilibrium(params, model=model, throw=False, **options)
    jax.block_until_ready(cycle.T)
    seconds = time.perf_counter() - start
    result = cycle.result
    successful = bool(np.all(np.asarray(result == ebm.RESULTS.successful)))
    return {
        "successful": successful,
        "result": "successful" if successful else ebm.RESULTS[result],
        "seconds": seconds,
        "newton_steps": int(cycle.num_steps),
        "residual_W_yr_m-2": float(cycle.residual),
        "annual_mean_T_degC": float(cycle.annual_global_mean),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="*", default=list(N))
    parser.add_argument("--forcing", type=float, nargs="*", default=list(FORCING))
    parser.add_argument("--narrow-n", type=int, nargs="*", default=[25, 100])
    parser.add_argument(
        "--steps-per-year",
        type=int,
        default=None,
        help="(default: periodic_equilibrium's own, 365)",
    )
    args = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    import ebm

    defaults = ebm.SeaIceParams()
    narrow = {
        "enthalpy_width": float(defaults.enthalpy_width) / 10,
        "melt_width": float(defaults.melt_width) / 10,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "seaice_robustness.json"
    payload = {
        "machine": machine(),
        "command": "python benchmarks/seaice_robustness.py "
        + " ".join(
            [f"--n {' '.join(map(str, args.n))}"]
            + [f"--forcing {' '.join(map(str, args.forcing))}"]
            + [f"--narrow-n {' '.join(map(str, args.narrow_n))}"]
            + (
                []
                if args.steps_per_year is None
                else [f"--steps-per-year {args.steps_per_year}"]
            )
        ),
        "units": {
            "F": "W m-2",
            "residual": "W yr m-2",
            "annual_mean_T": "degC",
            "seconds": "s",
        },
        "steps_per_year": args.steps_per_year,
        "grid": [],
        "narrow": [],
    }
    seen = set()
    for n in args.n:
        for F in args.forcing:
            row = one(n, {"F": F}, args.steps_per_year, seen)
            print(json.dumps(row), flush=True)
            payload["grid"].append(row)
            path.write_text(json.dumps(payload, indent=1))
    for n in args.narrow_n:
        for case in NARROW:
            overrides = {k: v for k, v in case.items() if k != "steps_per_year"}
            row = one(n, {**overrides, **narrow}, case["steps_per_year"], seen)
            print(json.dumps(row), flush=True)
            payload["narrow"].append(row)
            path.write_text(json.dumps(payload, indent=1))
    plot(payload, RESULTS / "seaice_robustness.png")


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for row in payload["grid"]:
        F = row["overrides"]["F"]
        ax.scatter(
            F,
            row["n"],
            marker="o" if row["successful"] else "x",
            color="C0" if row["successful"] else "C3",
            s=60,
        )
        ax.annotate(
            f"{row['seconds']:.0f}",
            (F, row["n"]),
            textcoords="offset points",
            xytext=(6, 4),
            fontsize=7,
        )
    ax.set_yscale("log")
    ax.set(
        xlabel="forcing F (W m-2)",
        ylabel="boxes n (in x = sin(latitude))",
        title="ebm.periodic_equilibrium of ebm.SeaIceModel(n), default widths\n"
        f"{payload.get('steps_per_year') or 365} steps a year: o converged, x "
        "failed; the call's seconds beside each",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
