r"""The Shared Socioeconomic Pathways (SSPs) of CMIP6 as forcing scenarios: the IPCC
AR6 historical effective radiative forcing (1750-2019) continued from 2020 to 2500
by each scenario's (AR6 WG1 Chapter 7's `data_output/SSPs`; source, licence and
how the file was derived in `ebm/data/README.md`).

The scenario files carry a history of their own, harmonised for the SSPs; it
differs from the assessed history by up to 0.09 W m-2 in 2010-2019 (ssp245's,
2019: -0.08 W m-2), and the scenarios differ from each other from 2015. The
series here is the assessed history to 2019 and the scenario from 2020, so that a
run calibrated on the history continues it: it jumps by that difference between
2019.5 and 2020.5. Each annual mean is placed at the middle of its year.

The forcing's aerosol part is scaled by `aerosol_scale`, as in
`ebm.HistoricalForcing`; `ebm.ssp_forcing_range` gives each scenario's AR6 5-95 %
range of the total and of the aerosol forcing (the `_pc05`/`_pc95` files).
"""

import difflib
import functools
import importlib.resources

import equinox as eqx
import numpy as np

from .base import ForcingSeries
from .historical import AbstractAerosolScaledForcing, forcing_components


SSP_SCENARIOS = (
    "ssp119",
    "ssp126",
    "ssp245",
    "ssp370",
    "ssp434",
    "ssp460",
    "ssp534-over",
    "ssp585",
    "ssp370-lowNTCF",
)
"""The scenarios of `ebm.SSPForcing`, as AR6 names them."""

FIRST_SCENARIO_YEAR = 2020
"""The first year taken from a scenario (the assessed history ends in 2019)."""

LAST_YEAR = 2500
"""The last year of every scenario."""


@functools.cache
def _ssp_table() -> dict[str, dict[str, np.ndarray]]:
    """`{scenario: {column: values}}` of the shipped `ssp_erf.csv`."""
    text = importlib.resources.files("ebm").joinpath("data", "ssp_erf.csv").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split(",")[1:]
    rows: dict[str, list] = {}
    for line in lines[1:]:
        name, *values = line.split(",")
        rows.setdefault(name, []).append([float(v) for v in values])
    return {
        name: {c: np.array(values)[:, k] for k, c in enumerate(header)}
        for name, values in rows.items()
    }


def check_scenario_name(scenario) -> str:
    """`scenario`, once it is one of `SSP_SCENARIOS`.

    **Raises:**

    - `ValueError`: naming the scenarios there are, and the closest to the one
        given.
    """
    if isinstance(scenario, str) and scenario in SSP_SCENARIOS:
        return scenario
    close = difflib.get_close_matches(str(scenario).lower(), SSP_SCENARIOS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(
        f"`scenario` must be one of {SSP_SCENARIOS}, got {scenario!r}{hint}."
    )


def ssp_forcing_range(scenario: str) -> dict[str, np.ndarray]:
    """A scenario's forcing from 2020, W m-2 relative to 1750: `"time"` (`year +
    0.5`), the best estimates `"total"` and `"aerosol"`, and AR6's 5 % and 95 %
    percentiles of each (`"total_pc05"`, `"total_pc95"`, `"aerosol_pc05"`,
    `"aerosol_pc95"`).

    **Raises:**

    - `ValueError`: for a scenario not in `ebm.SSP_SCENARIOS`.
    """
    columns = _ssp_table()[check_scenario_name(scenario)]
    out = {name: values.copy() for name, values in columns.items()}
    out["time"] = out.pop("year") + 0.5
    return out


class SSPForcing(AbstractAerosolScaledForcing):
    r"""The AR6 historical effective radiative forcing (1750-2019) continued by a
    CMIP6 scenario to 2500 (W m-2 relative to 1750; see the module docstring), its
    aerosol part scaled by `aerosol_scale` $s$:

    $$F(t) = F_\text{total}(t) + (s - 1)\,F_\text{aerosol}(t).$$

    A run starts in 1750.5 from rest and may end by 2500.5. The forcing series'
    values are differentiable leaves: `jax.grad` with respect to the model reaches
    the forcing of every year.

    **Arguments:**

    - `scenario`: one of `ebm.SSP_SCENARIOS` (`"ssp119"`, `"ssp126"`, `"ssp245"`,
        `"ssp370"`, `"ssp434"`, `"ssp460"`, `"ssp534-over"`, `"ssp585"`,
        `"ssp370-lowNTCF"`).
    - `end`: the last year (default 2500; at least 2020), to shorten the series
        a projection runs through.

    **Raises:**

    - `ValueError`: for an unknown scenario (with the closest name), or an `end`
        outside 2020-2500.
    """

    rest: ForcingSeries
    aerosol: ForcingSeries
    scenario: str = eqx.field(static=True)

    def __init__(self, scenario: str = "ssp245", end: int = LAST_YEAR):
        self.scenario = check_scenario_name(scenario)
        if not (
            isinstance(end, int | np.integer)
            and not isinstance(end, bool)
            and FIRST_SCENARIO_YEAR <= end <= LAST_YEAR
        ):
            raise ValueError(
                f"`end` must be a whole year within {FIRST_SCENARIO_YEAR}-{LAST_YEAR}, "
                f"the scenarios' span, got end={end!r}."
            )
        history = forcing_components()
        future = ssp_forcing_range(self.scenario)
        keep = future["time"] <= end + 0.5
        times = np.concatenate([history["time"], future["time"][keep]])
        total = np.concatenate([history["total"], future["total"][keep]])
        aerosol = np.concatenate([history["aerosol"], future["aerosol"][keep]])
        self.rest = ForcingSeries(times, total - aerosol)
        self.aerosol = ForcingSeries(times, aerosol)
