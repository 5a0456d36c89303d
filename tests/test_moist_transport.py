"""The moist diffusive transport: a term that is one file."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._zonal.model import has_tridiagonal_jacobian
from helpers import assert_gradient_matches_fd, replace


GRID = ebm.Grid(18)
MOIST = ebm.MoistDiffusiveTransport()
# climlab's default diffusivity for the moist term.
MOIST_D = 0.24
UNIFORM_FORCING = 4.0  # W m-2


def _moist_model(grid=GRID, **terms):
    return ebm.EnergyBalanceModel(grid=grid, transport=MOIST, **terms)


def _profiles(grid):
    # A warm, a cold and a lopsided profile, with a sharp step in the last.
    lat = np.asarray(grid.lat_radians)
    return [
        jnp.asarray(28.0 - 50.0 * np.sin(lat) ** 2),
        jnp.asarray(-20.0 - 15.0 * np.sin(lat) ** 2),
        jnp.asarray(np.where(lat > 0.3, -15.0, 25.0) + 3.0 * np.sin(lat)),
    ]


@pytest.mark.parametrize("n_lat", [18, 61])
def test_moist_transport_conserves_energy_and_its_flux_matches_its_convergence(n_lat):
    grid = ebm.Grid(n_lat)
    params = _moist_model(grid).Params(D=MOIST_D)
    for T in _profiles(grid):
        convergence = MOIST.convergence(T, params, grid)
        flux = MOIST.flux(T, params, grid)
        scale = float(jnp.max(jnp.abs(convergence)))
        assert abs(float(jnp.sum(convergence * grid.area_weights))) < 1e-14 * scale
        # Convergence is minus the divergence of the transport in PW.
        watts = flux * 1e15 / (2.0 * jnp.pi * 6.373e6**2)
        from_flux = -jnp.diff(watts) / (2.0 * grid.area_weights)
        np.testing.assert_allclose(from_flux, convergence, rtol=1e-12, atol=1e-12)
        assert float(flux[0]) == 0.0 and float(flux[-1]) == 0.0
        # The two parts add up to the whole, and the latent part runs with the dry
        # one (down the temperature gradient), larger where it is warm.
        dry = MOIST.dry_flux(T, params, grid)
        latent = MOIST.latent_flux(T, params, grid)
        np.testing.assert_allclose(dry + latent, flux, rtol=1e-14, atol=1e-14)
        assert np.all(np.asarray(latent * dry) >= 0.0)


def test_moist_transport_is_dry_diffusion_without_humidity_and_more_with_it():
    params = _moist_model().Params(relative_humidity=0.0)
    dry = ebm.DiffusiveTransport()
    for T in _profiles(GRID):
        assert np.array_equal(
            MOIST.convergence(T, params, GRID), dry.convergence(T, params, GRID)
        )
        assert np.array_equal(MOIST.flux(T, params, GRID), dry.flux(T, params, GRID))
        assert np.all(MOIST.latent_flux(T, params, GRID) == 0.0)
    moist_state = ebm.equilibrium(params, model=_moist_model())
    dry_state = ebm.equilibrium(params, grid=GRID)
    np.testing.assert_allclose(moist_state.T, dry_state.T, rtol=0, atol=1e-10)
    # Humidity adds a transport down the same gradient: more poleward heat.
    T = _profiles(GRID)[0]
    humid = replace(params, "relative_humidity", 0.8)
    north = GRID.n_lat // 2 + 1
    assert np.all(
        np.asarray(MOIST.flux(T, humid, GRID)[north:-1])
        > 1.05 * np.asarray(dry.flux(T, params, GRID)[north:-1])
    )


def test_moist_transport_couples_only_neighbours():
    model = _moist_model()
    assert has_tridiagonal_jacobian(model)
    params = model.Params(D=MOIST_D)
    jacobian = np.asarray(
        jax.jacfwd(MOIST.convergence)(_profiles(GRID)[2], params, GRID)
    )
    band = np.abs(np.subtract.outer(np.arange(GRID.n_lat), np.arange(GRID.n_lat)))
    assert np.all(jacobian[band > 1] == 0.0)
    assert np.all(np.diag(jacobian, 1) != 0.0)


def test_moist_parameters_are_declared_and_checked():
    model = _moist_model()
    params = model.Params()
    assert float(params.relative_humidity) == 0.8
    assert float(params.surface_pressure) == 1000.0
    assert model.Params.units()["surface_pressure"] == "hPa"
    with pytest.raises(ValueError, match="`relative_humidity` must be in \\[0, 1\\]"):
        model.Params(relative_humidity=1.2)
    with pytest.raises(ValueError, match="`surface_pressure` must be > 0 hPa"):
        model.Params(surface_pressure=0.0)


MOIST_NAMES = ("D", "relative_humidity", "surface_pressure", "S0", "B")


def test_moist_equilibrium_gradient_matches_finite_differences():
    model = _moist_model()
    params = model.Params(D=MOIST_D)

    def mean(p):
        return ebm.equilibrium(p, model=model).global_mean

    def edge(p):
        return ebm.equilibrium(p, model=model).ice_edge

    state = ebm.equilibrium(params, model=model)
    # An ice edge away from the fold and from the cell centres.
    assert 50.0 < float(state.ice_edge) < 75.0
    for fn in (mean, edge):
        gradient = jax.grad(fn)(params)
        assert_gradient_matches_fd(fn, params, gradient, MOIST_NAMES, rtol=1e-6)
    # More humidity carries more heat to the ice edge: it retreats.
    assert float(jax.grad(edge)(params).relative_humidity) > 0.0


def test_moist_run_gradient_matches_finite_differences():
    model = _moist_model()
    params = model.Params(D=MOIST_D)

    def final_pole(p):
        return ebm.integrate(p, years=2.0, model=model).T[-1]

    gradient = jax.grad(final_pole)(params)
    assert_gradient_matches_fd(final_pole, params, gradient, MOIST_NAMES[:3], rtol=1e-6)


def test_moist_fold_gradient_matches_finite_differences():
    # The small-ice-cap fold in S0 moves with the moisture of the transport.
    model = _moist_model()
    params = model.Params(D=MOIST_D)
    guess = ebm.fold(params, "S0", stop=1200.0, model=model)

    def value(p):
        return ebm.fold(p, "S0", guess=guess, model=model).value

    gradient = jax.grad(value)(params)
    assert_gradient_matches_fd(
        value, params, gradient, ("D", "relative_humidity"), rtol=1e-6
    )


def _without_ice_albedo_feedback(model, params):
    reference = ebm.equilibrium(params, model=model)
    albedo = model.albedo(reference.T, params, model.grid)
    return reference, ebm.PrescribedAlbedo(albedo)


def _warming(transport, params, grid=GRID):
    model = ebm.EnergyBalanceModel(grid=grid, transport=transport)
    reference, held = _without_ice_albedo_feedback(model, params)
    fixed = ebm.EnergyBalanceModel(grid=grid, transport=transport, albedo=held)
    forced = ebm.equilibrium(replace(params, "forcing", UNIFORM_FORCING), model=fixed)
    return forced.T - reference.T


def test_moist_diffusion_amplifies_polar_warming_and_dry_diffusion_does_not():
    # Linear OLR and the albedo held fixed: dry diffusion of T cannot move a uniform
    # forcing's warming anywhere (a uniform warming has no gradient), so every
    # latitude warms by F / B. Moist diffusion carries more latent heat poleward in
    # a warmer climate, so the poles warm more than the tropics (Merlis and Henry
    # 2018).
    params = _moist_model().Params(D=MOIST_D)
    dry = _warming(ebm.DiffusiveTransport(), ebm.Params())
    np.testing.assert_allclose(dry, UNIFORM_FORCING / 2.0, rtol=0, atol=1e-9)
    moist = _warming(MOIST, params)
    equator = float(moist[GRID.n_lat // 2])
    pole = float(moist[-1])
    assert pole > 1.5 * equator
    # Energy is still only redistributed: the global mean warms by F / B.
    assert float(GRID.global_mean(moist)) == pytest.approx(
        UNIFORM_FORCING / 2.0, rel=1e-9
    )
