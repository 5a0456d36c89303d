r"""Prior ensembles and observational constraints, FaIR's way: sample a prior of
many members, run every member (`ebm.ensemble`, in blocks), and weight each by how
well it matches observations.

`sample_prior` draws members from a prior per parameter, each cut to the
parameter's allowed range, by Latin hypercube sampling (each parameter's range cut
into as many strata of equal probability as there are members, one draw in each,
the strata of the parameters paired at random) or independently at random: the
draw is the prior's quantile function at a uniform number $u$ between the
distribution function at the range's ends.

`constrain` weights the members by the product of a likelihood per constrained
output, $w_i \propto \prod_c p_c(y_{c,i})$, with each $p_c$ one of the priors'
densities (`ebm.Normal(observed, std)` for an observation with its uncertainty,
`ebm.Uniform(lower, upper)` for a hard range): importance weights of the
constrained (posterior) distribution against the prior. It also draws a rejection
sample, member $i$ kept with probability $w_i / \max_j w_j$, as FaIR's
calibration keeps its constrained members. The weights' effective sample size
$(\sum w)^2 / \sum w^2$ says how many independent draws of the posterior the
weighted ensemble is worth.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .._model.parameters import AbstractParams
from .ensemble import sweep
from .priors import AbstractPrior, Uniform, allowed_support


METHODS = ("latin", "random")


def sample_prior(
    priors: dict[str, AbstractPrior],
    params: AbstractParams,
    members: int,
    *,
    method: str = "latin",
    seed: int = 0,
) -> AbstractParams:
    """`members` parameter sets drawn from `priors`, as a batch for `ebm.ensemble`.

    **Arguments:**

    - `priors`: field name -> `ebm.Normal`, `ebm.LogNormal` or `ebm.Uniform`, each
        cut to the parameter's allowed range (a `Uniform` without ends takes the
        range's).
    - `params`: the fields that are not sampled (`model.Params()` for a model
        other than the zonal one).
    - `members`: how many members (an integer >= 1).
    - `method`: `"latin"` (default: Latin hypercube) or `"random"`.
    - `seed`: the random seed (NumPy's generator).

    **Returns:**

    The parameters with every field of shape `(members,)` (as `ebm.sweep` makes).

    **Raises:**

    - `ValueError`: for an unknown field, a profile parameter, a prior with no
        probability inside the parameter's allowed range, `members` not an integer
        >= 1, or an unknown `method`.
    - `TypeError`: for a prior that is not an `ebm` prior, or `params` that are
        not parameters.
    """
    if not isinstance(params, AbstractParams):
        raise TypeError(
            "`params` must be the parameters that are not sampled (ebm.Params or "
            f"model.Params()), got {type(params).__name__}."
        )
    if isinstance(members, bool) or not isinstance(members, int) or members < 1:
        raise ValueError(f"`members` must be an integer >= 1, got {members!r}.")
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    if not priors:
        raise ValueError("Give a prior, e.g. {'gamma': ebm.Uniform(0.5, 1.0)}.")
    container = type(params)
    rng = np.random.default_rng(seed)
    values = {}
    for name, prior in priors.items():
        if name not in container.field_names():
            raise ValueError(
                f"`{name}` is not a parameter of {container.__name__}; its parameters "
                f"are {container.field_names()}."
            )
        if not isinstance(prior, AbstractPrior):
            raise TypeError(
                f"The prior of `{name}` must be an ebm prior (ebm.Normal, "
                f"ebm.LogNormal, ebm.Uniform), got {type(prior).__name__}."
            )
        declaration = container.declaration(name)
        if declaration.ndim:
            raise ValueError(
                f"`{name}` is a profile; sample_prior draws scalar parameters."
            )
        if isinstance(prior, Uniform):
            support = prior.coordinate(declaration)
            prior = Uniform(support.lower, support.upper)
        _, low, high = allowed_support(name, prior, declaration)
        if method == "latin":
            u = (rng.permutation(members) + rng.random(members)) / members
        else:
            u = rng.random(members)
        # Strictly inside, where an end is open.
        u = np.clip(low + (high - low) * u, np.nextafter(low, 1), np.nextafter(high, 0))
        values[name] = np.asarray(prior.quantile(jnp.asarray(u)))
    return sweep(params, **values)


class Constrained(eqx.Module):
    """A prior ensemble weighted by observational constraints (see
    `ebm.constrain`).

    **Attributes:**

    - `weights`: each member's weight, summing to one (0 for a member that failed
        or that a hard range excludes).
    - `accepted`: the rejection sample: whether each member is kept.
    - `effective_size`: $(\\sum w)^2 / \\sum w^2$, the weighted ensemble's worth in
        independent draws.
    - `failed`: how many members had a NaN output (weight 0).
    """

    weights: Float[Array, " members"]
    accepted: Bool[Array, " members"]
    effective_size: float
    failed: int

    @property
    def num_accepted(self) -> int:
        """How many members the rejection sample keeps."""
        return int(np.sum(np.asarray(self.accepted)))

    def quantile(self, values, q):
        """Weighted quantiles `q` (in [0, 1]) of `values`, one per member."""
        values = np.asarray(values, dtype=float)
        weights = np.asarray(self.weights)
        if values.shape != weights.shape:
            raise ValueError(
                f"`values` must have one value per member, shape {weights.shape}, "
                f"got {values.shape}."
            )
        keep = weights > 0
        order = np.argsort(values[keep])
        sorted_values, sorted_weights = values[keep][order], weights[keep][order]
        # The midpoints of each member's weight (the weighted "Hazen" rule).
        cumulative = np.cumsum(sorted_weights) - 0.5 * sorted_weights
        return np.interp(np.asarray(q, dtype=float), cumulative, sorted_values)

    def mean(self, values) -> float:
        """The weighted mean of `values`, one per member (NaN members weigh 0)."""
        values = np.asarray(values, dtype=float)
        weights = np.asarray(self.weights)
        return float(np.sum(np.where(weights > 0, values, 0.0) * weights))


def constrain(
    outputs: dict[str, Array],
    constraints: dict[str, AbstractPrior],
    *,
    seed: int = 0,
) -> Constrained:
    """Weight the members of a prior ensemble by observational constraints.

    **Arguments:**

    - `outputs`: output name -> one value per member (e.g. each member's simulated
        warming), all of one length.
    - `constraints`: output name -> its likelihood, an `ebm` prior's density:
        `ebm.Normal(observed, std)` for an observation and its uncertainty,
        `ebm.Uniform(lower, upper)` for a hard range (0 outside it),
        `ebm.LogNormal(median, sigma)`.
    - `seed`: the random seed of the rejection sample.

    **Returns:**

    An `ebm.Constrained`.

    **Raises:**

    - `ValueError`: for a constraint on an output not given, outputs that are not
        1-d arrays of one length, or when no member has a positive weight.
    - `TypeError`: for a constraint that is not an `ebm` prior.
    """
    if not constraints:
        raise ValueError("Give at least one constraint, e.g. {'warming': ...}.")
    lengths = {name: np.shape(value) for name, value in outputs.items()}
    if (
        any(len(shape) != 1 for shape in lengths.values())
        or len(set(lengths.values())) != 1
    ):
        raise ValueError(
            "`outputs` must be 1-d arrays of one length (one value per member), got "
            f"shapes {lengths}."
        )
    (shape,) = set(lengths.values())
    log_weights = np.zeros(shape)
    failed = np.zeros(shape, dtype=bool)
    for name, likelihood in constraints.items():
        if name not in outputs:
            raise ValueError(
                f"The constraint on `{name}` has no output of that name; the outputs "
                f"are {tuple(outputs)}."
            )
        if not isinstance(likelihood, AbstractPrior):
            raise TypeError(
                f"The constraint on `{name}` must be an ebm prior's density "
                f"(ebm.Normal(observed, std), ebm.Uniform(lower, upper)), got "
                f"{type(likelihood).__name__}."
            )
        value = np.asarray(outputs[name], dtype=float)
        failed |= ~np.isfinite(value)
        safe = np.where(np.isfinite(value), value, 0.0)
        log_weights = log_weights + np.asarray(likelihood.log_density(safe))
        lower, upper = likelihood.support()
        outside = np.zeros(shape, dtype=bool)
        if lower is not None:
            outside |= safe <= lower if lower == 0.0 else safe < lower
        if upper is not None:
            outside |= safe > upper
        log_weights = np.where(outside, -np.inf, log_weights)
    log_weights = np.where(failed, -np.inf, log_weights)
    if not np.any(np.isfinite(log_weights)):
        raise ValueError(
            f"No member of {shape[0]} satisfies the constraints ({failed.sum()} "
            "failed): widen the prior or the constraints."
        )
    relative = np.exp(log_weights - np.max(log_weights))  # the largest is 1
    accepted = np.random.default_rng(seed).random(shape) < relative
    weights = relative / np.sum(relative)
    return Constrained(
        weights=jnp.asarray(weights),
        accepted=jnp.asarray(accepted),
        effective_size=float(1.0 / np.sum(weights**2)),
        failed=int(failed.sum()),
    )
