"""What the fixed-step steppers advance (`ebm.integrate_fixed`, the seasonal entry
points): the model itself where it steps itself (`steps_itself`: the zonal model),
else its state as one flat vector (`FlatModel`)."""

from .._model.protocol import AbstractModel
from .run import run_start_time
from .steppers.base import AbstractStepper
from .steppers.flat import FlatModel
from .steppers.imex_euler import IMEXEuler


def stepped_problem(params, model: AbstractModel, start, dt, steps, name="T0"):
    """`(field, start)`: what the steppers advance for `steps` steps of `dt` years
    from `start` (`model.start_state`; errors call it `name`), and its start: the
    model and its state where it steps itself, else a `FlatModel` from the start of
    its forcing and the state raveled (`params` already checked).

    **Raises:**

    - `ValueError`: for a `start` not shaped as the model's state, or a run outside
        its forcing series' span.
    """
    y0 = model.start_state(params, start, name)
    if model.steps_itself:
        return model, y0
    t0 = run_start_time(model, None, dt * steps)
    flat = FlatModel.around(model, y0, t0)
    return flat, flat.flatten(y0)


def stepped_model(field) -> tuple[AbstractModel, object, float]:
    """`(model, unflatten, t0)` of what the steppers advance: the model, the map
    from the stepped vector to its state, and the start of the run on its clock."""
    if isinstance(field, FlatModel):
        return field.model, field.unflatten, field.t0
    return field, lambda v: v, 0.0


def default_fixed_stepper(model: AbstractModel, split_default: str = "imex"):
    """The model's own stepper (`default_stepper()`), else `split_default` for a
    model that steps itself (the zonal model's split), else `"rosenbrock"`."""
    own = model.default_stepper()
    if own is not None:
        return own
    return split_default if model.steps_itself else "rosenbrock"


def check_flat_stepper(stepper: AbstractStepper, model: AbstractModel) -> None:
    """Refuse `IMEXEuler` for a model without the zonal model's split of transport
    (implicit) from the local terms (explicit): one that does not step itself."""
    if isinstance(stepper, IMEXEuler) and not model.steps_itself:
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
