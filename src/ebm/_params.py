r"""Physical parameters of the energy-balance model.

Every parameter is a float64 array leaf, so `jax.grad`, `jax.jacfwd` and `jax.vmap`
reach each one. The defaults are those of climlab's `EBM`, so that the two models
can be compared one to one:

| name | default | units | meaning |
|---|---|---|---|
| `A` | 210.0 | W m-2 | outgoing longwave radiation at 0 degC |
| `B` | 2.0 | W m-2 K-1 | longwave sensitivity to temperature |
| `D` | 0.555 | W m-2 K-1 | meridional heat diffusivity |
| `S0` | 1365.2 | W m-2 | solar constant |
| `s2` | -0.48 | 1 | second Legendre coefficient of insolation |
| `a0` | 0.3 | 1 | ice-free albedo, global part |
| `a2` | 0.078 | 1 | ice-free albedo, second Legendre coefficient |
| `ai` | 0.62 | 1 | albedo of ice |
| `Tf` | -10.0 | degC | temperature below which the surface is ice-covered |
| `water_depth` | 10.0 | m | depth of the water column that sets heat capacity |
| `ice_width` | 1.0 | K | width of the smooth ice-albedo transition |
| `forcing` | 0.0 | W m-2 | radiative forcing added to every cell's energy budget |
| `eccentricity` | 0.017236 | 1 | eccentricity of the Earth's orbit |
| `obliquity` | 23.446 | degrees | tilt of the Earth's axis to its orbit |
| `long_peri` | 281.37 | degrees | solar longitude of perihelion (from vernal equinox) |

`ice_width` is ebm's own: climlab's albedo is a step at `Tf`, which has no useful
derivative. ebm blends the two albedos with `tanh((T - Tf) / ice_width)`, which tends
to the step as `ice_width -> 0`. So is `forcing`: a uniform radiative forcing (3.7
W m-2 for doubled CO2) for forced and transient experiments and climate sensitivity.

The orbital parameters (climlab's present-day values, Berger 1978) are used only by
the orbital insolation terms (`ebm.DailyInsolation`, `ebm.AnnualMeanInsolation`);
the default `P2Insolation` does not depend on them. `long_peri` follows climlab's
convention: the Sun's longitude when the Earth is at perihelion, measured from the
vernal equinox (281.37 degrees today: perihelion in early January).
"""

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool

from ._constants import WATER_DENSITY, WATER_HEAT_CAPACITY
from ._custom_types import Scalar


UNITS = {
    "A": "W m-2",
    "B": "W m-2 K-1",
    "D": "W m-2 K-1",
    "S0": "W m-2",
    "s2": "1",
    "a0": "1",
    "a2": "1",
    "ai": "1",
    "Tf": "degC",
    "water_depth": "m",
    "ice_width": "K",
    "forcing": "W m-2",
    "eccentricity": "1",
    "obliquity": "degree",
    "long_peri": "degree",
}
"""Each parameter's units (UDUNITS spelling, as written to netCDF)."""


def _float_array(x):
    # A value that is not a real number is kept as given, so that `__check_init__`
    # can refuse it with the parameter's name (a converter does not know it).
    try:
        if jnp.iscomplexobj(x):
            return x
        return jnp.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return x


def _concrete(x) -> np.ndarray | None:
    """The value of `x` as numpy, or `None` when it is traced (inside jit or vmap)."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x)


def _isfinite(x):
    return jnp.isfinite(x) if isinstance(x, jax.Array) else np.isfinite(x)


class _Range(NamedTuple):
    """One declared range: `ok(*values of fields)` must hold everywhere."""

    name: str
    allowed: str
    ok: Callable
    fields: tuple[str, ...] = ()
    shown: Callable | None = None

    def names(self) -> tuple[str, ...]:
        return self.fields or (self.name,)

    def message(self, values) -> str:
        shown = values[-1] if self.shown is None else self.shown(*values)
        return f"`{self.name}` must be {self.allowed}, got {shown}."

    def traced_message(self) -> str:
        return (
            f"`{self.name}` must be {self.allowed}; a value traced under "
            "`jit`/`vmap`/`grad` (so it cannot be shown here) is not. Pass a value in "
            "that range."
        )


def _in_unit_interval(x):
    return (0 <= x) & (x <= 1)


class Params(eqx.Module):
    """Physical parameters of the energy-balance model (defaults: climlab's `EBM`).

    Every field is a float array; change one with `eqx.tree_at` or by constructing
    a new `Params(D=0.3)`. See the module docstring for units and meanings.

    **Raises:**

    - `ValueError`: at construction, for a non-finite value, `D < 0`, `B <= 0`,
        `water_depth <= 0`, `ice_width <= 0`, `eccentricity` outside `[0, 1)`,
        `obliquity` outside `[0, 180]` degrees, an albedo (`a0`, `ai`, or the ice-free
        albedo `a0 + a2 P2` anywhere from equator to pole) outside `[0, 1]`, or
        `S0 < 0`; for a value that is not a real number, or an array of more than
        one dimension (a 1-d array is a batch of members, see `ebm.sweep`). Values
        traced under `jit`/`vmap`/`grad` are checked against the same ranges by
        `Params.check`, which every entry point calls.
    """

    A: Scalar = eqx.field(default=210.0, converter=_float_array)
    B: Scalar = eqx.field(default=2.0, converter=_float_array)
    D: Scalar = eqx.field(default=0.555, converter=_float_array)
    S0: Scalar = eqx.field(default=1365.2, converter=_float_array)
    s2: Scalar = eqx.field(default=-0.48, converter=_float_array)
    a0: Scalar = eqx.field(default=0.3, converter=_float_array)
    a2: Scalar = eqx.field(default=0.078, converter=_float_array)
    ai: Scalar = eqx.field(default=0.62, converter=_float_array)
    Tf: Scalar = eqx.field(default=-10.0, converter=_float_array)
    water_depth: Scalar = eqx.field(default=10.0, converter=_float_array)
    ice_width: Scalar = eqx.field(default=1.0, converter=_float_array)
    forcing: Scalar = eqx.field(default=0.0, converter=_float_array)
    eccentricity: Scalar = eqx.field(default=0.017236, converter=_float_array)
    obliquity: Scalar = eqx.field(default=23.446, converter=_float_array)
    long_peri: Scalar = eqx.field(default=281.37, converter=_float_array)

    def __check_init__(self):
        for name in self.field_names():
            value = getattr(self, name)
            if not isinstance(value, jax.Array):
                raise ValueError(f"`{name}` must be a real scalar, got {value!r}.")
            if value.ndim > 1:
                raise ValueError(
                    f"`{name}` must be a real scalar (or a 1-d batch of members, see "
                    f"`ebm.sweep`), got shape {value.shape}."
                )
        for declared in _RANGES:
            values = [_concrete(getattr(self, name)) for name in declared.names()]
            if any(value is None for value in values):
                continue  # traced: `check` tests it inside the entry point
            if not np.all(declared.ok(*values)):
                raise ValueError(declared.message(values))

    def check(self) -> "Params":
        """These parameters, with their ranges checked inside `jit`.

        Construction checks concrete values; this checks the values that were
        traced under the user's `jit`, `vmap` or `grad`, against the same ranges.
        Every jitted entry point calls it first. It is transparent to
        differentiation.

        **Returns:**

        `self`, with an `eqx.error_if` attached to every field.

        **Raises:**

        - `ValueError`: (while tracing) when a field is not a scalar (a batch of
            parameters runs through `ebm.ensemble` or `jax.vmap`).
        - `EquinoxRuntimeError`: when a value is outside its range; the message
            names the parameter and the range.
        """
        for name in self.field_names():
            shape = jnp.shape(getattr(self, name))
            if shape != ():
                raise ValueError(
                    f"`{name}` must be a real scalar, got shape {shape}: run a batch "
                    "of parameters with `ebm.ensemble` or `jax.vmap`."
                )
        failed = _failed_ranges(self)
        return eqx.branched_error_if(
            self, jnp.any(failed), jnp.argmax(failed), _TRACED_MESSAGES
        )

    @property
    def heat_capacity(self) -> Scalar:
        """Heat capacity of the water column, J m-2 K-1."""
        return WATER_DENSITY * WATER_HEAT_CAPACITY * self.water_depth

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of every parameter, in declaration order."""
        return tuple(field.name for field in dataclasses.fields(cls))


# Every parameter's range, declared once: `Params.__check_init__` raises a ValueError
# with the value at construction, `Params.check` an `eqx.error_if` inside jit. The
# finiteness ranges come first, so that a NaN is reported as such (NaN fails every
# comparison after it too).
_RANGES: tuple[_Range, ...] = (
    *(_Range(name, "finite", _isfinite) for name in Params.field_names()),
    _Range("S0", ">= 0 W m-2", lambda x: x >= 0),
    _Range("B", "> 0 W m-2 K-1", lambda x: x > 0),
    _Range("D", ">= 0 W m-2 K-1", lambda x: x >= 0),
    _Range("water_depth", "> 0 m", lambda x: x > 0),
    _Range("ice_width", "> 0 K", lambda x: x > 0),
    _Range("eccentricity", "in [0, 1), a closed orbit", lambda x: (0 <= x) & (x < 1)),
    _Range("obliquity", "in [0, 180] degrees", lambda x: (0 <= x) & (x <= 180)),
    _Range("a0", "in [0, 1]", _in_unit_interval),
    _Range("ai", "in [0, 1]", _in_unit_interval),
    # P2(sin lat) ranges over [-1/2, 1]: the ice-free albedo over these two values.
    _Range(
        "a2",
        "such that the ice-free albedo `a0 + a2 P2` stays in [0, 1] at the pole, "
        "where it is `a0 + a2`",
        lambda a0, a2: _in_unit_interval(a0 + a2),
        fields=("a0", "a2"),
        shown=lambda a0, a2: f"{a2} with `a0` = {a0}: {a0 + a2}",
    ),
    _Range(
        "a2",
        "such that the ice-free albedo `a0 + a2 P2` stays in [0, 1] at the equator, "
        "where it is `a0 - a2 / 2`",
        lambda a0, a2: _in_unit_interval(a0 - a2 / 2),
        fields=("a0", "a2"),
        shown=lambda a0, a2: f"{a2} with `a0` = {a0}: {a0 - a2 / 2}",
    ),
)
_TRACED_MESSAGES = tuple(declared.traced_message() for declared in _RANGES)


def _failed_ranges(params: Params) -> Bool[Array, " ranges"]:
    """Whether each of `_RANGES` fails, traceably."""
    return jnp.stack(
        [
            ~jnp.all(declared.ok(*(getattr(params, name) for name in declared.names())))
            for declared in _RANGES
        ]
    )


def in_range(params: Params) -> Bool[Array, ""]:
    """Whether every field of `params` is in its declared range, traceably."""
    return ~jnp.any(_failed_ranges(params))


def allowed_range(name: str) -> str:
    """What parameter `name` must be, in words (every declared range of it)."""
    return " and ".join(
        declared.allowed for declared in _RANGES if declared.name == name
    )


def out_of_range(params: Params, name: str, value) -> str | None:
    """What `name` must be, if `params` with `name` set to `value` (concrete) breaks
    a declared range; `None` if it does not, or if a value involved is traced."""
    for declared in _RANGES:
        if name not in declared.names():
            continue
        values = [
            _concrete(value) if field == name else _concrete(getattr(params, field))
            for field in declared.names()
        ]
        if any(v is None for v in values):
            continue
        if not np.all(declared.ok(*values)):
            return declared.allowed
    return None
