r"""The walk along a branch: pseudo-arclength continuation (Keller 1977).

In the unknowns $y = (T, \mu)$ and the inner product $\langle\cdot,\cdot\rangle$ of
`problem.py`, each step from the point $y$ with unit tangent $t_{\rm prev}$

1. takes the tangent $t$ of the branch: the solution of the bordered system
    $\begin{pmatrix} J & F_\mu \\ \langle t_{\rm prev}, \cdot\rangle\end{pmatrix} t =
    \begin{pmatrix} 0 \\ 1\end{pmatrix}$, normalised; the system is regular at a fold,
    where $J$ is not, and the last row keeps the direction of travel;
2. predicts $y + h\,t$ and corrects with Newton's method (`optimistix.Newton`) on
    $F(y) = 0$, $\langle t, y - y_{\rm pred}\rangle = 0$;
3. accepts the point if the corrector converged, moved it by less than $h$ and the
    tangent turned by less than `max_turn`, adapting $h$ to keep the turn near
    `target_turn`; otherwise halves $h$ and tries again.

A point past a bound of the parameter is replaced by the branch's point on the
bound, and the walk ends there. The walk is one `jax.lax.while_loop` over arrays of
`max_points` slots, so it compiles once whatever the number of points it takes.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int, PyTree

from ..._checks import check_count
from ..._custom_types import Scalar
from ..._results import RESULTS
from .problem import Problem


# Codes of the walk's `status`.
RUNNING, LEFT_BOUNDS, STEP_TOO_SMALL, MAX_POINTS, FOLD, NO_START = range(6)


class WalkSettings(eqx.Module):
    """The walk's settings, checked before any work (see `ebm.continuation`)."""

    step: float
    min_step: float
    max_step: float
    target_turn: float
    max_turn: float
    corrector: optx.AbstractRootFinder
    corrector_steps: int
    max_points: int

    def __check_init__(self):
        for name in ("step", "min_step", "max_step", "target_turn", "max_turn"):
            value = getattr(self, name)
            if isinstance(value, jax.core.Tracer):
                raise ValueError(
                    f"`{name}` must be a Python number (a setting of the walk, fixed "
                    "when it compiles), got a traced value."
                )
            if (
                isinstance(value, bool)
                or np.shape(value) != ()
                or not np.issubdtype(np.asarray(value).dtype, np.number)
                or not 0 < float(value) < np.inf
            ):
                raise ValueError(
                    f"`{name}` must be a positive, finite number, got {value!r}."
                )
        if not self.min_step <= self.max_step:
            raise ValueError(
                f"`min_step` must be <= `max_step`, got min_step={self.min_step} and "
                f"max_step={self.max_step}."
            )
        if not self.min_step <= self.step:
            raise ValueError(
                f"`step` must be >= `min_step`, got step={self.step} and "
                f"min_step={self.min_step}."
            )
        if not self.max_turn <= np.pi:
            raise ValueError(
                f"`max_turn` must be in (0, pi] radians, got {self.max_turn}."
            )
        if not self.target_turn <= self.max_turn:
            raise ValueError(
                f"`target_turn` must be <= `max_turn`, got target_turn="
                f"{self.target_turn} and max_turn={self.max_turn}."
            )
        check_count("corrector_steps", self.corrector_steps, 1)
        # The start and at least one step.
        check_count("max_points", self.max_points, 2)


class Walk(eqx.Module):
    """The points walked, in `max_points` slots of which the first `count` are used."""

    y: Float[Array, "points n+1"]
    tangent: Float[Array, "points n+1"]
    leading_eigenvalue: Float[Array, " points"]
    step: Float[Array, " points"]
    count: Int[Array, ""]
    status: Int[Array, ""]
    start_result: RESULTS

    def result(self, stop_at_fold: bool) -> RESULTS:
        """How the walk ended, as a result code: successful when it reached what it
        was walking to (a bound, or with `stop_at_fold` a fold); the starting
        equilibrium's failure when there was no start."""
        if stop_at_fold:
            ended = RESULTS.where(
                self.status == FOLD, RESULTS.successful, RESULTS.no_fold
            )
        else:
            ended = RESULTS.where(
                self.status == LEFT_BOUNDS,
                RESULTS.successful,
                RESULTS.max_steps_reached,
            )
        ended = RESULTS.where(
            self.status == STEP_TOO_SMALL, RESULTS.step_too_small, ended
        )
        return RESULTS.where(self.status == NO_START, self.start_result, ended)


class _WalkState(eqx.Module):
    walk: Walk
    y: Float[Array, " n+1"]
    t: Float[Array, " n+1"]
    h: Scalar
    meter_state: PyTree


def _start(
    problem: Problem,
    y0,
    direction,
    settings: WalkSettings,
    start_result: RESULTS,
    meter_state,
) -> _WalkState:
    """The walk's slots, holding the start `y0` and its tangent along `direction`;
    ended at once where the starting equilibrium was not found."""
    start_tangent = problem.tangent(
        y0, jnp.zeros_like(y0).at[-1].set(jnp.asarray(direction, y0.dtype))
    )
    n_plus_1 = y0.shape[0]
    walk = Walk(
        y=jnp.zeros((settings.max_points, n_plus_1), y0.dtype).at[0].set(y0),
        tangent=jnp.zeros((settings.max_points, n_plus_1), y0.dtype)
        .at[0]
        .set(start_tangent),
        leading_eigenvalue=jnp.full(settings.max_points, jnp.nan, y0.dtype)
        .at[0]
        .set(problem.leading_eigenvalue(y0)),
        step=jnp.zeros(settings.max_points, y0.dtype),
        count=jnp.array(1),
        status=jnp.where(start_result == RESULTS.successful, RUNNING, NO_START),
        start_result=start_result,
    )
    step = jnp.asarray(settings.step, y0.dtype)
    return _WalkState(walk, y0, start_tangent, step, meter_state)


def _predict_and_correct(problem: Problem, settings: WalkSettings, y, t, h):
    """Steps 1 and 2: the corrected point after a step `h` along `t`, its tangent,
    the angle the tangent turned, and whether the point is acceptable."""
    prediction = y + h * t
    row = problem.metric(t)
    new_y, converged = problem.correct(
        prediction,
        row,
        row @ prediction,
        settings.corrector,
        settings.corrector_steps,
    )
    new_t = problem.tangent(new_y, t)
    turn = jnp.arccos(jnp.clip(row @ new_t, -1.0, 1.0))
    # A corrector that moved further than the step has left the branch for
    # another piece of it (across a feature shorter than the step, whose tangent
    # may be parallel to this one): the step is halved instead.
    moved = problem.norm(new_y - prediction)
    accept = converged & (turn <= settings.max_turn) & (moved <= h)
    return new_y, new_t, turn, accept


def _stop_at_bound(
    problem: Problem, settings: WalkSettings, mu_bounds, y, new_y, new_t, accept
):
    """A point past a bound replaced by the branch's point on the bound, where the
    walk ends: the point, its tangent, whether it is accepted (the point on the
    bound must converge too) and whether the walk leaves the bounds there."""
    mu_low, mu_high = mu_bounds
    mu = new_y[-1]
    outside = (mu < mu_low) | (mu > mu_high)

    def onto_bound():
        mu_bound = jnp.where(mu < mu_low, mu_low, mu_high)
        fraction = (mu_bound - y[-1]) / jnp.where(mu == y[-1], 1.0, mu - y[-1])
        on_bound, bound_converged = problem.correct(
            y + fraction * (new_y - y),
            jnp.zeros_like(y).at[-1].set(1.0),
            mu_bound,
            settings.corrector,
            settings.corrector_steps,
        )
        return on_bound, problem.tangent(on_bound, new_t), bound_converged

    on_bound, bound_tangent, bound_converged = jax.lax.cond(
        accept & outside, onto_bound, lambda: (new_y, new_t, jnp.array(True))
    )
    leave = accept & outside & bound_converged
    new_y = jnp.where(leave, on_bound, new_y)
    new_t = jnp.where(leave, bound_tangent, new_t)
    accept = accept & (~outside | bound_converged)
    return new_y, new_t, accept, leave


def _store(problem: Problem, walk: Walk, y, new_y, new_t, accept) -> Walk:
    """`walk` with the point `new_y` appended if it was accepted."""
    index = walk.count
    stored = Walk(
        y=walk.y.at[index].set(new_y),
        tangent=walk.tangent.at[index].set(new_t),
        leading_eigenvalue=walk.leading_eigenvalue.at[index].set(
            problem.leading_eigenvalue(new_y)
        ),
        step=walk.step.at[index].set(problem.norm(new_y - y)),
        count=walk.count + 1,
        status=walk.status,
        start_result=walk.start_result,
    )
    return jax.tree.map(lambda a, b: jnp.where(accept, a, b), stored, walk)


def _next_step(settings: WalkSettings, h, turn, accept) -> Scalar:
    """Step 3: the next step, grown or shrunk towards `target_turn` after an accepted
    point, halved after a rejected one."""
    growth = jnp.clip(settings.target_turn / jnp.maximum(turn, 1e-12), 0.5, 2.0)
    return jnp.where(
        accept, jnp.clip(h * growth, settings.min_step, settings.max_step), h / 2
    )


def _next_status(
    settings: WalkSettings,
    walk: Walk,
    accept: Bool[Array, ""],
    leave: Bool[Array, ""],
    folded: Bool[Array, ""],
    new_h: Scalar,
    stop_at_fold: bool,
) -> Int[Array, ""]:
    """Why the walk ends after this step (`RUNNING` if it goes on)."""
    status = jnp.where(accept & leave, LEFT_BOUNDS, RUNNING)
    if stop_at_fold:
        status = jnp.where(folded, FOLD, status)
    status = jnp.where(
        (status == RUNNING) & (walk.count >= settings.max_points),
        MAX_POINTS,
        status,
    )
    return jnp.where(~accept & (new_h < settings.min_step), STEP_TOO_SMALL, status)


def walk_branch(
    problem: Problem,
    y0,
    direction,
    bounds,
    settings: WalkSettings,
    stop_at_fold: bool,
    start_result: RESULTS,
    meter: diffrax.AbstractProgressMeter = diffrax.NoProgressMeter(),
) -> Walk:
    """Walk the branch from `y0` in `direction` (+1/-1 in mu) until it leaves
    `bounds` (or, with `stop_at_fold`, passes a fold). `start_result` is the
    starting equilibrium's: if it failed, the walk does not start. `meter` is told
    the points walked out of `max_points`."""
    low, high = bounds
    mu_bounds = (
        (low - problem.origin) / problem.scale,
        (high - problem.origin) / problem.scale,
    )

    def cond(state: _WalkState):
        return state.walk.status == RUNNING

    def body(state: _WalkState):
        walk, y, t, h = state.walk, state.y, state.t, state.h
        new_y, new_t, turn, accept = _predict_and_correct(problem, settings, y, t, h)
        new_y, new_t, accept, leave = _stop_at_bound(
            problem, settings, mu_bounds, y, new_y, new_t, accept
        )
        folded = accept & (jnp.sign(new_t[-1]) != jnp.sign(t[-1]))
        walk = _store(problem, walk, y, new_y, new_t, accept)
        new_h = _next_step(settings, h, turn, accept)
        status = _next_status(
            settings, walk, accept, leave, folded, new_h, stop_at_fold
        )
        walk = eqx.tree_at(lambda w: w.status, walk, status)
        meter_state = meter.step(state.meter_state, walk.count / settings.max_points)
        return _WalkState(
            walk,
            jnp.where(accept, new_y, y),
            jnp.where(accept, new_t, t),
            new_h,
            meter_state,
        )

    state = _start(problem, y0, direction, settings, start_result, meter.init())
    state = jax.lax.while_loop(cond, body, state)
    meter.close(state.meter_state)
    return state.walk
