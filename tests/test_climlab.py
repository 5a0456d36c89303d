"""ebm against climlab's EBM (optional: skipped where climlab is not installed)."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import ebm


def _climlab():
    with warnings.catch_warnings():
        # climlab warns about its optional Fortran extensions on import.
        warnings.simplefilter("ignore")
        return pytest.importorskip("climlab")


def test_equilibrium_matches_climlabs_ebm():
    climlab = _climlab()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = climlab.EBM()  # 90 cells, step-function ice albedo
        reference.integrate_years(30, verbose=False)
    T_reference = np.asarray(reference.Ts).ravel()
    # climlab's step albedo is the cell-centred blend in the limit of zero width.
    model = ebm.EnergyBalanceModel(grid=ebm.Grid(90), albedo=ebm.SmoothIceAlbedo())
    state = ebm.equilibrium(ebm.Params(ice_width=0.01), model=model)
    np.testing.assert_allclose(state.lat, np.asarray(reference.lat), atol=1e-12)
    assert float(jnp.max(jnp.abs(state.T - T_reference))) < 2e-3
    assert float(state.global_mean) == pytest.approx(
        float(climlab.global_mean(reference.Ts)), abs=1e-6
    )


def test_grey_body_equilibrium_matches_climlabs_boltzmann():
    # climlab's EBM with its longwave process replaced by `Boltzmann`, on the same
    # 90 cells with the same (step) albedo. Emissivity 0.68 with climlab's tau 0.95
    # gives a present-day-like climate (ice edge near 75 degN, global mean 10.7
    # degC); climlab's own default 0.65 leaves the planet ice-free.
    climlab = _climlab()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from climlab.radiation import Boltzmann

        reference = climlab.EBM()
        reference.remove_subprocess("LW")
        longwave = Boltzmann(
            eps=0.68, tau=0.95, state=reference.state, **reference.param
        )
        reference.add_subprocess("LW", longwave)
        reference.integrate_years(40, verbose=False)
    T_reference = np.asarray(reference.Ts).ravel()
    model = ebm.EnergyBalanceModel(
        grid=ebm.Grid(90), albedo=ebm.SmoothIceAlbedo(), longwave=ebm.GreyBodyLongwave()
    )
    state = ebm.equilibrium(model.Params(emissivity=0.68, ice_width=0.01), model=model)
    assert float(jnp.max(jnp.abs(state.T - T_reference))) < 2e-3
    assert float(state.global_mean) == pytest.approx(
        float(climlab.global_mean(reference.Ts)), abs=1e-4
    )
    # climlab's ice latitude is the bound of the first ice-covered cell; ebm's ice
    # edge interpolates between the centres that straddle Tf, within that cell.
    assert 74.0 <= float(state.ice_edge) < 76.0
    assert float(np.asarray(reference.icelat)[1]) == 74.0
