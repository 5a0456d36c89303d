r"""Branches of equilibria by pseudo-arclength continuation, and differentiable folds.

Equilibria solve $F(T; \lambda) = 0$ (the energy budget, W m-2, one equation per
cell) for a scalar parameter $\lambda$, any field of `ebm.Params`. As $\lambda$
varies they trace branches, which turn back at folds (saddle-node bifurcations),
where the Jacobian $J = \partial F/\partial T$ is singular: the warm climate ceases
to exist at the snowball fold, and a continuation in $\lambda$ alone stops there.

**Pseudo-arclength continuation** (Keller 1977) treats $\lambda$ as an unknown. With
$y = (T, \mu)$, $\mu = (\lambda - \lambda_0)/s$ the parameter in units of
`parameter_scale` $s$, and the inner product $\langle a, b\rangle =
\tfrac{1}{n}\sum_i a_{T,i} b_{T,i} + a_\mu b_\mu$ (so that a step is an RMS change of
temperature in K, or of the parameter in units of $s$), each step

1. takes the tangent $t$ of the branch: the solution of the bordered system
    $\begin{pmatrix} J & F_\mu \\ \langle t_{\rm prev}, \cdot\rangle\end{pmatrix} t =
    \begin{pmatrix} 0 \\ 1\end{pmatrix}$, normalised; the system is regular at a fold,
    where $J$ is not, and the last row keeps the direction of travel;
2. predicts $y + h\,t$ and corrects with Newton's method (`optimistix.Newton`) on
    $F(y) = 0$, $\langle t, y - y_{\rm pred}\rangle = 0$;
3. accepts the point if the corrector converged and the tangent turned by less than
    `max_turn`, adapting $h$ to keep the turn near `target_turn`; otherwise halves
    $h$ and tries again.

The linear algebra is dense ($n + 1$ unknowns): continuation is for grids up to a few
thousand cells. Each point's stability is the sign of the leading eigenvalue of $J$
(tridiagonal, probed matrix-free; see `ebm._tridiagonal`).

**Folds** are where $d\lambda/ds$ changes sign. Each is refined by Newton's method on
the extended system (Moore & Spence 1980; Seydel, *Practical Bifurcation and
Stability Analysis*)

$$F(T; \lambda) = 0, \qquad J(T; \lambda)\,v = 0, \qquad \tfrac{1}{n}v\cdot v = 1,$$

$2n + 1$ equations for $(T, v, \lambda)$, whose Jacobian is regular at a generic fold.
So the fold's parameter value $\lambda^*(\theta)$ is a smooth function of every other
parameter $\theta$, differentiated by the implicit function theorem through the same
system (`optimistix.ImplicitAdjoint`): `jax.grad` of `ebm.fold(params).value` gives,
e.g., $\partial S_0^*/\partial D$.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int

from .._checks import check_count
from .._custom_types import Scalar, Temperature
from .._model.grid import Grid
from .._model.model import EnergyBalanceModel
from .._model.params import Params
from .._numerics.tridiagonal import probe_tridiagonal
from .._results import RESULTS
from .equilibrium import equilibrium, resolve_model


# Codes of the walk's `status`.
_RUNNING, _LEFT_BOUNDS, _STEP_TOO_SMALL, _MAX_POINTS, _FOLD = range(5)


def _with_parameter(params: Params, parameter: str, value) -> Params:
    return eqx.tree_at(lambda p: getattr(p, parameter), params, value)


def _check_parameter(params: Params, parameter: str) -> None:
    names = type(params).field_names()
    if parameter not in names:
        raise ValueError(f"`parameter` must be one of {names}, got {parameter!r}.")


class Fold(eqx.Module):
    """A fold (saddle-node bifurcation) of the equilibria in one parameter.

    **Attributes:**

    - `parameter`: the name of the parameter (a field of `ebm.Params`).
    - `value`: the parameter's value at the fold.
    - `T`: the equilibrium at the fold, degC.
    - `null_vector`: the direction `v` with `J v = 0` (RMS 1): how the two branches
        that meet here differ, to first order.
    - `global_mean`, `ice_edge`: of `T` (degC, degrees).
    - `side`: `-1` if the two branches exist for parameter values below `value`,
        `+1` if above.
    - `residual`: largest absolute value of `F` and `J v` at the solution.
    - `result`: an `ebm.RESULTS`; successful when the extended system converged.
    - `num_steps`: Newton iterations on the extended system.
    """

    parameter: str = eqx.field(static=True)
    value: Scalar
    T: Temperature
    null_vector: Float[Array, " lat"]
    global_mean: Scalar
    ice_edge: Scalar
    side: Int[Array, ""]
    residual: Scalar
    result: RESULTS
    num_steps: Int[Array, ""]


class Branch(eqx.Module):
    """A branch of equilibria traced by `ebm.continuation`.

    Arrays have one entry per point, in the order walked.

    **Attributes:**

    - `parameter`: the name of the parameter continued.
    - `values`: the parameter's value at each point.
    - `global_mean`: global-mean temperature, degC.
    - `ice_edge`: northern ice edge, degrees.
    - `leading_eigenvalue`: the largest eigenvalue of the Jacobian, W m-2 K-1.
    - `stable`: whether `leading_eigenvalue < 0`.
    - `slope`: `d(value)/d(arclength)`: the sign says which way the parameter moves;
        it changes sign at each fold.
    - `arclength`: distance walked (the continuation's metric).
    - `T`: the profiles, shape `(points, n_lat)`, if asked for; else `None`.
    - `folds`: the folds passed, in order, each an `ebm.Fold`.
    - `result`: `RESULTS.successful` when the walk left `bounds`;
        `max_steps_reached` when it used up `max_points`; `step_too_small` when the
        corrector failed.
    - `num_points`: the number of points.
    """

    parameter: str = eqx.field(static=True)
    values: Float[Array, " points"]
    global_mean: Float[Array, " points"]
    ice_edge: Float[Array, " points"]
    leading_eigenvalue: Float[Array, " points"]
    stable: Bool[Array, " points"]
    slope: Float[Array, " points"]
    arclength: Float[Array, " points"]
    T: Float[Array, "points lat"] | None
    folds: tuple[Fold, ...]
    result: RESULTS
    num_points: int = eqx.field(static=True)

    def segments(self) -> list[slice]:
        """Slices of consecutive points with the same stability."""
        stable = np.asarray(self.stable)
        cuts = np.flatnonzero(stable[1:] != stable[:-1]) + 1
        bounds = [0, *cuts.tolist(), stable.size]
        return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


class _Problem(eqx.Module):
    """`F` and its bordered systems in the continuation's variables `y = (T, mu)`."""

    model: EnergyBalanceModel
    params: Params
    parameter: str = eqx.field(static=True)
    origin: Scalar
    scale: Scalar

    def value(self, mu):
        return self.origin + self.scale * mu

    def residual(self, y):
        params = _with_parameter(self.params, self.parameter, self.value(y[-1]))
        return self.model.energy_budget(y[:-1], params)

    def metric(self, t):
        """`<t, .>` as a row vector."""
        n = t.shape[0] - 1
        return jnp.concatenate([t[:-1] / n, t[-1:]])

    def norm(self, t):
        return jnp.sqrt(self.metric(t) @ t)

    def tangent(self, y, previous):
        """The unit tangent at `y`, oriented along `previous`."""
        jacobian = jax.jacfwd(self.residual)(y)
        bordered = jnp.concatenate([jacobian, self.metric(previous)[None]])
        unit = jnp.zeros_like(y).at[-1].set(1.0)
        direction = lx.linear_solve(
            lx.MatrixLinearOperator(bordered), unit, lx.LU(), throw=False
        ).value
        return direction / self.norm(direction)

    def correct(self, guess, row, target, corrector: optx.AbstractRootFinder, steps):
        """Solve `F(y) = 0`, `row . y = target` from `guess`."""
        params = _with_parameter(self.params, self.parameter, self.value(guess[-1]))
        scale = row_scale(self.model, params, guess[:-1])

        def fn(y, _):
            return jnp.concatenate([scale * self.residual(y), (row @ y - target)[None]])

        solution = optx.root_find(
            fn, corrector, guess, None, max_steps=steps, throw=False
        )
        ok = (solution.result == optx.RESULTS.successful) & jnp.all(
            jnp.isfinite(solution.value)
        )
        return solution.value, ok

    def leading_eigenvalue(self, y):
        params = _with_parameter(self.params, self.parameter, self.value(y[-1]))
        _, linear = jax.linearize(lambda T: self.model.energy_budget(T, params), y[:-1])
        return probe_tridiagonal(linear, y.shape[0] - 1, y.dtype).leading_eigenvalue()


class _Settings(eqx.Module):
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


class _Walk(eqx.Module):
    y: Float[Array, "points n+1"]
    tangent: Float[Array, "points n+1"]
    leading_eigenvalue: Float[Array, " points"]
    step: Float[Array, " points"]
    count: Int[Array, ""]
    status: Int[Array, ""]


class _WalkState(eqx.Module):
    walk: _Walk
    y: Float[Array, " n+1"]
    t: Float[Array, " n+1"]
    h: Scalar


def _walk(
    problem: _Problem,
    y0,
    direction,
    bounds,
    settings: _Settings,
    stop_at_fold: bool,
) -> _Walk:
    """Walk the branch from `y0` in `direction` (+1/-1 in mu) until it leaves bounds."""
    low, high = bounds
    mu_low, mu_high = (
        (low - problem.origin) / problem.scale,
        (high - problem.origin) / problem.scale,
    )
    start_tangent = problem.tangent(
        y0, jnp.zeros_like(y0).at[-1].set(jnp.asarray(direction, y0.dtype))
    )
    n_plus_1 = y0.shape[0]
    walk = _Walk(
        y=jnp.zeros((settings.max_points, n_plus_1), y0.dtype).at[0].set(y0),
        tangent=jnp.zeros((settings.max_points, n_plus_1), y0.dtype)
        .at[0]
        .set(start_tangent),
        leading_eigenvalue=jnp.full(settings.max_points, jnp.nan, y0.dtype)
        .at[0]
        .set(problem.leading_eigenvalue(y0)),
        step=jnp.zeros(settings.max_points, y0.dtype),
        count=jnp.array(1),
        status=jnp.array(_RUNNING),
    )
    state = _WalkState(walk, y0, start_tangent, jnp.asarray(settings.step, y0.dtype))

    def cond(state: _WalkState):
        return state.walk.status == _RUNNING

    def body(state: _WalkState):
        walk, y, t, h = state.walk, state.y, state.t, state.h
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
        turn = jnp.arccos(jnp.clip(problem.metric(t) @ new_t, -1.0, 1.0))
        accept = converged & (turn <= settings.max_turn)

        # A point past a bound is replaced by the branch's point on the bound.
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

        folded = accept & (jnp.sign(new_t[-1]) != jnp.sign(t[-1]))
        index = walk.count
        eigenvalue = problem.leading_eigenvalue(new_y)
        stored = _Walk(
            y=walk.y.at[index].set(new_y),
            tangent=walk.tangent.at[index].set(new_t),
            leading_eigenvalue=walk.leading_eigenvalue.at[index].set(eigenvalue),
            step=walk.step.at[index].set(problem.norm(new_y - y)),
            count=walk.count + 1,
            status=walk.status,
        )
        walk = jax.tree.map(lambda a, b: jnp.where(accept, a, b), stored, walk)

        growth = jnp.clip(settings.target_turn / jnp.maximum(turn, 1e-12), 0.5, 2.0)
        new_h = jnp.where(
            accept, jnp.clip(h * growth, settings.min_step, settings.max_step), h / 2
        )
        status = jnp.where(accept & leave, _LEFT_BOUNDS, _RUNNING)
        if stop_at_fold:
            status = jnp.where(folded, _FOLD, status)
        status = jnp.where(
            (status == _RUNNING) & (walk.count >= settings.max_points),
            _MAX_POINTS,
            status,
        )
        status = jnp.where(
            ~accept & (new_h < settings.min_step), _STEP_TOO_SMALL, status
        )
        walk = eqx.tree_at(lambda w: w.status, walk, status)
        return _WalkState(
            walk,
            jnp.where(accept, new_y, y),
            jnp.where(accept, new_t, t),
            new_h,
        )

    return jax.lax.while_loop(cond, body, state).walk


def _fold_guess(
    problem: _Problem, y, tangent, index, corrector, corrector_steps, iterations=12
):
    """A guess `(T, v, value, side)` at the fold between points `index` and next.

    The walk's two points bracket the sign change of `dmu/ds`; regula falsi on it
    (the kept end's value halved at each step, an Illinois-type safeguard against
    one-sided convergence), with each trial point corrected onto the branch at a given
    distance `sigma` along the first point's tangent, brings the guess close enough
    to the fold for Newton's method on the extended system, however long the step
    that passed it. The tangent there is the null vector to first order.
    """
    y0, t0, y1, t1 = y[index], tangent[index], y[index + 1], tangent[index + 1]
    row = problem.metric(t0)
    sigma1 = row @ (y1 - y0)

    def on_branch(sigma):
        fraction = sigma / sigma1
        point, _ = problem.correct(
            y0 + fraction * (y1 - y0),
            row,
            row @ y0 + sigma,
            corrector,
            corrector_steps,
        )
        return point, problem.tangent(point, t0)

    def falsi(_, bracket):
        a, phi_a, b, phi_b, point, t = bracket
        sigma = (a * phi_b - b * phi_a) / (phi_b - phi_a)
        point, t = on_branch(sigma)
        phi = t[-1]
        same_as_a = jnp.sign(phi) == jnp.sign(phi_a)
        # Illinois: halve the value kept at the end that did not move.
        a, phi_a, phi_b = (
            jnp.where(same_as_a, sigma, a),
            jnp.where(same_as_a, phi, phi_a),
            jnp.where(same_as_a, phi_b / 2, phi_b),
        )
        b, phi_b, phi_a = (
            jnp.where(same_as_a, b, sigma),
            jnp.where(same_as_a, phi_b, phi),
            jnp.where(same_as_a, phi_a, phi_a / 2),
        )
        return a, phi_a, b, phi_b, point, t

    zero = jnp.zeros((), y0.dtype)
    bracket = (zero, t0[-1], sigma1, t1[-1], y0, t0)
    *_, point, t = jax.lax.fori_loop(0, iterations, falsi, bracket)
    v = t[:-1] / jnp.sqrt(jnp.mean(t[:-1] ** 2))
    # dlambda/ds > 0 before the fold: the branches lie below it.
    side = -jnp.sign(t0[-1] * problem.scale).astype(int)
    return point[:-1], v, problem.value(point[-1]), side


def row_scale(model: EnergyBalanceModel, params: Params, T) -> Float[Array, " lat"]:
    """`1 / |J_ii|`, K per W m-2: scales each energy budget into a temperature error.

    On fine grids the budget is a small difference of diffusive fluxes of size
    `|J_ii| |T|`, and its rounding floor grows like `1/dlat^2`; scaled by the
    diagonal, the floor is `eps |T|` on every grid, so one tolerance in kelvin
    serves all resolutions. The root is unchanged. Not differentiated.
    """
    T, params = jax.lax.stop_gradient((T, params))
    _, linear = jax.linearize(lambda x: model.energy_budget(x, params), T)
    diagonal = probe_tridiagonal(linear, T.shape[0], T.dtype).diagonal
    return 1.0 / jnp.maximum(jnp.abs(diagonal), jnp.finfo(T.dtype).tiny)


def _extended_system(z, args):
    model, params, parameter, scale = args
    n = (z.shape[0] - 1) // 2
    T, v, value = z[:n], z[n : 2 * n], z[-1]
    at_fold = _with_parameter(params, parameter, value)
    budget, jv = jax.jvp(lambda x: model.energy_budget(x, at_fold), (T,), (v,))
    return jnp.concatenate([scale * budget, scale * jv, (jnp.mean(v**2) - 1.0)[None]])


def _refine_fold(
    model: EnergyBalanceModel,
    params: Params,
    parameter: str,
    T,
    v,
    value,
    side,
    solver: optx.AbstractRootFinder,
    max_steps: int,
) -> Fold:
    z0 = jnp.concatenate([T, v, jnp.asarray(value, T.dtype)[None]])
    scale = row_scale(model, _with_parameter(params, parameter, value), T)
    solution = optx.root_find(
        _extended_system,
        solver,
        z0,
        (model, params, parameter, scale),
        max_steps=max_steps,
        adjoint=optx.ImplicitAdjoint(linear_solver=lx.LU()),
        throw=False,
    )
    z = solution.value
    n = T.shape[0]
    T, v, value = z[:n], z[n : 2 * n], z[-1]
    at_fold = _with_parameter(params, parameter, value)
    residual = _extended_system(
        jax.lax.stop_gradient(z), (model, params, parameter, jnp.ones_like(T))
    )
    return Fold(
        parameter=parameter,
        value=value,
        T=T,
        null_vector=v,
        global_mean=model.grid.global_mean(T),
        ice_edge=model.ice_edge(T, at_fold),
        side=jnp.asarray(side),
        residual=jnp.max(jnp.abs(residual[:-1])),
        result=RESULTS.promote(solution.result),
        num_steps=solution.stats["num_steps"],
    )


_DEFAULT_CORRECTOR = optx.Newton(rtol=1e-10, atol=1e-10, linear_solver=lx.LU())
_DEFAULT_FOLD_SOLVER = optx.Newton(rtol=1e-12, atol=1e-10, linear_solver=lx.LU())


def _bounds(origin, stop, bounds):
    """`(low, high)`: `bounds`, or by default from the start to `stop`."""
    if bounds is None:
        return jnp.minimum(origin, stop), jnp.maximum(origin, stop)
    low, high = bounds
    return jnp.asarray(low, float), jnp.asarray(high, float)


def _setup(params, parameter, stop, bounds, start, grid, model, parameter_scale):
    """The model, the start point `y0`, the problem, the direction and the bounds
    (`bounds` and `parameter_scale` as `_as_arrays` made them)."""
    _check_parameter(params, parameter)
    model = resolve_model(model, grid)
    origin = jnp.asarray(getattr(params, parameter), float)
    low, high = bounds
    problem = _Problem(
        model, params, parameter, origin, jnp.asarray(parameter_scale, float)
    )
    T0 = equilibrium(params, model=model, start=start).T
    y0 = jnp.concatenate([T0, jnp.zeros(1, T0.dtype)])
    # The same check as `_check_range`, for values only known inside jit.
    y0 = eqx.error_if(
        y0,
        ~_with_parameter(params, parameter, low).in_range()
        | ~_with_parameter(params, parameter, high).in_range(),
        f"Continuation in {parameter}: `stop` and `bounds` must stay where "
        f"`{parameter}` is {params.allowed_range(parameter)}.",
    )
    # The same checks as `_check_bounds`, for values only known inside jit.
    y0 = eqx.error_if(
        y0,
        ~jnp.isfinite(stop)
        | (stop == origin)
        | ~(low < high)
        | (origin < low)
        | (origin > high)
        | ~(problem.scale > 0),
        f"Continuation in {parameter}: `stop` must be finite and differ from the "
        "start, `bounds` must contain the start, and `parameter_scale` must be > 0.",
    )
    direction = jnp.where(stop >= origin, 1.0, -1.0)
    return model, problem, y0, direction, (low, high)


def _check_bounds(origin, stop, bounds, parameter_scale) -> None:
    """Eager checks of the values that are concrete (the rest is checked in jit)."""

    def concrete(x):
        return x is not None and not isinstance(x, jax.core.Tracer)

    if concrete(stop) and not np.isfinite(float(stop)):
        raise ValueError(f"`stop` must be finite, got {stop}.")
    if concrete(stop) and concrete(origin) and float(stop) == float(origin):
        raise ValueError(
            f"`stop` must differ from the starting value {float(origin)} of the "
            "parameter."
        )
    if bounds is not None and all(concrete(b) for b in bounds):
        low, high = (float(b) for b in bounds)
        inside = (not concrete(origin)) or low <= float(origin) <= high
        if not (low < high and inside):
            raise ValueError(
                "`bounds` must be (low, high) with low < high around the starting "
                f"value of the parameter, got {bounds}."
            )
    if concrete(parameter_scale) and not float(parameter_scale) > 0:
        raise ValueError(f"`parameter_scale` must be > 0, got {parameter_scale}.")


def _check_range(params: Params, parameter: str, stop, bounds) -> None:
    """`stop` and `bounds` must lie where `parameter` is valid: the walk would cross
    into parameters the model refuses (e.g. D < 0, where it has no equilibria)."""
    ends = [("stop", stop)] if bounds is None else [("bounds", b) for b in bounds]
    for argument, value in ends:
        if value is None:
            continue
        allowed = params.out_of_range(parameter, value)
        if allowed is not None:
            raise ValueError(
                f"Continuation in {parameter}: `{argument}` reaches {parameter} = "
                f"{float(value)}, but `{parameter}` must be {allowed}; stop the walk "
                "inside that range."
            )


def _as_arrays(origin, stop, bounds, parameter_scale):
    """Floats as arrays, so that new values do not recompile; for a walk (`stop`
    given), the defaults of `bounds` and `parameter_scale` made explicit (the same
    values `_setup` would take), so that a call with them and one without share
    the compiled program."""
    if stop is not None:
        stop = jnp.asarray(stop, float)
        origin = jax.lax.stop_gradient(jnp.asarray(origin, float))
        bounds = _bounds(origin, stop, bounds)
        if parameter_scale is None:
            parameter_scale = (bounds[1] - bounds[0]) / 100
    if bounds is not None:
        bounds = tuple(jnp.asarray(b, float) for b in bounds)
    if parameter_scale is not None:
        parameter_scale = jnp.asarray(parameter_scale, float)
    return stop, bounds, parameter_scale


@eqx.filter_jit
def _continuation_walk(params, parameter, stop, bounds, start, grid, model, scale, s):
    params = params.check()
    model, problem, y0, direction, bounds = _setup(
        params, parameter, stop, bounds, start, grid, model, scale
    )
    walk = _walk(problem, y0, direction, bounds, s, stop_at_fold=False)
    return problem, walk


@eqx.filter_jit
def _refine_from_walk(
    problem: _Problem, y, tangent, index, corrector, corrector_steps, solver, max_steps
):
    T, v, value, side = _fold_guess(
        problem, y, tangent, index, corrector, corrector_steps
    )
    fold = _refine_fold(
        problem.model,
        problem.params,
        problem.parameter,
        T,
        v,
        value,
        side,
        solver,
        max_steps,
    )
    return _nan_unless_successful(fold)


def continuation(
    params: Params,
    parameter: str = "S0",
    *,
    stop,
    bounds=None,
    start="present",
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
    parameter_scale=None,
    step: float = 1.0,
    min_step: float = 1e-7,
    max_step: float = 5.0,
    target_turn: float = 0.05,
    max_turn: float = 0.3,
    corrector: optx.AbstractRootFinder = _DEFAULT_CORRECTOR,
    corrector_steps: int = 12,
    max_points: int = 2000,
    fold_solver: optx.AbstractRootFinder = _DEFAULT_FOLD_SOLVER,
    fold_steps: int = 64,
    save_profiles: bool = False,
    throw: bool = True,
) -> Branch:
    """Trace the branch of equilibria through `params` as `parameter` varies.

    Starts at the stable equilibrium of `params` reached from `start` (as
    `ebm.equilibrium`), walks towards `stop` by pseudo-arclength continuation, around
    any folds, until the parameter leaves `bounds`; then refines each fold passed.
    See the module docstring for the method.

    **Arguments:**

    - `params`: the parameters; `getattr(params, parameter)` is where the walk
        starts.
    - `parameter`: the name of any field of `ebm.Params` (default `"S0"`).
    - `stop`: the value to walk towards first.
    - `bounds`: `(low, high)`: the walk ends where the branch leaves this interval,
        with a point exactly on the bound (default: from the start to `stop`).
        A hysteresis loop needs bounds wider than the start: e.g. start warm at
        high S0 and walk down; the branch returns through the snowball.
    - `start`: which equilibrium to start from: `"present"`, `"warm"`, `"cold"` or
        a profile (see `ebm.equilibrium`).
    - `grid`, `model`: as for `ebm.equilibrium`.
    - `parameter_scale`: the change of the parameter that counts as one unit of
        arclength, as 1 K of RMS temperature change does (default: 1/100 of
        `bounds`).
    - `step`, `min_step`, `max_step`: first, smallest and largest step, in arclength.
    - `target_turn`, `max_turn`: the angle (radians) the tangent should turn per
        step, and the most it may; steps shrink where the branch bends.
    - `corrector`, `corrector_steps`: the root-finder for each point and its
        iteration limit.
    - `max_points`: the most points to store.
    - `fold_solver`, `fold_steps`: the root-finder for the extended fold system.
    - `save_profiles`: keep every point's temperature profile in `Branch.T`.
    - `throw`: raise if the walk failed (step too small) or a fold did not converge;
        if `False`, return with `result` (and each fold's `result`) set.

    **Returns:**

    An `ebm.Branch`. Not traceable: the number of points is known only at the end,
    so call it outside `jit`/`vmap` (use `ebm.fold` for a traceable, differentiable
    tipping point). A step can pass over a feature shorter than itself: folds closer
    together than `max_step` may be missed (lower it to resolve them).

    **Raises:**

    - `ValueError`: for an unknown `parameter`, `stop` equal to the start, or
        `bounds` that do not contain the start.
    - `RuntimeError` (with `throw=True`): if the walk or a fold refinement failed.
    - `EquinoxRuntimeError`: if the starting equilibrium cannot be found.
    """
    _check_parameter(params, parameter)
    _check_bounds(getattr(params, parameter), stop, bounds, parameter_scale)
    _check_range(params, parameter, stop, bounds)
    settings = _Settings(
        step,
        min_step,
        max_step,
        target_turn,
        max_turn,
        corrector,
        corrector_steps,
        max_points,
    )
    stop, bounds, parameter_scale = _as_arrays(
        getattr(params, parameter), stop, bounds, parameter_scale
    )
    problem, walk = _continuation_walk(
        params, parameter, stop, bounds, start, grid, model, parameter_scale, settings
    )
    count = int(walk.count)
    status = int(walk.status)
    result = {
        _LEFT_BOUNDS: RESULTS.successful,
        _MAX_POINTS: RESULTS.max_steps_reached,
        _STEP_TOO_SMALL: RESULTS.step_too_small,
    }[status]
    # Everything below works on the walk's whole (max_points-long) arrays and cuts
    # them to `count` on the host, then puts them back on the device as they are: a
    # cut inside a compiled function, an eager slice of a device array, or
    # `jnp.asarray` of the host array would compile again for every new number of
    # points.
    fields = _branch_fields(problem, walk)
    if not save_profiles:
        del fields["T"]
    host = jax.tree.map(lambda x: np.asarray(x)[:count], fields)
    if throw and status == _STEP_TOO_SMALL:
        raise RuntimeError(
            f"Continuation in {parameter} failed at {parameter} = "
            f"{float(host['values'][-1])} after {count} points: {RESULTS[result]}"
        )
    signs = np.sign(host["slope"])
    fold_indices = np.flatnonzero(signs[1:] != signs[:-1])
    folds = []
    for index in fold_indices:
        refined = _refine_from_walk(
            problem,
            walk.y,
            walk.tangent,
            jnp.asarray(index),
            corrector,
            corrector_steps,
            fold_solver,
            fold_steps,
        )
        if throw and refined.result != RESULTS.successful:
            raise RuntimeError(
                f"The fold near {parameter} = {float(host['values'][index])} did not "
                f"converge: {RESULTS[refined.result]}"
            )
        folds.append(refined)
    values = host["values"]
    if status == _LEFT_BOUNDS:
        # The walk ended on a bound: say so exactly, not to within a rounding.
        low, high = (float(b) for b in bounds)
        last = float(values[-1])
        values = values.copy()
        values[-1] = low if abs(last - low) < abs(last - high) else high
    return Branch(
        parameter=parameter,
        values=jax.device_put(values),
        global_mean=jax.device_put(host["global_mean"]),
        ice_edge=jax.device_put(host["ice_edge"]),
        leading_eigenvalue=jax.device_put(host["leading_eigenvalue"]),
        stable=jax.device_put(host["leading_eigenvalue"] < 0),
        slope=jax.device_put(host["slope"]),
        arclength=jax.device_put(host["arclength"]),
        T=jax.device_put(host["T"]) if save_profiles else None,
        folds=tuple(folds),
        result=result,
        num_points=count,
    )


@eqx.filter_jit
def _branch_fields(problem: _Problem, walk: _Walk) -> dict:
    """The branch's outputs at every slot of the walk (those past `count` unused)."""
    values = problem.value(walk.y[:, -1])
    T = walk.y[:, :-1]
    model, params, parameter = problem.model, problem.params, problem.parameter
    return dict(
        values=values,
        global_mean=model.grid.global_mean(T),
        ice_edge=jax.vmap(
            lambda T, v: model.ice_edge(T, _with_parameter(params, parameter, v))
        )(T, values),
        leading_eigenvalue=walk.leading_eigenvalue,
        slope=walk.tangent[:, -1] * problem.scale,
        arclength=jnp.cumsum(walk.step),
        T=T,
    )


def fold(
    params: Params,
    parameter: str = "S0",
    *,
    stop=None,
    guess: Fold | None = None,
    bounds=None,
    start="present",
    grid: Grid | None = None,
    model: EnergyBalanceModel | None = None,
    parameter_scale=None,
    step: float = 1.0,
    min_step: float = 1e-7,
    max_step: float = 5.0,
    target_turn: float = 0.05,
    max_turn: float = 0.3,
    corrector: optx.AbstractRootFinder = _DEFAULT_CORRECTOR,
    corrector_steps: int = 12,
    max_points: int = 2000,
    fold_solver: optx.AbstractRootFinder = _DEFAULT_FOLD_SOLVER,
    fold_steps: int = 64,
    throw: bool = True,
) -> Fold:
    """The first fold on the branch through `params` towards `stop`, differentiably.

    Walks the branch as `ebm.continuation` does (without derivatives) until `dlambda/ds`
    changes sign, then solves the extended system `F = 0, J v = 0, mean(v^2) = 1` for
    the fold. The fold's `value`, `T` and diagnostics are differentiable with
    respect to every field of `params` (implicitly, through the extended system; the
    continued parameter itself has zero derivative). E.g. the snowball fold and its
    sensitivity to diffusivity:

    ```python
    snowball = ebm.fold(params, "S0", stop=1000.0)
    dS0_dD = jax.grad(lambda p: ebm.fold(p, "S0", stop=1000.0).value)(params).D
    ```

    **Arguments:**

    - `params`, `parameter`, `stop`, `bounds`, `start`, `grid`, `model`, and the
        walk's settings: as for `ebm.continuation`.
    - `guess`: a fold found before (e.g. `branch.folds[i]`): refine from it instead
        of walking (the walk's arguments are then unused). Newton's method on the
        extended system needs a guess close to the fold: for parameters far from
        the guess's, walk (`stop=`), or follow the fold by small steps.
        Give `stop` or `guess`.
    - `fold_solver`, `fold_steps`: the root-finder for the extended system.
    - `throw`: raise if no fold was found or the extended system did not converge;
        if `False`, return with `result` set.

    **Returns:**

    An `ebm.Fold`.

    **Raises:**

    - `ValueError`: for an unknown `parameter`, or neither/both of `stop` and `guess`.
    - `ValueError`: for `stop`, `bounds` or `parameter_scale` as for
        `ebm.continuation` (checked at once where the values are concrete, and by
        an `EquinoxRuntimeError` inside `jit`).
    - `EquinoxRuntimeError` (with `throw=True`): no fold before the branch left
        `bounds`, the walk failed, or the extended system did not converge.
    """
    _check_parameter(params, parameter)
    if (stop is None) == (guess is None):
        raise ValueError(
            "Give `ebm.fold` either `stop` (to walk) or `guess`, not both."
        )
    if guess is not None and guess.parameter != parameter:
        raise ValueError(
            f"`guess` is a fold in {guess.parameter!r}, but `parameter` is "
            f"{parameter!r}."
        )
    if guess is None:
        _check_bounds(getattr(params, parameter), stop, bounds, parameter_scale)
        _check_range(params, parameter, stop, bounds)
    stop, bounds, parameter_scale = _as_arrays(
        getattr(params, parameter), stop, bounds, parameter_scale
    )
    settings = _Settings(
        step,
        min_step,
        max_step,
        target_turn,
        max_turn,
        corrector,
        corrector_steps,
        max_points,
    )
    return _fold(
        params,
        parameter,
        stop,
        guess,
        bounds,
        start,
        grid,
        model,
        parameter_scale,
        settings,
        fold_solver,
        fold_steps,
        throw,
    )


@eqx.filter_jit
def _fold(
    params,
    parameter,
    stop,
    guess,
    bounds,
    start,
    grid,
    model,
    parameter_scale,
    settings: _Settings,
    fold_solver,
    fold_steps,
    throw,
) -> Fold:
    params = params.check()
    if guess is None:
        frozen = jax.lax.stop_gradient(params)
        model, problem, y0, direction, bounds = _setup(
            frozen, parameter, stop, bounds, start, grid, model, parameter_scale
        )
        walk = _walk(problem, y0, direction, bounds, settings, stop_at_fold=True)
        index = jnp.maximum(walk.count - 2, 0)
        T, v, value, side = _fold_guess(
            problem,
            walk.y,
            walk.tangent,
            index,
            settings.corrector,
            settings.corrector_steps,
        )
        walked = RESULTS.where(
            walk.status == _FOLD,
            RESULTS.successful,
            RESULTS.where(
                walk.status == _STEP_TOO_SMALL,
                RESULTS.step_too_small,
                RESULTS.no_fold,
            ),
        )
    else:
        model = resolve_model(model, grid)
        walked = RESULTS.successful
        T, v, value, side = jax.lax.stop_gradient(
            (guess.T, guess.null_vector, guess.value, guess.side)
        )
    refined = _refine_fold(
        model, params, parameter, T, v, value, side, fold_solver, fold_steps
    )
    result = RESULTS.where(walked == RESULTS.successful, refined.result, walked)
    if throw:
        refined = result.error_if(refined, result != RESULTS.successful)
    return _nan_unless_successful(eqx.tree_at(lambda f: f.result, refined, result))


def _nan_unless_successful(fold: Fold) -> Fold:
    """`fold` with NaN for every float output if it failed: the values where the
    solver stopped are not a fold, and must not read as one."""
    failed = fold.result != RESULTS.successful
    dynamic, static = eqx.partition(fold, eqx.is_inexact_array)
    dynamic = jax.tree.map(lambda x: jnp.where(failed, jnp.nan, x), dynamic)
    return eqx.combine(dynamic, static)
