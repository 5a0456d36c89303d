"""The steppers by name, built from the classes' own `name`s.

`integrate_fixed(stepper=...)`, the seasonal entry points and `ebm run --stepper`
read `STEPPERS`; a new stepper is one file and one entry in the list below.
"""

from .base import AbstractStepper
from .explicit_euler import ExplicitEuler
from .imex_euler import IMEXEuler
from .linearly_implicit_euler import LinearlyImplicitEuler
from .rosenbrock2 import Rosenbrock2


STEPPERS: dict[str, type[AbstractStepper]] = {
    stepper.name: stepper
    for stepper in (IMEXEuler, ExplicitEuler, LinearlyImplicitEuler, Rosenbrock2)
}
"""The steppers `stepper=` takes by name, the default (`"imex"`) first."""


def resolve_stepper(stepper) -> AbstractStepper:
    """A stepper from a name in `STEPPERS` or an instance.

    **Raises:**

    - `ValueError`: for anything else, naming the accepted names.
    """
    if isinstance(stepper, AbstractStepper):
        return stepper
    if isinstance(stepper, str) and stepper in STEPPERS:
        return STEPPERS[stepper]()
    raise ValueError(
        f"`stepper` must be one of {tuple(STEPPERS)} or an ebm.AbstractStepper "
        f"instance, got {stepper!r}."
    )
