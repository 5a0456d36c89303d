r"""Fixed-step time steppers for the energy-balance model.

One step advances $T_n \mapsto T_{n+1}$ over $\Delta t$ (years) for
$dT/dt = f(t, T) = \mathcal{T}(T) + \mathcal{N}(t, T)$, the transport
$\mathcal{T}$ (diffusion: linear, tridiagonal, stiff) plus the local terms
$\mathcal{N}$ (insolation, albedo, outgoing longwave: non-stiff away from a very sharp
ice edge).

- `ExplicitEuler`: $T_{n+1} = T_n + \Delta t\,f(t_n, T_n)$. Stable only while
    $\Delta t\,|\lambda| \le 2$ for every eigenvalue $\lambda$ of the Jacobian; for
    diffusion $|\lambda| \approx 4D/(C\Delta\phi^2)$ (about one per day at 60 cells),
    so the step shrinks with the square of the cell size.
- `IMEXEuler`: implicit in the transport, explicit in the rest,
    $(I - \Delta t\,L)(T_{n+1} - T_n) = \Delta t\,f(t_n, T_n)$ with
    $L = \partial\mathcal{T}/\partial T$ probed (three Jacobian-vector products,
    `ebm.ProbedTridiagonal`) at the initial state and held fixed: for linear diffusion
    this is exactly $T_{n+1} - \Delta t\,\mathcal{T}(T_{n+1}) = T_n +
    \Delta t\,\mathcal{N}(t_n, T_n)$. Unconditionally stable for diffusion; one O(n)
    tridiagonal solve per step. The radiation is explicit, so the step is bounded
    (below).
- `LinearlyImplicitEuler`: $(I - \Delta t\,J_n)(T_{n+1} - T_n) = \Delta t\,f(t_n, T_n)$
    with the full Jacobian $J_n$ probed at every step (one Newton iteration of
    backward Euler, a Rosenbrock-Euler method): L-stable for the ice-albedo feedback
    too, at three more Jacobian-vector products per step.
- `Rosenbrock2`: the two-stage L-stable Rosenbrock method ROS2 (Verwer, Spee, Blom
    and Hundsdorfer 1999), $\gamma = 1 + 1/\sqrt2$:
    $(I - \gamma\Delta t\,J_n)k_1 = f(t_n, T_n)$,
    $(I - \gamma\Delta t\,J_n)k_2 = f(t_{n+1}, T_n + \Delta t\,k_1) - 2k_1$,
    $T_{n+1} = T_n + \tfrac32\Delta t\,k_1 + \tfrac12\Delta t\,k_2$, with $J_n$ the
    probed Jacobian. Second order for any $J_n$ (it is a W-method), so the time
    derivative of a seasonal forcing needs no extra term. No iteration: a step is
    one probe, one factorisation and two solves, and its derivatives (forward and
    reverse) cost a small multiple of it, O(n) in memory and work. This is what
    `ebm.periodic_equilibrium` steps with.

The three Euler steppers are first order. Each stepper's `init` computes what stays
fixed through a run (from the parameters, so that gradients reach it) and `step`
uses it.

**Error estimates.** Like a diffrax solver's `step`, each `step` returns an estimate
of its local error with the new state, K in each cell, which the entry points add up
over each year of the run (`error_tolerance`). ROS2 has an embedded first-order
solution, $\hat T_{n+1} = T_n + \Delta t\,k_1$ (Verwer et al. 1999, sec. 2;
Hundsdorfer and Verwer 2003, IV.5), so its estimate is
$T_{n+1} - \hat T_{n+1} = \tfrac12\Delta t\,(k_1 + k_2)$ at no extra cost: the error
of the first-order solution, an upper estimate of the second-order one's. The Euler
steppers compare their step with two half steps (step doubling, Hairer, Norsett and
Wanner, *Solving ODEs I*, II.4): for a first-order method the error of the full step
is $2(T_{n+1} - T_{n+1}^{(1/2, 1/2)})$ to leading order. The first half step starts
from the tendency the full step already has, and the implicit half steps reuse its
operator (shifted by $1/\Delta t$), so the estimate costs one more tendency and two
tridiagonal solves, no Jacobian probe. The estimates are not differentiated.

**Stability limits.** `stability_limit` is the largest stable step at the start of a
run, from the probed Jacobians there:

- `ExplicitEuler`: $2 / \lambda_{\max}(-J)$, the fastest decay (diffusion).
- `IMEXEuler`: the amplification matrix is $(I - \Delta t L)^{-1}(I + \Delta t N)$,
    $N = \partial\mathcal{N}/\partial T$. With $L$ and $N$ symmetric in the same
    (heat-capacity and area weighted) inner product, as diffusion and local terms
    are, its eigenvalues stay in $[-1, 1]$ while the model's own modes decay and
    $\Delta t\,\lambda_{\max}(L - N) \le 2$: the explicit radiation's decay,
    $B/C$ (1.5 per year for a 10 m mixed layer, so $\Delta t \le 1.3$ years), with
    the ice-albedo feedback's couplings between cells, net of the implicit
    diffusion's.
- `LinearlyImplicitEuler` and `Rosenbrock2` are L-stable for decaying modes, but
    a growing one (the ice-albedo feedback's slope, $(a_i - \alpha_w) Q /
    (2 w C)$ at the edge, beyond what $B$ and diffusion take back) is turned into a
    decaying or sign-flipping one once $z = \Delta t\,\lambda_{\max}(J)$ is past the
    first zero or pole of the stability function: $R(z) = 1/(1 - z)$, $z < 1$, for
    Euler; $R(z) = (1 - (2\gamma - 1)z)/(1 - \gamma z)^2$, $z < \sqrt2 - 1$, for ROS2.

The limits are checked at the start only; later in a run (the seasonal insolation
moving over the ice edge) the error estimate is what notices a step gone wrong.
"""

import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name
from jaxtyping import Array, PyTree

from .._custom_types import Scalar, Temperature
from .._model.model import EnergyBalanceModel
from .._model.params import Params
from .._numerics.tridiagonal import TridiagonalMatrix, probe_tridiagonal
from .._results import RESULTS


ERROR_MEMORY = 1.0
"""Years over which a step's error estimate is remembered (e-folding; see
`accumulate_error`)."""


class AbstractStepper(eqx.Module):
    """A one-step method for `ebm.integrate_fixed` and the seasonal entry points.

    Subclass it with three methods, in the manner of diffrax's `AbstractSolver`:
    `init` (once per run), `step` (the new state and an estimate of its local error)
    and `stability_limit` (the largest stable step at the start).
    """

    @abc.abstractmethod
    def init(
        self, model: EnergyBalanceModel, params: Params, T0: Temperature, dt
    ) -> PyTree[Array]:
        """What stays fixed through a run, e.g. a factorised implicit operator."""

    @abc.abstractmethod
    def step(
        self,
        model: EnergyBalanceModel,
        state: PyTree[Array],
        t,
        T: Temperature,
        params: Params,
        dt,
    ) -> tuple[Temperature, Temperature | None]:
        """`T` at `t + dt` from `T` at `t` (years), and the step's local error.

        **Returns:**

        A pair: the new temperature, and an estimate of the step's local error in
        each cell, K (not differentiated), or `None` when the stepper has none; a
        run is then not checked against `error_tolerance`.
        """

    @abc.abstractmethod
    def stability_limit(
        self, model: EnergyBalanceModel, params: Params, T0: Temperature
    ) -> Scalar:
        """The largest step (years) that is stable at `T0`; `inf` when any is."""


def _linearise(tendency, T: Temperature) -> tuple[Temperature, TridiagonalMatrix]:
    """`tendency(T)` and the tridiagonal part of its Jacobian, K per year per K."""
    value, linear = jax.linearize(tendency, T)
    return value, probe_tridiagonal(linear, T.shape[0], T.dtype)


def _jacobian(tendency, T: Temperature) -> TridiagonalMatrix:
    return _linearise(tendency, T)[1]


def _named_tendency(model, t, T, params):
    # Named so that a checkpoint policy can choose to keep it (see ebm.StepCheckpoint).
    return checkpoint_name(model(t, T, params), "ebm_tendency")


def _named_linearisation(model, t, T, params) -> tuple[Temperature, TridiagonalMatrix]:
    """The (named) tendency and its probed Jacobian, from one linearisation."""
    tendency, jacobian = _linearise(lambda T: model(t, T, params), T)
    return checkpoint_name(tendency, "ebm_tendency"), jacobian


def _limit(matrix: TridiagonalMatrix, multiple) -> Scalar:
    """`multiple / lambda_max(matrix)`, or `inf` when no eigenvalue is positive."""
    # Sturm bisection, to 1e-6 of the Gershgorin bound: far cheaper to compile than
    # `eigh_tridiagonal`, and a limit needs no more digits.
    rate = matrix.leading_eigenvalue_bound(iterations=20)
    return jnp.where(rate > 0, multiple / jnp.where(rate > 0, rate, 1.0), jnp.inf)


def _halved(operator: TridiagonalMatrix, dt) -> TridiagonalMatrix:
    """`I / dt - A` as `2 I / dt - A`: the same implicit operator for half the step."""
    return TridiagonalMatrix(
        operator.diagonal + 1.0 / dt, operator.lower, operator.upper
    )


def _doubling_error(full, half_step, T, increment) -> Temperature:
    """Step doubling: `2 (full - two half steps)`, the first half's increment given."""
    halfway = T + increment
    return jax.lax.stop_gradient(2.0 * (full - half_step(halfway)))


class ExplicitEuler(AbstractStepper):
    """Forward Euler; its step must stay below the diffusive stability limit."""

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency = _named_tendency(model, t, T, params)
        T_next = T + dt * tendency

        def second_half(halfway):
            return halfway + 0.5 * dt * model(t + 0.5 * dt, halfway, params)

        error = _doubling_error(T_next, second_half, T, 0.5 * dt * tendency)
        return T_next, error

    def stability_limit(self, model, params, T0):
        jacobian = _jacobian(lambda T: model.tendency(T, params, 0.0), T0)
        # Forward Euler needs dt |lambda| <= 2 for the fastest decay, -lambda_min(J).
        return _limit(jacobian.shifted(0.0), 2.0)


class IMEXEuler(AbstractStepper):
    """Transport implicit (tridiagonal, probed once), the rest explicit."""

    def init(self, model, params, T0, dt):
        transport = lambda T: model.transport_tendency(0.0, T, params)  # noqa: E731
        return _jacobian(transport, T0).shifted(1.0 / dt)

    def step(self, model, state, t, T, params, dt):
        # state = I/dt - L, so the increment is state^{-1} f.
        tendency = _named_tendency(model, t, T, params)
        T_next = T + state.solve(tendency)
        half = _halved(state, dt)

        def second_half(halfway):
            return halfway + half.solve(model(t + 0.5 * dt, halfway, params))

        error = _doubling_error(T_next, second_half, T, half.solve(tendency))
        return T_next, error

    def stability_limit(self, model, params, T0):
        transport = _jacobian(lambda T: model.transport_tendency(0.0, T, params), T0)
        local = _jacobian(lambda T: model.local_tendency(0.0, T, params), T0)
        # dt lambda_max(L - N) <= 2: the explicit part's decay beyond the implicit's.
        implicit_minus_explicit = jax.tree.map(jnp.subtract, transport, local)
        return _limit(implicit_minus_explicit, 2.0)


class LinearlyImplicitEuler(AbstractStepper):
    """One Newton iteration of backward Euler per step, on the probed Jacobian."""

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency, jacobian = _named_linearisation(model, t, T, params)
        T_next = T + jacobian.shifted(1.0 / dt).solve(tendency)
        # The half steps reuse this step's Jacobian (still first order: a W-method).
        half = jacobian.shifted(2.0 / dt)

        def second_half(halfway):
            return halfway + half.solve(model(t + 0.5 * dt, halfway, params))

        error = _doubling_error(T_next, second_half, T, half.solve(tendency))
        return T_next, error

    def stability_limit(self, model, params, T0):
        jacobian = _jacobian(lambda T: model.tendency(T, params, 0.0), T0)
        # R(z) = 1 / (1 - z) changes sign at z = dt lambda_max(J) = 1.
        return _limit(jacobian, 1.0)


# ROS2's gamma: 1 + 1/sqrt(2) makes the stability function vanish at infinity.
_ROS2_GAMMA = 1.0 + 1.0 / 2.0**0.5


class Rosenbrock2(AbstractStepper):
    """The L-stable second-order Rosenbrock method ROS2, on the probed Jacobian."""

    def init(self, model, params, T0, dt):
        del model, params, T0, dt
        return None

    def step(self, model, state, t, T, params, dt):
        del state
        tendency, jacobian = _named_linearisation(model, t, T, params)
        # (I - gamma dt J) k = f  <=>  (I / (gamma dt) - J) k = f / (gamma dt).
        scale = 1.0 / (_ROS2_GAMMA * dt)
        operator = jacobian.shifted(scale)
        k1 = operator.solve(tendency) * scale
        k2 = operator.solve(model(t + dt, T + dt * k1, params) - 2.0 * k1) * scale
        # Less the embedded first-order solution T + dt k1.
        error = jax.lax.stop_gradient(0.5 * dt * (k1 + k2))
        return T + dt * (1.5 * k1 + 0.5 * k2), error

    def stability_limit(self, model, params, T0):
        jacobian = _jacobian(lambda T: model.tendency(T, params, 0.0), T0)
        # R(z) = (1 - (2 gamma - 1) z) / (1 - gamma z)^2 turns negative at
        # z = dt lambda_max(J) = 1 / (2 gamma - 1) = sqrt(2) - 1.
        return _limit(jacobian, 1.0 / (2.0 * _ROS2_GAMMA - 1.0))


STEPPERS = {
    "explicit": ExplicitEuler,
    "imex": IMEXEuler,
    "implicit": LinearlyImplicitEuler,
    "rosenbrock": Rosenbrock2,
}

# What bounds each stepper's step, and what to do about it: for the error messages.
_STABILITY = {
    ExplicitEuler: (
        "2 / (the model's fastest decay rate), the diffusive limit ~ C dlat^2 / (2 D)",
        "stepper='imex' (diffusion implicit)",
    ),
    IMEXEuler: (
        "2 / (the fastest decay rate of the explicit radiation: B / C with the "
        "ice-albedo feedback's slope, net of the implicit diffusion)",
        "stepper='implicit' or 'rosenbrock' (radiation implicit too)",
    ),
    LinearlyImplicitEuler: (
        "1 / (the model's fastest growth rate: the ice-albedo feedback's slope "
        "beyond B and diffusion)",
        "stepper='imex', or a wider ice transition (`ice_width`)",
    ),
    Rosenbrock2: (
        "(sqrt(2) - 1) / (the model's fastest growth rate: the ice-albedo "
        "feedback's slope beyond B and diffusion)",
        "stepper='imex', or a wider ice transition (`ice_width`)",
    ),
}


def stability_advice(stepper: AbstractStepper) -> tuple[str, str]:
    """What bounds `stepper`'s step (a formula) and the other stepper to use."""
    return _STABILITY.get(type(stepper), ("its `stability_limit`", "another stepper"))


@eqx.filter_jit
def stability_limit(
    stepper: AbstractStepper, model: EnergyBalanceModel, params: Params, T0
) -> Scalar:
    """`stepper.stability_limit`, not differentiated (it only decides a check)."""
    dynamic, static = eqx.partition((model, params, T0), eqx.is_inexact_array)
    model, params, T0 = eqx.combine(jax.lax.stop_gradient(dynamic), static)
    return stepper.stability_limit(model, params, T0)


def check_stability(
    stepper: AbstractStepper,
    model: EnergyBalanceModel,
    params: Params,
    T0: Temperature,
    dt,
    throw: bool,
    steps_per_year: int | None = None,
) -> Scalar | None:
    """`stepper`'s stability limit at `T0`, years, when it can be known now (else
    `None`: a traced run finds it and reports `RESULTS.unstable_step`).

    **Raises:**

    - `ValueError` (with `throw`): when `dt` is above the limit, naming `dt` (or
        `steps_per_year`, when given), its value, the limit, what sets it and the
        fix.
    """
    leaves = jax.tree.leaves((model, params, T0, dt))
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return None
    # Evaluated now: inside a caller's jit a jnp operation would otherwise be traced.
    with jax.ensure_compile_time_eval():
        limit = stability_limit(stepper, model, params, T0)
    if not throw or float(dt) <= float(limit):
        return limit
    dt, limit = float(dt), float(limit)
    formula, alternative = stability_advice(stepper)
    name = type(stepper).__name__
    where = f"{name}'s stability limit here is {limit:.4g} years, {formula}"
    if steps_per_year is None:
        raise ValueError(
            f"`dt` = {dt:.4g} years is unstable: {where}. Use `dt` <= {limit:.4g} "
            f"years, or {alternative}."
        )
    raise ValueError(
        f"`steps_per_year` = {steps_per_year} (dt = {dt:.4g} years) is unstable: "
        f"{where}. Use `steps_per_year` >= {math.ceil(1.0 / limit)}, or "
        f"{alternative}."
    )


def resolve_error_tolerance(error_tolerance, stepper: AbstractStepper):
    """`error_tolerance`, or the stepper's default for `None`.

    **Raises:**

    - `ValueError`: unless it is a positive number, K (`inf` turns the check off).
    """
    if error_tolerance is None:
        return default_error_tolerance(stepper)
    valid = not isinstance(error_tolerance, bool)
    if valid and not isinstance(error_tolerance, jax.core.Tracer):
        value = np.asarray(error_tolerance)
        valid = (
            value.shape == ()
            and np.issubdtype(value.dtype, np.number)
            and bool(value > 0)
        )
    if not valid:
        raise ValueError(
            "`error_tolerance` must be None or a positive number of K (inf to turn "
            f"the check off), got {error_tolerance!r}."
        )
    return error_tolerance


def fixed_step_result(
    finite, step_error, unstable, error_tolerance, otherwise=RESULTS.successful
) -> RESULTS:
    """The result of a fixed-step run, the likeliest cause first: a step above the
    stability limit, then a non-finite state, then an error estimate (the largest
    of `accumulate_error`'s, K) above `error_tolerance` (NaN counts as above), else
    `otherwise`."""
    inaccurate = jnp.logical_not(step_error <= error_tolerance)
    result = RESULTS.where(inaccurate, RESULTS.inaccurate_step, otherwise)
    result = RESULTS.where(finite, result, RESULTS.nonfinite_state)
    return RESULTS.where(unstable, RESULTS.unstable_step, result)


def step_with_error(stepper, model, state, t, T, params, dt):
    """`stepper.step`, and its error estimate (zero if it has none), not
    differentiated."""
    output = stepper.step(model, state, t, T, params, dt)
    if not (isinstance(output, tuple) and len(output) == 2):
        raise TypeError(
            f"{type(stepper).__name__}.step must return a pair (new T, local error "
            "estimate or None), as ebm.AbstractStepper.step documents; got "
            f"{type(output).__name__}."
        )
    T_next, error = output
    if error is None:
        return T_next, jnp.zeros_like(T)
    return T_next, jax.lax.stop_gradient(error)


def accumulate_error(error, local_error, dt):
    """The run's estimated error in each cell, K, after a step with `local_error`.

    Each cell's local errors are added with their signs, as the true error adds
    them (over a seasonal cycle, a first-order step's errors change sign with the
    curvature of `T` and largely cancel), and forgotten over `ERROR_MEMORY` (a
    year; the model forgets a perturbation on its relaxation time `C / B`, 0.66
    years for a 10 m mixed layer). For the Euler steppers this tracks the error of
    the run itself (within a factor of two on the seasonal model).
    """
    return error * jnp.exp(-dt / ERROR_MEMORY) + local_error


# Rosenbrock2's estimate is that of its embedded first-order solution: 40 to 80
# times its own error at 48 to 365 steps a year on the seasonal model (measured
# against 2920 steps), where the Euler steppers' estimate their own within a factor 2.
_ERROR_TOLERANCES = {Rosenbrock2: 10.0}


def default_error_tolerance(stepper: AbstractStepper) -> float:
    """`error_tolerance`'s default, K: 10 for `Rosenbrock2`, else 1."""
    return _ERROR_TOLERANCES.get(type(stepper), 1.0)


def resolve_stepper(stepper) -> AbstractStepper:
    """A stepper from a name in `STEPPERS` or an instance."""
    if isinstance(stepper, AbstractStepper):
        return stepper
    if isinstance(stepper, str) and stepper in STEPPERS:
        return STEPPERS[stepper]()
    raise ValueError(
        f"`stepper` must be one of {tuple(STEPPERS)} or an ebm.AbstractStepper "
        f"instance, got {stepper!r}."
    )
