r"""Radiative forcing as a function of time: the CMIP idealised experiments and a
user's series.

Each scenario is an `equinox.Module` called as `scenario(t, params) -> F`, the
effective radiative forcing in W m-2 at time `t` in years from the start of the
experiment. The CO2 experiments use the model's forcing of doubled CO2, `F2x`, and
the logarithmic law $F = F_{2x} \log_2(C / C_0)$.
"""

import abc
import functools
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._checks import as_python_number, check_positive_number
from .._custom_types import Scalar
from .._model.declarations import Parameter
from .._model.parameters import AbstractParams, params_class


class AbstractScenario(eqx.Module):
    """Forcing as a function of time, W m-2 (see the module docstring)."""

    parameters: ClassVar[tuple[Parameter, ...]] = ()
    """Parameters of the scenario's own (e.g. `ebm.HistoricalForcing`'s
    `aerosol_scale`): a model driven by it adds them to its `Params`."""

    piecewise_linear: ClassVar[bool] = False
    """Whether the forcing is linear in time between its `kinks` (and constant or
    linear without any): a linear model's run under it is then solved exactly
    (`ebm.integrate`'s `solver="exact"`)."""

    steady: ClassVar[bool] = False
    """Whether the forcing is the same at every time from the scenario's start: a
    seasonal model under it then has a periodic state
    (`ebm.periodic_equilibrium`)."""

    @abc.abstractmethod
    def __call__(self, t, params) -> Scalar:
        """The forcing at time `t` (years), W m-2."""

    @property
    def start(self) -> float:
        """The time the experiment starts, years (0 unless the scenario says)."""
        return 0.0

    @property
    def span(self) -> tuple[float, float] | None:
        """`(first, last)`: the times the scenario covers, years, or `None` for
        every time (or where it is traced, to be checked where it was given)."""
        return None

    def check_span(self, t0: float, t1) -> None:
        """Refuse a run from `t0` to `t1` (years; `t1` may be traced) outside
        `span`.

        **Raises:**

        - `ValueError`: naming the run's `t0` and `years` and the span.
        """
        span = self.span
        if span is None:
            return
        first, last = span
        if isinstance(t1, jax.core.Tracer):
            t1 = t0  # a traced length is not known here; its start still is
        end = float(t1)
        if t0 < first or end > last + 1e-9 * abs(last):
            raise ValueError(
                f"The run from {t0:g} to {end:g} leaves the forcing series' span "
                f"[{first:g}, {last:g}] (years): start within it (`t0`) and end by "
                "its last time (`years`)."
            )

    def check_time(self, t: float, name: str = "t") -> None:
        """Refuse a time `t` (years; named `name`) outside `span`.

        **Raises:**

        - `ValueError`: naming `name`, its value and the span.
        """
        span = self.span
        if span is not None and not span[0] <= t <= span[1]:
            raise ValueError(
                f"`{name}` must be within the forcing series' span [{span[0]:g}, "
                f"{span[1]:g}] (years), got {name}={t:g}."
            )

    @property
    def kinks(self) -> Float[Array, " kinks"] | None:
        """Times where the forcing or its slope jumps, years, for the step-size
        controller to step to (`diffrax.PIDController(jump_ts=...)`) and the exact
        solver to solve between: an adaptive step across one is accurate in the
        state but not in its derivatives. The forcing is continuous from the right
        at each."""
        return None


class AbruptCO2(AbstractScenario):
    r"""CO2 multiplied by `factor` at time 0 and held: `abrupt-4xCO2` with the default
    `factor=4`. $F = F_{2x} \log_2(\text{factor})$ for every $t \ge 0$, and 0 (the
    pre-industrial control) before.

    **Arguments:**

    - `factor`: the CO2 concentration over the pre-industrial one, > 0.
    """

    piecewise_linear: ClassVar[bool] = True
    steady: ClassVar[bool] = True

    factor: float = eqx.field(static=True, default=4.0, converter=as_python_number)

    def __check_init__(self):
        check_positive_number("factor", self.factor)

    def __call__(self, t, params) -> Scalar:
        return jnp.where(t < 0, 0.0, params.F2x * jnp.log2(self.factor))

    @property
    def kinks(self) -> Float[Array, " kinks"]:
        return jnp.zeros(1)


class OnePercentCO2(AbstractScenario):
    r"""CO2 rising by `rate` (1 %) a year, compounded: the `1pctCO2` experiment,
    $C / C_0 = (1 + \text{rate})^t$, so $F = F_{2x}\, t \log_2(1 + \text{rate})$
    (doubling at year 69.7, quadrupling at 139.3 for 1 %); before time 0, the
    pre-industrial control, $F = 0$.

    **Arguments:**

    - `rate`: the yearly fractional increase, > 0 (default 0.01).
    """

    piecewise_linear: ClassVar[bool] = True

    rate: float = eqx.field(static=True, default=0.01, converter=as_python_number)

    def __check_init__(self):
        check_positive_number("rate", self.rate)

    def __call__(self, t, params) -> Scalar:
        return params.F2x * jnp.maximum(t, 0.0) * jnp.log2(1.0 + self.rate)

    @property
    def kinks(self) -> Float[Array, " kinks"]:
        return jnp.zeros(1)


class ForcingSeries(AbstractScenario):
    """A forcing series, linearly interpolated in time (`diffrax.LinearInterpolation`).

    The values are a differentiable leaf: `jax.grad` with respect to the model
    reaches each one (`d(warming)/d(forcing in year k)`).

    **Arguments:**

    - `times`: strictly increasing times, years (e.g. calendar years 1850-2014).
        A run starts at `times[0]` unless told otherwise and must end by `times[-1]`.
    - `values`: the forcing at each time, W m-2, finite, the same length.

    **Raises:**

    - `ValueError`: for times that are not a 1-d, finite, strictly increasing
        series of at least 2, or values of another shape or not finite.
    """

    piecewise_linear: ClassVar[bool] = True

    times: Float[Array, " time"]
    values: Float[Array, " time"]

    def __init__(self, times, values):
        times_np = _real_array("times", times)
        traced = isinstance(values, jax.core.Tracer)
        values_np = (
            np.zeros(jnp.shape(values)) if traced else _real_array("values", values)
        )
        if times_np.ndim != 1 or times_np.size < 2:
            raise ValueError(
                f"`times` must be a 1-d series of at least 2 times, got shape "
                f"{times_np.shape}."
            )
        if not np.all(np.isfinite(times_np)):
            raise ValueError("`times` must be finite, got a NaN or infinite time.")
        steps = np.diff(times_np)
        if np.any(steps <= 0):
            k = int(np.argmax(steps <= 0))
            raise ValueError(
                "`times` must be strictly increasing, got "
                f"times[{k}] = {times_np[k]} then times[{k + 1}] = {times_np[k + 1]}."
            )
        if values_np.shape != times_np.shape:
            raise ValueError(
                f"`values` must have the shape of `times` {times_np.shape}, got "
                f"{values_np.shape}."
            )
        if not np.all(np.isfinite(values_np)):
            k = int(np.argmax(~np.isfinite(values_np)))
            raise ValueError(
                f"`values` must be finite, got values[{k}] = {values_np[k]} at time "
                f"{times_np[k]}."
            )
        self.times = jnp.asarray(times_np)
        # A traced array (under `jax.grad` of the values) is kept as it is.
        self.values = values if traced else jnp.asarray(values_np)

    def __call__(self, t, params) -> Scalar:
        del params
        return diffrax.LinearInterpolation(self.times, self.values).evaluate(t)

    @property
    def start(self):
        """The series' first time, years: a float, or the traced first time where
        the series is traced (a model given to a compiled function)."""
        if isinstance(self.times, jax.core.Tracer):
            return self.times[0]
        # On the host: under a trace even a concrete array's `[0]` would be staged.
        return float(np.asarray(self.times)[0])

    @property
    def kinks(self) -> Float[Array, " kinks"]:
        return self.times

    @property
    def span(self) -> tuple[float, float] | None:
        if isinstance(self.times, jax.core.Tracer):
            return None  # a series traced inside a compiled function
        times = np.asarray(self.times)  # on the host (see `start`)
        return float(times[0]), float(times[-1])


def check_scenario(forcing) -> None:
    """Refuse a model's `forcing` that is not an `ebm.AbstractScenario`.

    **Raises:**

    - `TypeError`: naming what is allowed and how to write a forcing of one's own.
    """
    if not isinstance(forcing, AbstractScenario):
        described = (
            "a function"
            if callable(forcing)
            else f"{type(forcing).__name__} {forcing!r}"
        )
        raise TypeError(
            "`forcing` must be an ebm.AbstractScenario (ebm.AbruptCO2(), "
            "ebm.OnePercentCO2(), ebm.ForcingSeries(times, values), "
            f"ebm.HistoricalForcing()), got {described}. A forcing of your own is a "
            "subclass of ebm.AbstractScenario with `__call__(self, t, params)` (W "
            "m-2 at time t, years); a constant forcing is ebm.AbruptCO2(factor) or "
            "a two-point ebm.ForcingSeries."
        )


def _real_array(name: str, value) -> np.ndarray:
    """`value` as a NumPy array of floats.

    **Raises:**

    - `ValueError`: for values that are not real numbers (strings, complex).
    """
    array = np.asarray(value)
    real = np.issubdtype(array.dtype, np.integer) or np.issubdtype(
        array.dtype, np.floating
    )
    if not real:
        raise ValueError(
            f"`{name}` must be real numbers, got an array of {array.dtype}: "
            f"{np.ravel(array)[:3].tolist()}."
        )
    return array.astype(float)


def run_start(model):
    """Where a run of `model` starts, years on its forcing's clock: the start of its
    forcing scenario (calendar years for an `ebm.ForcingSeries`), or 0 for a model
    without one (the zonal model, whose forcing is a parameter). A float, or the
    traced start of a series traced inside the user's function."""
    scenario = getattr(model, "forcing", None)
    return scenario.start if isinstance(scenario, AbstractScenario) else 0.0


@functools.cache
def _extended(base: type[AbstractParams], extra: tuple[Parameter, ...]):
    # One class per (model parameters, scenario parameters): `isinstance` checks
    # and compiled programs see the same class each time.
    suffix = "".join(p.name.title().replace("_", "") for p in extra)
    return params_class(
        f"{base.__name__}With{suffix}",
        (*base.declarations, *extra),
        base.constraints,
        doc=f"The parameters of `{base.__name__}`, and those of the forcing scenario.",
    )


def with_scenario_parameters(
    base: type[AbstractParams], scenario: AbstractScenario
) -> type[AbstractParams]:
    """`base`, with the parameters `scenario` declares (itself if none)."""
    extra = tuple(getattr(scenario, "parameters", ()))
    return base if not extra else _extended(base, extra)
