r"""Fixed-step time steppers for the energy-balance model: the common base.

One step advances $T_n \mapsto T_{n+1}$ over $\Delta t$ (years) for
$dT/dt = f(t, T) = \mathcal{T}(T) + \mathcal{N}(t, T)$, the transport
$\mathcal{T}$ (diffusion: linear, tridiagonal, stiff) plus the local terms
$\mathcal{N}$ (insolation, albedo, outgoing longwave: non-stiff away from a very sharp
ice edge). The steppers, one file each:

- `ExplicitEuler` (`"explicit"`): forward Euler, bound by the diffusive limit.
- `IMEXEuler` (`"imex"`): implicit in the transport, explicit in the rest.
- `LinearlyImplicitEuler` (`"implicit"`): one Newton iteration of backward Euler.
- `Rosenbrock2` (`"rosenbrock"`): the two-stage L-stable Rosenbrock method ROS2.

The three Euler steppers are first order. Each stepper's `init` computes what stays
fixed through a run (from the parameters, so that gradients reach it) and `step`
uses it. Each states its own facts as class attributes (its `name`, the default
`error_tolerance`, what bounds its step and what to use instead), from which
`names.STEPPERS` and the run's messages are built.

**Error estimates.** Like a diffrax solver's `step`, each `step` returns an estimate
of its local error with the new state, K in each cell, which the entry points add up
over each year of the run (`error_tolerance`). ROS2 has an embedded first-order
solution (see its file). The Euler steppers compare their step with two half steps
(step doubling, Hairer, Norsett and Wanner, *Solving ODEs I*, II.4): for a
first-order method the error of the full step is
$2(T_{n+1} - T_{n+1}^{(1/2, 1/2)})$ to leading order. The first half step starts
from the tendency the full step already has, and the implicit half steps reuse its
operator (shifted by $1/\Delta t$), so the estimate costs one more tendency and two
tridiagonal solves, no Jacobian probe. The estimates are not differentiated.

**Stability limits.** `stability_limit` is the largest stable step at the start of a
run, from the probed Jacobians there (each stepper's file derives its own). The
limits are checked at the start of a run (`checks.py`).
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jaxtyping import Array, PyTree

from ..._custom_types import Scalar, Temperature
from ..._numerics.tridiagonal import TridiagonalMatrix, probe_tridiagonal
from ..._zonal.model import EnergyBalanceModel
from ..._zonal.params import Params
from .flat import FlatModel


class AbstractStepper(eqx.Module):
    """A one-step method for `ebm.integrate_fixed` and the seasonal entry points.

    Subclass it with three methods, in the manner of diffrax's `AbstractSolver`:
    `init` (once per run), `step` (the new state and an estimate of its local error)
    and `stability_limit` (the largest stable step at the start). The class
    attributes below are optional; they make the error messages name the stepper's
    limit and remedy, and a stepper listed in `ebm._stepping.steppers.names` is known
    by its `name`.
    """

    name: ClassVar[str | None] = None
    """The name `integrate_fixed(stepper=...)` and `ebm run --stepper` take, or
    `None`: by instance only."""

    default_error_tolerance: ClassVar[float] = 1.0
    """`error_tolerance`'s default, K, for the stepper's error estimate."""

    stability_bound: ClassVar[str] = "its `stability_limit`"
    """What bounds the step, as a formula, for the message of an unstable `dt`."""

    stability_alternative: ClassVar[str] = "another stepper"
    """What to use instead of a too-large step, for the same message."""

    implicit_equations: ClassVar[str] = "its implicit equations"
    """What a step solves, for the message of a step that did not (an infinite
    error estimate from `step`)."""

    @abc.abstractmethod
    def init(
        self, model: EnergyBalanceModel, params: Params, T0: Temperature, dt
    ) -> PyTree[Array]:
        """What stays fixed through a run, e.g. a factorised implicit operator."""

    @abc.abstractmethod
    def step(
        self,
        model: EnergyBalanceModel,
        state: PyTree[Array],
        t,
        T: Temperature,
        params: Params,
        dt,
    ) -> tuple[Temperature, Temperature | None]:
        """`T` at `t + dt` from `T` at `t` (years), and the step's local error.

        **Returns:**

        A pair: the new temperature, and an estimate of the step's local error in
        each cell, K (not differentiated), or `None` when the stepper has none; a
        run is then not checked against `error_tolerance`.
        """

    @abc.abstractmethod
    def stability_limit(
        self, model: EnergyBalanceModel, params: Params, T0: Temperature
    ) -> Scalar:
        """The largest step (years) that is stable at `T0`; `inf` when any is."""


def _linearise(tendency, T: Temperature) -> tuple[Temperature, TridiagonalMatrix]:
    """`tendency(T)` and the tridiagonal part of its Jacobian, K per year per K."""
    value, linear = jax.linearize(tendency, T)
    return value, probe_tridiagonal(linear, T.shape[0], T.dtype)


def _jacobian(tendency, T: Temperature) -> TridiagonalMatrix:
    return _linearise(tendency, T)[1]


def _named_tendency(model, t, T, params):
    # Named so that a checkpoint policy can choose to keep it (see ebm.StepCheckpoint).
    return checkpoint_name(model(t, T, params), "ebm_tendency")


def _named_linearisation(model, t, T, params) -> tuple[Temperature, TridiagonalMatrix]:
    """The (named) tendency and its Jacobian: probed (tridiagonal) for the zonal
    model, from one linearisation; the model's own operator, materialised, for
    another model of the protocol (`FlatModel`)."""
    if isinstance(model, FlatModel):
        tendency, jacobian = model(t, T, params), model.jacobian(t, T, params)
    else:
        tendency, jacobian = _linearise(lambda T: model(t, T, params), T)
    return checkpoint_name(tendency, "ebm_tendency"), jacobian


def _full_jacobian(model, params, T0) -> TridiagonalMatrix:
    """The Jacobian of the whole tendency at `T0` and `t = 0`, as
    `_named_linearisation` finds it, for a stability limit."""
    if isinstance(model, FlatModel):
        return model.jacobian(0.0, T0, params)
    return _jacobian(lambda T: model.tendency(T, params, 0.0), T0)


def _limit(matrix: TridiagonalMatrix, multiple) -> Scalar:
    """`multiple / lambda_max(matrix)`, or `inf` when no eigenvalue is positive."""
    # Sturm bisection, to 1e-6 of the Gershgorin bound: far cheaper to compile than
    # `eigh_tridiagonal`, and a limit needs no more digits.
    rate = matrix.leading_eigenvalue_bound(iterations=20)
    return jnp.where(rate > 0, multiple / jnp.where(rate > 0, rate, 1.0), jnp.inf)


def _halved(operator: TridiagonalMatrix, dt) -> TridiagonalMatrix:
    """`I / dt - A` as `2 I / dt - A`: the same implicit operator for half the step."""
    return TridiagonalMatrix(
        operator.diagonal + 1.0 / dt, operator.lower, operator.upper
    )


def _doubling_error(full, half_step, T, increment) -> Temperature:
    """Step doubling: `2 (full - two half steps)`, the first half's increment given."""
    halfway = T + increment
    return jax.lax.stop_gradient(2.0 * (full - half_step(halfway)))
