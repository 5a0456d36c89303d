r"""CMIP6 models' global-mean responses to the idealised CO2 experiments, shipped
with ebm for emulation (`ebm/data/cmip6_runs.csv`; source, licence, citation and
how it was derived in `ebm/data/README.md`).

For each model, its `abrupt-4xCO2` and (where run) `1pctCO2` experiments as annual
means of year $k = 1, 2, \dots$ (up to 150) of the experiment: the near-surface air
temperature anomaly $T$ (K) and the net downward flux at the top of the atmosphere
$N = \text{rsdt} - \text{rsut} - \text{rlut}$ (W m-2), each the experiment's value
less a straight line fitted to the model's pre-industrial control (its drift),
evaluated at the same year counted from the control's first year. The chapter's own
two-layer tunings of the same models (Geoffroy et al. 2013's procedure, AR6 WG1
Chapter 7) are shipped beside them as a reference: `ebm.cmip6_tuning`.
"""

import difflib
import functools
import importlib.resources

import numpy as np


EXPERIMENTS = ("abrupt-4xCO2", "1pctCO2")
"""The experiments shipped for each model."""


@functools.cache
def _runs() -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """`{(model, experiment): {"year", "T", "N"}}` of the shipped file."""
    text = importlib.resources.files("ebm").joinpath("data", "cmip6_runs.csv")
    lines = [
        line
        for line in text.read_text().splitlines()
        if line and not line.startswith("#")
    ]
    rows: dict[tuple[str, str], list] = {}
    for line in lines[1:]:
        model, experiment, *values = line.split(",")
        rows.setdefault((model, experiment), []).append([float(v) for v in values])
    return {
        key: dict(zip(("year", "T", "N"), np.array(values).T))
        for key, values in rows.items()
    }


def cmip6_models(experiment: str = "abrupt-4xCO2") -> tuple[str, ...]:
    """The CMIP6 models shipped with `experiment` (`"abrupt-4xCO2"`, 40 of them, or
    `"1pctCO2"`), sorted by name.

    **Raises:**

    - `ValueError`: for an experiment that is not shipped.
    """
    _check_experiment(experiment)
    return tuple(sorted({m for m, e in _runs() if e == experiment}))


def _check_experiment(experiment) -> None:
    if experiment not in EXPERIMENTS:
        raise ValueError(
            f"`experiment` must be one of {EXPERIMENTS}, got {experiment!r}."
        )


def check_model_name(name) -> str:
    """`name`, once it is a shipped CMIP6 model.

    **Raises:**

    - `ValueError`: naming the closest models shipped.
    """
    models = cmip6_models()
    if isinstance(name, str) and name in models:
        return name
    close = difflib.get_close_matches(str(name), models, n=3)
    hint = f"; the closest: {', '.join(close)}" if close else ""
    raise ValueError(
        f"{name!r} is not a CMIP6 model shipped with ebm ({len(models)} models, "
        f"ebm.cmip6_models(){hint})."
    )


def cmip6_run(name: str, experiment: str = "abrupt-4xCO2"):
    """One CMIP6 model's global-mean response to an experiment (see the module
    docstring).

    **Arguments:**

    - `name`: the model, one of `ebm.cmip6_models()`.
    - `experiment`: `"abrupt-4xCO2"` (default) or `"1pctCO2"`.

    **Returns:**

    `(years, T, N)`: NumPy arrays, the years of the experiment (1, 2, ...; year
    $k$ is the annual mean over $[k - 1, k)$ from the experiment's start), the
    temperature anomaly, K, and the top-of-atmosphere imbalance, W m-2.

    **Raises:**

    - `ValueError`: for a model or experiment that is not shipped, or a model
        without that experiment.
    """
    check_model_name(name)
    _check_experiment(experiment)
    run = _runs().get((name, experiment))
    if run is None:
        raise ValueError(
            f"{name} has no {experiment} run shipped; the models with one: "
            "ebm.cmip6_models(experiment)."
        )
    return run["year"].copy(), run["T"].copy(), run["N"].copy()


@functools.cache
def _tunings() -> dict[str, dict[str, float]]:
    text = importlib.resources.files("ebm").joinpath(
        "data", "cmip6_twolayer_tuning_params.csv"
    )
    lines = text.read_text().strip().splitlines()
    header = lines[0].split(",")[1:]
    out = {}
    for line in lines[1:]:
        name, *values = line.split(",")
        out[name] = {c: float(v) for c, v in zip(header, values)}
    return out


def cmip6_tuning(name: str) -> dict[str, float]:
    """AR6 WG1 Chapter 7's two-layer tuning of a CMIP6 model (with efficacy,
    "EBM-epsilon"; a reference, never an input of ebm's fits), as
    `ebm.TwoLayerModel`'s parameters: `feedback` (minus the chapter's `lamg`),
    `gamma` (`gamma_2l`), `C` (`cmix`), `C_deep` (`cdeep`), `efficacy` (`eff`)
    and `F2x` (half its `q4x`, the abrupt-4xCO2 forcing).

    **Raises:**

    - `ValueError`: for a model the chapter did not tune (`ebm.cmip6_models()`
        has more), naming those it did.
    """
    tunings = _tunings()
    if name not in tunings or name in ("Mean", "StDev"):
        models = sorted(n for n in tunings if n not in ("Mean", "StDev"))
        raise ValueError(
            f"The chapter did not tune {name!r}; it tuned {len(models)} models: "
            f"{', '.join(models)}."
        )
    row = tunings[name]
    return {
        "feedback": -row["lamg"],
        "gamma": row["gamma_2l"],
        "C": row["cmix"],
        "C_deep": row["cdeep"],
        "efficacy": row["eff"],
        "F2x": row["q4x"] / 2.0,
    }
