"""How a failed periodic solve is told and retried: the time-stepping error's
refusal with the remedies that apply to the model (its own switches, its state's
units), and which failures a longer spin-up can mend (`retry_years`)."""

import numpy as np

from .._checks import known_value
from .._model.protocol import state_units
from .._results import RESULTS
from .._stepping.steppers.flat import FlatModel
from .periodic_models import PeriodicState


def inaccurate_message(cycle, error_tolerance, year, steps_per_year) -> str | None:
    """The time-stepping error's refusal with its numbers, in the state's units, and
    the remedies that apply to the year's stepper and model (its own switch
    widths), where the run is known to have failed by it or by a step that did not
    solve its own equations; else `None` (the result's own message)."""
    stepper = year.stepper
    model = year.model.model if isinstance(year.model, FlatModel) else year.model
    units = (
        state_units(cycle.variables) if isinstance(cycle, PeriodicState) else "K"
    ) or "state units"
    step_error = known_value(cycle.step_error)
    if cycle.result.is_traced() or step_error is None:
        return None
    inaccurate = np.asarray(cycle.result == RESULTS.inaccurate_step)
    unsolved = np.asarray(cycle.result == RESULTS.unsolved_step)
    successful = np.asarray(cycle.result == RESULTS.successful)
    if not (
        np.any(inaccurate | unsolved) and np.all(inaccurate | unsolved | successful)
    ):
        return None
    remedies = [f"more steps per year (`steps_per_year`, now {steps_per_year})"]
    # ('imex' is the zonal model's alone.)
    zonal = not isinstance(cycle, PeriodicState)
    if getattr(stepper, "name", None) != "imex" and zonal:
        remedies.append(
            "stepper='imex' (at a sharp ice edge the linearly implicit steppers "
            "go wrong)"
        )
    widths = ", ".join(f"`{name}`" for name in model.switch_widths)
    if widths:
        remedies.append(f"wider switches ({widths})")
    if np.any(unsolved):
        # An infinite estimate: no finite tolerance admits it.
        return (
            f"A step of the year with {type(stepper).__name__} and {steps_per_year} "
            f"steps a year did not solve {stepper.implicit_equations}, so that its "
            f"error estimate is infinite. Take {' or '.join(remedies)}."
        )
    remedies.append("a larger `error_tolerance` if that error is acceptable")
    return (
        f"The fixed-step run's estimated time-stepping error, "
        f"{float(np.max(step_error)):.3g} {units} at its worst cell (its steps' local "
        "error estimates, accumulated over about a year), exceeds `error_tolerance` "
        f"= {float(np.max(error_tolerance)):.3g} {units} with "
        f"{type(stepper).__name__} and "
        f"{steps_per_year} steps a year. Take {', '.join(remedies[:-1])} or "
        f"{remedies[-1]}."
    )


def retriable(result: RESULTS) -> bool:
    """Whether a failed shooting is known (not traced) and one that a longer
    spin-up can mend: not a step above the stepper's stability limit."""
    if result.is_traced():
        return False
    failed = np.asarray(result != RESULTS.successful)
    unstable = np.asarray(result == RESULTS.unstable_step)
    return bool(np.any(failed) and not np.any(unstable))
