"""`ebm.SeaIceModel` against the limit of Wagner & Eisenman's (2015) reference code.

The reference, `sea_ice_EBM_WE15.py` (T. Wagner and I. Eisenman; repository
github.com/eisenman-group/eisenman-group.github.io, folder `python/`), approximates
the model with a diffusive "ghost layer" (heat capacity `cg = 0.01 cw`, coupling
time `tau = 1e-5` yr) and steps the enthalpy by forward Euler at 1,000 steps a year.
Its limit is the ghost layer's heat capacity to 0 at the same `cg / tau` (the same
stability), and the step to 0. It is run here, unmodified as in
`benchmarks/seaice_reference.py` (whose `run_reference` this imports), with

- its ghost layer as it is (`cg = 0.01 cw`, `tau = 1e-5`), 1,000 steps a year;
- ten and a hundred times thinner and faster (`cg = 0.001 cw, tau = 1e-6`;
  `cg = 0.0001 cw, tau = 1e-7`), 1,000 steps a year;
- a hundred times thinner at 4,000 and 8,000 steps a year, its coupling time
  scaled with the step from the thinned value (`tau = 1e-7 * 1000 / steps`, so
  that `dt cg / (tau cw)`, its stability number, is that of its default; `cg / tau`
  grows with the steps, which is part of the limit too: at a fixed `cg / tau` the
  ghost layer smooths the diffusion over `sqrt(D tau / cg)`).

Its limit is estimated by Richardson extrapolation in the step at the thinnest
ghost layer, first order (the formulas are in the JSON), and the ghost layer's
convergence shown by the step from /10 to /100.

ebm (`benchmarks/seaice_reference.py`'s `run_ebm`, 30 years from the reference's
start) runs at its default answer (the default switch widths at
`ebm.seasonal_spinup`'s default steps a year), the default widths at 1,000 and
4,000 steps a year, and the switches as steps (widths 0) at 1,000 and 4,000, so
that the difference from the limit can be put down to the widths, ebm's step, or
neither.

Settings: n = 25, 100 and 400, each at F = -10, -5, 0 and +5 W m-2 and at D = 0.4
(F = 0). Compared over the 30th year: the annual mean temperature (the mean of the
100 saved times), the ice edge's seasonal range, and the polar ice thickness
through the year.

The reference's "final year" (`E100[:, -101:-1]`) starts one saved time early, at
t = 28.99 years; ebm's series are aligned to it (ebm's sample at time of year
(j - 1) / 100 against the reference's j-th).

Writes benchmarks/results/seaice_reference_limit.json (after every run, so that an
interrupted run keeps what it finished, and a rerun resumes: runs already in the
JSON are skipped unless --fresh) and .png.

Run: python benchmarks/seaice_reference_limit.py --reference path/to/sea_ice_EBM_WE15.py
"""

import argparse
import hashlib
import json
import pathlib
import sys
import tempfile
import time


sys.path.insert(0, str(pathlib.Path(__file__).parent))

from seaice_reference import run_ebm, run_reference, summary  # noqa: E402


RESULTS = pathlib.Path(__file__).parent / "results"

CW = 9.8

SETTINGS = {
    "F = -10": {"F": -10.0},
    "F = -5": {"F": -5.0},
    "F = 0": {},
    "F = +5": {"F": 5.0},
    "D = 0.4": {"D": 0.4},
}

RESOLUTIONS = (25, 100, 400)

LEGEND = {
    "F = -10": "F = -10 W m-2",
    "F = -5": "F = -5 W m-2",
    "F = 0": "F = 0 (WE15 default)",
    "F = +5": "F = +5 W m-2",
    "D = 0.4": "D = 0.4 W m-2 K-1 (F = 0)",
}

GHOST = {1: None, 10: (0.001 * CW, 1e-6), 100: (0.0001 * CW, 1e-7)}
"""The ghost layer, thinned by a factor: `(cg, tau)` at 1,000 steps a year (None:
the reference's own)."""

REFERENCE_RUNS = {
    "ghost1_1000": (1, 1000),
    "ghost10_1000": (10, 1000),
    "ghost100_1000": (100, 1000),
    "ghost100_4000": (100, 4000),
    "ghost100_8000": (100, 8000),
}

EBM_RUNS = {
    "default": ("default", None),
    "default_1000": ("default", 1000),
    "default_4000": ("default", 4000),
    "widths0_1000": ("zero", 1000),
    "widths0_4000": ("zero", 4000),
}
"""ebm's runs: widths, steps a year (None: `ebm.seasonal_spinup`'s default)."""

QUICK = ("ghost1_1000", "ghost100_1000", "ghost100_4000", "default", "widths0_1000")

LIMIT_FORMULAS = {
    "8000": "2 R(8000) - R(4000)",
    "4000": "(4 R(4000) - R(1000)) / 3",
}
"""First-order Richardson extrapolation in the step, R(s) the reference at s
steps a year and ghost layer / 100."""

LF = 9.5


def reference_overrides(overrides, n, ghost):
    values = {**overrides, "n": n}
    if GHOST[ghost] is not None:
        values["cg"], values["tau"] = GHOST[ghost]
    return values


def default_widths():
    import ebm

    defaults = ebm.SeaIceParams()
    return float(defaults.enthalpy_width), float(defaults.melt_width)


def run_ebm_default_steps(overrides, widths):
    """ebm's 30th year at `ebm.seasonal_spinup`'s default steps a year, linearly
    interpolated (periodically) to the reference's saved times, and its steps."""
    import jax
    import numpy as np

    import ebm

    n = overrides.get("n", 100)
    model = ebm.SeaIceModel(n)
    values = {k: v for k, v in overrides.items() if k != "n"}
    params = model.Params(enthalpy_width=widths[0], melt_width=widths[1], **values)
    year = ebm.seasonal_spinup(
        params, model=model, years=29, error_tolerance=float("inf")
    )
    jax.block_until_ready(year.T)
    E = np.asarray(jax.device_get(year.states["E"]))
    T = np.asarray(jax.device_get(year.T))
    steps = len(T)
    # Aligned with the reference's final year: times of year (j - 1) / 100.
    wanted = (np.arange(100) - 1) % 100 / 100
    t = np.arange(steps + 1) / steps

    def at(values):
        closed = np.concatenate([values, values[:1]])
        return np.stack(
            [np.interp(wanted, t, closed[:, i]) for i in range(values.shape[1])],
            axis=1,
        )

    return at(E), at(T), steps, float(T.mean())


def polar_thickness_difference(a, b):
    """The largest difference over the 99 times of year both series have (the
    reference's first is at t = 28.99 yr, ebm's aligned one at 29.99)."""
    import numpy as np

    return float(np.max(np.abs(np.subtract(a, b)[1:])))


def derive(row):
    """The limit, and each run's difference from it, from the runs present."""
    import numpy as np

    ref = row.get("reference", {})
    mine = row.get("ebm", {})
    T = {k: v["annual_mean_T"] for k, v in ref.items()}
    out = {}
    if "ghost10_1000" in T and "ghost100_1000" in T:
        out["ghost_layer_convergence"] = {
            "T_ghost1_minus_ghost10": (
                T["ghost1_1000"] - T["ghost10_1000"] if "ghost1_1000" in T else None
            ),
            "T_ghost10_minus_ghost100": T["ghost10_1000"] - T["ghost100_1000"],
            "remaining_at_ghost100_if_first_order_in_cg": (
                T["ghost100_1000"] - T["ghost10_1000"]
            )
            / 9,
        }
    estimates = {}
    if "ghost100_4000" in T and "ghost100_1000" in T:
        estimates["4000"] = (4 * T["ghost100_4000"] - T["ghost100_1000"]) / 3
    if "ghost100_8000" in T and "ghost100_4000" in T:
        estimates["8000"] = 2 * T["ghost100_8000"] - T["ghost100_4000"]
    if not estimates:
        return out
    used = "8000" if "8000" in estimates else "4000"
    limit = estimates[used]
    out["limit"] = {
        "annual_mean_T": limit,
        "formula": LIMIT_FORMULAS[used],
        "estimates": {LIMIT_FORMULAS[k]: v for k, v in estimates.items()},
        "estimates_spread": (
            abs(estimates["8000"] - estimates["4000"]) if len(estimates) == 2 else None
        ),
    }
    # The finest reference run, for the profiles (the ice edge, the polar ice).
    finest = max(
        (k for k in ref if k.startswith("ghost100_")), key=lambda k: int(k[9:])
    )
    # The polar thickness extrapolated pointwise the same way.
    if used == "8000":
        h_limit = 2 * np.asarray(ref["ghost100_8000"]["polar_thickness"]) - np.asarray(
            ref["ghost100_4000"]["polar_thickness"]
        )
    else:
        h_limit = (
            4 * np.asarray(ref["ghost100_4000"]["polar_thickness"])
            - np.asarray(ref["ghost100_1000"]["polar_thickness"])
        ) / 3
    out["finest_reference"] = finest
    out["ebm_minus_limit"] = {}
    for name, run in mine.items():
        out["ebm_minus_limit"][name] = {
            "annual_mean_T": run["annual_mean_T"] - limit,
            "annual_mean_T_minus_finest_reference": run["annual_mean_T"] - T[finest],
            "edge_range_difference_from_finest_reference": max(
                abs(run["edge_min"] - ref[finest]["edge_min"]),
                abs(run["edge_max"] - ref[finest]["edge_max"]),
            ),
            "polar_thickness_max_difference_from_finest_reference": (
                polar_thickness_difference(
                    run["polar_thickness"], ref[finest]["polar_thickness"]
                )
            ),
            "polar_thickness_max_difference_from_extrapolated": (
                polar_thickness_difference(run["polar_thickness"], h_limit)
            ),
        }
    out["reference_minus_limit"] = {k: v - limit for k, v in T.items()}
    return out


def save(payload, path):
    for row in payload["settings"].values():
        row["derived"] = derive(row)
    path.write_text(json.dumps(payload, indent=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, type=pathlib.Path)
    parser.add_argument(
        "--reference-repository",
        default="github.com/eisenman-group/eisenman-group.github.io",
    )
    parser.add_argument(
        "--reference-commit", default="e63cc61524a963d059e8f89362c036acabb27535"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter for the reference"
    )
    parser.add_argument("--n", nargs="*", type=int, default=list(RESOLUTIONS))
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS))
    parser.add_argument(
        "--runs",
        nargs="*",
        default=[*REFERENCE_RUNS, *EBM_RUNS],
        help=f"which runs (reference: {', '.join(REFERENCE_RUNS)}; "
        f"ebm: {', '.join(EBM_RUNS)})",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"n = 25, F = 0, runs {QUICK}"
    )
    parser.add_argument("--fresh", action="store_true", help="ignore earlier runs")
    parser.add_argument(
        "--output", type=pathlib.Path, default=RESULTS / "seaice_reference_limit.json"
    )
    args = parser.parse_args()
    if args.quick:
        args.n, args.settings, args.runs = [25], ["F = 0"], list(QUICK)

    import jax

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    import ebm

    digest = hashlib.sha256(args.reference.read_bytes()).hexdigest()
    payload = None
    if args.output.exists() and not args.fresh:
        payload = json.loads(args.output.read_text())
        assert payload["reference"]["sha256"] == digest, "another reference"
    if payload is None:
        payload = {"settings": {}}
    payload["machine"] = machine()
    payload["reference"] = {
        "file": args.reference.name,
        "sha256": digest,
        "repository": args.reference_repository,
        "commit": args.reference_commit,
        "path": "python/sea_ice_EBM_WE15.py",
    }
    payload["method"] = {
        "years": 30,
        "annual_mean_T": "mean over the 30th year's 100 saved times, degC",
        "ghost_layers": {str(k): v or (0.01 * CW, 1e-5) for k, v in GHOST.items()},
        "reference_steps": "tau scaled by 1000 / steps from the thinned value",
        "limit": LIMIT_FORMULAS,
        "limit_used": "2 R(8000) - R(4000) where 8000 ran, else "
        "(4 R(4000) - R(1000)) / 3; R at ghost layer / 100",
        "ebm_default_widths": default_widths(),
        "ebm_alignment": "ebm's sample at time of year (j - 1) / 100 against the "
        "reference's j-th (its final year starts at t = 28.99 yr); the polar "
        "thickness compared at j = 1..99, the times both have in the same year",
        "ebm_default": "ebm.seasonal_spinup's default steps a year (see each "
        "run's steps_per_year), linearly interpolated to those times",
    }
    settings = payload["settings"]
    with tempfile.TemporaryDirectory() as folder:
        for n in args.n:
            for label in args.settings:
                overrides = SETTINGS[label]
                key = f"n = {n}, {label}"
                row = settings.setdefault(
                    key,
                    {"n": n, "setting": label, "overrides": overrides,
                     "reference": {}, "ebm": {}},
                )  # fmt: skip
                for name in args.runs:
                    if name in REFERENCE_RUNS and name not in row["reference"]:
                        ghost, steps = REFERENCE_RUNS[name]
                        values = reference_overrides(overrides, n, ghost)
                        start = time.perf_counter()
                        result = summary(
                            *run_reference(
                                args.python, args.reference, values, folder, steps
                            )
                        )
                        result["seconds"] = time.perf_counter() - start
                        result["steps_per_year"] = steps
                        row["reference"][name] = result
                    elif name in EBM_RUNS and name not in row["ebm"]:
                        kind, steps = EBM_RUNS[name]
                        widths = default_widths() if kind == "default" else (0.0, 0.0)
                        values = {**overrides, "n": n}
                        x = ebm.SeaIceModel(n).x
                        import numpy as np

                        x = np.asarray(x)
                        start = time.perf_counter()
                        if steps is None:
                            E, T, steps, mean = run_ebm_default_steps(values, widths)
                            result = summary(x, E, T)
                            result["annual_mean_T_all_steps"] = mean
                        else:
                            E, T = run_ebm(values, widths, steps_per_year=steps)
                            # Aligned with the reference's final year.
                            E, T = np.roll(E, 1, axis=0), np.roll(T, 1, axis=0)
                            result = summary(x, E, T)
                        result["seconds"] = time.perf_counter() - start
                        result["steps_per_year"] = steps
                        result["widths"] = widths
                        # Not yet periodic: the polar ice's change over year 30.
                        h = result["polar_thickness"]
                        result["polar_thickness_change_over_year_30"] = h[0] - h[1]
                        row["ebm"][name] = result
                    else:
                        continue
                    runs = {**row["reference"], **row["ebm"]}
                    print(
                        f"{key}: {name} T = {runs[name]['annual_mean_T']:.4f} "
                        f"({runs[name]['seconds']:.1f} s)",
                        flush=True,
                    )
                    save(payload, args.output)
    save(payload, args.output)
    if args.output.parent == RESULTS:
        plot(payload, args.output.with_suffix(".png"))


def plot(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = {
        run["steps_per_year"]
        for row in payload["settings"].values()
        for name, run in row["ebm"].items()
        if name == "default"
    }
    steps = ", ".join(str(s) for s in sorted(steps))
    panels = (
        ("default", f"ebm's default answer (default widths, {steps} steps a year)"),
        ("widths0_1000", "ebm, switches as steps (widths 0), 1,000 steps a year"),
    )
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axis, (run, title) in zip(axes, panels):
        for label in SETTINGS:
            points = []
            for row in payload["settings"].values():
                if row["setting"] != label:
                    continue
                diff = row.get("derived", {}).get("ebm_minus_limit", {}).get(run)
                if diff is not None:
                    points.append((row["n"], diff["annual_mean_T"]))
            if points:
                points.sort()
                axis.plot(*zip(*points), "o-", label=LEGEND[label])
        axis.axhline(0, color="k", lw=0.5)
        axis.set_xscale("log")
        axis.set_xticks(RESOLUTIONS, [str(n) for n in RESOLUTIONS])
        axis.set_xticks([], minor=True)
        axis.set(xlabel="grid boxes n", title=title)
        axis.title.set_fontsize(9)
    axes[0].set_ylabel("annual mean T, ebm - reference's limit (K)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Year 30 from WE15's start; the limit: ghost layer / 100, "
                 "extrapolated in the step")  # fmt: skip
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
