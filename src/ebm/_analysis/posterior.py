r"""Bayesian calibration: posterior distributions of parameters, sampled with NUTS.

`posterior` samples

$$\log p(\theta \mid y) = \sum_k \log p_k(\theta_k)
+ \sum_o \sum_i \Big[-\tfrac12\Big(\frac{y_{o,i} - f_{o,i}(\theta)}{\sigma_o}\Big)^2
- \log\sigma_o\Big] + \text{const},$$

with independent priors $p_k$ per parameter (`ebm.Normal`, `ebm.LogNormal`,
`ebm.Uniform`, `ebm.LogDensity`) and a Gaussian likelihood: each observed value
$y_{o,i}$ of output $o$ (the temperature profile `"T"` in degC, `"global_mean"`,
`"ice_edge"` and `"ice_edge_south"` in degrees north, `"heat_transport"` in PW)
is the model's $f_{o,i}(\theta)$ plus independent noise of standard deviation
$\sigma_o$, given or itself sampled under a prior (parameter `noise_<output>`).
$f$ is the equilibrium reached from the observations' branch (gradients by
implicit differentiation: one linear solve per gradient) or snapshots of a run
(`ebm.integrate`, gradients under the adjoint chosen).

Sampling is blackjax's NUTS with Stan's window adaptation of the step size and a
dense mass matrix, one chain per `jax.vmap` lane. Each parameter is sampled in the
unconstrained coordinate of its support (see `ebm.Normal`), with the log-Jacobian
of the transform, so no value outside the allowed range is proposed. Those
coordinates are standardised first, by the mode and the Laplace covariance found
before sampling (BFGS, then the Hessian): the adaptation then starts from a
posterior of unit scales, as Stan's regularisation of the mass matrix assumes.

**Failures are zero-probability points.** A proposal whose equilibrium (or run) does
not converge, whose equilibrium lies on another branch than the observations'
(a snowball where the equilibrium at the given `params` is not, or the
other way round), or whose parameters break a constraint that ties several together, has
log density $-\infty$ and gradient zero: the sampler rejects it as a divergent
transition, and the chain goes on. Such proposals are counted (`failed`).
"""

import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array

from .._checks import check_count
from .._model.grid import Grid
from .._model.model import EnergyBalanceModel
from .._model.parameters import Parameter, params_checked
from .._model.params import Params
from .._numerics.implicit import FailedAs, ImplicitAdjoint
from .._progress import HostProgress
from .._results import RESULTS, raise_if_failed
from .._steady.continuation import Fold, fold
from .._steady.equilibrium import (
    default_adjoint,
    equilibrium,
    initial_profile,
    resolve_model,
)
from .fit import check_names, hessian, snapshots, with_values
from .priors import AbstractPrior


OBSERVABLES = ("T", "global_mean", "ice_edge", "ice_edge_south", "heat_transport")
"""The outputs that can be observed."""

DERIVED = ("ecs", "snowball_S0")
"""The derived quantities known by name."""

CO2_DOUBLING = 3.7
"""The radiative forcing of doubled CO2, W m-2 (Myhre et al. 1998, rounded)."""


def _observe(model: EnergyBalanceModel, params, T, output: str):
    """`output` of the profile(s) `T` (`(..., n_lat)`)."""
    if output == "T":
        return T
    if output == "global_mean":
        return model.grid.global_mean(T)
    fn = {
        "ice_edge": model.ice_edge,
        "ice_edge_south": lambda T, params: model.ice_edge(T, params, "south"),
        "heat_transport": model.heat_transport,
    }[output]
    for _ in range(T.ndim - 1):
        fn = jax.vmap(fn, in_axes=(0, None))
    return fn(T, params)


def _regime(ice_edge):
    """Whether an equilibrium is a snowball (ice to the equator).

    The warm branch runs continuously from a large ice cap to ice-free (its ice
    edge reaches the pole smoothly), so the branch is told apart only from the
    snowball, which is reached from it by a jump."""
    return ice_edge <= 0.0


def _failed(info):
    """Whether a NUTS transition stopped at a point of log density -inf: the
    trajectory diverges there, and blackjax ends it with that point outermost."""
    ends = (info.trajectory_leftmost_state, info.trajectory_rightmost_state)
    finite = jnp.isfinite(ends[0].logdensity) & jnp.isfinite(ends[1].logdensity)
    return info.is_divergent & ~finite


def _finite_adjoint(model: EnergyBalanceModel) -> ImplicitAdjoint:
    """`equilibrium`'s default adjoint for `model`, a failed solve giving zeros.

    For the implicit gradient of the posterior's equilibria: next to a fold the
    Jacobian is singular to working precision, and the default adjoint's NaN would
    reach every chain. A zero solution drops the equilibrium's sensitivity from the
    gradient at that point only. NUTS stays exact: its leapfrog steps are
    reversible and volume-preserving for any deterministic vector field in place
    of the gradient, and the acceptance test uses the density itself, so a wrong
    gradient costs acceptance, not correctness."""
    solver = default_adjoint(model).linear_solver
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
    model: EnergyBalanceModel
    names: tuple[str, ...] = eqx.field(static=True)
    """The sampled names: the parameters, then any `noise_<output>`."""
    parameters: tuple[str, ...] = eqx.field(static=True)
    """The sampled names that are fields of `params`."""
    supports: tuple[Parameter, ...] = eqx.field(static=True)
    priors: tuple[AbstractPrior, ...]
    observed: dict[str, Array]
    noise: dict[str, Array]
    through: str = eqx.field(static=True)
    times: Array | None
    years: float | None = eqx.field(static=True)
    T0: object
    start: Array
    regime: Array
    adjoint: object

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
        whether they are valid."""
        with params_checked():
            if self.through == "equilibrium":
                state = equilibrium(
                    params,
                    model=self.model,
                    start=self.start,
                    adjoint=_finite_adjoint(self.model),
                    throw=False,
                    near_fold=None,
                )
                ok = state.converged & (_regime(state.ice_edge) == self.regime)
                T = state.T
            else:
                T, ok = snapshots(
                    params, self.years, self.times, self.model, self.T0, self.adjoint
                )
        outputs = {o: _observe(self.model, params, T, o) for o in self.observed}
        return outputs, ok

    def log_likelihood(self, outputs: dict, values: dict):
        """The Gaussian log likelihood of the observed `outputs`, with the noise in
        `values` where it is sampled."""
        total = 0.0
        for output, observed in self.observed.items():
            sigma = values.get(f"noise_{output}", self.noise.get(output))
            residual = (observed - outputs[output]) / sigma
            total = total - 0.5 * jnp.sum(residual**2) - observed.size * jnp.log(sigma)
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


class _Standardized(eqx.Module):
    """The log posterior on standardised coordinates $u$, flat: the sampled
    coordinates are $z = c + L u$, with $c$ the mode of the log posterior on $z$
    and $L L^\top$ the inverse of its negative Hessian there (the Laplace
    covariance), so that the posterior of $u$ has scales of order one.

    Stan's window adaptation, which blackjax follows, regularises each estimate of
    the inverse mass matrix toward $10^{-3} I$, as if the posterior's scales were of
    order one. On $z$ they are not: the narrow direction of a ridge in (A, B, D)
    has a standard deviation of $10^{-4}$ or less, and the regularisation there
    would be thousands of times the posterior's variance, forcing the step size
    down. The map is linear, so its log-Jacobian is a constant and is dropped."""

    log_posterior: LogPosterior
    centre: Array
    scale: Array

    def coordinates(self, u) -> dict:
        """The sampled coordinates `{name: z}` of the flat `u`."""
        return _unflatten(self.log_posterior, self.centre + self.scale @ u)

    def __call__(self, u):
        return self.log_posterior(self.coordinates(u))


def _flatten(log_posterior: LogPosterior, coordinates: dict):
    return jnp.concatenate(
        [jnp.ravel(coordinates[name]) for name in log_posterior.names]
    )


def _unflatten(log_posterior: LogPosterior, flat) -> dict:
    out, offset = {}, 0
    for name, shape in zip(log_posterior.names, log_posterior.shapes):
        size = math.prod(shape)
        out[name] = flat[offset : offset + size].reshape(shape)
        offset += size
    return out


@eqx.filter_jit
def _precondition(log_posterior: LogPosterior, start, max_steps: int = 256):
    """The centre $c$ and scale $L$ of `_Standardized`: BFGS from `start` (flat
    coordinates) to the mode of the sampled density, then the Cholesky factor of
    the inverse of its negative Hessian there (exact through an equilibrium; by
    central differences of the gradient, steps $10^{-4}(1 + |z|)$, through a run).
    Where the search fails the centre is `start`; where the negative Hessian is not
    positive definite the scale is the identity (the coordinates as they are)."""

    def loss(flat, _):
        return -log_posterior(_unflatten(log_posterior, flat))

    solution = optx.minimise(
        loss,
        optx.BFGS(rtol=1e-8, atol=1e-8),
        start,
        max_steps=max_steps,
        throw=False,
    )
    found = (solution.result == optx.RESULTS.successful) & jnp.isfinite(
        loss(solution.value, None)
    )
    centre = jnp.where(found, solution.value, start)
    if log_posterior.through == "equilibrium":
        # Exact: forward over reverse through the implicit gradient.
        curvature = jax.hessian(lambda flat: loss(flat, None))(centre)
    else:
        # Central differences of the gradient, column by column: reverse mode
        # only, which every adjoint of a run supports (forward mode is not).
        gradient = jax.grad(lambda flat: loss(flat, None))
        steps = 1e-4 * (1.0 + jnp.abs(centre))
        columns = jax.lax.map(
            lambda shift: gradient(centre + shift) - gradient(centre - shift),
            jnp.diag(steps),
            batch_size=8,
        )
        curvature = columns / (2.0 * steps[:, None])
    curvature = 0.5 * (curvature + curvature.T)
    covariance = jnp.linalg.inv(curvature)
    scale = jnp.linalg.cholesky(0.5 * (covariance + covariance.T))
    usable = jnp.all(jnp.isfinite(scale)) & jnp.all(jnp.isfinite(curvature))
    scale = jnp.where(usable, scale, jnp.eye(start.size))
    return centre, scale, found, usable


class Posterior(eqx.Module):
    """Draws from a posterior (from `ebm.posterior`).

    **Attributes:**

    - `names`: the sampled quantities: the parameters, then any inferred noise
        (`noise_<output>`).
    - `draws`: `{name: array}`, each of shape `(chains, draws)` (with a last axis
        for a profile), in the parameter's units.
    - `derived`: `{name: array}` of shape `(chains, draws)`: the derived quantities
        of every draw (`"ecs"`: K per 3.7 W m-2; `"snowball_S0"`: W m-2); NaN
        where one could not be computed.
    - `log_density`: the log posterior of each draw (on the sampler's coordinates,
        with the log-Jacobian), `(chains, draws)`.
    - `rhat`: `{name: split R-hat}` (Gelman et al. 2013, over the chains split in
        halves); below 1.01 when the chains agree.
    - `ess`: `{name: effective sample size}`, over all chains.
    - `divergences`: divergent transitions after warm-up (every rejected failed
        proposal is one).
    - `failed`: proposals after warm-up with log density -inf (the model did not
        converge, or fell onto another branch, there).
    - `failed_warmup`: the same during warm-up.
    - `acceptance_rate`: mean acceptance probability after warm-up.
    - `num_gradients`: gradient evaluations after warm-up, over all chains.
    - `step_size`: each chain's adapted step size, `(chains,)`, on the
        standardised coordinates (the Laplace approximation at the mode has unit
        covariance there).
    - `inverse_mass_matrix`: each chain's adapted dense inverse mass matrix, on the
        flattened coordinates.
    - `log_posterior`: the `ebm.LogPosterior` sampled.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    draws: dict[str, Array]
    derived: dict[str, Array]
    log_density: Array
    rhat: dict[str, Array]
    ess: dict[str, Array]
    divergences: int
    failed: int
    failed_warmup: int
    acceptance_rate: float
    num_gradients: int
    step_size: Array
    inverse_mass_matrix: Array
    log_posterior: LogPosterior

    def __getitem__(self, name: str) -> Array:
        if name in self.draws:
            return self.draws[name]
        return self.derived[name]

    @property
    def num_chains(self) -> int:
        return self.log_density.shape[0]

    @property
    def num_draws(self) -> int:
        return self.log_density.shape[1]

    def mean(self, name: str) -> Array:
        """Posterior mean over every chain and draw (derived: over finite values)."""
        return jnp.nanmean(self[name].reshape(-1, *self[name].shape[2:]), axis=0)

    def std(self, name: str) -> Array:
        """Posterior standard deviation over every chain and draw."""
        return jnp.nanstd(self[name].reshape(-1, *self[name].shape[2:]), axis=0)

    def quantile(self, name: str, q) -> Array:
        """Posterior quantiles `q` (in [0, 1])."""
        return jnp.nanquantile(self[name].reshape(-1, *self[name].shape[2:]), q, axis=0)

    def summary(self) -> str:
        """A table: mean, standard deviation, 5% and 95% quantiles, R-hat, ESS."""
        lines = [
            f"{'':>16} {'mean':>11} {'std':>10} {'5%':>11} {'95%':>11} "
            f"{'R-hat':>7} {'ESS':>7}"
        ]
        for name in (*self.names, *self.derived):
            draws = np.asarray(self[name])
            if draws.ndim > 2:
                continue
            flat = draws[np.isfinite(draws)]
            q5, q95 = np.quantile(flat, [0.05, 0.95]) if flat.size else (np.nan,) * 2
            rhat = float(self.rhat.get(name, np.nan))
            ess = float(self.ess.get(name, np.nan))
            lines.append(
                f"{name:>16} {flat.mean():11.5g} {flat.std():10.3g} {q5:11.5g} "
                f"{q95:11.5g} {rhat:7.4f} {ess:7.0f}"
            )
        lines.append(
            f"{self.num_chains} chains x {self.num_draws} draws; "
            f"{self.divergences} divergences, {self.failed} failed proposals, "
            f"acceptance {self.acceptance_rate:.2f}"
        )
        return "\n".join(lines)

    def params(self, chain: int, draw: int) -> Params:
        """The `Params` of one draw."""
        values = {
            name: self.draws[name][chain, draw]
            for name in self.log_posterior.parameters
        }
        return with_values(self.log_posterior.params, values)

    def mode(self, max_steps: int = 256) -> dict[str, Array]:
        """The posterior mode in the parameters' units (of the density on their
        own scale, without the Jacobian), found by BFGS from the best draw."""
        log_posterior = self.log_posterior
        chain, draw = np.unravel_index(
            int(np.argmax(np.asarray(self.log_density))), self.log_density.shape
        )
        start = log_posterior.coordinates(
            {name: self.draws[name][chain, draw] for name in self.names}
        )
        mode, result = _mode(log_posterior, start, max_steps)
        return log_posterior.values(raise_if_failed(mode, result))

    def laplace(self, mode: dict | None = None) -> tuple[dict[str, Array], Array]:
        r"""The Laplace approximation at the mode: the Gaussian whose covariance is
        the inverse of $-\nabla^2 \log p(\theta\mid y)$ in the parameters' units.

        The likelihood's Hessian is `ebm.hessian` of the log likelihood of the
        equilibrium; the priors' are exact. Only for parameters with one value
        each, through an equilibrium, with the noise given (not inferred).

        **Returns:**

        `(std, covariance)`: `{name: standard deviation}`, and the covariance in
        the order of `names`.
        """
        log_posterior = self.log_posterior
        if log_posterior.through != "equilibrium" or len(log_posterior.names) != len(
            log_posterior.parameters
        ):
            raise ValueError(
                "Posterior.laplace needs through='equilibrium' and the noise given, "
                "not inferred."
            )
        mode = self.mode() if mode is None else mode
        names = log_posterior.parameters
        at = log_posterior.with_parameters(mode)

        def log_likelihood(state, params):
            outputs = {
                o: _observe(log_posterior.model, params, state.T, o)
                for o in log_posterior.observed
            }
            return log_posterior.log_likelihood(outputs, {})

        matrix = hessian(
            at,
            log_likelihood,
            names=names,
            model=log_posterior.model,
            start=log_posterior.start,
            near_fold=None,
        ).matrix
        prior_curvature = jnp.stack(
            [
                jax.grad(jax.grad(prior.log_density))(jnp.asarray(mode[name], float))
                for name, prior in zip(log_posterior.names, log_posterior.priors)
            ]
        )
        precision = -(matrix + jnp.diag(prior_curvature))
        covariance = jnp.linalg.inv(precision)
        std = jnp.sqrt(jnp.diag(covariance))
        return {name: std[i] for i, name in enumerate(names)}, covariance

    def to_dataset(self):
        """The draws, derived quantities and sampler statistics as an
        `xarray.Dataset` on dimensions `(chain, draw)` (and `lat`/`lat_bounds`
        for profiles), with units; ArviZ reads it with `arviz.from_dict` or
        `arviz.convert_to_inference_data`."""
        import xarray as xr

        container = type(self.log_posterior.params)
        grid = self.log_posterior.model.grid
        variables = {}
        for name in (*self.names, *self.derived):
            value = np.asarray(self[name])
            dims = ["chain", "draw"]
            if value.ndim == 3:
                dims.append("lat_bounds" if value.shape[2] == grid.n_lat + 1 else "lat")
            if name in container.field_names():
                declaration = container.declaration(name)
                attrs = {"units": declaration.units, "long_name": declaration.long_name}
            elif name.startswith("noise_"):
                attrs = {"long_name": f"observation noise of {name[6:]}"}
            else:
                attrs = _DERIVED_ATTRS.get(name, {})
            variables[name] = (dims, value, attrs)
        variables["log_density"] = (["chain", "draw"], np.asarray(self.log_density))
        return xr.Dataset(
            variables,
            coords={
                "chain": np.arange(self.num_chains),
                "draw": np.arange(self.num_draws),
            },
            attrs={
                "divergences": self.divergences,
                "failed_proposals": self.failed,
                "acceptance_rate": self.acceptance_rate,
            },
        )


_DERIVED_ATTRS = {
    "ecs": {
        "units": "K",
        "long_name": "equilibrium climate sensitivity (global-mean warming for "
        f"{CO2_DOUBLING} W m-2)",
    },
    "snowball_S0": {
        "units": "W m-2",
        "long_name": "solar constant of the snowball fold",
    },
}


@eqx.filter_jit
def _mode(log_posterior: LogPosterior, start, max_steps):
    def loss(coordinates, _):
        return -log_posterior.log_density(coordinates, jacobian=False)

    solution = optx.minimise(
        loss,
        optx.BFGS(rtol=1e-10, atol=1e-10),
        start,
        max_steps=max_steps,
        throw=False,
    )
    return solution.value, RESULTS.promote(solution.result)


class ClimateSensitivity(eqx.Module):
    """`params -> ` the equilibrium global-mean warming for `forcing` W m-2 more,
    K: from the equilibrium reached from `start` to the one reached from it."""

    model: EnergyBalanceModel
    start: Array
    forcing: float = CO2_DOUBLING

    def __call__(self, params: Params):
        base = equilibrium(
            params, model=self.model, start=self.start, throw=False, near_fold=None
        )
        forced = eqx.tree_at(lambda p: p.forcing, params, params.forcing + self.forcing)
        warmer = equilibrium(
            forced, model=self.model, start=base.T, throw=False, near_fold=None
        )
        return warmer.global_mean - base.global_mean


class SnowballFold(eqx.Module):
    """`params -> ` the solar constant of the snowball fold, W m-2: `ebm.fold`
    refined from `guess` (the fold at the given parameters)."""

    model: EnergyBalanceModel
    guess: Fold

    def __call__(self, params: Params):
        return fold(params, "S0", guess=self.guess, model=self.model, throw=False).value


def posterior(
    params: Params,
    observed,
    *,
    priors: Mapping[str, AbstractPrior],
    noise,
    through: str = "equilibrium",
    times=None,
    T0=None,
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
    start="present",
    adjoint="recursive",
    num_chains: int = 4,
    num_warmup: int = 500,
    num_samples: int = 1000,
    seed: int = 0,
    target_acceptance: float = 0.8,
    max_doublings: int = 10,
    init_jitter: float = 0.1,
    derived: Sequence[str] | Mapping[str, Callable] = ("ecs",),
    progress: bool | diffrax.AbstractProgressMeter = False,
) -> Posterior:
    """Sample the posterior of the parameters named in `priors` given observations.

    **Arguments:**

    - `params`: the values of the parameters not sampled, and where the search
        for the mode starts; the chains start at the mode plus `init_jitter` times
        a draw of the Laplace approximation there. Its equilibrium (from `start`)
        sets the branch.
    - `observed`: an array of the temperature profile (degC, `(n_lat,)`; for
        `through="trajectory"`, `(len(times), n_lat)`), or `{output: array}` for
        any of `"T"`, `"global_mean"`, `"ice_edge"`, `"ice_edge_south"` (degrees
        north), `"heat_transport"`
        (PW, on the `n_lat + 1` cell bounds), each with the same leading
        `len(times)` axis through a trajectory.
    - `priors`: `{name: prior}` for each parameter to sample (an `ebm.Normal`,
        `ebm.LogNormal`, `ebm.Uniform` or `ebm.LogDensity`); every other
        parameter stays at its value in `params`.
    - `noise`: the standard deviation of the observations' noise, in their units:
        a number, a prior (the noise is then sampled too, as `noise_<output>`), or
        `{output: number or prior}`.
    - `through`: `"equilibrium"` or `"trajectory"` (a run from `T0` observed at
        `times`, years, differentiated under `adjoint`), as for `ebm.fit`.
    - `grid`, `model`, `start`: as for `ebm.equilibrium`.
    - `num_chains`, `num_warmup`, `num_samples`: chains (run at once, by
        `jax.vmap`), warm-up (adaptation) steps and kept draws per chain.
    - `seed`: the random seed.
    - `target_acceptance`, `max_doublings`: NUTS's target acceptance rate during
        adaptation and its most trajectory doublings (at most `2**max_doublings`
        gradients per draw).
    - `derived`: quantities computed for every draw: names (`"ecs"`, the
        equilibrium climate sensitivity in K for 3.7 W m-2; `"snowball_S0"`, the
        solar constant of the snowball fold in W m-2, refined by `ebm.fold` from
        the fold at `params`), or `{name: fn}` with `fn(params) -> scalar`.
    - `progress`: `True` for a progress bar on stderr over the warm-up and the
        draws, or any `diffrax.AbstractProgressMeter`.

    **Returns:**

    An `ebm.Posterior`.

    **Raises:**

    - `ValueError`: for unknown names or outputs, observations of the wrong shape
        or not finite, a bad noise, prior or count, or a start where the log
        density is -inf (the model fails there).
    - `ImportError`: when blackjax is not installed (`pip install "ebm-jax[bayes]"`).
    """
    try:
        import blackjax  # noqa: F401
    except ImportError as error:  # pragma: no cover - the extra is in `test`
        raise ImportError(
            'ebm.posterior needs blackjax: pip install "ebm-jax[bayes]".'
        ) from error
    container = type(params)
    if not isinstance(priors, Mapping) or not priors:
        raise ValueError(
            f"`priors` must be a dict {{name: prior}} of one or more parameters, got "
            f"{priors!r}."
        )
    names = check_names(tuple(priors), "priors", container)
    for name, prior in priors.items():
        if not isinstance(prior, AbstractPrior):
            raise ValueError(
                f"`priors[{name!r}]` must be an ebm prior (ebm.Normal, ebm.LogNormal, "
                f"ebm.Uniform, ebm.LogDensity), got {prior!r}."
            )
    for count, minimum in (
        ("num_chains", 1),
        ("num_warmup", 1),
        ("num_samples", 2),
        ("max_doublings", 1),
    ):
        check_count(count, locals()[count], minimum)
    if not 0 < target_acceptance < 1:
        raise ValueError(
            f"`target_acceptance` must be in (0, 1), got {target_acceptance!r}."
        )
    model = resolve_model(model, grid)
    grid = model.grid
    observed = _check_observed(observed, through, times, grid)
    noise_given, noise_priors = _check_noise(noise, observed)
    derived = _check_derived(derived)

    reference = None
    if through == "equilibrium":
        years, times = None, None
        reference = equilibrium(params, model=model, start=start, throw=False)
        if not bool(reference.converged):
            raise ValueError(
                "The equilibrium at the given `params` (from `start`) did not "
                f"converge ({reference.result}); start the chains where it does."
            )
        start_T = reference.T
        regime = _regime(reference.ice_edge)
    else:
        years, times = float(times[-1]), jnp.asarray(times)
        start_T = initial_profile(start, params, grid)
        regime = jnp.asarray(False)
    supports = tuple(
        priors[name].coordinate(container.declaration(name)) for name in names
    )
    noise_supports = tuple(
        prior.coordinate(
            Parameter(
                f"noise_{o}", 1.0, "1", f"noise of {o}", lower=0.0, lower_open=True
            )
        )
        for o, prior in noise_priors.items()
    )
    log_posterior = LogPosterior(
        params=params,
        model=model,
        names=(*names, *(f"noise_{o}" for o in noise_priors)),
        parameters=names,
        supports=supports + noise_supports,
        priors=(*(priors[name] for name in names), *noise_priors.values()),
        observed=observed,
        noise=noise_given,
        through=through,
        times=times,
        years=years,
        T0=T0,
        start=start_T,
        regime=regime,
        adjoint=adjoint,
    )

    start_values = {name: getattr(params, name) for name in names}
    for output, prior in noise_priors.items():
        start_values[f"noise_{output}"] = _typical(prior)
    start_flat = _flatten(log_posterior, log_posterior.coordinates(start_values))
    if not np.isfinite(float(_initial_log_density(log_posterior, start_flat))):
        described = ", ".join(f"{n}={np.asarray(v)}" for n, v in start_values.items())
        raise ValueError(
            f"The log density is -inf at the given `params` ({described}): the "
            "model fails there or lands on another branch. Give parameters that "
            "fit the observations."
        )
    centre, scale, _, usable = _precondition(log_posterior, start_flat)
    if not bool(usable):
        warnings.warn(
            "The log posterior's curvature at its mode is not negative definite; "
            "sampling on the unscaled coordinates, where the step size may have to "
            "be small. Check the priors and the observations.",
            stacklevel=2,
        )
    target = _Standardized(log_posterior, centre, scale)
    key = jax.random.key(seed)
    key, jitter_key, warmup_key, sample_key = jax.random.split(key, 4)
    positions = init_jitter * jax.random.normal(jitter_key, (num_chains, centre.size))
    initial = np.asarray(_chain_log_densities(target, positions))
    if not np.all(np.isfinite(initial)):
        chain = int(np.argmin(np.isfinite(initial)))
        values = log_posterior.values(target.coordinates(positions[chain]))
        described = ", ".join(f"{n}={np.asarray(v)}" for n, v in values.items())
        raise ValueError(
            f"The log density is -inf where chain {chain} starts ({described}): the "
            "model fails there or lands on another branch than the given `params`'. "
            "Start at parameters that fit the observations, or lower `init_jitter`."
        )

    with HostProgress(progress, num_warmup + num_samples, "step") as meter:
        states, parameters, failed_warmup = _warmup(
            target,
            jax.random.split(warmup_key, num_chains),
            positions,
            num_warmup,
            target_acceptance,
            max_doublings,
        )
        failed_warmup = int(jnp.sum(failed_warmup))
        meter.step(num_warmup, f"warm-up done, {failed_warmup} failed proposals")
        chunk = num_samples if not progress else max(1, math.ceil(num_samples / 20))
        collected = []
        done = 0
        chain_keys = jax.random.split(sample_key, num_chains)
        while done < num_samples:
            chain_keys, states, record = _sample(
                target, chain_keys, states, parameters, chunk, max_doublings
            )
            collected.append(record)
            done += chunk
            meter.step(
                num_warmup + min(done, num_samples), f"{min(done, num_samples)} draws"
            )
        jax.block_until_ready(collected)
    record = jax.tree.map(
        lambda *chunks: jnp.concatenate(chunks, axis=1)[:, :num_samples], *collected
    )
    standardized, log_density, divergent, failed, acceptance, steps = record
    coordinates = jax.vmap(jax.vmap(target.coordinates))(standardized)
    draws = jax.vmap(jax.vmap(log_posterior.values))(coordinates)
    derived_values = _derived(
        derived, draws, log_posterior, model, params, start, reference
    )
    return Posterior(
        names=log_posterior.names,
        draws=draws,
        derived=derived_values,
        log_density=log_density,
        rhat={name: split_rhat(value) for name, value in draws.items()}
        | {name: split_rhat(value) for name, value in derived_values.items()},
        ess={name: effective_sample_size(value) for name, value in draws.items()}
        | {
            name: effective_sample_size(value) for name, value in derived_values.items()
        },
        divergences=int(jnp.sum(divergent)),
        failed=int(jnp.sum(failed)),
        failed_warmup=failed_warmup,
        acceptance_rate=float(jnp.mean(acceptance)),
        num_gradients=int(jnp.sum(steps)),
        step_size=parameters["step_size"],
        inverse_mass_matrix=jnp.einsum(
            "ij,cjk,lk->cil", scale, parameters["inverse_mass_matrix"], scale
        ),
        log_posterior=log_posterior,
    )


def split_rhat(draws) -> Array:
    """Split R-hat of `(chains, draws, ...)` draws: each chain's halves as two
    chains, then Gelman and Rubin's potential scale reduction (blackjax's)."""
    from blackjax.diagnostics import potential_scale_reduction

    draws = jnp.asarray(draws)
    half = draws.shape[1] // 2
    halves = jnp.concatenate([draws[:, :half], draws[:, half : 2 * half]], axis=0)
    with jax.numpy_dtype_promotion("standard"):
        return potential_scale_reduction(halves)


def effective_sample_size(draws) -> Array:
    """Effective sample size of `(chains, draws, ...)` draws (blackjax's)."""
    from blackjax.diagnostics import effective_sample_size as ess

    with jax.numpy_dtype_promotion("standard"):
        return ess(jnp.asarray(draws))


def _typical(prior: AbstractPrior) -> float:
    """A starting value for a noise prior."""
    for attribute in ("median", "mean"):
        if hasattr(prior, attribute):
            return float(getattr(prior, attribute))
    lower, upper = prior.support()
    if lower is not None and upper is not None:
        return 0.5 * (lower + upper)
    return 1.0


@eqx.filter_jit
def _initial_log_density(log_posterior: LogPosterior, flat):
    """The log density at the flat coordinates `flat`."""
    return log_posterior(_unflatten(log_posterior, flat))


@eqx.filter_jit
def _chain_log_densities(target: _Standardized, positions):
    """The log density at each chain's standardised start, `(chains,)`."""
    return jax.vmap(target)(positions)


@eqx.filter_jit
def _warmup(log_posterior, keys, positions, num_warmup, target_acceptance, doublings):
    import blackjax

    def one(key, position):
        adaptation = blackjax.window_adaptation(
            blackjax.nuts,
            log_posterior,
            is_mass_matrix_diagonal=False,
            target_acceptance_rate=target_acceptance,
            max_num_doublings=doublings,
            adaptation_info_fn=_failed_info,
        )
        (state, parameters), failed = adaptation.run(
            key, position, num_steps=num_warmup
        )
        return state, parameters, failed

    with jax.numpy_dtype_promotion("standard"):
        return jax.vmap(one)(keys, positions)


def _failed_info(state, info, adaptation_state):
    """Keep only whether each warm-up step failed (blackjax keeps every state by
    default)."""
    del state, adaptation_state
    return _failed(info)


@eqx.filter_jit
def _sample(log_posterior, keys, states, parameters, num_steps, doublings):
    import blackjax

    def one(key, state, parameters):
        kernel = blackjax.nuts(
            log_posterior,
            step_size=parameters["step_size"],
            inverse_mass_matrix=parameters["inverse_mass_matrix"],
            max_num_doublings=doublings,
        )

        def step(state, key):
            state, info = kernel.step(key, state)
            return state, (
                state.position,
                state.logdensity,
                info.is_divergent,
                _failed(info),
                info.acceptance_rate,
                info.num_integration_steps,
            )

        key, scan_key = jax.random.split(key)
        state, record = jax.lax.scan(step, state, jax.random.split(scan_key, num_steps))
        return key, state, record

    with jax.numpy_dtype_promotion("standard"):
        return jax.vmap(one)(keys, states, parameters)


def _derived(derived, draws, log_posterior, model, params, start, reference):
    if not derived:
        return {}
    functions = {}
    for name, fn in derived.items():
        if fn == "ecs":
            fn = ClimateSensitivity(model, log_posterior.start)
        elif fn == "snowball_S0":
            guess = fold(params, "S0", stop=params.S0 - 400.0, model=model, start=start)
            fn = SnowballFold(model, guess)
        functions[name] = fn
    flat = {
        name: value.reshape(-1, *value.shape[2:])
        for name, value in draws.items()
        if name in log_posterior.parameters
    }
    shape = next(iter(draws.values())).shape[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return {
            name: _map_draws(fn, log_posterior.params, flat, model.grid.n_lat).reshape(
                shape
            )
            for name, fn in functions.items()
        }


MAP_BATCH_CELLS = 8192
"""Draws times cells per vmapped batch of the derived quantities (`_map_draws`)."""


@eqx.filter_jit
def _map_draws(fn, params, flat, n_lat: int):
    # One vmap over thousands of draws of a chain of equilibria (as "ecs" is) can
    # wedge XLA's CPU runtime: the program idles, never returning. Batches of about
    # `MAP_BATCH_CELLS` draws x cells, one after the other, do not.
    # The draws lie in the parameters' ranges (the priors' supports do).
    with params_checked():
        return jax.lax.map(
            lambda values: fn(with_values(params, values)),
            flat,
            batch_size=max(1, MAP_BATCH_CELLS // n_lat),
        )


def _check_derived(derived) -> dict:
    if isinstance(derived, str):
        derived = (derived,)
    if isinstance(derived, Mapping):
        result = dict(derived)
    else:
        result = {name: name for name in derived}
    for name, fn in result.items():
        if isinstance(fn, str) and fn not in DERIVED:
            raise ValueError(
                f"`derived` names {fn!r}; known names are {DERIVED}, or give "
                "`{name: fn}` with `fn(params) -> scalar`."
            )
        if not isinstance(fn, str) and not callable(fn):
            raise ValueError(f"`derived[{name!r}]` must be callable, got {fn!r}.")
    return result


def _check_observed(observed, through, times, grid) -> dict[str, Array]:
    if through not in ("equilibrium", "trajectory"):
        raise ValueError(
            f"`through` must be 'equilibrium' or 'trajectory', got {through!r}."
        )
    if not isinstance(observed, Mapping):
        observed = {"T": observed}
    prefix: tuple[int, ...] = ()
    if through == "trajectory":
        if times is None:
            raise ValueError("through='trajectory' needs `times` (years).")
        times = np.asarray(times, float)
        if times.ndim != 1 or np.any(times <= 0) or np.any(np.diff(times) <= 0):
            raise ValueError(
                f"`times` must be increasing and positive (years), got {times}."
            )
        prefix = (len(times),)
    shapes = {
        "T": (grid.n_lat,),
        "global_mean": (),
        "ice_edge": (),
        "ice_edge_south": (),
        "heat_transport": (grid.n_lat + 1,),
    }
    checked = {}
    for output, value in observed.items():
        if output not in OBSERVABLES:
            raise ValueError(
                f"`observed` has {output!r}; the outputs that can be observed are "
                f"{OBSERVABLES}."
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


def _check_noise(noise, observed) -> tuple[dict, dict]:
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
