import equinox as eqx
import jax
import jax.numpy as jnp

import ebm
from ebm._results import result_name


def test_a_result_prints_its_codes_name():
    state = ebm.equilibrium(ebm.Params(), grid=ebm.Grid(12))
    text = repr(state)
    # equinox prints a success by its (empty) message: `RESULTS<>`.
    assert "result=RESULTS.successful" in text
    assert "RESULTS<>" not in text
    assert text.startswith("Equilibrium(")


def test_a_failed_result_prints_the_failures_name():
    trajectory = ebm.integrate(
        ebm.Params(), years=10.0, grid=ebm.Grid(12), max_steps=2, throw=False
    )
    assert trajectory.result == ebm.RESULTS.max_steps_reached
    assert "result=RESULTS.max_steps_reached" in repr(trajectory)


def test_a_batch_of_codes_and_a_traced_code():
    codes = jax.vmap(
        lambda ok: ebm.RESULTS.where(ok, ebm.RESULTS.successful, ebm.RESULTS.no_fold)
    )(jnp.array([True, False]))
    assert result_name(codes) == "RESULTS[successful, no_fold]"
    # A large ensemble's codes are tallied, not listed one by one.
    many = jax.vmap(
        lambda ok: ebm.RESULTS.where(ok, ebm.RESULTS.successful, ebm.RESULTS.no_fold)
    )(jnp.arange(1000) >= 2)
    assert result_name(many) == "RESULTS[1000: 998 successful, 2 no_fold]"
    seen = []

    @eqx.filter_jit
    def traced(state):
        seen.append(repr(state))
        return state

    traced(ebm.equilibrium(ebm.Params(), grid=ebm.Grid(12)))
    assert "result=RESULTS<traced>" in seen[0]


def test_a_failure_raises_on_the_host_and_under_the_callers_jit():
    # The compiled program returns its code; the entry point raises when the call
    # returns, and under the caller's own jit the check is threaded on its outputs.
    import pytest

    grid = ebm.Grid(12)
    with pytest.raises(eqx.EquinoxRuntimeError, match="maximum number of steps"):
        ebm.equilibrium(ebm.Params(), grid=grid, max_steps=1)
    jitted = eqx.filter_jit(
        lambda p: ebm.equilibrium(p, grid=grid, max_steps=1).global_mean
    )
    with pytest.raises(eqx.EquinoxRuntimeError, match="maximum number of steps"):
        jax.block_until_ready(jitted(ebm.Params()))
    batched = jax.vmap(
        lambda S0: ebm.equilibrium(ebm.Params(S0=S0), grid=grid, max_steps=1).T
    )
    with pytest.raises(Exception, match="maximum number of steps"):
        jax.block_until_ready(batched(jnp.array([1360.0, 1370.0])))


def test_a_singular_implicit_solve_gives_nan_derivatives_in_both_modes():
    # The implicit adjoint solves with throw=False, so that its program holds no
    # host callback: a singular Jacobian at the root is a NaN derivative, never a
    # finite wrong one.
    import lineax as lx
    import numpy as np

    from ebm._numerics.implicit import ImplicitAdjoint

    def primal(inputs):
        theta = inputs[0]
        return jnp.stack([theta, 0.0 * theta]), None

    def rewrite(root, residual, inputs):
        del residual
        theta = inputs[0]
        return jnp.stack([root[0] - theta, 0.0 * root[1]])

    def solve(theta, solver):
        adjoint = ImplicitAdjoint(linear_solver=solver)
        root, _ = adjoint.apply(primal, rewrite, (theta,), frozenset())
        return root

    for solver in (lx.LU(), ebm.ProbedTridiagonal()):
        tangent = jax.jvp(lambda t: solve(t, solver), (1.0,), (1.0,))[1]
        gradient = jax.grad(lambda t: solve(t, solver)[0])(1.0)
        assert np.all(np.isnan(tangent)) and np.isnan(gradient)
    # A regular Jacobian: the exact derivative.
    regular = jax.grad(
        lambda t: ImplicitAdjoint(linear_solver=lx.LU()).apply(
            lambda inputs: (2.0 * inputs[0], None),
            lambda root, residual, inputs: root - 2.0 * inputs[0],
            (t,),
            frozenset(),
        )[0]
    )(1.0)
    assert float(regular) == 2.0
