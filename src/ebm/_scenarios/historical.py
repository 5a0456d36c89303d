r"""Real historical data shipped with ebm (`ebm/data/`, with their source, citation
and licence in its README): the IPCC AR6 assessed observed warming and effective
radiative forcing, and the forcing scenario built from the latter.

Each annual mean is placed at the middle of its year ($y + 0.5$), the forcing
between them interpolated linearly, so that a run's saved state at $y + 0.5$ is
compared with the observed annual mean of year $y$.
"""

import functools
import importlib.resources
from typing import ClassVar

import equinox as eqx
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import Scalar
from .._model.declarations import Parameter
from .base import AbstractScenario, ForcingSeries


def _read(name: str) -> dict[str, np.ndarray]:
    """The columns of the shipped file `name`, by header (comment lines skipped)."""
    text = importlib.resources.files("ebm").joinpath("data", name).read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split(",")
    values = np.array([[float(x) for x in line.split(",")] for line in lines[1:]])
    return {column: values[:, k] for k, column in enumerate(header)}


@functools.cache
def _columns(name: str) -> dict[str, np.ndarray]:
    return _read(name)


def observed_warming(start: int = 1850, end: int = 2020):
    """The IPCC AR6 assessed global mean surface temperature, annual means, K
    relative to 1850-1900 (Gulev et al. 2021; source and licence in
    `ebm/data/README.md`).

    **Arguments:**

    - `start`, `end`: the first and last years (within 1850-2020).

    **Returns:**

    `(times, warming)`: NumPy arrays, the times at the middle of each year
    (`year + 0.5`, years) and the warming, K.

    **Raises:**

    - `ValueError`: for years outside 1850-2020 or `start > end`.
    """
    columns = _columns("ar6_gmst.csv")
    years = columns["year"]
    _check_years(start, end, years, "observed warming")
    keep = (years >= start) & (years <= end)
    return years[keep] + 0.5, columns["gmst"][keep].copy()


def forcing_components(end: int = 2019) -> dict[str, np.ndarray]:
    """The IPCC AR6 best-estimate effective radiative forcing, annual means, W m-2
    relative to 1750 (Forster et al. 2021): `"time"` (`year + 0.5`) and the
    columns `"total"`, `"total_anthropogenic"`, `"total_natural"`, `"aerosol"`,
    `"co2"`, `"volcanic"`, `"solar"`, from 1750 to `end` (at most 2019)."""
    columns = _columns("ar6_erf.csv")
    years = columns["year"]
    first, last = int(years[0]), int(years[-1])
    if not (isinstance(end, int | np.integer) and first < end <= last):
        raise ValueError(
            f"The shipped forcing covers the years {first}-{last}: `end` must be a "
            f"whole year with {first} < end <= {last}, got end={end!r}."
        )
    keep = years <= end
    out = {name: values[keep].copy() for name, values in columns.items()}
    out["time"] = out.pop("year") + 0.5
    return out


def _check_years(start, end, years, what: str) -> None:
    first, last = int(years[0]), int(years[-1])
    if not (
        isinstance(start, int | np.integer)
        and isinstance(end, int | np.integer)
        and first <= start <= end <= last
    ):
        raise ValueError(
            f"The shipped {what} covers the years {first}-{last}: `start` and `end` "
            f"must be whole years with {first} <= start <= end <= {last}, got "
            f"start={start!r}, end={end!r}."
        )


AEROSOL_SCALE = Parameter(
    "aerosol_scale",
    1.0,
    "1",
    "scale factor of the aerosol effective radiative forcing",
    lower=0.0,
    lower_open=True,
    transform="log",
)


class AbstractAerosolScaledForcing(AbstractScenario):
    r"""A forcing series whose aerosol part is scaled by the parameter
    `aerosol_scale` $s$ (1: the best estimate), the rest as it is:

    $$F(t) = F_\text{rest}(t) + s\,F_\text{aerosol}(t).$$

    The aerosol forcing is the largest uncertainty of the historical forcing
    (AR6's very likely range is -2.0 to -0.6 W m-2 in 2005-2014, around -1.3), and
    its scale is a parameter of the model this scenario drives (`model.Params`
    gains `aerosol_scale`), to be calibrated with the others.
    """

    rest: eqx.AbstractVar[ForcingSeries]
    aerosol: eqx.AbstractVar[ForcingSeries]
    parameters: ClassVar[tuple[Parameter, ...]] = (AEROSOL_SCALE,)
    piecewise_linear: ClassVar[bool] = True

    def __call__(self, t, params) -> Scalar:
        return self.rest(t, params) + params.aerosol_scale * self.aerosol(t, params)

    @property
    def start(self):
        return self.rest.start

    @property
    def kinks(self) -> Float[Array, " kinks"]:
        return self.rest.kinks

    @property
    def span(self) -> tuple[float, float] | None:
        return self.rest.span


class HistoricalForcing(AbstractAerosolScaledForcing):
    r"""The IPCC AR6 historical effective radiative forcing (1750-2019, W m-2
    relative to 1750), with its aerosol part scaled by the parameter
    `aerosol_scale` $s$ (see `ebm.AbstractAerosolScaledForcing`):

    $$F(t) = F_\text{total}(t) + (s - 1)\,F_\text{aerosol}(t).$$

    A run starts in 1750.5 from rest.

    **Arguments:**

    - `end`: the last year of the series (default 2019).
    """

    rest: ForcingSeries
    aerosol: ForcingSeries

    def __init__(self, end: int = 2019):
        columns = forcing_components(end)
        times = columns["time"]
        self.rest = ForcingSeries(times, columns["total"] - columns["aerosol"])
        self.aerosol = ForcingSeries(times, columns["aerosol"])
