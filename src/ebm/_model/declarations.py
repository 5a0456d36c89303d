"""The declarations of parameters and of constraints between them (see
`_model/parameters.py`): `ebm.Parameter` (name, default, units, allowed range, fit
transform, long name) and `ebm.Constraint`."""

import dataclasses
from collections.abc import Callable
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np


PROFILES = (None, "bounds", "cells")
"""What one value of a parameter is: a scalar, or a profile in latitude on the
cell bounds or on the cells."""

TRANSFORMS = ("none", "log", "logit")
"""How `ebm.fit` maps a parameter to an unconstrained coordinate: itself, the
logarithm of its distance from its lower end (parameters with a lower end), or the
log-odds of its position between its two ends (parameters with both)."""


def _number(x: float) -> str:
    return f"{x:g}"


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One physical parameter, declared by the term that uses it.

    **Arguments:**

    - `name`: the field name in the parameter container (`params.name`), a Python
        identifier.
    - `default`: the default value.
    - `units`: UDUNITS units, as written to netCDF (`"1"` if dimensionless).
    - `long_name`: what it is, in a few words (CLI help, netCDF, docs).
    - `lower`, `upper`: the allowed range's ends, or `None` for no end.
    - `lower_open`, `upper_open`: whether each end is excluded (`> 0` instead of
        `>= 0`).
    - `note`: words added to the range in messages ("a closed orbit").
    - `transform`: `"log"`, `"logit"` or `"none"`: the coordinate `ebm.fit` moves
        the parameter in, so that it stays in its range: `log(x - lower)` (needs
        `lower`), `log((x - lower) / (upper - x))` (needs both ends), or `x`.
        Applied elementwise to a profile.
    - `profile`: `None` for a scalar; `"bounds"` for a profile in latitude with one
        value per cell bound (`grid.n_lat + 1`, as a diffusivity), `"cells"` for one
        value per cell. A profile's value is a 1-d array of that length, or a
        scalar meaning the same value everywhere (the `default` is one); its range
        holds elementwise. A term reads it with `params.on_grid(name, grid)`.

    Every parameter must also be finite.
    """

    name: str
    default: float
    units: str
    long_name: str
    lower: float | None = None
    upper: float | None = None
    lower_open: bool = False
    upper_open: bool = False
    note: str = ""
    transform: Literal["none", "log", "logit"] = "none"
    profile: Literal["bounds", "cells"] | None = None

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(
                f"Parameter `name` must be a Python identifier, got {self.name!r}."
            )
        if self.transform not in TRANSFORMS:
            raise ValueError(
                f"Parameter {self.name!r}: `transform` must be one of {TRANSFORMS}, "
                f"got {self.transform!r}."
            )
        if self.profile not in PROFILES:
            raise ValueError(
                f"Parameter {self.name!r}: `profile` must be one of {PROFILES}, got "
                f"{self.profile!r}."
            )
        if self.transform == "log" and (self.lower is None or self.upper is not None):
            raise ValueError(
                f"Parameter {self.name!r}: the log transform needs a `lower` end and "
                f"no `upper` one, got [{self.lower}, {self.upper}]."
            )
        if self.transform == "logit" and (self.lower is None or self.upper is None):
            raise ValueError(
                f"Parameter {self.name!r}: the logit transform needs both ends, got "
                f"[{self.lower}, {self.upper}]."
            )
        if not np.isfinite(self.default) or not self.contains(self.default):
            raise ValueError(
                f"Parameter {self.name!r}: the default {self.default} is not "
                f"{self.allowed}."
            )

    @property
    def ndim(self) -> int:
        """Dimensions of one value: 0 for a scalar, 1 for a profile."""
        return 0 if self.profile is None else 1

    @property
    def point(self) -> str | None:
        """What a profile has one value per, in words (`"cell bound"`, `"cell"`)."""
        return {None: None, "bounds": "cell bound", "cells": "cell"}[self.profile]

    def size(self, grid) -> int | None:
        """The length of a profile on `grid` (`None` for a scalar)."""
        if self.profile is None:
            return None
        return grid.n_lat + 1 if self.profile == "bounds" else grid.n_lat

    @property
    def allowed(self) -> str:
        """The allowed range, in words: `">= 0 W m-2"`, `"in [0, 1)"`."""
        units = "" if self.units == "1" else f" {self.units}"
        if self.lower is None and self.upper is None:
            text = "finite"
        elif self.upper is None:
            text = f"{'>' if self.lower_open else '>='} {_number(self.lower)}{units}"
        elif self.lower is None:
            text = f"{'<' if self.upper_open else '<='} {_number(self.upper)}{units}"
        else:
            text = (
                f"in {'(' if self.lower_open else '['}{_number(self.lower)}, "
                f"{_number(self.upper)}{')' if self.upper_open else ']'}{units}"
            )
        return f"{text}, {self.note}" if self.note else text

    def contains(self, x):
        """Whether `x` is in the range (elementwise, traceable; finiteness apart)."""
        ok = True
        if self.lower is not None:
            ok = ok & ((x > self.lower) if self.lower_open else (x >= self.lower))
        if self.upper is not None:
            ok = ok & ((x < self.upper) if self.upper_open else (x <= self.upper))
        return ok

    def to_unconstrained(self, value):
        """The optimiser's coordinate of `value` under `transform`."""
        if self.transform == "log":
            return jnp.log(value - self.lower)
        if self.transform == "logit":
            fraction = (value - self.lower) / (self.upper - self.lower)
            return jnp.log(fraction) - jnp.log1p(-fraction)
        return value

    def from_unconstrained(self, coordinate):
        """The inverse of `to_unconstrained`."""
        if self.transform == "log":
            return self.lower + jnp.exp(coordinate)
        if self.transform == "logit":
            return self.lower + (self.upper - self.lower) * jax.nn.sigmoid(coordinate)
        return coordinate

    def log_jacobian(self, coordinate):
        """`log |d from_unconstrained / d coordinate|` (for densities)."""
        if self.transform == "log":
            return coordinate
        if self.transform == "logit":
            return (
                jnp.log(self.upper - self.lower)
                + jax.nn.log_sigmoid(coordinate)
                + jax.nn.log_sigmoid(-coordinate)
            )
        return jnp.zeros_like(coordinate)


@dataclasses.dataclass(frozen=True)
class Constraint:
    """A range that ties several parameters of one term together.

    **Arguments:**

    - `name`: the parameter the message names.
    - `allowed`: what it must be, in words.
    - `ok`: a traceable function of the `fields`' values, true where the range
        holds.
    - `fields`: the parameters `ok` takes, in order.
    - `shown`: a function of the same values, giving the value to show in the
        message (default: the last field's).
    """

    name: str
    allowed: str
    ok: Callable
    fields: tuple[str, ...]
    shown: Callable | None = None

    def names(self) -> tuple[str, ...]:
        return self.fields

    def message(self, values) -> str:
        shown = values[-1] if self.shown is None else self.shown(*values)
        return f"`{self.name}` must be {self.allowed}, got {shown}."

    def traced_message(self) -> str:
        return (
            f"`{self.name}` must be {self.allowed}; a value traced under "
            "`jit`/`vmap`/`grad` (so it cannot be shown here) is not. Pass a value in "
            "that range. (Under `jax.jit` this message reaches you inside JAX's "
            "`JaxRuntimeError`; `equinox.filter_jit` raises it as it is.)"
        )


def _isfinite(x):
    return jnp.isfinite(x) if isinstance(x, jax.Array) else np.isfinite(x)


def _first_outside(ok: Callable) -> Callable:
    """The value to show for an array (a profile, or a batch of members) that breaks
    a range: its first element that does, with its index; a scalar as it is."""

    def shown(value):
        value = np.asarray(value)
        if value.ndim == 0:
            return value
        index = int(np.argmin(np.broadcast_to(ok(value), value.shape).ravel()))
        return f"{value.flat[index]} (element {index} of {value.size})"

    return shown


def _range_of(parameter: Parameter, finite: bool) -> Constraint:
    """A parameter's own range as a one-field constraint: finiteness, or its ends."""
    ok = _isfinite if finite else parameter.contains
    allowed = "finite" if finite else parameter.allowed
    return Constraint(
        parameter.name, allowed, ok, (parameter.name,), shown=_first_outside(ok)
    )
