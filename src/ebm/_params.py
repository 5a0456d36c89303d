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

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

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


def _float_array(x) -> jax.Array:
    return jnp.asarray(x, dtype=float)


def _concrete(x) -> np.ndarray | None:
    """The value of `x` as numpy, or `None` when it is traced (inside jit or vmap)."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x)


def _check(name: str, value, allowed: str, ok) -> None:
    concrete = _concrete(value)
    if concrete is None:
        return
    if not np.all(np.isfinite(concrete)):
        raise ValueError(f"`{name}` must be finite, got {concrete}.")
    if not np.all(ok(concrete)):
        raise ValueError(f"`{name}` must be {allowed}, got {concrete}.")


class Params(eqx.Module):
    """Physical parameters of the energy-balance model (defaults: climlab's `EBM`).

    Every field is a float array; change one with `eqx.tree_at` or by constructing
    a new `Params(D=0.3)`. See the module docstring for units and meanings.

    **Raises:**

    - `ValueError`: at construction, for a non-finite value, `D < 0`, `B <= 0`,
        `water_depth <= 0`, `ice_width <= 0`, `eccentricity` outside `[0, 1)`,
        `obliquity` outside `[0, 180]` degrees, an albedo (`a0`, `ai`, or the ice-free
        albedo `a0 + a2 P2` anywhere from equator to pole) outside `[0, 1]`, or
        `S0 < 0`. Values traced under `jit`/`vmap` are checked by the entry points
        instead (non-finite results raise there).
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
        always = lambda x: True  # noqa: E731
        for name in ("A", "S0", "s2", "Tf", "forcing", "long_peri"):
            _check(name, getattr(self, name), "finite", always)
        _check("S0", self.S0, ">= 0 W m-2", lambda x: x >= 0)
        _check("B", self.B, "> 0 W m-2 K-1", lambda x: x > 0)
        _check("D", self.D, ">= 0 W m-2 K-1", lambda x: x >= 0)
        _check("water_depth", self.water_depth, "> 0 m", lambda x: x > 0)
        _check("ice_width", self.ice_width, "> 0 K", lambda x: x > 0)
        _check(
            "eccentricity",
            self.eccentricity,
            "in [0, 1) (a closed orbit)",
            lambda x: (0 <= x) & (x < 1),
        )
        _check(
            "obliquity",
            self.obliquity,
            "in [0, 180] degrees",
            lambda x: (0 <= x) & (x <= 180),
        )
        for name in ("a0", "ai"):
            _check(
                name, getattr(self, name), "in [0, 1]", lambda x: (0 <= x) & (x <= 1)
            )
        a0, a2 = _concrete(self.a0), _concrete(self.a2)
        _check("a2", self.a2, "finite", always)
        if a0 is not None and a2 is not None:
            # P2(sin lat) ranges over [-1/2, 1]: the ice-free albedo ranges over these.
            for where, albedo in (("equator", a0 - a2 / 2), ("pole", a0 + a2)):
                if np.any((albedo < 0) | (albedo > 1)):
                    raise ValueError(
                        f"`a2` = {a2} puts the ice-free albedo `a0 + a2 P2` at the "
                        f"{where} at {albedo}; it must stay in [0, 1]."
                    )

    @property
    def heat_capacity(self) -> Scalar:
        """Heat capacity of the water column, J m-2 K-1."""
        return WATER_DENSITY * WATER_HEAT_CAPACITY * self.water_depth

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of every parameter, in declaration order."""
        return tuple(field.name for field in dataclasses.fields(cls))
