r"""Temperature-dependent albedo with ice-albedo feedback.

Ice-free cells have albedo $\alpha_w = a_0 + a_2 P_2(\sin\phi)$, ice-covered cells
(temperature below $T_f$) have $a_i$ (Budyko 1969, North 1975). climlab's
`StepFunctionAlbedo` switches between the two with a step at $T_f$; ebm blends them
smoothly over a width $w$ (`ice_width`, K):

$$\alpha(T, \phi) = \alpha_w(\phi) + \left(a_i - \alpha_w(\phi)\right)
\tfrac{1}{2}\left(1 - \tanh\frac{T - T_f}{w}\right),$$

which tends to the step as $w \to 0$ and has a derivative everywhere.

Where the ice edge crosses a grid cell, the temperature changes across that cell by
$\Delta T \approx |\partial_\phi T|\,\Delta\phi$ (2-3 K on a 3-degree grid), more than a
1 K transition width. Evaluated at cell centres (`SmoothIceAlbedo`, climlab's
choice), the albedo then jumps as the edge passes from cell to cell: the edge is
pinned to the grid, and between cells the branch of equilibria folds back on itself
once per cell (a staircase of grid-scale saddle-nodes, 18 folds in S0 on 90 cells
where the continuum model has 4). `SubgridIceAlbedo`, the default, removes the
pinning with the cell's *mean* ice fraction: temperature is reconstructed linearly
between the cell centre and its two faces (the face value is the mean of the two
neighbours; the poles have zero gradient), and the blend is averaged over that
profile exactly,

$$\overline{f}(a, b) = \frac{1}{b - a}\int_a^b \tfrac12\left(1 - \tanh\frac{T-T_f}{w}
\right)dT = \tfrac12\left(1 - w\,\frac{\log\cosh\frac{b - T_f}{w} -
\log\cosh\frac{a - T_f}{w}}{b - a}\right),$$

over each half-cell. As $w \to 0$ this is the fraction of the cell below $T_f$, which
moves continuously with the edge, so the sharp limit stays well posed. Each cell's
albedo depends on its neighbours, so the Jacobian is still tridiagonal. Both forms
converge to the same continuum model as the grid is refined.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Flux, Temperature
from .._model.grid import Grid
from .._model.parameters import AbstractParams, Constraint, Parameter
from .base import AbstractAlbedo
from .insolation import legendre_p2


A0 = Parameter(
    "a0",
    0.3,
    "1",
    "ice-free albedo, global part",
    lower=0.0,
    upper=1.0,
    transform="logit",
)
A2 = Parameter("a2", 0.078, "1", "ice-free albedo, second Legendre coefficient")
AI = Parameter(
    "ai", 0.62, "1", "albedo of ice", lower=0.0, upper=1.0, transform="logit"
)
TF = Parameter(
    "Tf", -10.0, "degC", "temperature below which the surface is ice-covered"
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


class SmoothIceAlbedo(AbstractAlbedo):
    """The blend evaluated at cell centres (climlab's choice, with a smooth step).

    The ice edge is pinned to the grid when `ice_width` is below the temperature
    change across a cell; see the module docstring.
    """

    parameters = ICE_ALBEDO
    constraints = ICE_FREE_ALBEDO_RANGE
    tridiagonal = True

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        warm = ice_free_albedo(params, grid)
        return warm + (params.ai - warm) * ice_fraction(T, params)


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


class SubgridIceAlbedo(AbstractAlbedo):
    """The blend averaged over each cell's reconstructed temperature (the default).

    `ai` below `Tf`, `a0 + a2 P2(sin lat)` above, blended over `ice_width`, and
    averaged over the linear temperature profile between each cell's centre and
    faces, so the ice edge moves continuously through cells instead of jumping from
    centre to centre. See the module docstring.
    """

    parameters = ICE_ALBEDO
    constraints = ICE_FREE_ALBEDO_RANGE
    tridiagonal = True

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        # The poles have no heat flux, hence no gradient: the face there is the cell.
        faces = jnp.concatenate([T[:1], 0.5 * (T[1:] + T[:-1]), T[-1:]])
        # South face, centre, south face, centre, ..., north pole: 2 n + 1 points
        # bounding the 2 n half-cells.
        points = jnp.concatenate([jnp.stack([faces[:-1], T], axis=1).ravel(), T[-1:]])
        half_cells = _mean_tanh((points - params.Tf) / params.ice_width)
        ice = 0.5 * (1.0 - jnp.mean(half_cells.reshape(-1, 2), axis=1))
        warm = ice_free_albedo(params, grid)
        return warm + (params.ai - warm) * ice


class PrescribedAlbedo(AbstractAlbedo):
    """A fixed albedo profile: no ice-albedo feedback.

    Give it the albedo of a reference state, `ebm.SmoothIceAlbedo()(T, params, grid)`,
    to hold the ice where it is while other things change (e.g. climate sensitivity
    without the ice-albedo feedback).

    **Arguments:**

    - `albedo`: one value per cell, in [0, 1].
    """

    albedo: Float[Array, " lat"] = eqx.field(converter=jnp.asarray)
    tridiagonal = True

    def __check_init__(self):
        values = self.albedo
        if isinstance(values, jax.core.Tracer):
            return
        if values.ndim != 1 or not bool(jnp.all((values >= 0) & (values <= 1))):
            raise ValueError(
                "PrescribedAlbedo `albedo` must be a 1-d profile with values in "
                f"[0, 1], got {values}."
            )

    def __call__(self, T: Temperature, params: AbstractParams, grid: Grid) -> Flux:
        del T, params
        if self.albedo.shape != (grid.n_lat,):
            raise ValueError(
                f"PrescribedAlbedo has {self.albedo.shape[0]} values but the grid "
                f"has {grid.n_lat} cells."
            )
        return self.albedo
