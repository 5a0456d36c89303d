"""The choices a run makes, for `ebm.integrate` and `ebm.integrate_fixed`: its
solver (`SOLVERS`), adjoint (`ADJOINTS`, with checkpoints sized to the step budget),
step-size controller and step budget, sized by the model's own time scales
(`time_scales`: the relaxation `C / (dB)` and the diffusive time `C dlat^2 / (4D)`
at the start, from the Jacobian of the energy budget)."""

import math

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import known_value
from .._zonal.run import IMEX_SOLVERS
from .interpolating import InterpolatingAdjoint


ADJOINTS = {
    "recursive": diffrax.RecursiveCheckpointAdjoint,
    "direct": diffrax.DirectAdjoint,
    "forward": diffrax.ForwardMode,
    # The backward pass solves for the augmented state (T, adjoints, parameters), a
    # pytree, so it gets diffrax's dense stage solves rather than the tridiagonal ones.
    "backsolve": lambda: diffrax.BacksolveAdjoint(solver=diffrax.Kvaerno5()),
    "interpolating": InterpolatingAdjoint,
}


# The same for the other models of the protocol, in units of their fastest
# relaxation time bounded from the whole Jacobian by Gershgorin's theorem: the
# two-layer and three-layer models stay within 1e-7 of their exact gradient to 10
# of them, the zonal model over a deep ocean within 2e-8, and the latter is 1.8e-4
# off at 20 (benchmarks/backsolve_horizon.py).
BACKSOLVE_HORIZON_MODELS = 10.0


# Checkpoints per doubling of the step budget for the default recursive adjoint.
CHECKPOINTS_PER_DOUBLING = 4


def _with_checkpoints(adjoint, max_steps: int) -> diffrax.AbstractAdjoint:
    """The recursive adjoint with `4 log2(max_steps)` checkpoints where none are set.

    Left to itself, diffrax's online checkpointing (Stumm and Walther 2010) stores
    O(sqrt(max_steps)) states; a number that grows like the logarithm keeps the
    reverse pass's memory O(log(years)), at the cost of a few more recomputations
    of the forward run, which the backward steps' cost dominates here anyway.
    """
    if (
        isinstance(adjoint, diffrax.RecursiveCheckpointAdjoint)
        and adjoint.checkpoints is None
    ):
        checkpoints = CHECKPOINTS_PER_DOUBLING * max(1, math.ceil(math.log2(max_steps)))
        return diffrax.RecursiveCheckpointAdjoint(checkpoints=checkpoints)
    return adjoint


def resolve_adjoint(adjoint) -> diffrax.AbstractAdjoint:
    """A diffrax adjoint from a name in `ADJOINTS` or an instance."""
    if isinstance(adjoint, diffrax.AbstractAdjoint):
        return adjoint
    if isinstance(adjoint, str) and adjoint in ADJOINTS:
        return ADJOINTS[adjoint]()
    if (
        isinstance(adjoint, tuple)
        and len(adjoint) == 2
        and adjoint[0] == "recursive"
        and isinstance(adjoint[1], int)
        and adjoint[1] >= 1
    ):
        # The same spelling as integrate_fixed's checkpoint=("recursive", c).
        return diffrax.RecursiveCheckpointAdjoint(checkpoints=adjoint[1])
    raise ValueError(
        f"`adjoint` must be one of {tuple(ADJOINTS)}, ('recursive', checkpoints) "
        f"or a diffrax.AbstractAdjoint instance, got {adjoint!r}."
    )


def _check_positive(name: str, value) -> None:
    """`value` must be a positive, finite number (checked when it is not traced)."""
    if isinstance(value, bool) or isinstance(value, jax.core.Tracer):
        valid = not isinstance(value, bool)
    else:
        number = np.asarray(value)
        valid = (
            number.shape == ()
            and np.issubdtype(number.dtype, np.number)
            and bool(0 < number < np.inf)
        )
    if not valid:
        raise ValueError(
            f"`{name}` must be positive and finite (years), got {value!r}."
        )


def check_saved_times(saveat, t0, years) -> None:
    """Refuse saved times (`saveat.subs.ts`) that are not finite, increasing and
    within the run, from `t0` to `t0 + years` (years), where all three are known
    (traced ones are checked in the run: `saved_times_valid`).

    **Raises:**

    - `ValueError`: naming the run's span and the times given.
    """
    ts = None if saveat is None else saveat.subs.ts
    values = [known_value(x) for x in (ts, t0, years)]
    if ts is None or any(v is None for v in values):
        return
    ts, t0, years = (np.asarray(v, dtype=float) for v in values)
    t1 = t0 + years
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError(
            f"The saved times (`saveat.ts`) must be a 1-d array of times, years, "
            f"got shape {ts.shape}."
        )
    span = f"[{float(t0):g}, {float(t1):g}] (years)"
    # diffrax saves at a time within rounding of the run's end as at its end.
    slack = 1e-12 * max(abs(float(t0)), abs(float(t1)), 1.0)
    if (
        not np.all(np.isfinite(ts))
        or np.any(np.diff(ts) < 0)
        or ts[0] < t0 - slack
        or ts[-1] > t1 + slack
    ):
        raise ValueError(
            f"The saved times (`saveat.ts`) must be finite, increasing and within "
            f"the run {span}, got {np.array2string(ts, threshold=6)}."
        )


# How long a run whose traced length is not valid runs instead, years: briefly, to
# be reported by its result code (`run_arguments_result`).
SHORTEST_RUN = 1e-6


def run_arguments_result(years, t0, ts):
    """`RESULTS.successful`, or the code of the first argument of a run that is not
    valid (for traced arguments, which the host could not check): a length that is
    not positive and finite, a start that is not finite, saved times out of order or
    outside the run."""
    from .._results import RESULTS

    length_ok = jnp.isfinite(years) & (years > 0) & jnp.isfinite(t0)
    result = RESULTS.where(length_ok, RESULTS.successful, RESULTS.invalid_run_length)
    if ts is not None:
        ts = jnp.asarray(ts)
        t1 = t0 + years
        slack = 1e-12 * jnp.maximum(jnp.maximum(jnp.abs(t0), jnp.abs(t1)), 1.0)
        inside = (
            jnp.all(jnp.isfinite(ts))
            & jnp.all(jnp.diff(ts) >= 0)
            & (ts[0] >= t0 - slack)
            & (ts[-1] <= t1 + slack)
        )
        result = RESULTS.where(
            (result == RESULTS.successful) & ~inside,
            RESULTS.saved_times_outside_run,
            result,
        )
    return result


_FORWARD_MODE_HINT = (
    "adjoint={name!r} supports reverse mode (jax.grad, jax.vjp) only; for forward "
    "mode (jax.jvp, jax.jacfwd) use integrate(..., adjoint='forward') (O(1) memory) "
    "or adjoint='direct'."
)

_REVERSE_MODE_HINT = (
    "adjoint={name!r} supports forward mode (jax.jvp, jax.jacfwd) only; for reverse "
    "mode (jax.grad, jax.vjp) use integrate(..., adjoint='recursive') (the default) "
    "or adjoint='direct'."
)


def differentiation_hint(adjoint_name: str, error: Exception) -> str | None:
    """The named fix where JAX refused the differentiation mode for the adjoint
    (forward mode through a reverse-only adjoint, or reverse mode through
    `ForwardMode`'s loop), else `None`."""
    text = str(error)
    if isinstance(error, TypeError) and ("jvp" in text or "forward-mode" in text):
        return _FORWARD_MODE_HINT.format(name=adjoint_name)
    if isinstance(error, ValueError) and "Reverse-mode differentiation" in text:
        return _REVERSE_MODE_HINT.format(name=adjoint_name)
    return None


def solve_naming_the_mode(adjoint: str, solve, *args):
    """`solve(*args)`, where JAX's refusal of the differentiation mode for the
    adjoint named `adjoint` becomes a `ValueError` that names the adjoint to use
    (JAX differentiates a jitted call where it is made: here)."""
    try:
        return solve(*args)
    except (TypeError, ValueError) as error:
        hint = differentiation_hint(adjoint, error)
        if hint is None:
            raise
        raise ValueError(hint) from error


def adjoint_name(adjoint) -> str:
    """How an error names `adjoint`: its spelling, or its class."""
    return adjoint if isinstance(adjoint, str) else type(adjoint).__name__


# The protocol models' solvers by name: diffrax's, with their own stage solves (a
# model of the protocol gives its Jacobian as a `lineax` operator, not bands).
MODEL_SOLVERS = {"tsit5": diffrax.Tsit5, "kvaerno5": diffrax.Kvaerno5}


# A run this many times longer than the model's fastest relaxation time (or than
# its slowest, if shorter) is stiff for an explicit solver, whose steps its
# stability bounds by the fastest: the default solver is then implicit.
STIFFNESS_RATIO = 1e3


def resolve_model_solver(solver, model, scales, years) -> diffrax.AbstractSolver:
    """A diffrax solver for a model of the protocol, from `None` (the model's
    `default_solver()`, or `Kvaerno5` where the model's own is explicit and the run
    stiff: `scales` the model's known `(fastest, slowest)` time scales or `None`), a
    name in `MODEL_SOLVERS`, or a solver itself.

    **Raises:**

    - `ValueError`: for an unknown name, or an implicit-explicit solver (the
        zonal model's split of transport from the rest, which the model lacks).
    """
    name = type(model).__name__
    if isinstance(solver, IMEX_SOLVERS) or (
        isinstance(solver, str) and solver == "kencarp5"
    ):
        raise ValueError(
            f"solver={solver!r} splits the zonal model's transport (implicit) from "
            f"its local terms (explicit); {name} has no such split. Use one of "
            f"{tuple(MODEL_SOLVERS)} or, for a layer model, 'exact'."
        )
    if isinstance(solver, diffrax.AbstractSolver):
        return solver
    if isinstance(solver, str) and solver in MODEL_SOLVERS:
        return MODEL_SOLVERS[solver]()
    if solver is not None:
        raise ValueError(
            f"`solver` must be one of {(*MODEL_SOLVERS, 'exact')} ('exact' for a "
            "layer model under a piecewise-linear forcing) or a "
            f"diffrax.AbstractSolver instance, got {solver!r}."
        )
    solver = model.default_solver()
    known = None if scales is None else known_value(years)
    if known is not None and not isinstance(solver, diffrax.AbstractImplicitSolver):
        fastest, slowest = scales
        if min(float(known), float(slowest)) > STIFFNESS_RATIO * float(fastest):
            return diffrax.Kvaerno5()
    return solver


def _under_reverse_mode(values) -> bool:
    """Whether any leaf of `values` is being linearised (`jax.grad`, `jax.vjp`,
    `jax.linearize`), as far as the outermost tracer shows: JAX has no public test
    for it, so the tracer's class is read by name; should JAX rename it, nothing is
    detected and JAX's own error stands."""
    return any(
        type(leaf).__name__ == "LinearizeTracer" for leaf in jax.tree.leaves(values)
    )


def refuse_reverse_mode(adjoint, name: str, values) -> None:
    """Refuse `diffrax.ForwardMode` where `values` are being differentiated in
    reverse mode: its loop cannot be transposed, and JAX's error (raised after the
    entry point returns, where no hint can be added) names a while loop.

    **Raises:**

    - `ValueError`: with the adjoint to use.
    """
    if isinstance(adjoint, diffrax.ForwardMode) and _under_reverse_mode(values):
        raise ValueError(_REVERSE_MODE_HINT.format(name=name))
