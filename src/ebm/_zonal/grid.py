r"""The latitude grid.

The sphere is cut into `n_lat` zonal bands of equal width in latitude,
$\Delta\phi = \pi / n$, from the South Pole to the North Pole (the layout climlab's
`EBM` uses; its default is 90 cells, ebm's 60). Cell $i$ spans the bounds
$\phi_{i-1/2} < \phi < \phi_{i+1/2}$ and its state lives at the centre $\phi_i$. The
fraction of the sphere's area in cell $i$ is

$$w_i = \tfrac{1}{2}\left(\sin\phi_{i+1/2} - \sin\phi_{i-1/2}\right),
\qquad \sum_i w_i = 1,$$

which is exact for the band (not the midpoint value $\cos\phi_i\,\Delta\phi / 2$), so
area-weighted sums of a conservative flux divergence vanish to rounding error. The
outermost bounds are the poles, where $\cos\phi = 0$: no heat flows through them.
"""

import functools

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import EdgeValues, Scalar


class Grid(eqx.Module):
    """A pole-to-pole grid of `n_lat` cells uniform in latitude.

    **Arguments:**

    - `n_lat`: number of latitude cells, at least 2. The default is 60 (3 degree
        cells); climlab's `EBM` default is 90 (2 degree cells), `ebm.Grid(90)`.

    **Raises:**

    - `ValueError`: if `n_lat` is not an integer of at least 2.
    """

    n_lat: int = eqx.field(static=True, default=60)

    def __check_init__(self):
        if isinstance(self.n_lat, bool) or not isinstance(
            self.n_lat, (int, np.integer)
        ):
            raise ValueError(f"`n_lat` must be an integer >= 2, got {self.n_lat!r}.")
        if self.n_lat < 2:
            raise ValueError(f"`n_lat` must be an integer >= 2, got {self.n_lat}.")

    @property
    def spacing(self) -> Scalar:
        """Cell width in latitude, radians."""
        return jnp.asarray(np.pi / self.n_lat)

    @property
    def lat_bounds_radians(self) -> EdgeValues:
        """Cell bounds, radians, from -pi/2 to pi/2."""
        return jnp.asarray(geometry(self.n_lat)["lat_bounds_radians"])

    @property
    def lat_radians(self) -> Float[Array, " lat"]:
        """Cell centres, radians."""
        return jnp.asarray(geometry(self.n_lat)["lat_radians"])

    @property
    def lat(self) -> Float[Array, " lat"]:
        """Cell centres, degrees north."""
        return jnp.asarray(geometry(self.n_lat)["lat"])

    @property
    def lat_bounds(self) -> EdgeValues:
        """Cell bounds, degrees north."""
        return jnp.asarray(geometry(self.n_lat)["lat_bounds"])

    @property
    def sin_lat(self) -> Float[Array, " lat"]:
        """Sine of latitude at cell centres."""
        return jnp.asarray(geometry(self.n_lat)["sin_lat"])

    @property
    def cos_lat_bounds(self) -> EdgeValues:
        """Cosine of latitude at the bounds; exactly zero at the poles."""
        return jnp.asarray(geometry(self.n_lat)["cos_lat_bounds"])

    @property
    def area_weights(self) -> Float[Array, " lat"]:
        """Fraction of the sphere's area in each cell; sums to one."""
        return jnp.asarray(geometry(self.n_lat)["area_weights"])

    def global_mean(self, field: Float[Array, "*batch lat"]) -> Float[Array, "*batch"]:
        """Area-weighted global mean over the last axis."""
        # A contraction rather than a broadcast product: batched fields need no rank
        # promotion (which strict-promotion users, and ebm's tests, refuse).
        return jnp.matmul(field, self.area_weights)


@functools.cache
def geometry(n_lat: int) -> dict[str, np.ndarray]:
    """The grid's coordinates and weights (the properties of `Grid` by name), in
    float64 numpy, read-only: computed once per `n_lat` on the host (outside `jit`
    a jnp computation would compile a program for each operation; inside, these
    are constants either way)."""
    bounds = np.linspace(-np.pi / 2, np.pi / 2, n_lat + 1)
    centres = 0.5 * (bounds[1:] + bounds[:-1])
    cos_bounds = np.cos(bounds)
    cos_bounds[0] = cos_bounds[-1] = 0.0
    sin_bounds = np.sin(bounds)
    geometry = dict(
        lat_bounds_radians=bounds,
        lat_radians=centres,
        lat=np.rad2deg(centres),
        lat_bounds=np.rad2deg(bounds),
        sin_lat=np.sin(centres),
        cos_lat_bounds=cos_bounds,
        area_weights=0.5 * (sin_bounds[1:] - sin_bounds[:-1]),
    )
    for array in geometry.values():
        array.setflags(write=False)
    return geometry
