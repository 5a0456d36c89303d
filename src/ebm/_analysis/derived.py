r"""Quantities derived from each posterior draw: the climate sensitivity, the
snowball fold, or any `fn(params) -> scalar`.
"""

import warnings
from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from .._model.parameters import params_checked, with_values
from .._model.protocol import AbstractModel
from .._results import RESULTS
from .._steady.continuation import Fold, fold
from .._steady.equilibrium import equilibrium
from .._zonal.start import model_grid


CO2_DOUBLING = 3.7
"""The radiative forcing of doubled CO2, W m-2 (Myhre et al. 1998, rounded)."""


DERIVED_ATTRS = {
    "ecs": {
        "units": "K",
        "long_name": "equilibrium climate sensitivity (global-mean warming for "
        f"{CO2_DOUBLING} W m-2)",
    },
    "snowball_S0": {
        "units": "W m-2",
        "long_name": "solar constant of the snowball fold",
    },
    "tcr": {
        "units": "K",
        "long_name": "transient climate response (mean warming over years 61-80 of "
        "1pctCO2)",
    },
}
# The ECS of a model forced by a scenario is its own (for its F2x), not for
# 3.7 W m-2 of its forcing parameter.
SCENARIO_ATTRS = DERIVED_ATTRS | {
    "ecs": {
        "units": "K",
        "long_name": "equilibrium climate sensitivity (steady warming for F2x)",
    }
}


class ClimateSensitivity(eqx.Module):
    """`params -> ` the equilibrium global-mean warming for `forcing` W m-2 more of
    the model's forcing parameter (`model.forcing_parameter`), K: from the
    equilibrium reached from `start` to the one reached from it."""

    model: AbstractModel
    start: Array
    forcing: float = CO2_DOUBLING

    def __call__(self, params):
        base = equilibrium(
            params, model=self.model, start=self.start, throw=False, near_fold=None
        )
        name = self.model.forcing_parameter
        forced = eqx.tree_at(
            lambda p: getattr(p, name), params, getattr(params, name) + self.forcing
        )
        warmer = equilibrium(
            forced, model=self.model, start=base.T, throw=False, near_fold=None
        )
        return warmer.global_mean - base.global_mean


class SnowballFold(eqx.Module):
    """`params -> ` the solar constant of the snowball fold, W m-2: `ebm.fold`
    refined from `guess` (the fold at the given parameters)."""

    model: AbstractModel
    guess: Fold

    def __call__(self, params):
        return fold(params, "S0", guess=self.guess, model=self.model, throw=False).value


class LayerMetric(eqx.Module):
    """`params -> ` `ebm.ecs` or `ebm.tcr` of a model of the protocol, K (NaN
    where its solve fails)."""

    model: AbstractModel
    name: str = eqx.field(static=True)

    def __call__(self, params):
        from .._layers.metrics import ecs_and_result, tcr_and_result

        if self.name == "ecs":
            value, result = ecs_and_result(params, self.model)
        else:
            value, result = tcr_and_result(params, self.model)
        return jnp.where(result == RESULTS.successful, value, jnp.nan)


def derive(derived, draws, log_posterior, model, params, start, reference):
    if not derived:
        return {}
    functions = {}
    for name, fn in derived.items():
        if fn == "ecs" and model.forcing_parameter is not None:
            fn = ClimateSensitivity(model, log_posterior.start)
        elif fn in ("ecs", "tcr"):
            fn = LayerMetric(model, fn)
        elif fn == "snowball_S0":
            guess = fold(params, "S0", stop=params.S0 - 400.0, model=model, start=start)
            fn = SnowballFold(model, guess)
        functions[name] = fn
    flat = {
        name: value.reshape(-1, *value.shape[2:])
        for name, value in draws.items()
        if name in log_posterior.parameters
    }
    shape = next(iter(draws.values())).shape[:2]
    grid = model_grid(model)
    cells = 1 if grid is None else grid.n_lat
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return {
            name: map_draws(fn, log_posterior.params, flat, cells).reshape(shape)
            for name, fn in functions.items()
        }


MAP_BATCH_CELLS = 8192
"""Draws times cells per vmapped batch of the derived quantities (`map_draws`)."""


@eqx.filter_jit
def map_draws(fn, params, flat, n_lat: int):
    """`fn` of each draw in `flat` (`{name: values}`), in batches of about
    `MAP_BATCH_CELLS // n_lat` draws (`n_lat` 1 for a global model)."""
    # One vmap over thousands of draws of a chain of equilibria (as "ecs" is) can
    # wedge XLA's CPU runtime: the program idles, never returning. Batches of about
    # `MAP_BATCH_CELLS` draws x cells, one after the other, do not.
    # The draws lie in the parameters' ranges (the priors' supports do).
    with params_checked():
        return jax.lax.map(
            lambda values: fn(with_values(params, values)),
            flat,
            batch_size=max(1, MAP_BATCH_CELLS // n_lat),
        )


def check_derived(derived, model) -> dict:
    if isinstance(derived, str):
        derived = (derived,)
    if isinstance(derived, Mapping):
        result = dict(derived)
    else:
        result = {name: name for name in derived}
    known = model.derived_names
    for name, fn in result.items():
        if isinstance(fn, str) and fn not in known:
            raise ValueError(
                f"`derived` names {fn!r}; known names for {type(model).__name__} "
                f"are {known}, or give `{{name: fn}}` with `fn(params) -> scalar`."
            )
        if not isinstance(fn, str) and not callable(fn):
            raise ValueError(f"`derived[{name!r}]` must be callable, got {fn!r}.")
    return result
