"""`ebm.Params`: the parameters of ebm's own physical terms.

Assembled from the declarations of the terms in `BUILTIN_TERMS` (see
`ebm._model.parameters`), in that order; the defaults are those of climlab's `EBM`,
so that the two models can be compared one to one.
"""

import inspect

from .._custom_types import Scalar
from .._model.parameters import merge, params_class, table
from .albedo.prescribed import PrescribedAlbedo
from .albedo.smooth import SmoothIceAlbedo
from .albedo.subgrid import SubgridIceAlbedo
from .forcing.uniform import UniformForcing
from .heat_capacity.land_ocean import LandOceanHeatCapacity
from .heat_capacity.mixed_layer import (
    MixedLayerHeatCapacity,
    water_column_heat_capacity,
)
from .insolation.annual_mean import AnnualMeanInsolation
from .insolation.daily import DailyInsolation
from .insolation.p2 import P2Insolation
from .longwave.linear import LinearLongwave
from .transport.diffusive import DiffusiveTransport


BUILTIN_TERMS = (
    LinearLongwave,
    DiffusiveTransport,
    P2Insolation,
    SubgridIceAlbedo,
    SmoothIceAlbedo,
    PrescribedAlbedo,
    MixedLayerHeatCapacity,
    LandOceanHeatCapacity,
    UniformForcing,
    AnnualMeanInsolation,
    DailyInsolation,
)
"""ebm's own terms, whose parameters `ebm.Params` holds."""


def declarations_of(terms) -> tuple:
    """The parameters and constraints that the term classes `terms` declare.

    **Raises:**

    - `ValueError`: when two of them declare one name differently.
    """
    parameters = [p for term in terms for p in term.parameters]
    owners = [term.__name__ for term in terms for _ in term.parameters]
    constraints = []
    for term in terms:
        constraints.extend(c for c in term.constraints if c not in constraints)
    return merge(parameters, owners), tuple(constraints)


_Declared = params_class("Params", *declarations_of(BUILTIN_TERMS))


class Params(_Declared):
    """Physical parameters of the energy-balance model (defaults: climlab's `EBM`).

    Every field is a float64 array, so `jax.grad`, `jax.jacfwd` and `jax.vmap` reach
    each one; change one with `eqx.tree_at` or by constructing `Params(D=0.3)`. Each
    is declared by the term that uses it, whose module gives the equation; the table
    of names, defaults, units and ranges is `help(ebm.Params)` and the docs'
    "The physics" page. A model with terms of its own has `model.Params`, a subclass
    with their parameters added.

    `ice_width` is ebm's own: climlab's albedo is a step at `Tf`, which has no
    useful derivative. ebm blends the two albedos with `tanh((T - Tf) / ice_width)`,
    which tends to the step as `ice_width -> 0`. So is `forcing`: a uniform radiative
    forcing (3.7 W m-2 for doubled CO2). The orbital parameters are used only by the
    orbital insolation terms (`ebm.DailyInsolation`, `ebm.AnnualMeanInsolation`); the
    default `P2Insolation` does not depend on them. `long_peri` follows climlab's
    convention: the Sun's longitude when the Earth is at perihelion, measured from
    the vernal equinox (281.37 degrees today: perihelion in early January).

    **Raises:**

    - `ValueError`: at construction, for a value outside its range (the table's
        "allowed"; the ice-free albedo `a0 + a2 P2` must also stay in [0, 1] from
        equator to pole), a value that is not a real number, or an array of more
        than one dimension (a 1-d array is a batch of members, see `ebm.sweep`).
        Values traced under `jit`/`vmap`/`grad` are checked against the same ranges
        by `Params.check`, which every entry point calls.
    """

    @property
    def heat_capacity(self) -> Scalar:
        """Heat capacity of a water column `water_depth` deep, J m-2 K-1."""
        return water_column_heat_capacity(self.water_depth)


Params.__doc__ = f"{inspect.cleandoc(Params.__doc__)}\n\n{table(Params.declarations)}\n"
Params.__module__ = "ebm"
Params.__qualname__ = "Params"

UNITS = Params.units()
"""Each parameter of `ebm.Params`' units (UDUNITS spelling, as written to netCDF)."""
