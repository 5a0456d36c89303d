r"""Fixed-step time steppers for the energy-balance model.

One step advances $T_n \mapsto T_{n+1}$ over $\Delta t$ (years) for
$dT/dt = f(t, T) = \mathcal{T}(T) + \mathcal{N}(t, T)$, the transport
$\mathcal{T}$ (diffusion: linear, tridiagonal, stiff) plus the local terms
$\mathcal{N}$ (insolation, albedo, outgoing longwave: non-stiff away from a very sharp
ice edge).

- `ExplicitEuler`: $T_{n+1} = T_n + \Delta t\,f(t_n, T_n)$. Stable only while
    $\Delta t\,|\lambda| \le 2$ for every eigenvalue $\lambda$ of the Jacobian; for
    diffusion $|\lambda| \approx 4D/(C\Delta\phi^2)$ (about one per day at 60 cells),
    so the step shrinks with the square of the cell size. Checked when the run
    starts.
- `IMEXEuler`: implicit in the transport, explicit in the rest,
    $(I - \Delta t\,L)(T_{n+1} - T_n) = \Delta t\,f(t_n, T_n)$ with
    $L = \partial\mathcal{T}/\partial T$ probed (three Jacobian-vector products,
    `ebm.ProbedTridiagonal`) at the initial state and held fixed: for linear diffusion
    this is exactly $T_{n+1} - \Delta t\,\mathcal{T}(T_{n+1}) = T_n +
    \Delta t\,\mathcal{N}(t_n, T_n)$. Unconditionally stable for diffusion; one O(n)
    tridiagonal solve per step.
- `LinearlyImplicitEuler`: $(I - \Delta t\,J_n)(T_{n+1} - T_n) = \Delta t\,f(t_n, T_n)$
    with the full Jacobian $J_n$ probed at every step (one Newton iteration of
    backward Euler, a Rosenbrock-Euler method): L-stable for the ice-albedo feedback
    too, at three more Jacobian-vector products per step.

- `Rosenbrock2`: the two-stage L-stable Rosenbrock method ROS2 (Verwer, Spee, Blom
    and Hundsdorfer 1999), $\gamma = 1 + 1/\sqrt2$:
    $(I - \gamma\Delta t\,J_n)k_1 = f(t_n, T_n)$,
    $(I - \gamma\Delta t\,J_n)k_2 = f(t_{n+1}, T_n + \Delta t\,k_1) - 2k_1$,
    $T_{n+1} = T_n + \tfrac32\Delta t\,k_1 + \tfrac12\Delta t\,k_2$, with $J_n$ the
    probed Jacobian. Second order for any $J_n$ (it is a W-method), so the time
    derivative of a seasonal forcing needs no extra term. No iteration: a step is
    one probe, one factorisation and two solves, and its derivatives (forward and
    reverse) cost a small multiple of it, O(n) in memory and work. This is what
    `ebm.periodic_equilibrium` steps with.

The three Euler steppers are first order. Each stepper's `init` computes what stays
fixed through a run (from the parameters, so that gradients reach it) and `step`
uses it.
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jaxtyping import Array, PyTree

from ._custom_types import Temperature
from ._model import EnergyBalanceModel
from ._params import Params
from ._tridiagonal import TridiagonalMatrix, probe_tridiagonal


class AbstractStepper(eqx.Module):
    """A one-step method for `ebm.integrate_fixed`."""

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
    ) -> Temperature:
        """`T` at `t + dt` from `T` at `t` (years)."""


def _linearise(tendency, T: Temperature) -> tuple[Temperature, TridiagonalMatrix]:
    """`tendency(T)` and the tridiagonal part of its Jacobian, K per year per K."""
    value, linear = jax.linearize(tendency, T)
    return value, probe_tridiagonal(linear, T.shape[0], T.dtype)


def _named_tendency(model, t, T, params):
    # Named so that a checkpoint policy can choose to keep it (see ebm.StepCheckpoint).
    return checkpoint_name(model(t, T, params), "ebm_tendency")


def _named_linearisation(model, t, T, params) -> tuple[Temperature, TridiagonalMatrix]:
    """The (named) tendency and its probed Jacobian, from one linearisation."""
    tendency, jacobian = _linearise(lambda T: model(t, T, params), T)
    return checkpoint_name(tendency, "ebm_tendency"), jacobian


class ExplicitEuler(AbstractStepper):
    """Forward Euler; its step must stay below the diffusive stability limit."""

    def init(self, model, params, T0, dt):
        # The most negative eigenvalue of the Jacobian at the start decides stability.
        _, jacobian = _linearise(lambda T: model.tendency(T, params, 0.0), T0)
        fastest_rate = jacobian.shifted(0.0).leading_eigenvalue()
        limit = 2.0 / fastest_rate
        dt = jnp.asarray(dt, T0.dtype)
        dt = eqx.error_if(
            dt,
            dt > limit,
            "ExplicitEuler is unstable at this time step: dt must be at most "
            "2 / (fastest decay rate of the model), here the diffusive limit "
            "~ C dlat^2 / (2 D). Use IMEXEuler() (the default), or a smaller dt.",
        )
        return dt

    def step(self, model, state, t, T, params, dt):
        # `state` is `dt` carrying the stability check, so that the check is kept.
        del dt
        return T + state * _named_tendency(model, t, T, params)


class IMEXEuler(AbstractStepper):
    """Transport implicit (tridiagonal, probed once), the rest explicit."""

    def init(self, model, params, T0, dt):
        transport = lambda T: model.transport_tendency(0.0, T, params)  # noqa: E731
        return _linearise(transport, T0)[1].shifted(1.0 / dt)

    def step(self, model, state, t, T, params, dt):
        # state = I/dt - L, so the increment is state^{-1} f.
        return T + state.solve(_named_tendency(model, t, T, params))


class LinearlyImplicitEuler(AbstractStepper):
    """One Newton iteration of backward Euler per step, on the probed Jacobian."""

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency, jacobian = _named_linearisation(model, t, T, params)
        return T + jacobian.shifted(1.0 / dt).solve(tendency)


# ROS2's gamma: 1 + 1/sqrt(2) makes the stability function vanish at infinity.
_ROS2_GAMMA = 1.0 + 1.0 / 2.0**0.5


class Rosenbrock2(AbstractStepper):
    """The L-stable second-order Rosenbrock method ROS2, on the probed Jacobian."""

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency, jacobian = _named_linearisation(model, t, T, params)
        # (I - gamma dt J) k = f  <=>  (I / (gamma dt) - J) k = f / (gamma dt).
        scale = 1.0 / (_ROS2_GAMMA * dt)
        operator = jacobian.shifted(scale)
        k1 = operator.solve(tendency) * scale
        k2 = operator.solve(model(t + dt, T + dt * k1, params) - 2.0 * k1) * scale
        return T + dt * (1.5 * k1 + 0.5 * k2)


STEPPERS = {
    "explicit": ExplicitEuler,
    "imex": IMEXEuler,
    "implicit": LinearlyImplicitEuler,
    "rosenbrock": Rosenbrock2,
}


def resolve_stepper(stepper) -> AbstractStepper:
    """A stepper from a name in `STEPPERS` or an instance."""
    if isinstance(stepper, AbstractStepper):
        return stepper
    if isinstance(stepper, str) and stepper in STEPPERS:
        return STEPPERS[stepper]()
    raise ValueError(
        f"`stepper` must be one of {tuple(STEPPERS)} or an ebm.AbstractStepper "
        f"instance, got {stepper!r}."
    )
