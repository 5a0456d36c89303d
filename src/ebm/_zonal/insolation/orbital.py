r"""Orbital geometry and daily-mean insolation at the top of the atmosphere.

**Conventions** (climlab's, after Eisenman and Huybers' `daily_insolation.m`): the
calendar day $d$ runs over a year of $Y = 365.2422$ days with the vernal equinox on
day 80 (21 March); the solar longitude $\lambda$ is the angle the Earth has moved
along its orbit since the vernal equinox ($\lambda = 90°$ at the June solstice);
`long_peri` $\varpi$ is the solar longitude of perihelion (281.37 degrees today, so
perihelion falls in early January); `obliquity` $\varepsilon$ and `eccentricity`
$e$ as usual. Time in the model, $t$ years, is day $d = tY$.

**Calendar to longitude** (Kepler's laws). The mean anomaly advances uniformly,
$M = M_{ve} + 2\pi(d - 80)/Y$, where $M_{ve}$ is its value at the vernal equinox
(true anomaly $\nu = -\varpi$ there). Kepler's equation $E - e\sin E = M$ gives the
eccentric anomaly $E$, solved here by Newton's method; then

$$\tan\frac{\nu}{2} = \sqrt{\frac{1+e}{1-e}}\tan\frac{E}{2},\qquad
\lambda = \nu + \varpi,\qquad \frac{a}{r} = \frac{1}{1 - e\cos E}.$$

Berger (1978, section 3) writes the same map as a series to third order in $e$;
ebm solves it exactly, which agrees with the series to $O(e^4)$ (1e-7 radians for
today's orbit, see the tests) and stays accurate for any $e$ in $[0, 1)$.

**Daily-mean insolation** (Berger 1978, eqs. 8-10). With declination
$\sin\delta = \sin\varepsilon\sin\lambda$ and sunset hour angle $h_0$,
$\cos h_0 = -\tan\phi\tan\delta$ ($h_0 = \pi$ in polar day, $0$ in polar night),

$$Q(\phi, d) = \frac{S_0}{\pi}\left(\frac{a}{r}\right)^2\left(h_0\sin\phi\sin\delta
+ \cos\phi\cos\delta\sin h_0\right)\quad\text{W m}^{-2}.$$

$Q$ is continuous with a continuous derivative across the polar circles of day and
night (the bracket's derivative in $h_0$ vanishes there), so its gradients are too.

**Annual mean.** Kepler's second law, $dt \propto (r/a)^2\,d\lambda$, cancels the
distance factor:

$$\overline{Q}(\phi) = \frac{S_0}{2\pi^2\sqrt{1-e^2}}\int_0^{2\pi}
\left(h_0\sin\phi\sin\delta + \cos\phi\cos\delta\sin h_0\right)d\lambda,$$

independent of $\varpi$, with global mean $S_0 / (4\sqrt{1-e^2})$. The integrand
depends on $\lambda$ through $\sin\lambda$ alone and is smooth except where polar
day or night begins; the integral is taken over $[-\pi/2, \pi/2]$ by Gauss-Legendre
quadrature on the pieces between those points.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ..._constants import DAYS_PER_YEAR
from ..._model.declarations import Parameter
from ..._model.parameters import AbstractParams


ECCENTRICITY = Parameter(
    "eccentricity",
    0.017236,
    "1",
    "eccentricity of the Earth's orbit",
    lower=0.0,
    upper=1.0,
    upper_open=True,
    note="a closed orbit",
    transform="logit",
)
OBLIQUITY = Parameter(
    "obliquity",
    23.446,
    "degree",
    "tilt of the Earth's axis to its orbit",
    lower=0.0,
    upper=180.0,
    transform="logit",
)
LONG_PERI = Parameter(
    "long_peri",
    281.37,
    "degree",
    "solar longitude of perihelion (from the vernal equinox)",
)
ORBIT = (ECCENTRICITY, OBLIQUITY, LONG_PERI)
"""The orbital parameters (climlab's present-day values, Berger 1978)."""


VERNAL_EQUINOX_DAY = 80.0
# Newton's method from Danby's start converges for every mean anomaly and e < 1;
# quadratically once close, so 40 iterations leave it at rounding error even as e
# approaches 1.
_KEPLER_ITERATIONS = 40
# Gauss-Legendre points on each of the three pieces of the annual-mean integral.
_ANNUAL_POINTS = 48


def _true_from_eccentric(E, e):
    return 2.0 * jnp.arctan2(
        jnp.sqrt(1.0 + e) * jnp.sin(E / 2), jnp.sqrt(1.0 - e) * jnp.cos(E / 2)
    )


def _eccentric_from_true(nu, e):
    return 2.0 * jnp.arctan2(
        jnp.sqrt(1.0 - e) * jnp.sin(nu / 2), jnp.sqrt(1.0 + e) * jnp.cos(nu / 2)
    )


@jax.jit
def _solve_kepler(M, e):
    """`E` with `E - e sin E = M`; differentiable (one Newton step carries the
    derivative, the iterations before it are not differentiated).

    Jitted so that an eager call (`ebm.daily_insolation` outside `jit`) finds its
    compiled loop again: an eager `fori_loop` over a new closure compiles anew on
    every call."""
    M_reduced = M - 2 * jnp.pi * jnp.round(M / (2 * jnp.pi))
    M0, e0 = jax.lax.stop_gradient((M_reduced, e))
    E = M0 + 0.85 * e0 * jnp.sign(jnp.sin(M0))

    def newton(_, E):
        return E - (E - e0 * jnp.sin(E) - M0) / (1.0 - e0 * jnp.cos(E))

    E = jax.lax.fori_loop(0, _KEPLER_ITERATIONS, newton, E, unroll=True)
    E = jax.lax.stop_gradient(E)
    # At the root this step is zero; its derivative is the implicit one,
    # dE = (dM + sin E de) / (1 - e cos E).
    E = E - (E - e * jnp.sin(E) - M_reduced) / (1.0 - e * jnp.cos(E))
    return E + (M - M_reduced)


def solar_longitude(day: ArrayLike, params: AbstractParams) -> Float[Array, "..."]:
    """The solar longitude `lambda` on calendar `day`, radians (any branch: it grows
    by `2 pi` a year; take it mod `2 pi` for an angle).

    **Arguments:**

    - `day`: calendar day(s), the vernal equinox on day 80 of a 365.2422-day year
        (any real value; the orbit repeats every year).
    - `params`: `eccentricity` and `long_peri` are used.

    **Returns:**

    `lambda`, 0 (mod `2 pi`) at the vernal equinox, `pi / 2` at the June solstice.
    """
    e = params.eccentricity
    perihelion = jnp.deg2rad(params.long_peri)
    E_equinox = _eccentric_from_true(-perihelion, e)
    M_equinox = E_equinox - e * jnp.sin(E_equinox)
    day = jnp.asarray(day, dtype=float)
    M = M_equinox + 2 * jnp.pi * (day - VERNAL_EQUINOX_DAY) / DAYS_PER_YEAR
    return _true_from_eccentric(_solve_kepler(M, e), e) + perihelion


def _distance_factor(longitude, params: AbstractParams):
    """`(a / r)^2` at solar `longitude`: insolation relative to the mean distance's."""
    e = params.eccentricity
    perihelion = jnp.deg2rad(params.long_peri)
    return ((1.0 + e * jnp.cos(longitude - perihelion)) / (1.0 - e**2)) ** 2


def declination(day: ArrayLike, params: AbstractParams) -> Float[Array, "..."]:
    """The Sun's declination on calendar `day`, radians (`params.obliquity` used)."""
    sin_obliquity = jnp.sin(jnp.deg2rad(params.obliquity))
    return jnp.arcsin(sin_obliquity * jnp.sin(solar_longitude(day, params)))


def _daylight_integral(lat_radians, sin_declination):
    """`h0 sin(lat) sin(dec) + cos(lat) cos(dec) sin(h0)` (`pi` times the daily mean
    of the cosine of the zenith angle, counting night as zero)."""
    sin_lat, cos_lat = jnp.sin(lat_radians), jnp.cos(lat_radians)
    # sqrt's derivative is infinite at zero (the Sun overhead at a pole, obliquity
    # 90): guarded so that gradients stay finite there.
    square = (1.0 - sin_declination) * (1.0 + sin_declination)
    positive = square > 0
    cos_declination = jnp.where(
        positive, jnp.sqrt(jnp.where(positive, square, 1.0)), 0.0
    )
    # cos h0 = -tan(lat) tan(dec) = x / y, written without tan (finite at the poles).
    x = -sin_lat * sin_declination
    y = cos_lat * cos_declination
    rises_and_sets = jnp.abs(x) < y
    # The `where` keeps arccos away from +-1, where its derivative is infinite.
    safe = jnp.where(rises_and_sets, x / jnp.where(rises_and_sets, y, 1.0), 0.0)
    hour_angle = jnp.where(
        rises_and_sets, jnp.arccos(safe), jnp.where(x < 0, jnp.pi, 0.0)
    )
    return hour_angle * sin_lat * sin_declination + y * jnp.sin(hour_angle)


def _check_latitude(lat) -> Array:
    """`lat` as a float array, in [-90, 90] degrees north (the formulas' cosines
    and arccosines would silently return a value for any angle)."""
    if isinstance(lat, jax.core.Tracer):
        lat = jnp.asarray(lat, dtype=float)
        return eqx.error_if(
            lat,
            ~jnp.all(jnp.abs(lat) <= 90),
            "`lat` must be in [-90, 90] degrees north (a traced value is not).",
        )
    try:
        values = np.asarray(lat, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`lat` must be latitudes in degrees, got {lat!r}.") from error
    bad = ~(np.abs(values) <= 90)
    if np.any(bad):
        raise ValueError(
            "`lat` must be in [-90, 90] degrees north, got "
            f"{values[bad].ravel()[0]:g}{' (and others)' if bad.sum() > 1 else ''}."
        )
    return jnp.asarray(values)


def daily_insolation(
    lat: ArrayLike, day: ArrayLike, params: AbstractParams
) -> Float[Array, "..."]:
    """Daily-mean insolation at the top of the atmosphere, W m-2 (Berger 1978).

    **Arguments:**

    - `lat`: latitude(s), degrees north, in `[-90, 90]`.
    - `day`: calendar day(s) (vernal equinox on day 80); broadcast against `lat`.
    - `params`: `S0`, `eccentricity`, `obliquity` and `long_peri` are used.

    **Returns:**

    `Q(lat, day)`, W m-2, differentiable with respect to every argument.

    **Raises:**

    - `ValueError`: for a latitude outside `[-90, 90]` (inside `jit`, an
        `EquinoxRuntimeError` with the same words).
    """
    return unchecked_daily_insolation(_check_latitude(lat), day, params)


def unchecked_daily_insolation(lat, day, params: AbstractParams) -> Float[Array, "..."]:
    """`ebm.daily_insolation` at latitudes known to be in range (a grid's cell
    centres): without the check, which on traced latitudes would add an
    `eqx.error_if` to the model's every compiled program."""
    longitude = solar_longitude(day, params)
    sin_declination = jnp.sin(jnp.deg2rad(params.obliquity)) * jnp.sin(longitude)
    daylight = _daylight_integral(jnp.deg2rad(jnp.asarray(lat)), sin_declination)
    return params.S0 / jnp.pi * _distance_factor(longitude, params) * daylight


def _gauss_legendre(points: int):
    nodes, weights = np.polynomial.legendre.leggauss(points)
    return jnp.asarray(nodes), jnp.asarray(weights)


def annual_mean_insolation(
    lat: ArrayLike, params: AbstractParams
) -> Float[Array, "..."]:
    """Annual-mean insolation at the top of the atmosphere, W m-2.

    The exact annual mean of `ebm.daily_insolation` over the orbit (see the module
    docstring): it depends on `S0`, `eccentricity` and `obliquity`, not on
    `long_peri`. Accurate to about 1e-9 relative.

    **Arguments:**

    - `lat`: latitude(s), degrees north, in `[-90, 90]`.
    - `params`: the orbital parameters and `S0`.

    **Returns:**

    `Qbar(lat)`, W m-2, with the shape of `lat`.

    **Raises:**

    - `ValueError`: as `ebm.daily_insolation`, for a latitude outside `[-90, 90]`.
    """
    return unchecked_annual_mean_insolation(_check_latitude(lat), params)


def unchecked_annual_mean_insolation(
    lat, params: AbstractParams
) -> Float[Array, "..."]:
    """`ebm.annual_mean_insolation` at latitudes known to be in range, as
    `unchecked_daily_insolation`."""
    lat_radians = jnp.deg2rad(jnp.asarray(lat))
    sin_obliquity = jnp.sin(jnp.deg2rad(params.obliquity))
    # Polar day and night begin where |sin(obliquity) sin(lambda)| = cos(lat).
    cos_lat = jnp.cos(lat_radians)
    polar = cos_lat < sin_obliquity
    # The inner `where`s keep arcsin's infinite derivative at 1, and a division by
    # zero at obliquity 0, out of the gradient.
    ratio = jnp.where(polar, cos_lat, 0.0) / jnp.where(polar, sin_obliquity, 1.0)
    corner = jnp.where(polar, jnp.arcsin(ratio), jnp.pi / 2)
    nodes, weights = _gauss_legendre(_ANNUAL_POINTS)
    pieces = ((-jnp.pi / 2, -corner), (-corner, corner), (corner, jnp.pi / 2))
    total = 0.0
    nodes = jnp.reshape(nodes, (1,) * lat_radians.ndim + (-1,))
    for lower, upper in pieces:
        half_width = (upper - lower) / 2
        longitude = (lower + upper)[..., None] / 2 + half_width[..., None] * nodes
        daylight = _daylight_integral(
            lat_radians[..., None], sin_obliquity * jnp.sin(longitude)
        )
        total = total + half_width * (daylight @ weights)
    # The half orbit [-pi/2, pi/2] covers every value of sin(lambda) once; the other
    # half repeats it.
    e = params.eccentricity
    return params.S0 / (jnp.pi**2 * jnp.sqrt(1.0 - e**2)) * total
