r"""The ice-albedo blend shared by the ice albedos (Budyko 1969, North 1975).

Ice-free cells have albedo $\alpha_w = a_0 + a_2 P_2(\sin\phi)$, ice-covered cells
(temperature below $T_f$) have $a_i$ (Budyko 1969, North 1975). climlab's
`StepFunctionAlbedo` switches between the two with a step at $T_f$; ebm blends them
smoothly over a width $w$ (`ice_width`, K):

$$\alpha(T, \phi) = \alpha_w(\phi) + \left(a_i - \alpha_w(\phi)\right)
\tfrac{1}{2}\left(1 - \tanh\frac{T - T_f}{w}\right),$$

which tends to the step as $w \to 0$ and has a derivative everywhere.

The forms differ in where the blend is evaluated: at cell centres
(`ebm.SmoothIceAlbedo`) or averaged over each cell (`ebm.SubgridIceAlbedo`, the
default).
"""

import jax.numpy as jnp

from ..._custom_types import Flux, Temperature
from ..._model.declarations import Constraint, Parameter
from ..._model.parameters import AbstractParams
from ..grid import Grid
from ..insolation.p2 import legendre_p2


A0 = Parameter(
    "a0",
    0.3,
    "1",
    "ice-free albedo, global part",
    lower=0.0,
    upper=1.0,
    transform="logit",
)
A2 = Parameter(
    "a2",
    0.078,
    "1",
    "ice-free albedo, second Legendre coefficient",
    lower=-1.0,
    upper=2.0,
    note="and with `a0` an albedo in [0, 1] from equator to pole",
    transform="logit",
)
AI = Parameter(
    "ai", 0.62, "1", "albedo of ice", lower=0.0, upper=1.0, transform="logit"
)
TF = Parameter(
    "Tf",
    -10.0,
    "degC",
    "temperature below which the surface is ice-covered",
    lower=-100.0,
    upper=30.0,
    transform="logit",
)
ICE_WIDTH = Parameter(
    "ice_width",
    1.0,
    "K",
    "width of the smooth ice-albedo transition",
    lower=0.0,
    lower_open=True,
    transform="log",
)


def _in_unit_interval(x):
    return (0 <= x) & (x <= 1)


# P2(sin lat) ranges over [-1/2, 1]: the ice-free albedo over these two values.
ICE_FREE_ALBEDO_RANGE = (
    Constraint(
        "a2",
        "such that the ice-free albedo `a0 + a2 P2` stays in [0, 1] at the pole, "
        "where it is `a0 + a2`",
        lambda a0, a2: _in_unit_interval(a0 + a2),
        fields=("a0", "a2"),
        shown=lambda a0, a2: f"{a2} with `a0` = {a0}: {a0 + a2}",
    ),
    Constraint(
        "a2",
        "such that the ice-free albedo `a0 + a2 P2` stays in [0, 1] at the "
        "equator, where it is `a0 - a2 / 2`",
        lambda a0, a2: _in_unit_interval(a0 - a2 / 2),
        fields=("a0", "a2"),
        shown=lambda a0, a2: f"{a2} with `a0` = {a0}: {a0 - a2 / 2}",
    ),
)
ICE_ALBEDO = (A0, A2, AI, TF, ICE_WIDTH)
"""The parameters of both ice-albedo blends."""


def ice_fraction(T: Temperature, params: AbstractParams) -> Flux:
    """Fraction of each cell's albedo taken from ice: 1 well below `Tf`, 0 above."""
    return 0.5 * (1.0 - jnp.tanh((T - params.Tf) / params.ice_width))


def ice_free_albedo(params: AbstractParams, grid: Grid) -> Flux:
    """`a0 + a2 P2(sin lat)`: the albedo of each cell without ice."""
    return params.a0 + params.a2 * legendre_p2(grid.sin_lat)


def _mean_tanh(x):
    r"""Mean of $\tanh$ over each segment `[x[k], x[k + 1]]` (along the first axis).

    The mean is $(\log\cosh x_b - \log\cosh x_a)/(x_b - x_a)$. Written as
    $\log\cosh x = |x| + \log(1 + e^{-2|x|}) - \log 2$, the difference of the
    $|x|$ parts over $x_b - x_a$ is the sign of $x$ where both ends share it (taken
    as that, exactly) and the rest is small, so the quotient keeps its digits far
    from zero. Below $|x_b - x_a| = 10^{-3}$ it is replaced by its Taylor series
    $\tanh m - \tanh m\,\mathrm{sech}^2 m\,(x_b - x_a)^2/12$ about the midpoint $m$,
    exact there to $10^{-15}$ and with the right first and second derivatives (the
    quotient's would lose digits to cancellation). Each point's terms are computed
    once, however many segments share it.
    """
    magnitude = jnp.abs(x)
    tail = jnp.log1p(jnp.exp(-2 * magnitude))
    dx = x[1:] - x[:-1]
    close = jnp.abs(dx) < 1e-3
    safe_dx = jnp.where(close, 1.0, dx)
    # On a segment of one sign the |x| parts' difference over dx is that sign,
    # exactly (as computed, `|x_b| - |x_a|` need not round to `dx` once XLA has
    # rewritten the arithmetic, and far from Tf its derivative would be rounding
    # divided by dx).
    sign = jnp.sign(x[1:])
    same_sign = sign == jnp.sign(x[:-1])
    tails = (tail[1:] - tail[:-1]) / safe_dx
    quotient = jnp.where(
        same_sign, sign + tails, (magnitude[1:] - magnitude[:-1]) / safe_dx + tails
    )
    midpoint = jnp.tanh(0.5 * (x[1:] + x[:-1]))
    series = midpoint - midpoint * (1 - midpoint**2) * dx**2 / 12
    return jnp.where(close, series, quotient)


def mean_ice_fraction(a, b, params: AbstractParams):
    """Mean of `ice_fraction` over a temperature varying linearly from `a` to `b`."""
    x = (jnp.stack([a, b]) - params.Tf) / params.ice_width
    return 0.5 * (1.0 - _mean_tanh(x)[0])
