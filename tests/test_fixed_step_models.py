"""`ebm.integrate_fixed` of the other models of the protocol: each stepper against
the matrix exponential (with its order of convergence), gradients under the
checkpoint schedules, the zonal model over a deep ocean against the adaptive run,
and the refusals."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from helpers import abrupt_exact, assert_gradient_matches_fd, compilations


TWO = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(4.0))
PARAMS = TWO.Params(efficacy=1.3)  # N is not F - lambda T
YEARS = 20.0


def _error(stepper, steps):
    run = ebm.integrate_fixed(
        PARAMS, model=TWO, dt=YEARS / steps, steps=steps, stepper=stepper
    )
    exact = abrupt_exact(TWO, PARAMS, YEARS)
    return np.abs(np.array([run.state["T"], run.state["T_deep"]]) - exact).max()


@pytest.mark.parametrize(
    "stepper, order", [("explicit", 1), ("implicit", 1), ("rosenbrock", 2)]
)
def test_each_stepper_converges_to_the_matrix_exponential_at_its_order(stepper, order):
    coarse, fine = _error(stepper, 100), _error(stepper, 200)
    # Halving the step divides the error by 2^order (to 15%).
    assert 2**order / 1.15 < coarse / fine < 2**order * 1.15, (coarse, fine)
    assert fine < (2e-2 if order == 1 else 2e-4)


@pytest.mark.parametrize("checkpoint", ["sqrt", "recursive"])
def test_gradient_under_a_checkpoint_schedule_matches_finite_differences(checkpoint):
    model = ebm.NLayerModel(forcing=ebm.OnePercentCO2())  # FaIR's three layers
    params = model.Params()

    def warming(p):
        return ebm.integrate_fixed(
            p, model=model, dt=0.5, steps=140, checkpoint=checkpoint
        ).T

    gradient = jax.grad(warming)(params)
    names = [n for n in params.field_names() if np.ndim(getattr(params, n)) == 0]
    assert_gradient_matches_fd(warming, params, gradient, names, rtol=1e-6)


def test_a_series_is_stepped_on_its_own_clock_and_under_vmap():
    years = np.arange(1850.0, 1901.0)
    model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(years, (years - 1850) / 25))
    params = model.Params()
    fixed = ebm.integrate_fixed(params, model=model, dt=0.25, steps=200)
    adaptive = ebm.integrate(params, model=model, years=50.0)
    # ROS2 at a quarter-year step (second order: 6e-4 K here, a quarter of that
    # at half the step), against diffrax's Tsit5 at 1e-9.
    np.testing.assert_allclose(fixed.T, adaptive.T, rtol=1e-3)

    def run(feedback):
        p = eqx.tree_at(lambda p: p.feedback, params, feedback)
        return ebm.integrate_fixed(p, model=model, dt=0.25, steps=200).T

    feedbacks, others = jnp.array([0.8, 1.13, 1.6]), jnp.array([0.9, 1.2, 1.7])
    ensemble = jax.jit(jax.vmap(run))
    batched = ensemble(feedbacks)
    with compilations() as compiled:
        batched_again = ensemble(others)
    assert not compiled
    assert batched[0] > batched[1] > batched[2] > 0 and np.all(batched_again > 0)
    np.testing.assert_allclose(batched[1], fixed.T, rtol=1e-12)
    # The model as an argument of the user's function: its series is traced.
    traced = jax.jit(
        lambda m, p: ebm.integrate_fixed(p, model=m, dt=0.25, steps=200).T
    )(model, params)
    np.testing.assert_allclose(traced, fixed.T, rtol=1e-12)


def test_the_zonal_model_over_a_deep_ocean_matches_its_adaptive_run():
    model = ebm.DeepOceanModel(
        surface=ebm.EnergyBalanceModel(grid=ebm.Grid(12)), forcing=ebm.AbruptCO2(2.0)
    )
    params = model.Params()
    fixed = ebm.integrate_fixed(params, model=model, dt=0.02, steps=250)
    adaptive = ebm.integrate(params, model=model, years=5.0)
    assert fixed.variables == model.variables
    np.testing.assert_allclose(fixed.state["T"], adaptive.state["T"], atol=2e-3)
    np.testing.assert_allclose(
        fixed.state["T_deep"], adaptive.state["T_deep"], atol=1e-4
    )


def test_mistakes_are_named():
    years = np.arange(1850.0, 1901.0)
    model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(years, years * 0.0))
    params = model.Params()
    with pytest.raises(ValueError, match="leaves the forcing series' span"):
        ebm.integrate_fixed(params, model=model, dt=1.0, steps=51)
    # Under a user's `jit` too (the series is a constant there, its span known).
    with pytest.raises(ValueError, match="leaves the forcing series' span"):
        jax.jit(lambda p: ebm.integrate(p, model=model, years=60.0).T)(params)
    with pytest.raises(ValueError, match="stepper='imex' splits the zonal model"):
        ebm.integrate_fixed(params, model=model, dt=1.0, steps=5, stepper="imex")
    with pytest.raises(ValueError, match="`grid` is for the zonal model"):
        ebm.integrate_fixed(params, model=model, grid=ebm.Grid(6), dt=1.0, steps=5)
    with pytest.raises(TypeError, match="model.Params"):
        ebm.integrate_fixed(ebm.Params(), model=model, dt=1.0, steps=5)
    # Forward Euler past the fastest decay (C / (feedback + efficacy gamma), about
    # 3.9 years): refused with the limit and the stepper to use instead.
    with pytest.raises(ValueError, match=r"unstable: .*stepper='rosenbrock'"):
        ebm.integrate_fixed(params, model=model, dt=10.0, steps=2, stepper="explicit")
    with pytest.raises(ValueError, match="`T0` must be a state of the model"):
        ebm.integrate_fixed(params, model=model, dt=1.0, steps=5, T0=jnp.zeros(3))
