"""`ebm.SeaIceModel` against Wagner & Eisenman's (2015) own reference code, at its
settings and at others.

The reference, `sea_ice_EBM_WE15.py` (T. Wagner and I. Eisenman; in the repository
github.com/eisenman-group/eisenman-group.github.io, folder `python/`), is run
unmodified in a subprocess: only its parameter assignments are set (`A = 193` and
so on; its forcing F enters as `-A + F`, so F is run as `A - F`), its figure is
not shown, and its final year is saved. It starts from its own profile and runs
`dur` = 30 years of 1,000 forward-Euler steps with its ghost layer. ebm runs the
same 30 years from the same start with `ebm.SeaIceEuler` at 1,000 steps a year,
with the switches as steps (widths 0) and with the default widths.

Compared over the final year (at the reference's 100 saved times): the annual
hemispheric mean temperature, the ice edge's seasonal range (the reference's
definition, the centre of the first box with `E < 0`), and the polar ice thickness
through the year. The reference's own uncertainty is measured by running it again
with its ghost layer ten times thinner and faster (`cg = 0.001 cw`, `tau = 1e-6`
yr: the same `cg / tau`, so the same stability), and, at the default parameters at
n = 100 and 400, at 4,000 steps a year (its coupling time scaled with the step;
here one line of its code changes, the stride of its saved output, which it ties
to 1,000 steps a year). What these change is the reference's error from its ghost
layer and its step, against which ebm's difference is stated. ebm also runs at
4,000 steps a year there (its own step's error), and at the default parameters with
the switches' widths at 4, 1, 0.2 and 0 times their defaults (the blend's effect).

The reference's saved final year starts one saved time early (t = 28.99 yr):
the polar thickness through the year is compared sample by sample, 3.65 days
apart (the figure draws each at its own time); `seaice_reference_limit.py` lines
them up.

Writes benchmarks/results/seaice_reference.json and .png.

Run: python benchmarks/seaice_reference.py --reference path/to/sea_ice_EBM_WE15.py
"""

import argparse
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile
import time


RESULTS = pathlib.Path(__file__).parent / "results"

DRIVER = r"""
import json, re, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.show = lambda *args, **kwargs: None
source = open(sys.argv[1]).read()
stride = int(sys.argv[4]) if len(sys.argv) > 4 else 10
if stride != 10:
    # Its output is saved every 10 of its 1,000 steps a year.
    source = source.replace("(p+1)*10 == m", "(p+1)*%d == m" % stride)
for name, value in json.loads(sys.argv[2]).items():
    pattern = r"^%s\s*=[^#;\n]*" % re.escape(name)
    source, count = re.subn(pattern, "%s = %r" % (name, value), source, flags=re.M)
    assert count == 1, (name, count)
scope = {}
exec(compile(source, sys.argv[1], "exec"), scope)
import numpy as np
np.savez(sys.argv[3], x=scope["x"], E=scope["Efin"], T=scope["Tfin"])
"""

SETTINGS = {
    "WE15 default (F = 0)": {},
    "F = -10 W m-2": {"F": -10.0},
    "F = +5 W m-2": {"F": 5.0},
    "D = 0.3": {"D": 0.3},
    "S1 = 169 (half the seasonal cycle)": {"S1": 169.0},
    "Fb = 0, ai = 0.45": {"Fb": 0.0, "ai": 0.45},
    "n = 400": {"n": 400},
}

WIDTH_FACTORS = (4.0, 1.0, 0.2, 0.0)
"""The switches' widths, as multiples of the defaults, whose results are compared
with the steps' (0)."""

FINER = ("WE15 default (F = 0)", "n = 400")
"""Settings at which the reference also runs at 4,000 steps a year, for its own
step-size dependence."""

LF = 9.5


def run_reference(python, reference, overrides, folder, steps_per_year=1000):
    """The reference's final year: `(x, E, T)`, E and T as (time, x); at another
    `steps_per_year`, with its output's stride changed to match (the one change to
    its code) and its ghost layer's coupling time scaled with the step, as its
    stability needs."""
    import numpy as np

    assignments = {k: v for k, v in overrides.items() if k != "F"}
    if "F" in overrides:
        assignments["A"] = 193.0 - overrides["F"]
    driver = pathlib.Path(folder) / "driver.py"
    driver.write_text(DRIVER)
    output = pathlib.Path(folder) / "reference.npz"
    if steps_per_year != 1000:
        assignments["nt"] = steps_per_year
        tau = assignments.get("tau", 1e-5)
        assignments["tau"] = tau * 1000 / steps_per_year
    stride = str(steps_per_year // 100)
    arguments = [str(driver), str(reference), json.dumps(assignments), str(output)]
    subprocess.run([python, *arguments, stride], check=True)
    data = np.load(output)
    return data["x"], data["E"].T, data["T"].T


def run_ebm(overrides, widths, steps_per_year=1000):
    """ebm's 30th year from the reference's start, at the reference's saved times."""
    import jax

    import ebm

    n = overrides.get("n", 100)
    model = ebm.SeaIceModel(n)
    values = {k: v for k, v in overrides.items() if k != "n"}
    params = model.Params(enthalpy_width=widths[0], melt_width=widths[1], **values)
    year = ebm.seasonal_spinup(
        params,
        model=model,
        years=29,
        steps_per_year=steps_per_year,
        error_tolerance=float("inf"),
    )
    jax.block_until_ready(year.T)
    stride = steps_per_year // 100
    return jax.device_get(year.states["E"])[::stride], jax.device_get(year.T)[::stride]


def summary(x, E, T):
    import numpy as np

    icy = E < 0
    first = np.where(icy.any(axis=1), np.argmax(icy, axis=1), len(x) - 1)
    edge = x[first]
    polar = np.where(E[:, -1] < 0, -E[:, -1] / LF, 0.0)
    return {
        "annual_mean_T": float(np.mean(T)),
        "edge_min": float(edge.min()),
        "edge_max": float(edge.max()),
        "polar_thickness_min": float(polar.min()),
        "polar_thickness_max": float(polar.max()),
        "polar_thickness": polar.tolist(),
        "edge": edge.tolist(),
    }


def differences(a, b):
    import numpy as np

    return {
        "annual_mean_T": abs(a["annual_mean_T"] - b["annual_mean_T"]),
        "edge_range": max(
            abs(a["edge_min"] - b["edge_min"]), abs(a["edge_max"] - b["edge_max"])
        ),
        "polar_thickness": float(
            np.max(np.abs(np.subtract(a["polar_thickness"], b["polar_thickness"])))
        ),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, type=pathlib.Path)
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter for the reference"
    )
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS))
    args = parser.parse_args()

    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    import ebm

    digest = hashlib.sha256(args.reference.read_bytes()).hexdigest()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label in args.settings:
            overrides = SETTINGS[label]
            row = {"setting": label, "overrides": overrides}
            start = time.perf_counter()
            x, E, T = run_reference(args.python, args.reference, overrides, folder)
            row["reference_seconds"] = time.perf_counter() - start
            row["reference"] = summary(x, E, T)
            thinner = {**overrides, "cg": 0.001 * 9.8, "tau": 1e-6}
            row["reference_thin_ghost_layer"] = summary(
                *run_reference(args.python, args.reference, thinner, folder)
            )
            if label in FINER:
                row["reference_4000_steps"] = summary(
                    *run_reference(args.python, args.reference, overrides, folder, 4000)
                )
                row["ebm_4000_steps"] = summary(
                    x, *run_ebm(overrides, (0.0, 0.0), steps_per_year=4000)
                )
            for name, widths in (("ebm_steps", (0.0, 0.0)), ("ebm_blended", None)):
                if widths is None:
                    defaults = ebm.SeaIceParams()
                    widths = (
                        float(defaults.enthalpy_width),
                        float(defaults.melt_width),
                    )
                start = time.perf_counter()
                E, T = run_ebm(overrides, widths)
                row[f"{name}_seconds"] = time.perf_counter() - start
                row[name] = summary(x, E, T)
            reference = row["reference"]
            row["difference"] = {
                "reference_ghost_layer": differences(
                    reference, row["reference_thin_ghost_layer"]
                ),
                "ebm_steps": differences(reference, row["ebm_steps"]),
                "ebm_blended": differences(reference, row["ebm_blended"]),
                "ebm_steps_vs_thin_ghost_layer": differences(
                    row["reference_thin_ghost_layer"], row["ebm_steps"]
                ),
            }
            if label in FINER:
                row["difference"]["reference_4000_steps"] = differences(
                    reference, row["reference_4000_steps"]
                )
                row["difference"]["ebm_steps_vs_reference_4000_steps"] = differences(
                    row["reference_4000_steps"], row["ebm_steps"]
                )
                row["difference"]["ebm_4000_steps"] = differences(
                    row["ebm_steps"], row["ebm_4000_steps"]
                )
            print(label, json.dumps(row["difference"]), flush=True)
            rows.append(row)

    # The blended switches against the steps, at WE15's default parameters.
    model_x = np.asarray(ebm.SeaIceModel(100).x)
    widths = []
    defaults = ebm.SeaIceParams()
    for factor in WIDTH_FACTORS:
        pair = (
            factor * float(defaults.enthalpy_width),
            factor * float(defaults.melt_width),
        )
        E, T = run_ebm({}, pair)
        widths.append({"factor": factor, "widths": pair, **summary(model_x, E, T)})
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "machine": machine(),
        "reference": {"file": args.reference.name, "sha256": digest},
        "rows": rows,
        "widths": widths,
    }
    (RESULTS / "seaice_reference.json").write_text(json.dumps(payload, indent=1))
    plot(rows, RESULTS / "seaice_reference.png")


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    row = rows[0]
    t = np.arange(100) / 100
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    styles = {
        "reference": ("k", "-", "reference (WE15 code)"),
        "reference_thin_ghost_layer": ("0.5", ":", "reference, ghost layer / 10"),
        "ebm_steps": ("C0", "--", "ebm, switches as steps"),
        "ebm_blended": ("C1", "-.", "ebm, default widths"),
    }
    for key, (colour, line, label) in styles.items():
        # The reference's final year starts one saved time early (t = 28.99 yr).
        times = t - 0.01 if key.startswith("reference") else t
        thickness = row[key]["polar_thickness"]
        left.plot(times, thickness, color=colour, ls=line, label=label)
        edge = np.degrees(np.arcsin(row[key]["edge"]))
        right.plot(times, edge, color=colour, ls=line)
    left.set(xlabel="time of year", ylabel="polar ice thickness (m)")
    right.set(xlabel="time of year", ylabel="ice edge (degrees N)")
    left.legend(fontsize=8)
    fig.suptitle(f"{row['setting']}: year 30 from WE15's start, n = 100")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
