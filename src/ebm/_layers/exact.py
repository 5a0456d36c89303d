r"""The exact solution of a linear layer model under a piecewise-linear forcing.

The layers' matrix $A$ of $\dot y = A y + b F$ is tridiagonal with off-diagonal
products $A_{k,k+1} A_{k+1,k} > 0$ (every heat capacity, exchange coefficient and
efficacy is positive), so a diagonal $D$ (with $d_{k+1}/d_k =
\sqrt{A_{k+1,k}/A_{k,k+1}}$) makes $D^{-1} A D$ symmetric: $A = V \Lambda V^{-1}$
with $V = D Q$ and $V^{-1} = Q^\top D^{-1}$ from the symmetric eigendecomposition
$D^{-1} A D = Q \Lambda Q^\top$, whose eigenvalues are real and distinct (a Jacobi
matrix's).

Between two knots $t_k < t_{k+1}$ (the run's ends, the saved times and the
forcing's `kinks`, where it or its slope may jump) the forcing is
$F(t) = F_k + s_k (t - t_k)$, from its values at $t_k$ and at the interval's
midpoint (so that a jump at a knot belongs to the interval after it), and each
mode $z = V^{-1} y$, $\dot z_i = \lambda_i z_i + \beta_i F$ with
$\beta = V^{-1} b$, is solved exactly over a step $h$ (with $x = \lambda_i h$):

$$z_i(t_k + h) = e^{x} z_i + \beta_i\left(F_k h\,\varphi_1(x) + s_k h^2\varphi_2(x)
\right),$$

$$\int_{t_k}^{t_k + h} z_i\,dt = z_i h\,\varphi_1(x) + \beta_i\left(F_k h^2
\varphi_2(x) + s_k h^3 \varphi_3(x)\right),$$

with $\varphi_0(x) = e^x$ and $\varphi_{j+1}(x) = (\varphi_j(x) - 1/j!)/x$ (by their
Taylor series near $x = 0$). Time integrals of outputs linear in the state and the
forcing, $\int (R y + g F)\,dt$ (the warming and the top-of-atmosphere imbalance
whose annual means the metrics take), follow from those of the modes. One small
symmetric eigendecomposition per run; the phi functions of every interval at once,
vectorised; then only the recurrence of each mode, $z_{k+1} = \varphi_0 z_k + c_k$,
as a `lax.scan` of one multiply-add, and the integrals as cumulative sums: exact to
rounding, with JAX's own derivatives in both modes. (FaIR 2.x steps its
energy-balance model by the matrix exponential, with the forcing held constant over
each step.)
"""

import math

import jax
import jax.numpy as jnp
import numpy as np


_SERIES_BELOW = 1.0  # |x| below which the phi functions are summed as series
_SERIES_TERMS = 20  # 1 / 20! ~ 4e-19: below double precision's rounding


def _phis(x):
    """`(phi_0, phi_1, phi_2, phi_3)` at `x`, each accurate to rounding."""
    small = jnp.abs(x) < _SERIES_BELOW
    # Each branch at arguments where it is accurate (and its gradient finite).
    xs = jnp.where(small, x, 0.0)
    xl = jnp.where(small, 1.0, x)
    # By the recurrence phi_{k+1} = (phi_k - 1/k!) / x away from 0 ...
    direct = [jnp.expm1(xl) / xl]
    for k in (1, 2):
        direct.append((direct[-1] - 1.0 / math.factorial(k)) / xl)
    # ... and near it by the series sum_j x^j / (j + k)!, by Horner's rule.
    phis = [jnp.exp(x)]
    for k, value in zip((1, 2, 3), direct):
        total = jnp.zeros_like(xs)
        for j in reversed(range(_SERIES_TERMS)):
            total = total * xs + 1.0 / math.factorial(j + k)
        phis.append(jnp.where(small, total, value))
    return phis


def modes(matrix):
    """`(eigenvalues, V, V^-1)` of the tridiagonal `matrix` (see the module
    docstring)."""
    ratio = jnp.sqrt(jnp.diagonal(matrix, -1) / jnp.diagonal(matrix, 1))
    d = jnp.concatenate([jnp.ones(1, matrix.dtype), jnp.cumprod(ratio)])
    symmetric = matrix * d[None, :] / d[:, None]
    eigenvalues, q = jnp.linalg.eigh(0.5 * (symmetric + symmetric.T))
    return eigenvalues, d[:, None] * q, q.T / d[None, :]


def exact_states(model, params, y0, t0, t1, save_ts, outputs=None):
    """The state vectors (`model.to_vector`) at `save_ts` and at `t1`, from `y0` at
    `t0`, and the number of intervals solved.

    With `outputs = (R, g)` (shapes `(k, n)` and `(k,)`), each vector is followed
    by the integrals from `t0` of the `k` outputs `R y + g F`.

    The knots are the union of `t0`, `t1`, `save_ts` and the forcing's kinks,
    clipped to `[t0, t1]` and sorted: a static count, so traced times and series
    share one program.
    """
    matrix, b = model.system(params)
    if outputs is None:
        rows, weights = jnp.zeros((0, y0.shape[0])), jnp.zeros(0)
    else:
        rows, weights = outputs
    parts = [jnp.stack([t0, t1]), jnp.atleast_1d(save_ts)]
    kinks = model.forcing.kinks
    if kinks is not None:
        parts.append(jnp.asarray(kinks, dtype=float))
    knots = jnp.sort(jnp.clip(jnp.concatenate(parts), t0, t1))
    h = jnp.diff(knots)
    # Each interval's forcing from its start and its midpoint: linear between them,
    # and right of a jump at the start (an abrupt experiment's, at time 0).
    forcing = jax.vmap(lambda t: model.forcing(t, params))
    first = forcing(knots[:-1])
    positive = h > 0
    middle = forcing(knots[:-1] + h / 2)
    slope = jnp.where(positive, 2 * (middle - first) / jnp.where(positive, h, 1.0), 0)
    eigenvalues, v, v_inverse = modes(matrix)
    beta = v_inverse @ b
    rows_v = rows @ v

    # Every interval's phi functions at once, vectorised, so that the scan over the
    # intervals is one multiply-add per mode.
    phi0, phi1, phi2, phi3 = _phis(eigenvalues[None, :] * h[:, None])
    h_, f, s = h[:, None], first[:, None], slope[:, None]
    beta_ = beta[None, :]
    pushed = beta_ * (f * h_ * phi1 + s * h_**2 * phi2)

    def advance(z, inputs):
        a, c = inputs
        z = a * z + c
        return z, z

    z0 = v_inverse @ y0
    _, z = jax.lax.scan(advance, z0, (phi0, pushed))
    z = jnp.concatenate([z0[None, :], z])
    # Each interval's integral of the modes, from the state at its start.
    z_integral = z[:-1] * h_ * phi1 + beta_ * (f * h_**2 * phi2 + s * h_**3 * phi3)
    forcing_integral = f * h_ + s * h_**2 / 2
    increments = z_integral @ rows_v.T + forcing_integral * weights[None, :]
    integrals = jnp.concatenate(
        [jnp.zeros((1, rows.shape[0]), y0.dtype), jnp.cumsum(increments, axis=0)]
    )
    ys = jnp.concatenate([z @ v.T, integrals], axis=1)
    saved = ys[jnp.searchsorted(knots, save_ts)]
    return saved, ys[-1], np.int64(h.shape[0])
