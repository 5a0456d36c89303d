"""The grey-body OLR and the CO2 forcing: terms that are one file each."""

import math

import jax
import numpy as np
import pytest

import ebm
from helpers import assert_gradient_matches_fd


GRID = ebm.Grid(18)


def _without_ice_albedo_feedback(grid):
    # The albedo of the default model's equilibrium, held fixed.
    reference = ebm.equilibrium(ebm.Params(), grid=grid)
    return ebm.PrescribedAlbedo(ebm.SubgridIceAlbedo()(reference.T, ebm.Params(), grid))


@pytest.mark.parametrize("B", [2.0, 1.6])
def test_co2_climate_sensitivity_is_one_derivative(B):
    # Linear OLR, no ice-albedo feedback: the global mean responds to any uniform
    # forcing by F / B, so per doubling 5.35 ln 2 / B (1.854 K at B = 2).
    model = ebm.EnergyBalanceModel(
        grid=GRID, albedo=_without_ice_albedo_feedback(GRID), forcing=ebm.CO2Forcing()
    )
    params = model.Params(B=B, CO2=400.0)
    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=model).global_mean)(params)
    per_doubling = float(gradient.CO2 * params.CO2) * math.log(2.0)
    assert per_doubling == pytest.approx(5.35 * math.log(2.0) / B, rel=1e-9, abs=0)
    # The same through `ebm.sensitivity`, which takes the term's parameter by name.
    jacobian = ebm.sensitivity(params, names=("CO2", "CO2_ref"), model=model)
    assert float(jacobian["CO2"]) == pytest.approx(float(gradient.CO2), rel=1e-9)
    assert float(jacobian["CO2_ref"]) == pytest.approx(
        -float(gradient.CO2) * 400.0 / 280.0, rel=1e-9
    )


def test_co2_forcing_adds_to_the_uniform_forcing_and_is_zero_at_the_reference():
    model = ebm.EnergyBalanceModel(grid=GRID, forcing=ebm.CO2Forcing())
    params = model.Params(CO2=560.0, forcing=1.0)
    forcing = model.forcing(params, GRID)
    assert np.allclose(forcing, 5.35 * math.log(2.0) + 1.0, rtol=1e-14)
    assert np.all(model.forcing(model.Params(), GRID) == 0.0)
    with pytest.raises(
        ValueError, match=r"`CO2` must be in \(0, 1e\+06\] ppm.*, got 0.0"
    ):
        model.Params(CO2=0.0)


def test_co2_gradient_through_a_run_matches_finite_differences():
    model = ebm.EnergyBalanceModel(grid=GRID, forcing=ebm.CO2Forcing())
    params = model.Params(CO2=560.0)

    def final_mean(p):
        return ebm.integrate(p, years=2.0, model=model).global_mean

    gradient = jax.grad(final_mean)(params)
    assert_gradient_matches_fd(final_mean, params, gradient, ("CO2", "CO2_ref"))


def test_grey_body_olr_and_its_gradients():
    model = ebm.EnergyBalanceModel(grid=GRID, longwave=ebm.GreyBodyLongwave())
    # An ice edge near 62 degN, with its leading eigenvalue -1.8 W m-2 K-1: far
    # enough from the small-ice-cap fold for finite differences to converge.
    params = model.Params(emissivity=0.70)
    # At 15 degC the defaults emit today's global-mean OLR, about 240 W m-2.
    T = np.full(GRID.n_lat, 15.0)
    olr = ebm.GreyBodyLongwave()(T, model.Params(), GRID)
    assert np.allclose(olr, 0.95 * 0.65 * 5.670374419e-8 * 288.15**4, rtol=1e-14)
    assert 235 < float(olr[0]) < 245

    def mean(p):
        return ebm.equilibrium(p, model=model).global_mean

    gradient = jax.grad(mean)(params)
    assert_gradient_matches_fd(mean, params, gradient, ("emissivity", "tau", "D"))
    # A larger emissivity emits more: colder.
    assert float(gradient.emissivity) < 0
    with pytest.raises(ValueError, match="`emissivity` must be in \\(0, 1\\]"):
        model.Params(emissivity=0.0)
