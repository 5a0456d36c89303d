from .base import AbstractStepper as AbstractStepper
from .explicit_euler import ExplicitEuler as ExplicitEuler
from .imex_euler import IMEXEuler as IMEXEuler
from .linearly_implicit_euler import LinearlyImplicitEuler as LinearlyImplicitEuler
from .names import STEPPERS as STEPPERS, resolve_stepper as resolve_stepper
from .rosenbrock2 import Rosenbrock2 as Rosenbrock2
