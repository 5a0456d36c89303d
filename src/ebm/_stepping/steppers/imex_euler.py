r"""`IMEXEuler`: implicit in the transport, explicit in the rest.

$(I - \Delta t\,L)(T_{n+1} - T_n) = \Delta t\,f(t_n, T_n)$ with
$L = \partial\mathcal{T}/\partial T$ probed (three Jacobian-vector products,
`ebm.ProbedTridiagonal`) at the initial state and held fixed: for linear diffusion
this is exactly $T_{n+1} - \Delta t\,\mathcal{T}(T_{n+1}) = T_n +
\Delta t\,\mathcal{N}(t_n, T_n)$. Unconditionally stable for diffusion; one O(n)
tridiagonal solve per step. The radiation is explicit, so the step is bounded:

the amplification matrix is $(I - \Delta t L)^{-1}(I + \Delta t N)$,
$N = \partial\mathcal{N}/\partial T$. With $L$ and $N$ symmetric in the same
(heat-capacity and area weighted) inner product, as diffusion and local terms
are, its eigenvalues stay in $[-1, 1]$ while the model's own modes decay and
$\Delta t\,\lambda_{\max}(L - N) \le 2$: the explicit radiation's decay,
$B/C$ (1.5 per year for a 10 m mixed layer, so $\Delta t \le 1.3$ years), with
the ice-albedo feedback's couplings between cells, net of the implicit
diffusion's.
"""

from typing import ClassVar

import jax
import jax.numpy as jnp

from .base import (
    AbstractStepper,
    _doubling_error,
    _halved,
    _jacobian,
    _limit,
    _named_tendency,
)


class IMEXEuler(AbstractStepper):
    """Transport implicit (tridiagonal, probed once), the rest explicit."""

    name: ClassVar[str] = "imex"
    stability_bound: ClassVar[str] = (
        "2 / (the fastest decay rate of the explicit radiation: B / C with the "
        "ice-albedo feedback's slope, net of the implicit diffusion)"
    )
    stability_alternative: ClassVar[str] = (
        "stepper='implicit' or 'rosenbrock' (radiation implicit too)"
    )

    def init(self, model, params, T0, dt):
        transport = lambda T: model.transport_tendency(0.0, T, params)  # noqa: E731
        return _jacobian(transport, T0).shifted(1.0 / dt)

    def step(self, model, state, t, T, params, dt):
        # state = I/dt - L, so the increment is state^{-1} f.
        tendency = _named_tendency(model, t, T, params)
        T_next = T + state.solve(tendency)
        half = _halved(state, dt)

        def second_half(halfway):
            return halfway + half.solve(model(t + 0.5 * dt, halfway, params))

        error = _doubling_error(T_next, second_half, T, half.solve(tendency))
        return T_next, error

    def stability_limit(self, model, params, T0):
        transport = _jacobian(lambda T: model.transport_tendency(0.0, T, params), T0)
        local = _jacobian(lambda T: model.local_tendency(0.0, T, params), T0)
        # dt lambda_max(L - N) <= 2: the explicit part's decay beyond the implicit's.
        implicit_minus_explicit = jax.tree.map(jnp.subtract, transport, local)
        return _limit(implicit_minus_explicit, 2.0)
