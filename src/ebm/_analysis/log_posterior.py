r"""The log posterior density that `ebm.posterior` samples.

$$\log p(\theta \mid y) = \sum_k \log p_k(\theta_k)
+ \sum_o \sum_i \Big[-\tfrac12\Big(\frac{y_{o,i} - f_{o,i}(\theta)}{\sigma_o}\Big)^2
- \log\sigma_o\Big] + \text{const},$$

on each parameter's unconstrained coordinate, with the log-Jacobian of the
transform. $f$ is `ForwardProblem`'s solve: the equilibrium reached from the
observations' branch, or snapshots of a run. A failed solve, an equilibrium on
another branch, or parameters out of range give $-\infty$ with gradient zero.
"""

import math
from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._model.declarations import Parameter
from .._model.parameters import with_values
from .._model.protocol import AbstractModel
from .._numerics.implicit import FailedAs, ImplicitAdjoint
from .._zonal.equilibrium import Equilibrium
from .._zonal.params import Params
from .._zonal.start import model_grid
from .forward import ForwardProblem, check_through, check_times
from .priors import AbstractPrior


OBSERVABLES = ("T", "global_mean", "ice_edge", "ice_edge_south", "heat_transport")
"""The outputs that can be observed."""


# Of the models other than the zonal one.
PROTOCOL_OBSERVABLES = ("T", "global_mean")


def observe(model: AbstractModel, params, T, output: str):
    """`output` of the surface temperature(s) `T` (the zonal model's profiles,
    `(..., n_lat)`; a global model's surface temperature is its global mean)."""
    if output == "T":
        return T
    if output == "global_mean":
        grid = model_grid(model)
        return T if grid is None else grid.global_mean(T)
    fn = {
        "ice_edge": model.ice_edge,
        "ice_edge_south": lambda T, params: model.ice_edge(T, params, "south"),
        "heat_transport": model.heat_transport,
    }[output]
    for _ in range(T.ndim - 1):
        fn = jax.vmap(fn, in_axes=(0, None))
    return fn(T, params)


def is_snowball(ice_edge):
    """Whether an equilibrium is a snowball (ice to the equator).

    The warm branch runs continuously from a large ice cap to ice-free (its ice
    edge reaches the pole smoothly), so the branch is told apart only from the
    snowball, which is reached from it by a jump."""
    return ice_edge <= 0.0


def finite_adjoint(model: AbstractModel) -> ImplicitAdjoint:
    """`equilibrium`'s default adjoint for `model` (`model.steady_adjoint()`'s
    linear solve), a failed solve giving zeros.

    For the implicit gradient of the posterior's equilibria: next to a fold the
    Jacobian is singular to working precision, and the default adjoint's NaN would
    reach every chain. A zero solution drops the equilibrium's sensitivity from the
    gradient at that point only. NUTS stays exact: its leapfrog steps are
    reversible and volume-preserving for any deterministic vector field in place
    of the gradient, and the acceptance test uses the density itself, so a wrong
    gradient costs acceptance, not correctness."""
    solver = model.steady_adjoint().linear_solver
    return ImplicitAdjoint(linear_solver=FailedAs(solver, 0.0))


class LogPosterior(eqx.Module):
    """The log posterior density of `ebm.posterior`, on its unconstrained
    coordinates.

    Call it on `{name: coordinate}` for the log density (with the log-Jacobian of
    the transforms; -inf at a failed or off-branch point, where its gradient is
    zero). `values(coordinates)` gives the parameters in their units, and
    `coordinates(values)` the inverse.
    """

    params: Params
    names: tuple[str, ...] = eqx.field(static=True)
    """The sampled names: the parameters, then any `noise_<output>`."""
    parameters: tuple[str, ...] = eqx.field(static=True)
    """The sampled names that are fields of `params`."""
    supports: tuple[Parameter, ...] = eqx.field(static=True)
    priors: tuple[AbstractPrior, ...]
    observed: dict[str, Array]
    noise: dict[str, Array]
    problem: ForwardProblem
    """The solve behind the observed outputs (its `start` is the equilibrium of
    the given `params`, the branch observed)."""
    regime: Array
    """Whether the observed branch is the snowball."""
    correlation: Array = eqx.field(default=0.0, converter=jnp.asarray)
    """The lag-1 autocorrelation of the noise along the observed times (AR(1));
    0 for independent noise."""
    reference: Array | None = None
    """Which observed times make the reference period (a boolean mask): the
    simulated outputs are taken as anomalies from their mean over it, as the
    observations are. `None`: as simulated."""

    @property
    def model(self) -> AbstractModel:
        return self.problem.model

    @property
    def through(self) -> str:
        return self.problem.through

    @property
    def start(self) -> Array:
        return self.problem.start

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shape of each sampled name's value: that of its value in `params`
        (`()`, or `(n,)` for a profile), `()` for a noise."""
        return tuple(
            jnp.shape(getattr(self.params, name)) if name in self.parameters else ()
            for name in self.names
        )

    def values(self, coordinates: dict) -> dict:
        return {
            name: support.from_unconstrained(coordinates[name])
            for name, support in zip(self.names, self.supports)
        }

    def coordinates(self, values: dict) -> dict:
        return {
            name: support.to_unconstrained(jnp.asarray(values[name], float))
            for name, support in zip(self.names, self.supports)
        }

    def with_parameters(self, values: dict) -> Params:
        return with_values(
            self.params, {name: values[name] for name in self.parameters}
        )

    def simulate(self, params: Params):
        """The observed outputs of `params` (in range: see `log_density`), and
        whether they are valid (a solve that succeeded, on the observed branch)."""
        solution = self.problem.solve(params)
        ok = solution.ok
        # The zonal equilibrium (the surface's, over a deep ocean) has branches.
        zonal = getattr(solution.state, "surface", solution.state)
        if self.through == "equilibrium" and isinstance(zonal, Equilibrium):
            ok = ok & (is_snowball(zonal.ice_edge) == self.regime)
        outputs = {o: observe(self.model, params, solution.T, o) for o in self.observed}
        if self.reference is not None:
            weights = self.reference / jnp.sum(self.reference)
            outputs = {
                o: y - jnp.tensordot(weights, y, axes=1) for o, y in outputs.items()
            }
        return outputs, ok

    def log_likelihood(self, outputs: dict, values: dict):
        r"""The Gaussian log likelihood of the observed `outputs`, with the noise in
        `values` where it is sampled (constants dropped).

        With `correlation` $\rho$ the residuals $r_1 \dots r_n$ along the observed
        times are a stationary AR(1) process with innovations of standard
        deviation $\sigma$ (the noise): $r_1 \sim N(0, \sigma^2 / (1 - \rho^2))$,
        $r_k - \rho r_{k-1} \sim N(0, \sigma^2)$, each cell (or output) a series
        of its own; $\rho = 0$ is independent noise.
        """
        total = 0.0
        rho = self.correlation
        for output, observed in self.observed.items():
            sigma = values.get(f"noise_{output}", self.noise.get(output))
            residual = (observed - outputs[output]) / sigma
            if self.through == "trajectory":
                innovations = residual[1:] - rho * residual[:-1]
                squares = (1 - rho**2) * jnp.sum(residual[0] ** 2) + jnp.sum(
                    innovations**2
                )
                series = residual[0].size
                total = total + 0.5 * series * jnp.log1p(-(rho**2))
            else:
                squares = jnp.sum(residual**2)
            total = total - 0.5 * squares - observed.size * jnp.log(sigma)
        return total

    def log_density(self, coordinates: dict, jacobian: bool = True):
        """The log posterior (unguarded: NaN where the solve failed)."""
        values = self.values(coordinates)
        total = sum(
            jnp.sum(prior.log_density(values[name]))
            for name, prior in zip(self.names, self.priors)
        )
        if jacobian:
            total = total + sum(
                jnp.sum(support.log_jacobian(coordinates[name]))
                for name, support in zip(self.names, self.supports)
            )
        params = self.with_parameters(values)
        # A wild proposal (the adaptation's first steps can overflow a log
        # coordinate) or one that breaks a constraint is solved at the given
        # parameters instead, and is -inf.
        valid = params.in_range()
        params = jax.tree.map(
            lambda proposed, given: jnp.where(valid, proposed, given),
            params,
            self.params,
        )
        outputs, ok = self.simulate(params)
        total = total + self.log_likelihood(outputs, values)
        ok = ok & valid
        return jnp.where(ok & jnp.isfinite(total), total, -jnp.inf)

    def __call__(self, coordinates: dict):
        return _guarded(coordinates, self)


@eqx.filter_custom_vjp
def _guarded(coordinates, log_posterior: LogPosterior):
    return log_posterior.log_density(coordinates)


@_guarded.def_fwd
def _guarded_fwd(perturbed, coordinates, log_posterior):
    del perturbed
    value, vjp = jax.vjp(log_posterior.log_density, coordinates)
    return value, (value, vjp)


@_guarded.def_bwd
def _guarded_bwd(residuals, cotangent, perturbed, coordinates, log_posterior):
    # At -inf the solve's derivatives are NaN; the point is rejected whatever its
    # gradient, so the gradient is zero, and no NaN reaches the sampler's state.
    del perturbed, coordinates, log_posterior
    value, vjp = residuals
    (gradient,) = vjp(cotangent)
    return jax.tree.map(
        lambda g: jnp.where(jnp.isfinite(value), g, jnp.zeros_like(g)), gradient
    )


def check_observed(observed, through, times, shapes, start=0.0) -> dict[str, Array]:
    """`observed` as `{output: array}`, each of `shapes[output]` after a leading
    `len(times)` axis through a trajectory (`times` after `start`, the forcing's
    start)."""
    check_through(through)
    if not isinstance(observed, Mapping):
        observed = {"T": observed}
    prefix: tuple[int, ...] = ()
    if through == "trajectory":
        if times is None:
            raise ValueError("through='trajectory' needs `times` (years).")
        times = check_times(times, start)
        prefix = (len(times),)
    checked = {}
    for output, value in observed.items():
        if output not in shapes:
            raise ValueError(
                f"`observed` has {output!r}; the outputs that can be observed are "
                f"{tuple(shapes)}."
            )
        array = np.asarray(value, dtype=float)
        expected = prefix + shapes[output]
        if array.shape != expected:
            raise ValueError(
                f"`observed[{output!r}]` must have shape {expected} for "
                f"through={through!r}, got {array.shape}."
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(
                f"`observed[{output!r}]` must be finite everywhere, got "
                f"{int((~np.isfinite(array)).sum())} non-finite value(s)."
            )
        span = {"ice_edge": (0.0, 90.0), "ice_edge_south": (-90.0, 0.0)}.get(output)
        if span is not None and not np.all((span[0] <= array) & (array <= span[1])):
            raise ValueError(
                f"`observed[{output!r}]` must be in [{span[0]:g}, {span[1]:g}] "
                f"(degrees north), got {array.min():g} to {array.max():g}."
            )
        checked[output] = jnp.asarray(array)
    if not checked:
        raise ValueError("`observed` must hold at least one output.")
    return checked


def check_noise(noise, observed) -> tuple[dict, dict]:
    if not isinstance(noise, Mapping):
        noise = {output: noise for output in observed}
    missing = [output for output in observed if output not in noise]
    extra = [output for output in noise if output not in observed]
    if missing or extra:
        raise ValueError(
            f"`noise` must give one standard deviation per observed output "
            f"{tuple(observed)}, got {tuple(noise)}."
        )
    given, priors = {}, {}
    for output, value in noise.items():
        if isinstance(value, AbstractPrior):
            priors[output] = value
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not (math.isfinite(number) and number > 0):
            raise ValueError(
                f"`noise[{output!r}]` must be a number > 0 (in the output's units) or "
                f"a prior, got {value!r}."
            )
        given[output] = jnp.asarray(number)
    return given, priors


def check_time_structure(noise_correlation, anomaly_reference, through, times):
    """`(correlation, reference mask or None)` for `posterior`, once valid.

    **Raises:**

    - `ValueError`: for a correlation outside (-1, 1), a reference that is not
        `(first, last)` with `first <= last` or holds no observed time, or either
        given through an equilibrium (which has no time axis).
    """
    rho = noise_correlation
    if isinstance(rho, bool) or np.ndim(rho) != 0 or not -1 < float(rho) < 1:
        raise ValueError(
            f"`noise_correlation` must be a number in (-1, 1), got {rho!r}."
        )
    if through != "trajectory" and (float(rho) != 0 or anomaly_reference is not None):
        raise ValueError(
            "`noise_correlation` and `anomaly_reference` are along the observed "
            "times: give them with through='trajectory' only."
        )
    if anomaly_reference is None:
        return jnp.asarray(float(rho)), None
    try:
        first, last = (float(x) for x in anomaly_reference)
        valid = first <= last
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise ValueError(
            "`anomaly_reference` must be (first, last) times with first <= last "
            f"(years), got {anomaly_reference!r}."
        )
    times = np.asarray(times)
    mask = (times >= first) & (times <= last)
    if not mask.any():
        raise ValueError(
            f"`anomaly_reference` = {anomaly_reference!r} holds none of the observed "
            f"times ({times[0]:g} to {times[-1]:g}): the reference period must be "
            "observed."
        )
    return jnp.asarray(float(rho)), jnp.asarray(mask, dtype=float)
