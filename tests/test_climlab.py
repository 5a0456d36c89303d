"""ebm against climlab's EBM (optional: skipped where climlab is not installed)."""

import warnings

import equinox as eqx
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
    # The tolerance is for the two models on the same grid (measured 7e-4 K at 90
    # cells, 1e-4 at 180, 4e-5 at 360: benchmarks/climlab_comparison.py), not for
    # resolution: this small ice cap survives only at 90 cells, in both models; at
    # 180 and 360 both melt it and warm by 0.59 K.
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


def test_moist_saturation_and_amplification_are_climlabs():
    climlab = _climlab()
    from climlab.dynamics.meridional_moist_diffusion import (
        moist_amplification_factor,
    )

    from ebm._physics.transport.moist import (
        moisture_amplification,
        saturation_specific_humidity,
    )

    T = np.linspace(-60.0, 40.0, 41)
    params = ebm.EnergyBalanceModel(transport=ebm.MoistDiffusiveTransport()).Params(
        relative_humidity=0.7, surface_pressure=950.0
    )
    np.testing.assert_allclose(
        saturation_specific_humidity(jnp.asarray(T), params.surface_pressure),
        climlab.utils.thermo.qsat(T + 273.15, 950.0),
        rtol=1e-13,
    )
    # climlab's slope of q* is a centred difference 0.01 K wide, ebm's exact; and
    # climlab's factor takes the pressure fixed at 1000 hPa.
    params = eqx.tree_at(lambda p: p.surface_pressure, params, jnp.asarray(1000.0))
    np.testing.assert_allclose(
        moisture_amplification(jnp.asarray(T), params),
        moist_amplification_factor(T + 273.15, 0.7),
        rtol=1e-7,
    )


def _climlab_moist_ebm(climlab, steps_per_year, years, T0=None):
    from climlab.dynamics import MeridionalMoistDiffusion

    reference = climlab.EBM(
        timestep=climlab.constants.seconds_per_year / steps_per_year
    )
    if T0 is not None:
        reference.Ts[:] = T0[:, np.newaxis]
    reference.remove_subprocess("diffusion")
    diffusion = MeridionalMoistDiffusion(
        D=0.24,
        relative_humidity=0.8,
        state=reference.state,
        timestep=reference.timestep,
    )
    reference.add_subprocess("diffusion", diffusion)
    reference.integrate_years(years, verbose=False)
    return reference


def test_moist_equilibrium_matches_climlabs_moist_diffusion():
    # climlab's EBM with its diffusion replaced by `MeridionalMoistDiffusion` at
    # its defaults (D = 0.24, relative humidity 0.8), on 90 cells with the step
    # albedo: an ice edge near 60 degN.
    import optimistix as optx

    from ebm._physics.transport.diffusive import _diffusive_flux
    from ebm._physics.transport.moist import moisture_amplification

    climlab = _climlab()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coarse = _climlab_moist_ebm(climlab, 90, 10)  # climlab's time step
        T_coarse = np.array(coarse.Ts).ravel()
        fine = _climlab_moist_ebm(climlab, 180, 5, T0=T_coarse)
        T_fine = np.array(fine.Ts).ravel()
    model = ebm.EnergyBalanceModel(
        grid=ebm.Grid(90),
        albedo=ebm.SmoothIceAlbedo(),
        transport=ebm.MoistDiffusiveTransport(),
    )
    params = model.Params(D=0.24, ice_width=0.01)
    state = ebm.equilibrium(params, model=model)
    assert 60.0 < float(state.ice_edge) < 61.0
    assert float(state.global_mean) == pytest.approx(
        float(climlab.global_mean(coarse.Ts)), abs=1e-6
    )

    # climlab steps radiation explicitly first and then diffusion implicitly, with
    # the moist diffusivity computed from the temperature after the radiative step,
    # T + dt R / C (R, the radiative heating, is minus the transport convergence at
    # steady state). So its steady state depends on its time step dt, to first
    # order: 0.13 K off at its 90 steps a year, half that at 180.
    coarse_error = float(np.max(np.abs(T_coarse - state.T)))
    fine_error = float(np.max(np.abs(T_fine - state.T)))
    assert 0.05 < coarse_error < 0.2
    assert fine_error / coarse_error == pytest.approx(0.5, abs=0.05)
    # Extrapolated to dt -> 0 (Richardson), climlab's equilibrium is ebm's, within
    # the 1.3e-3 K by which the two discretisations of the divergence differ
    # (below) plus climlab's second-order remainder (1.2e-3 K, a quarter of that at
    # half the steps).
    extrapolated = 2.0 * T_fine - T_coarse
    assert float(np.max(np.abs(extrapolated - state.T))) < 4e-3

    # ebm's flux with the diffusivity lagged as climlab's is: its steady state is
    # climlab's at either time step within 2e-3 K, the tolerance of the dry
    # comparison above, so the formula and constants are the same.
    heat_capacity = model.heat_capacity(params, model.grid)

    def lagged_budget(T, dt):
        radiative = model.energy_budget(T, params) - model.heat_convergence(T, params)
        shifted = T + dt * radiative / heat_capacity
        factor = moisture_amplification(0.5 * (shifted[1:] + shifted[:-1]), params)
        factor = jnp.concatenate([jnp.zeros(1), factor, jnp.zeros(1)])
        flux = (1.0 + factor) * _diffusive_flux(T, params, model.grid)
        return radiative + jnp.diff(flux) / (2.0 * model.grid.area_weights)

    for T_climlab, reference in ((T_coarse, coarse), (T_fine, fine)):
        replica = optx.root_find(
            lagged_budget,
            optx.Newton(rtol=1e-10, atol=1e-10),
            state.T,
            args=float(reference.timestep),
            max_steps=50,
        ).value
        assert float(np.max(np.abs(replica - T_climlab))) < 2e-3
