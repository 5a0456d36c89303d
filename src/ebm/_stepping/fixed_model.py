"""`ebm.integrate_fixed` for a model of the protocol other than the zonal one: its
state stepped as one flat vector (`FlatModel`)."""

import jax

from .._model.protocol import AbstractModel
from .._scenarios.base import AbstractScenario, run_start
from .._zonal.model import EnergyBalanceModel
from .run import check_model_params
from .steppers.base import AbstractStepper
from .steppers.flat import FlatModel
from .steppers.imex_euler import IMEXEuler


def _is_other_model(model) -> bool:
    """Whether `model` is a model of the protocol other than the zonal one."""
    return isinstance(model, AbstractModel) and not isinstance(
        model, EnergyBalanceModel
    )


def flat_problem(params, model: AbstractModel, grid, T0, dt, steps, name="T0"):
    """`(FlatModel, params, flat start)` for `model`, from its forcing's start
    (`T0`, which errors call `name`).

    **Raises:**

    - `ValueError`: for a `grid` (the model carries its own), a `T0` not shaped as
        the model's state, or a run outside its forcing series' span.
    - `TypeError`: for parameters that are not `model.Params`.
    """
    if grid is not None:
        raise ValueError(
            f"`grid` is for the zonal model; {type(model).__name__} has none."
        )
    params = check_model_params(params, model)
    y0 = model.start_state(params, T0, name)
    t0 = run_start(model)
    scenario = getattr(model, "forcing", None)
    # (A model traced inside the user's function: its series' span is checked
    # where it was given.)
    if isinstance(scenario, AbstractScenario) and not any(
        isinstance(x, jax.core.Tracer) for x in (t0, dt, steps)
    ):
        scenario.check_span(t0, t0 + float(dt) * int(steps))
    flat = FlatModel.around(model, y0, t0)
    return flat, params, flat.flatten(y0)


def check_flat_stepper(stepper: AbstractStepper, model: AbstractModel) -> None:
    """Refuse `IMEXEuler` for a model without the zonal model's split of transport
    (implicit) from the local terms (explicit)."""
    if isinstance(stepper, IMEXEuler):
        own = model.default_stepper()
        default = (
            "stepper='rosenbrock' (the default here)"
            if own is None
            else f"the model's own stepper, {type(own).__name__} (the default "
            "here), or stepper='rosenbrock'"
        )
        raise ValueError(
            f"stepper='imex' splits the zonal model's diffusion from its local terms; "
            f"{type(model).__name__} has no such split. Use {default}, 'implicit' "
            "or 'explicit'."
        )
