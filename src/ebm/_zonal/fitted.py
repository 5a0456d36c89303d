"""Which of the zonal model's terms use which parameters: the fit's check, before
its first step, that every fitted parameter enters the solved equation."""

import equinox as eqx
import jax
import jax.numpy as jnp

from .._model.parameters import with_values


def _term_outputs(model, T, params, t, through: str):
    """Each term of the model's budget (and heat capacity, for a run) at `T`."""
    grid = model.grid
    outputs = {
        "insolation": model.insolation(params, grid, t),
        "albedo": model.albedo(T, params, grid),
        "longwave": model.longwave(T, params, grid),
        "transport": model.transport.convergence(T, params, grid),
        "forcing": model.forcing(params, grid, t),
    }
    if through == "trajectory":
        outputs["heat_capacity"] = model.heat_capacity(params, grid)
    return outputs


@eqx.filter_jit
def _term_dependence(model, T, params, t, through, names):
    """For each term, whether its output moves with each named parameter (a
    forward-mode derivative that is not exactly zero)."""

    def outputs(values):
        return _term_outputs(model, T, with_values(params, values), t, through)

    values = {name: getattr(params, name) for name in names}
    jacobian = jax.jacfwd(outputs)(values)
    return {
        term: {name: jnp.any(by_name[name] != 0) for name in names}
        for term, by_name in jacobian.items()
    }


def check_terms_use(model, params, names, through: str, T) -> None:
    """Refuse a fitted parameter that none of the zonal model's terms uses in the
    solved equation (its energy budget through `"equilibrium"`, its tendency through
    `"trajectory"`, from the start profile `T`): its gradient is exactly zero, and
    the fit would 'converge' at step 0.

    **Raises:**

    - `ValueError`: naming the unused parameters, and each term with the
        parameters it uses.
    """
    t = None if through == "equilibrium" else jnp.asarray(0.0)
    dependence = _term_dependence(
        model, T, jax.lax.stop_gradient(params), t, through, names
    )
    unused = [
        name
        for name in names
        if not any(bool(by_name[name]) for by_name in dependence.values())
    ]
    if not unused:
        return
    every = type(params).field_names()
    used = _term_dependence(model, T, params, t, through, every)
    described = "; ".join(
        (
            "the uniform forcing: forcing"
            if term == "forcing"
            else f"{term} ({type(getattr(model, term)).__name__}): "
            + (", ".join(name for name in every if bool(by_name[name])) or "none")
        )
        for term, by_name in used.items()
    )
    solved = (
        "equilibrium (its energy budget; the heat capacity does not set it)"
        if through == "equilibrium"
        else "run (its tendency)"
    )
    orbital = ("eccentricity", "obliquity", "long_peri")
    hint = (
        " The orbital parameters enter only through an orbital insolation "
        "(ebm.DailyInsolation, ebm.AnnualMeanInsolation)."
        if any(name in orbital for name in unused)
        else ""
    )
    raise ValueError(
        f"`fit` names {', '.join(f'`{name}`' for name in unused)}, which this "
        f"model's {solved} does not depend on: its gradient is zero and the fit "
        f"would stop at once. The terms and the parameters they use: {described}."
        f"{hint}"
    )
