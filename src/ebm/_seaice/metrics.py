r"""What `ebm.SeaIceModel`'s periodic states are asked about: the summer ice edge,
and the forcing at which the summer ice vanishes, each differentiable in every
parameter.

The forcing $F^*$ at which the summer ice vanishes is the root of

$$g(F) = \max_t\ E_p(t; F),$$

the largest enthalpy over the year at the pole ($E_p$, extrapolated linearly from
the two poleward boxes by `with_ends`, as `SeaIceModel.ice_edge` extrapolates it:
$g(F) = 0$ exactly where the summer ice edge reaches the pole), on the periodic
state at $F$. It is found by bisection in $F$ (robust where $g$ has kinks, as the
ice edge passes from box to box), and differentiated implicitly, with the periodic
state's forward-mode derivative in $F$:
$\partial F^*/\partial\theta = -(\partial g/\partial\theta)/(\partial g/\partial F)$.
"""

import jax
import jax.numpy as jnp
import optimistix as optx

from .._custom_types import Scalar
from .._layers.run import check_model_params
from .._results import RESULTS, raise_if_failed
from .._steady.continuation.problem import with_parameter
from .model import SeaIceModel, with_ends


def summer_ice_edge(cycle, model: SeaIceModel) -> Scalar:
    """The ice edge at its most poleward over the year of `cycle` (an
    `ebm.PeriodicState` of `model`), `sin` of its latitude; 1 if the summer is
    ice-free.

    **Raises:**

    - `TypeError`: for a model that is not an `ebm.SeaIceModel`.
    """
    if not isinstance(model, SeaIceModel):
        raise TypeError(
            f"`model` must be an ebm.SeaIceModel, got {type(model).__name__}."
        )
    return jnp.max(jax.vmap(model.ice_edge)(cycle.states))


def polar_summer_enthalpy(cycle) -> Scalar:
    """The largest enthalpy over the year at the pole, W yr m-2 (extrapolated
    linearly from the two poleward boxes): positive where the summer is ice-free
    up to the pole."""
    return jnp.max(jax.vmap(with_ends)(cycle.states["E"])[:, -1])


def ice_free_forcing(
    params,
    *,
    model: SeaIceModel,
    bracket,
    steps_per_year: int = 365,
    spinup_years: int = 20,
    rtol: float = 1e-8,
    atol: float = 1e-6,
    max_steps: int = 64,
    throw: bool = True,
) -> Scalar:
    """The forcing `F` (W m-2) at which the summer ice of `model` vanishes, by
    bisection on the periodic states (see the module docstring); differentiable in
    every other parameter.

    **Arguments:**

    - `params`: the model's parameters (their `F` is not used).
    - `model`: an `ebm.SeaIceModel`.
    - `bracket`: `(lower, upper)`, forcings (W m-2) with summer ice at the first and
        none at the second (e.g. from `ebm.periodic_sweep`).
    - `steps_per_year`, `spinup_years`: the periodic states' steps a year, and
        the years spun up from the model's start before each is shot for (20: near
        the summer ice's disappearance Newton's shooting needs a close start).
    - `rtol`, `atol`: the bisection's tolerances: on `F`, and (`atol`, W yr m-2)
        on the polar summer enthalpy.
    - `max_steps`: the bisection's step limit.
    - `throw`: raise if the bisection fails (default), else return NaN.

    **Raises:**

    - `TypeError`: for a model that is not an `ebm.SeaIceModel`, or parameters
        that are not its.
    - `ValueError`: for a `bracket` that is not two increasing forcings.
    - `EquinoxRuntimeError` (with `throw=True`): when the bisection did not
        converge, for example where a periodic state failed or the bracket does
        not hold the root.
    """
    from .._steady.seasonal import periodic_equilibrium

    if not isinstance(model, SeaIceModel):
        raise TypeError(
            f"`model` must be an ebm.SeaIceModel, got {type(model).__name__}."
        )
    params = check_model_params(params, model)
    try:
        lower, upper = (float(b) for b in bracket)
    except (TypeError, ValueError):
        lower = upper = float("nan")
    if not lower < upper:
        raise ValueError(
            f"`bracket` must be two forcings (lower, upper), W m-2, lower < upper, got "
            f"{bracket!r}."
        )

    def polar(F, params):
        cycle = periodic_equilibrium(
            with_parameter(params, "F", F),
            model=model,
            steps_per_year=steps_per_year,
            spinup_years=spinup_years,
            throw=False,
        )
        return jnp.where(cycle.converged, polar_summer_enthalpy(cycle), jnp.nan)

    solution = optx.root_find(
        polar,
        optx.Bisection(rtol=rtol, atol=atol),
        jnp.asarray(0.5 * (lower + upper)),
        params,
        options={"lower": lower, "upper": upper},
        max_steps=max_steps,
        throw=False,
    )
    # The code is checked on the host (or, traced, in the caller's program): the
    # compiled bisection holds no callback, and the persistent cache keeps it.
    result = RESULTS.promote(solution.result)
    value = jnp.where(result == RESULTS.successful, solution.value, jnp.nan)
    return raise_if_failed(value, result) if throw else value
