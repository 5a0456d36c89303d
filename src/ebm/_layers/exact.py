r"""The exact solution of a linear layer model under a piecewise-linear forcing.

Between two knots $t_k < t_{k+1}$ (the run's ends, the saved times and the
forcing's `kinks`, where its slope may change) the forcing is
$F(t) = F_k + s_k (t - t_k)$, and $\dot y = A y + b F$ is solved exactly by the
exponential of the augmented matrix (Van Loan 1978)

$$\begin{pmatrix} y \\ F \\ s \end{pmatrix}(t_k + h) =
\exp\!\left(h \begin{pmatrix} A & b & 0 \\ 0 & 0 & 1 \\ 0 & 0 & 0 \end{pmatrix}\right)
\begin{pmatrix} y_k \\ F_k \\ s_k \end{pmatrix}.$$

One small matrix exponential per interval (all at once, `vmap`), then a `lax.scan`
of matrix-vector products: exact to rounding, with JAX's own derivatives in
both modes (through `expm`'s Fréchet derivative). This is how FaIR 2.x steps its
energy-balance model, with the forcing held constant over each step there.
"""

import jax
import jax.numpy as jnp
import numpy as np


def exact_states(model, params, y0, t0, t1, save_ts):
    """The state vectors (`model.to_vector`) at `save_ts` and at `t1`, from `y0` at
    `t0`, and the number of intervals solved.

    The knots are the union of `t0`, `t1`, `save_ts` and the forcing's kinks,
    clipped to `[t0, t1]` and sorted: a static count, so traced times and series
    share one program.
    """
    matrix, b = model.system(params)
    n = matrix.shape[0]
    parts = [jnp.stack([t0, t1]), jnp.atleast_1d(save_ts)]
    kinks = model.forcing.kinks
    if kinks is not None:
        parts.append(jnp.asarray(kinks, dtype=float))
    knots = jnp.sort(jnp.clip(jnp.concatenate(parts), t0, t1))
    h = jnp.diff(knots)
    forcing = jax.vmap(lambda t: model.forcing(t, params))(knots)
    positive = h > 0
    slope = jnp.where(positive, jnp.diff(forcing) / jnp.where(positive, h, 1.0), 0.0)
    augmented = jnp.zeros((n + 2, n + 2), matrix.dtype)
    augmented = augmented.at[:n, :n].set(matrix).at[:n, n].set(b)
    augmented = augmented.at[n, n + 1].set(1.0)
    propagators = jax.vmap(jax.scipy.linalg.expm)(augmented[None] * h[:, None, None])

    def step(y, inputs):
        propagator, f, s = inputs
        y = propagator[:n, :n] @ y + propagator[:n, n] * f + propagator[:n, n + 1] * s
        return y, y

    final, ys = jax.lax.scan(step, y0, (propagators, forcing[:-1], slope))
    ys = jnp.concatenate([y0[None], ys])
    saved = ys[jnp.searchsorted(knots, save_ts)]
    return saved, final, np.int64(h.shape[0])
