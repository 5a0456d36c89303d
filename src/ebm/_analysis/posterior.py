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
from jaxtyping import Array

from .._checks import check_count
from .._model.declarations import Parameter
from .._model.parameters import with_values
from .._model.protocol import AbstractModel, as_model_state
from .._progress import HostProgress
from .._results import raise_if_failed
from .._steady.equilibrium import equilibrium
from .._zonal.grid import Grid
from .._zonal.params import Params
from .._zonal.start import model_grid
from .derived import DERIVED_ATTRS, SCENARIO_ATTRS, check_derived, derive
from .forward import ForwardProblem, check_names, run_start
from .log_posterior import (
    LogPosterior,
    check_noise,
    check_observed,
    check_time_structure,
    finite_adjoint,
    is_snowball,
    observe,
)
from .nuts import (
    Standardized,
    chain_log_densities,
    effective_sample_size,
    find_mode,
    flatten,
    initial_log_density,
    precondition,
    sample,
    split_rhat,
    warmup,
)
from .priors import AbstractPrior, allowed_support
from .sensitivity import hessian, resolve


RHAT_LIMIT = 1.01
"""The largest split R-hat of chains that have mixed (Vehtari et al. 2021)."""

ESS_PER_CHAIN = 100
"""The smallest bulk effective sample size per chain of chains that have mixed
(Vehtari et al. 2021: 400 over four chains)."""


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
        if name in self.derived:
            return self.derived[name]
        raise KeyError(
            f"{name!r} is not among the posterior's parameters "
            f"{tuple(self.draws)} nor its derived quantities {tuple(self.derived)}."
        )

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
        """Posterior quantiles `q` (a number or a sequence, in [0, 1]).

        **Raises:**

        - `ValueError`: for a `q` outside [0, 1].
        """
        q = jnp.asarray(q, dtype=float)
        if not bool(jnp.all((q >= 0) & (q <= 1))):
            raise ValueError(f"`q` must be in [0, 1], got {np.asarray(q)}.")
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
        problem = self.mixing_problem()
        if problem is not None:
            lines.append(f"WARNING: {problem}")
        return "\n".join(lines)

    def mixing_problem(self) -> str | None:
        """Why the chains cannot be trusted yet, or `None`: a split R-hat above
        `RHAT_LIMIT` or a bulk effective sample size below `ESS_PER_CHAIN` per
        chain for any sampled parameter (Vehtari et al. 2021's thresholds), or any
        divergent transition."""
        reasons = []
        rhat = max(float(self.rhat[name]) for name in self.names)
        ess = min(float(self.ess[name]) for name in self.names)
        if not rhat <= RHAT_LIMIT:
            reasons.append(f"R-hat {rhat:.3g} > {RHAT_LIMIT}")
        if not ess >= ESS_PER_CHAIN * self.num_chains:
            reasons.append(
                f"effective sample size {ess:.0f} < {ESS_PER_CHAIN} per chain "
                f"({ESS_PER_CHAIN * self.num_chains})"
            )
        if int(self.divergences) > 0:
            reasons.append(f"{int(self.divergences)} divergent transitions")
        if not reasons:
            return None
        return (
            "the chains have not mixed (" + "; ".join(reasons) + "): their quantiles "
            "are not yet the posterior's. Run longer chains (num_warmup, "
            "num_samples) or more of them."
        )

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
        mode, result = find_mode(log_posterior, start, max_steps)
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
                o: observe(log_posterior.model, params, state.T, o)
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
        model = self.log_posterior.model
        grid = model_grid(model)
        known = DERIVED_ATTRS if model.forcing_parameter else SCENARIO_ATTRS
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
                attrs = known.get(name, {})
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
    model: AbstractModel | None = None,
    start="present",
    adjoint="recursive",
    solver=None,
    num_chains: int = 4,
    num_warmup: int = 500,
    num_samples: int = 1000,
    seed: int = 0,
    target_acceptance: float = 0.8,
    max_doublings: int = 10,
    init_jitter: float = 0.1,
    derived: Sequence[str] | Mapping[str, Callable] = ("ecs",),
    noise_correlation=0.0,
    anomaly_reference=None,
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
    - `solver`: through a trajectory, the run's solver, as for `ebm.integrate`
        (`None`: the model's default); `"exact"` solves a global layer model under
        a piecewise-linear forcing exactly, far faster than a diffrax solver.
    - `grid`, `model`, `start`: as for `ebm.equilibrium`. For a model of the
        protocol other than the zonal one (`params` its `model.Params`), the
        outputs are `"T"` (its surface temperature) and `"global_mean"`, a run
        starts at its forcing's start and `times` are on the forcing's clock
        (calendar years for an `ebm.ForcingSeries`).
    - `num_chains`, `num_warmup`, `num_samples`: chains (run at once, by
        `jax.vmap`), warm-up (adaptation) steps and kept draws per chain.
    - `seed`: the random seed.
    - `target_acceptance`, `max_doublings`: NUTS's target acceptance rate during
        adaptation and its most trajectory doublings (at most `2**max_doublings`
        gradients per draw).
    - `derived`: quantities computed for every draw: names (`"ecs"`, the
        equilibrium climate sensitivity in K for 3.7 W m-2; `"snowball_S0"`, the
        solar constant of the snowball fold in W m-2, refined by `ebm.fold` from
        the fold at `params`; for another model of the protocol `"ecs"` and
        `"tcr"`, its `ebm.ecs` and `ebm.tcr`), or `{name: fn}` with
        `fn(params) -> scalar`.
    - `noise_correlation`: through a trajectory, the lag-1 autocorrelation
        $\rho$ of the noise from one observed time to the next, in (-1, 1): the
        residuals are then an AR(1) process whose innovations have the standard
        deviation `noise` (see `LogPosterior.log_likelihood`). Internal
        variability makes annual global-mean temperatures' departures from the
        forced response persist from year to year. Default 0 (independent noise).
    - `anomaly_reference`: through a trajectory, `(first, last)` times: the
        observations are anomalies from their mean over those times (e.g. the
        1850-1900 of observed warming), and the simulated outputs are taken the
        same way, from their own mean at the observed times within `[first,
        last]`. Default `None`: compared as simulated.
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
    params, model = resolve(params, model, grid)
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
    t0 = run_start(model)
    observed = check_observed(
        observed, through, times, model.observable_shapes(params, t0), t0
    )
    noise_given, noise_priors = check_noise(noise, observed)
    derived = check_derived(derived, model)
    correlation, reference_mask = check_time_structure(
        noise_correlation, anomaly_reference, through, times
    )
    if solver is not None and through != "trajectory":
        raise ValueError(
            f"`solver` is the run's: give it with through='trajectory' only, got "
            f"solver={solver!r} with through={through!r}."
        )

    reference = None
    if through == "equilibrium":
        years, times = None, None
        reference = equilibrium(params, model=model, start=start, throw=False)
        if not bool(reference.converged):
            raise ValueError(
                "The equilibrium at the given `params` (from `start`) did not "
                f"converge ({reference.result}); start the chains where it does."
            )
        # The branch: the zonal equilibrium's (the surface's, over a deep ocean).
        surface = getattr(reference, "surface", reference)
        start_T = as_model_state(model, params, reference.state)
        regime = (
            jnp.asarray(False) if surface is None else is_snowball(surface.ice_edge)
        )
    else:
        years, times = float(times[-1]) - t0, jnp.asarray(times)
        regime = jnp.asarray(False)
    supports = tuple(
        allowed_support(name, priors[name], container.declaration(name))[0]
        for name in names
    )
    noise_supports = tuple(
        prior.coordinate(
            Parameter(
                f"noise_{o}", 1.0, "1", f"noise of {o}", lower=0.0, lower_open=True
            )
        )
        for o, prior in noise_priors.items()
    )
    if through == "equilibrium":
        problem = ForwardProblem(
            model,
            through,
            start=start_T,
            equilibrium_adjoint=finite_adjoint(model),
        )
    else:
        problem = ForwardProblem(
            model, through, years=years, times=times, T0=T0, adjoint=adjoint,
            solver=solver,
        )  # fmt: skip
    log_posterior = LogPosterior(
        params=params,
        names=(*names, *(f"noise_{o}" for o in noise_priors)),
        parameters=names,
        supports=supports + noise_supports,
        priors=(*(priors[name] for name in names), *noise_priors.values()),
        observed=observed,
        noise=noise_given,
        problem=problem,
        regime=regime,
        correlation=correlation,
        reference=reference_mask,
    )

    start_values = {name: getattr(params, name) for name in names}
    for output, prior in noise_priors.items():
        start_values[f"noise_{output}"] = _typical(prior)
    start_flat = flatten(log_posterior, log_posterior.coordinates(start_values))
    if not np.isfinite(float(initial_log_density(log_posterior, start_flat))):
        described = ", ".join(f"{n}={np.asarray(v)}" for n, v in start_values.items())
        raise ValueError(
            f"The log density is -inf at the given `params` ({described}): the "
            "model fails there or lands on another branch. Give parameters that "
            "fit the observations."
        )
    centre, scale, _, usable = precondition(log_posterior, start_flat)
    if not bool(usable):
        warnings.warn(
            "The log posterior's curvature at its mode is not negative definite; "
            "sampling on the unscaled coordinates, where the step size may have to "
            "be small. Check the priors and the observations.",
            stacklevel=2,
        )
    target = Standardized(log_posterior, centre, scale)
    key = jax.random.key(seed)
    key, jitter_key, warmup_key, sample_key = jax.random.split(key, 4)
    positions = init_jitter * jax.random.normal(jitter_key, (num_chains, centre.size))
    initial = np.asarray(chain_log_densities(target, positions))
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
        states, parameters, failed_warmup = warmup(
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
            chain_keys, states, record = sample(
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
    derived_values = derive(
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


def _typical(prior: AbstractPrior) -> float:
    """A starting value for a noise prior."""
    for attribute in ("median", "mean"):
        if hasattr(prior, attribute):
            return float(getattr(prior, attribute))
    lower, upper = prior.support()
    if lower is not None and upper is not None:
        return 0.5 * (lower + upper)
    return 1.0
