r"""Prior distributions of parameters, for `ebm.posterior`.

Each prior is a density $p(\theta)$ on one parameter's own scale (its units), and
a support: the range where the sampler may propose it. The sampler moves in an
unconstrained coordinate $z$ of that support (the same transforms as
`ebm.Parameter`: $\theta = l + e^z$ for a support $(l, \infty)$,
$\theta = l + (u - l)\,\sigma(z)$ for $(l, u)$, $\theta = z$ for the real line) and
adds $\log|d\theta/dz|$ to the log density, so no value outside the support is
ever proposed. The support is the prior's own range intersected with the
parameter's declared range. A prior on a profile (`D` on the cell bounds) applies
to each element independently.
"""

import abc
import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

from .._model.declarations import Parameter


def _intersect(declaration: Parameter, lower, upper) -> Parameter:
    """`declaration`'s range cut to `[lower, upper]`, with the transform that keeps a
    coordinate inside it (`log` for one end, `logit` for two, none for none)."""
    if lower is not None and declaration.lower is not None:
        lower = max(lower, declaration.lower)
    elif lower is None:
        lower = declaration.lower
    if upper is not None and declaration.upper is not None:
        upper = min(upper, declaration.upper)
    elif upper is None:
        upper = declaration.upper
    if lower is not None and upper is not None and not lower < upper:
        raise ValueError(
            f"The prior of `{declaration.name}` has no room inside its allowed range "
            f"({declaration.allowed}): support [{lower}, {upper}]."
        )
    if lower is not None and upper is not None:
        transform, default = "logit", 0.5 * (lower + upper)
    elif lower is not None:
        transform, default = "log", lower + 1.0
    elif upper is not None:
        raise ValueError(
            f"The prior of `{declaration.name}` has only an upper end ({upper}); "
            "give a lower one too."
        )
    else:
        transform, default = "none", 0.0
    return Parameter(
        declaration.name,
        default,
        declaration.units,
        declaration.long_name,
        lower=lower,
        upper=upper,
        lower_open=True,
        upper_open=True,
        transform=transform,
    )


class AbstractPrior(eqx.Module):
    """A prior density of one parameter (elementwise for a profile).

    Subclasses implement `log_density` (up to a constant; in the parameter's units)
    and, to draw from the prior (`ebm.Posterior` does not need it; simulation-based
    calibration does), `sample`.
    """

    @abc.abstractmethod
    def log_density(self, x):
        """`log p(x)`, elementwise, up to a constant."""

    def support(self) -> tuple[float | None, float | None]:
        """The prior's own range `(lower, upper)`; `None` for no end."""
        return None, None

    def sample(self, key, shape=()):
        """Draws of shape `shape` (from the prior itself, not cut to the allowed
        range)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be sampled; give a Normal, LogNormal or "
            "Uniform prior to draw from the prior."
        )

    def cdf(self, x):
        """The cumulative distribution function at `x` (of the prior itself)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no quantile function; give a Normal, "
            "LogNormal or Uniform prior to sample it (`ebm.sample_prior`)."
        )

    def quantile(self, u):
        """The inverse of `cdf`: the value below which a fraction `u` lies."""
        raise NotImplementedError(
            f"{type(self).__name__} has no quantile function; give a Normal, "
            "LogNormal or Uniform prior to sample it (`ebm.sample_prior`)."
        )

    def coordinate(self, declaration: Parameter) -> Parameter:
        """The support, as a declaration whose transform `ebm.posterior` samples."""
        return _intersect(declaration, *self.support())


def allowed_support(name: str, prior: AbstractPrior, declaration: Parameter):
    """`(support, low, high)`: `prior`'s support within the parameter's allowed
    range (`AbstractPrior.coordinate`), and the prior's cumulative probability at
    its ends (0 and 1 where open, or where the prior has no `cdf`).

    **Raises:**

    - `ValueError`: for a prior with no probability (to float64's precision) inside
        the parameter's allowed range, naming it.
    """
    support = prior.coordinate(declaration)
    try:
        low, high = (
            float(prior.cdf(end)) if end is not None else default
            for end, default in ((support.lower, 0.0), (support.upper, 1.0))
        )
    except NotImplementedError:
        return support, 0.0, 1.0
    if not high > low:
        raise ValueError(
            f"The prior of `{name}` has no probability inside its allowed range "
            f"({declaration.allowed}): {prior!r}."
        )
    return support, low, high


class Normal(AbstractPrior):
    r"""$\theta \sim \mathcal N(\mu, s^2)$, cut to the parameter's allowed range.

    **Arguments:**

    - `mean`: $\mu$, in the parameter's units.
    - `std`: $s > 0$, in the parameter's units.
    """

    mean: float
    std: float

    def __check_init__(self):
        if not (math.isfinite(self.mean) and self.std > 0 and math.isfinite(self.std)):
            raise ValueError(
                f"Normal prior: `mean` must be finite and `std` finite and > 0, got "
                f"mean={self.mean}, std={self.std}."
            )

    def log_density(self, x):
        return -0.5 * ((x - self.mean) / self.std) ** 2

    def sample(self, key, shape=()):
        return self.mean + self.std * jax.random.normal(key, shape)

    def cdf(self, x):
        return jax.scipy.special.ndtr((x - self.mean) / self.std)

    def quantile(self, u):
        return self.mean + self.std * jax.scipy.special.ndtri(u)


class LogNormal(AbstractPrior):
    r"""$\log\theta \sim \mathcal N(\log m, s^2)$: a positive parameter known to a
    factor, $\theta > 0$.

    **Arguments:**

    - `median`: $m > 0$, in the parameter's units.
    - `sigma`: $s > 0$, the standard deviation of $\log\theta$ (0.1 is about 10%).
    """

    median: float
    sigma: float

    def __check_init__(self):
        if not (self.median > 0 and self.sigma > 0 and math.isfinite(self.sigma)):
            raise ValueError(
                f"LogNormal prior: `median` and `sigma` must be > 0, got "
                f"median={self.median}, sigma={self.sigma}."
            )

    def support(self):
        return 0.0, None

    def log_density(self, x):
        log_x = jnp.log(x)
        return -0.5 * ((log_x - math.log(self.median)) / self.sigma) ** 2 - log_x

    def sample(self, key, shape=()):
        return self.median * jnp.exp(self.sigma * jax.random.normal(key, shape))

    def cdf(self, x):
        z = (jnp.log(jnp.maximum(x, 0.0)) - math.log(self.median)) / self.sigma
        return jax.scipy.special.ndtr(z)

    def quantile(self, u):
        return self.median * jnp.exp(self.sigma * jax.scipy.special.ndtri(u))


class Uniform(AbstractPrior):
    """Uniform on `(lower, upper)`, in the parameter's units.

    **Arguments:**

    - `lower`, `upper`: the ends, `lower < upper`, both finite. An end left `None`
        is the parameter's own allowed end, which must then be finite (`a0` in
        (0, 1)); a uniform density on an unbounded range is not a distribution.
    """

    lower: float | None = None
    upper: float | None = None

    def __check_init__(self):
        if (
            self.lower is not None
            and self.upper is not None
            and not self.lower < self.upper
        ):
            raise ValueError(
                f"Uniform prior: `lower` must be below `upper`, got "
                f"[{self.lower}, {self.upper}]."
            )

    def support(self):
        return self.lower, self.upper

    def coordinate(self, declaration: Parameter) -> Parameter:
        support = super().coordinate(declaration)
        if support.lower is None or support.upper is None:
            raise ValueError(
                f"Uniform prior of `{declaration.name}`: its allowed range "
                f"({declaration.allowed}) has no finite "
                f"{'lower' if support.lower is None else 'upper'} end; give "
                "`Uniform(lower, upper)`."
            )
        return support

    def log_density(self, x):
        return jnp.zeros_like(x)

    def sample(self, key, shape=()):
        if self.lower is None or self.upper is None:
            raise NotImplementedError(
                "Uniform prior without both ends given: its range is the parameter's; "
                "give `Uniform(lower, upper)` to draw from it."
            )
        return jax.random.uniform(key, shape, minval=self.lower, maxval=self.upper)

    def _ends(self):
        if self.lower is None or self.upper is None:
            raise NotImplementedError(
                "Uniform prior without both ends given: its range is the parameter's; "
                "give `Uniform(lower, upper)` to sample it."
            )
        return self.lower, self.upper

    def cdf(self, x):
        lower, upper = self._ends()
        return jnp.clip((x - lower) / (upper - lower), 0.0, 1.0)

    def quantile(self, u):
        lower, upper = self._ends()
        return lower + (upper - lower) * u


class LogDensity(AbstractPrior):
    """Any log density: `fn(x)`, traceable, up to a constant, in the parameter's
    units, on its allowed range (or on `(lower, upper)` within it).

    **Arguments:**

    - `fn`: `x -> log p(x)`.
    - `lower`, `upper`: optional ends of its support.
    """

    fn: Callable = eqx.field(static=True)
    lower: float | None = None
    upper: float | None = None

    def support(self):
        return self.lower, self.upper

    def log_density(self, x):
        return self.fn(x)
