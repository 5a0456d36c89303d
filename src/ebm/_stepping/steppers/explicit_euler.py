r"""`ExplicitEuler`: forward Euler, $T_{n+1} = T_n + \Delta t\,f(t_n, T_n)$.

Stable only while $\Delta t\,|\lambda| \le 2$ for every eigenvalue $\lambda$ of the
Jacobian; for diffusion $|\lambda| \approx 4D/(C\Delta\phi^2)$ (about one per day at
60 cells), so the step shrinks with the square of the cell size. Its
`stability_limit` is $2 / \lambda_{\max}(-J)$, the fastest decay (diffusion).
"""

from typing import ClassVar

from .base import (
    AbstractStepper,
    _doubling_error,
    _full_jacobian,
    _limit,
    _named_tendency,
)


class ExplicitEuler(AbstractStepper):
    """Forward Euler; its step must stay below the diffusive stability limit."""

    name: ClassVar[str] = "explicit"
    stability_bound: ClassVar[str] = (
        "2 / (the model's fastest decay rate), the diffusive limit ~ C dlat^2 / (2 D)"
    )
    stability_alternative: ClassVar[str] = "stepper='imex' (diffusion implicit)"

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency = _named_tendency(model, t, T, params)
        T_next = T + dt * tendency

        def second_half(halfway):
            return halfway + 0.5 * dt * model(t + 0.5 * dt, halfway, params)

        error = _doubling_error(T_next, second_half, T, 0.5 * dt * tendency)
        return T_next, error

    def stability_limit(self, model, params, T0):
        jacobian = _full_jacobian(model, params, T0)
        # Forward Euler needs dt |lambda| <= 2 for the fastest decay, -lambda_min(J).
        return _limit(jacobian.shifted(0.0), 2.0)
