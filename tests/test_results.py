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
