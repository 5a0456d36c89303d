r"""`SeaIceEuler`: the time step of `ebm.SeaIceModel`, implicit in the surface
temperature and O(n).

One step of $\Delta t$ from $E_n$ at time $t_n$ solves, for the new surface
temperature $T$,

$$E_{n+1} = E_n + \Delta t\,\left(a(E_n)\,S(t_n + \tfrac{\Delta t}{2}) - A + F
+ \mathcal{D}T - B T + F_b\right), \qquad T = \Theta\!\left(E_{n+1},\
a(E_n)\,S(t_n + \tfrac{\Delta t}{2}) - A + F + \mathcal{D}T\right),$$

where $\Theta$ is the model's blended temperature of an enthalpy and a surface
budget (`SeaIceModel.temperature_of`): backward Euler in the temperature (the
diffusion, the longwave and the conduction through the ice), with the co-albedo
taken at the start of the step and the insolation at its middle. Substituting the
first equation into the second leaves $n$ equations in $T$ whose Jacobian is
tridiagonal; Newton's method solves them in O(n) per iteration, and the step is
differentiated implicitly (one more tridiagonal solve).

Wagner & Eisenman's reference code instead relaxes the surface towards a fast
"ghost layer" on which it solves the diffusion implicitly (a dense solve), with
forward Euler on $E$; its ghost layer's heat capacity and coupling time
($0.01 c_w$, $10^{-5}$ yr) are approximations that this step does not make. Both are
first order in $\Delta t$.

The step's error is estimated by step doubling, as for the Euler steppers (twice the
difference between one step and two half steps), in W yr m-2; where Newton's method
did not solve the step's equations (a residual above `NEWTON_FAILED`), it is
infinite, so that the run says that a step did not solve its equations
(`RESULTS.unsolved_step`).
"""

from typing import ClassVar

import jax
import jax.numpy as jnp

from .._stepping.steppers.base import AbstractStepper
from .._stepping.steppers.flat import FlatModel
from .surface import NEWTON_FAILED


def euler_step(model, t, E, params, dt):
    """`(E at t + dt, the largest residual Newton's method left)` from `E` at `t`."""
    absorbed = model.coalbedo(E, params) * model.insolation(t + 0.5 * dt, params)
    absorbed = absorbed - params.A + params.F

    T, residual = model.implicit_temperature(E, absorbed, params, dt)
    change = absorbed + model.transport(T, params) - params.B * T + params.Fb
    return E + dt * change, residual


class SeaIceEuler(AbstractStepper):
    """The time step of `ebm.SeaIceModel` (see the module docstring); the default
    stepper of its seasonal entry points."""

    default_error_tolerance: ClassVar[float] = 10.0
    """W yr m-2 of enthalpy (about 1 K of open water, 1 m of ice)."""

    stability_bound: ClassVar[str] = "nothing: it is stable at any step"

    implicit_equations: ClassVar[str] = "its equations for the surface temperature"

    def init(self, model, params, T0, dt):
        del params, T0, dt
        # The sea-ice model's own step (its implicit surface temperature), whose
        # class imports this stepper as its default: named by its method, not its
        # class, so that the two modules do not import each other.
        seaice = getattr(model, "model", None)
        if not (
            isinstance(model, FlatModel) and hasattr(seaice, "implicit_temperature")
        ):
            raise ValueError(
                "SeaIceEuler steps ebm.SeaIceModel, not "
                f"{type(getattr(model, 'model', model)).__name__}."
            )
        return None

    def step(self, model: FlatModel, state, t, v, params, dt):
        del state
        seaice = model.model
        t = model.t0 + t

        def advance(v, t, dt):
            E, residual = euler_step(seaice, t, model.unflatten(v)["E"], params, dt)
            return model.flatten({"E": E}), residual

        v_next, residual = advance(v, t, dt)
        halfway, residual_half = advance(v, t, 0.5 * dt)
        two_halves, residual_two = advance(halfway, t + 0.5 * dt, 0.5 * dt)
        residual = jnp.maximum(residual, jnp.maximum(residual_half, residual_two))
        # A Newton solve that failed makes the error infinite whatever its sign.
        error = 2.0 * (v_next - two_halves)
        error = jnp.where(residual <= NEWTON_FAILED, error, jnp.inf)
        return v_next, jax.lax.stop_gradient(error)

    def stability_limit(self, model, params, T0):
        """`inf`: the temperature is implicit, and the co-albedo's explicit feedback
        is a growing mode, which forward Euler does not destabilise."""
        del model, params, T0
        return jnp.inf
