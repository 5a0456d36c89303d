r"""`ebm.equilibrium` for a model of the protocol other than the zonal one: the
steady state of its tendency under the forcing of one time, held constant, and
`ebm.SteadyState`, the result a model's own `steady_state` returns.

For a state $y$ and the model's tendency $f(t, y; \theta)$ (per year), the steady
state under the forcing of time $t$ is the root $f(t, y^*; \theta) = 0$:

- the ocean-layer models (`ebm.TwoLayerModel`, `ebm.NLayerModel`, and any model of
    the protocol) are solved by Newton's method on the tendency from the start state,
    with the Jacobian as the model gives it (`model.jacobian`, a small dense
    operator), and differentiated implicitly (by `ebm.equilibrium`'s `adjoint`,
    default `model.steady_adjoint()`):
    $\partial y^*/\partial\theta = -J^{-1}\,\partial f/\partial\theta$. For the
    layer models the tendency is linear and every layer ends at $F(t)/\lambda$;
- the zonal model over a deep ocean (`ebm.DeepOceanModel`) has the deep ocean at the
    surface's temperature in every cell, so that nothing is exchanged, and the
    surface in the zonal model's own equilibrium with the scenario's forcing added
    to its `forcing` parameter: `ebm.equilibrium` of the surface model, with its
    branches, its stability check, its fold diagnostics and its implicit
    derivative (the deep ocean's `gamma`, `C_deep` and `efficacy` do not move it).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Int, PyTree

from .._custom_types import Scalar
from .._model.protocol import AbstractModel, Variable, state_arrays
from .._results import (
    RESULTS,
    nan_unless_successful,
    raise_if_failed,
    with_result_names,
)
from .._scenarios.base import AbstractScenario


class SteadyState(eqx.Module):
    """A steady state of a model of the protocol other than the zonal one (the
    result of `ebm.equilibrium` for it).

    **Attributes:**

    - `state`: the steady state, `{name: array}` (see `variables`).
    - `T`: its surface temperature (`model.temperature`).
    - `global_mean`: its global-mean surface temperature.
    - `t`: the time whose forcing is held, years on the forcing's clock.
    - `residual`: the largest absolute tendency at `state`, per year (K per year
        for temperatures).
    - `surface`: for `ebm.DeepOceanModel`, the surface model's `ebm.Equilibrium`
        (its ice edges, leading eigenvalue and condition number); `None` otherwise.
    - `variables`: the model's declared variables.
    - `result`: an `ebm.RESULTS`; `RESULTS.successful` when converged.
    - `num_steps`: root-finder iterations taken.
    """

    state: dict[str, Array]
    T: Array
    global_mean: Scalar
    t: Scalar
    residual: Scalar
    # An ebm.Equilibrium, which is built in the module that calls this one.
    surface: eqx.Module | None
    variables: tuple[Variable, ...] = eqx.field(static=True)
    result: RESULTS
    num_steps: Int[Array, ""]

    def __repr__(self) -> str:
        return with_result_names(self)

    @property
    def converged(self) -> Bool[Array, ""]:
        """Whether the root-find succeeded."""
        return self.result == RESULTS.successful

    @classmethod
    def of(
        cls,
        model: AbstractModel,
        params,
        state: PyTree,
        t,
        *,
        surface: eqx.Module | None = None,
        result: RESULTS = RESULTS.successful,
        num_steps=0,
    ) -> "SteadyState":
        """The steady state `state` of `model` under the forcing of time `t`, with
        its temperatures and residual (for a model's own `steady_state`: a closed
        form, or another model's equilibrium as `surface`)."""
        tendency = model(t, state, params)
        residual = jnp.max(
            jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree.leaves(tendency)])
        )
        return cls(
            state=state_arrays(model, state),
            T=model.temperature(t, state, params),
            global_mean=model.mean_temperature(t, state, params),
            t=jnp.asarray(t, dtype=float),
            residual=jax.lax.stop_gradient(residual),
            surface=surface,
            variables=model.variables,
            result=result,
            num_steps=jnp.asarray(num_steps),
        )


def held_time(model: AbstractModel, t):
    """The time whose forcing a steady state holds: `t`, or the start of the
    model's forcing scenario (0 without one), once the scenario covers it (where
    both are known: a traced `t` or series is checked where it was given); `None`
    for a model forced by a parameter (`forcing_parameter`, the zonal model's
    `forcing`), which refuses `t`."""
    if model.forcing_parameter is not None:
        if t is not None:
            raise ValueError(
                "`t` is for a model under a forcing scenario (the time whose "
                "forcing is held); "
                f"{type(model).__name__}'s forcing is its parameter "
                f"`{model.forcing_parameter}`, and it takes no `t` (got t={t!r})."
            )
        return None
    scenario = getattr(model, "forcing", None)
    if t is None:
        return 0.0 if scenario is None else scenario.start
    if isinstance(t, (bool, np.bool_)) or np.ndim(t) != 0:
        raise ValueError(f"`t` must be one number of years, got {t!r}.")
    if isinstance(t, jax.core.Tracer):
        return t
    try:
        value = float(t)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"`t` must be a finite number of years, got {t!r}.")
    if isinstance(scenario, AbstractScenario):
        scenario.check_time(value, "t")
    return value


def newton_steady_state(
    model: AbstractModel,
    params,
    t,
    start,
    *,
    solver_given: bool,
    adjoint,
    max_steps: int,
    throw: bool,
) -> SteadyState:
    """The steady state of `model` by Newton's method on its tendency at time `t`
    from `start` (a state of the model, or one of its `start_names`),
    differentiated by `adjoint` (`params` checked): what `ebm.equilibrium` does
    for a model whose `steady_state` is `None`."""
    if solver_given:
        raise ValueError(
            "`solver` is the zonal model's option: the steady state of "
            f"{type(model).__name__} is found by Newton's method and differentiated "
            "implicitly (by `adjoint`)."
        )
    if isinstance(start, str) and start not in model.start_names:
        raise ValueError(
            f"`start` for {type(model).__name__} is a state of the model (default "
            f"its initial state) or one of {model.start_names}; the other branches "
            f"by name are the zonal model's, got {start!r}."
        )
    y0 = model.start_state(params, start, "start")
    state, result, num_steps = _root(
        model, params, y0, jnp.asarray(t), adjoint, max_steps
    )
    if not throw:
        state = nan_unless_successful(result, state, params)
    steady = SteadyState.of(model, params, state, t, result=result, num_steps=num_steps)
    return raise_if_failed(steady, result) if throw else steady


# Newton's last step is below this (relative and absolute, in the state's units):
# its error is then of the order of the step squared. 1e-12 is under the floor of
# rounding in a tendency that solves equations of its own (the sea ice's
# temperature), where the iteration stalls.
NEWTON = optx.Newton(rtol=1e-10, atol=1e-10)


@eqx.filter_jit
def _root(model, params, y0, t, adjoint, max_steps):
    solution = optx.root_find(
        lambda y, params: model(t, y, params),
        NEWTON,
        y0,
        params,
        max_steps=max_steps,
        adjoint=adjoint,
        throw=False,
    )
    return (
        solution.value,
        RESULTS.promote(solution.result),
        solution.stats["num_steps"],
    )
