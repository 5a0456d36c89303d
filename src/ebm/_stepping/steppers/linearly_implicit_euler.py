r"""`LinearlyImplicitEuler`: one Newton iteration of backward Euler per step.

$(I - \Delta t\,J_n)(T_{n+1} - T_n) = \Delta t\,f(t_n, T_n)$ with the full Jacobian
$J_n$ probed at every step (a Rosenbrock-Euler method): L-stable for the ice-albedo
feedback too, at three more Jacobian-vector products per step than `IMEXEuler`.

It is L-stable for decaying modes, but a growing one (the ice-albedo feedback's
slope, $(a_i - \alpha_w) Q / (2 w C)$ at the edge, beyond what $B$ and diffusion
take back) is turned into a decaying or sign-flipping one once
$z = \Delta t\,\lambda_{\max}(J)$ is past the pole of the stability function
$R(z) = 1/(1 - z)$: the step is stable while $z < 1$.
"""

from typing import ClassVar

from .base import (
    AbstractStepper,
    _doubling_error,
    _full_jacobian,
    _limit,
    _named_linearisation,
)


class LinearlyImplicitEuler(AbstractStepper):
    """One Newton iteration of backward Euler per step, on the probed Jacobian."""

    name: ClassVar[str] = "implicit"
    stability_bound: ClassVar[str] = (
        "1 / (the model's fastest growth rate: the ice-albedo feedback's slope "
        "beyond B and diffusion)"
    )
    stability_alternative: ClassVar[str] = (
        "stepper='imex', or a wider ice transition (`ice_width`)"
    )

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency, jacobian = _named_linearisation(model, t, T, params)
        T_next = T + jacobian.shifted(1.0 / dt).solve(tendency)
        # The half steps reuse this step's Jacobian (still first order: a W-method).
        half = jacobian.shifted(2.0 / dt)

        def second_half(halfway):
            return halfway + half.solve(model(t + 0.5 * dt, halfway, params))

        error = _doubling_error(T_next, second_half, T, half.solve(tendency))
        return T_next, error

    def stability_limit(self, model, params, T0):
        jacobian = _full_jacobian(model, params, T0)
        # R(z) = 1 / (1 - z) changes sign at z = dt lambda_max(J) = 1.
        return _limit(jacobian, 1.0)
