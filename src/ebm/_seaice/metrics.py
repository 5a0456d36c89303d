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

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._custom_types import Scalar
from .._results import RESULTS, raise_if_failed
from .._steady.continuation.problem import with_parameter
from .._stepping.run import check_model_params
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
    states = getattr(cycle, "states", None)
    shape = (
        np.shape(states["E"]) if isinstance(states, dict) and "E" in states else None
    )
    if shape is None or len(shape) != 2 or shape[1] != model.n:
        raise ValueError(
            "`cycle` must be one year of `model` (an ebm.PeriodicState whose states "
            f"have shape (time, {model.n})), got states of shape {shape}. For a "
            "sweep's or an ensemble's cycles, map over them: jax.vmap(lambda c: "
            "ebm.summer_ice_edge(c, model))(cycles)."
        )
    return jnp.max(jax.vmap(model.ice_edge)(states))


def edge_latitude(x) -> Scalar:
    """The latitude of an ice edge at `x = sin(latitude)`, degrees north: 90 for
    `x >= 1` (no ice), where its derivative is 0 rather than arcsin's infinite
    slope times 0 (NaN)."""
    inside = x < 1.0
    latitude = jnp.arcsin(jnp.where(inside, x, 0.0))
    return jnp.degrees(jnp.where(inside, latitude, 0.5 * jnp.pi))


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

    A new `bracket` compiles nothing (its ends are arrays); a new `steps_per_year`,
    `spinup_years`, tolerance or `max_steps` compiles the bisection again.

    **Raises:**

    - `TypeError`: for a model that is not an `ebm.SeaIceModel`, or parameters
        that are not its.
    - `ValueError`: for a `bracket` that is not two increasing forcings.
    - `EquinoxRuntimeError` (with `throw=True`): when the bracket does not hold
        the root (summer ice at `lower`, none at `upper`: a periodic state that
        failed at either end counts as neither), or the bisection did not
        converge.
    """
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

    value, result = _ice_free_forcing(
        params,
        model,
        jnp.asarray(lower),
        jnp.asarray(upper),
        steps_per_year,
        spinup_years,
        rtol,
        atol,
        max_steps,
    )
    # The code is checked on the host (or, traced, in the caller's program): the
    # compiled bisection holds no callback, and the persistent cache keeps it.
    return raise_if_failed(value, result) if throw else value


@eqx.filter_jit
def _ice_free_forcing(
    params, model, lower, upper, steps_per_year, spinup_years, rtol, atol, max_steps
):
    """`(F*, result code)`: the bisection between `lower` and `upper`, once the
    polar summer enthalpy is negative at the first and positive at the second
    (else NaN, `RESULTS.no_root_in_bracket`)."""
    from .._steady.seasonal import periodic_equilibrium

    def polar(F, params):
        cycle = periodic_equilibrium(
            with_parameter(params, "F", F),
            model=model,
            steps_per_year=steps_per_year,
            spinup_years=spinup_years,
            throw=False,
        )
        return jnp.where(cycle.converged, polar_summer_enthalpy(cycle), jnp.nan)

    # The ends are evaluated here, not by optimistix (whose check of the bracket
    # raises inside the program, whatever `throw`): summer ice at `lower`, none at
    # `upper`, so the enthalpy rises through the bracket (`flip=False`).
    ends = jax.vmap(polar, in_axes=(0, None))(jnp.stack([lower, upper]), params)
    holds = (ends[0] < 0.0) & (ends[1] > 0.0)

    def bisect(params):
        solution = optx.root_find(
            polar,
            optx.Bisection(rtol=rtol, atol=atol, flip=False),
            0.5 * (lower + upper),
            params,
            options={"lower": lower, "upper": upper},
            max_steps=max_steps,
            throw=False,
        )
        return solution.value, RESULTS.promote(solution.result)

    def refuse(params):
        del params
        return jnp.asarray(jnp.nan, lower.dtype), RESULTS.no_root_in_bracket

    value, result = jax.lax.cond(holds, bisect, refuse, params)
    return jnp.where(result == RESULTS.successful, value, jnp.nan), result
