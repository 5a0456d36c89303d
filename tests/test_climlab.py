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
