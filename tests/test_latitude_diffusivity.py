"""A diffusivity given on every cell bound: the first profile parameter."""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm


GRID = ebm.Grid(18)
MODEL = ebm.EnergyBalanceModel(grid=GRID, transport=ebm.LatitudeDiffusiveTransport())


def _profile(grid):
    # Smooth, larger in the tropics than near the poles.
    return 0.3 + 0.5 * jnp.cos(grid.lat_bounds_radians) ** 2


def _central_element(fn, params, index, step):
    def at(delta):
        profile = params.D_bounds.at[index].add(delta)
        return float(fn(eqx.tree_at(lambda p: p.D_bounds, params, profile)))

    return (at(step) - at(-step)) / (2 * step)


def test_a_uniform_profile_is_the_scalar_diffusivity():
    reference = ebm.equilibrium(ebm.Params(D=0.4), grid=GRID)
    for value in (0.4, jnp.full(GRID.n_lat + 1, 0.4)):
        state = ebm.equilibrium(MODEL.Params(D_bounds=value), model=MODEL)
        assert np.allclose(state.T, reference.T, rtol=0, atol=1e-10)


def test_profile_transport_conserves_energy_and_its_flux_matches():
    params = MODEL.Params(D_bounds=_profile(GRID))
    T = ebm.present_day_profile(GRID) + 3.0 * jnp.sin(GRID.lat_radians)
    convergence = MODEL.transport.convergence(T, params, GRID)
    assert abs(float(GRID.global_mean(convergence))) < 1e-13
    flux = MODEL.transport.flux(T, params, GRID)  # PW, northward
    assert float(flux[0]) == 0.0 and float(flux[-1]) == 0.0
    # The convergence is minus the flux's divergence over each cell's area.
    area = 4 * np.pi * 6.371e6**2 * np.asarray(GRID.area_weights)
    divergence = np.diff(np.asarray(flux)) * 1e15 / area
    assert np.allclose(convergence, -divergence, rtol=1e-3, atol=1e-9)


def test_gradients_with_respect_to_the_profile_match_finite_differences():
    params = MODEL.Params(D_bounds=_profile(GRID))

    def mean(p):
        return ebm.equilibrium(p, model=MODEL).global_mean

    def run(p):
        return ebm.integrate(p, years=2.0, model=MODEL).global_mean

    for fn in (mean, run):
        gradient = jax.grad(fn)(params).D_bounds
        assert gradient.shape == (GRID.n_lat + 1,)
        # The polar values never enter (the flux is zero at the poles), nor does the
        # equator's, where a symmetric climate has no gradient.
        assert float(gradient[0]) == 0.0 and float(gradient[-1]) == 0.0
        assert abs(float(gradient[GRID.n_lat // 2])) < 1e-12
        for index in (2, 5, 13):
            central = _central_element(fn, params, index, 1e-5)
            assert float(gradient[index]) == pytest.approx(central, rel=1e-6)
    # Forward mode gives the same derivatives.
    jacobian = ebm.sensitivity(params, names=("D_bounds",), model=MODEL)
    assert np.allclose(
        jacobian["D_bounds"], jax.grad(mean)(params).D_bounds, atol=1e-12
    )


def test_snowball_fold_moves_with_the_profile():
    params = MODEL.Params(D_bounds=_profile(GRID))

    def snowball(p):
        return ebm.fold(p, "S0", stop=900.0, model=MODEL).value

    gradient = jax.grad(snowball)(params).D_bounds
    central = _central_element(snowball, params, 13, 1e-4)
    assert float(gradient[13]) == pytest.approx(central, rel=1e-4)


def test_ensemble_of_profiles_matches_each_member():
    profile = _profile(GRID)
    members = ebm.sweep(MODEL.Params(), D_bounds=np.stack([profile, 1.3 * profile]))
    ensemble = ebm.ensemble(members, model=MODEL, gradient="global_mean")
    assert ensemble.varying == ("D_bounds",)
    for index, scale in enumerate((1.0, 1.3)):
        params = MODEL.Params(D_bounds=scale * profile)
        gradient = jax.grad(lambda p: ebm.equilibrium(p, model=MODEL).global_mean)
        assert np.allclose(
            ensemble.gradient.D_bounds[index], gradient(params).D_bounds, atol=1e-12
        )
    dataset = ebm.to_dataset(ensemble)
    assert dataset["param_D_bounds"].dims == ("member", "lat_edge")
    assert dataset["d_global_mean_d_D_bounds"].dims == ("member", "lat_edge")


def test_profiles_are_checked_and_written_to_files(tmp_path):
    with pytest.raises(
        ValueError, match=r"`D_bounds` must be >= 0 W m-2 K-1, got -0.1"
    ):
        MODEL.Params(D_bounds=jnp.full(GRID.n_lat + 1, 0.5).at[3].set(-0.1))
    with pytest.raises(
        ValueError, match=r"shape \(19,\) for 18 cells, got shape \(5,\)"
    ):
        ebm.equilibrium(MODEL.Params(D_bounds=jnp.ones(5)), model=MODEL)
    traced = eqx.filter_jit(lambda p: ebm.equilibrium(p, model=MODEL).global_mean)
    bad = eqx.tree_at(lambda p: p.D_bounds, MODEL.Params(), -jnp.ones(GRID.n_lat + 1))
    with pytest.raises(eqx.EquinoxRuntimeError, match="`D_bounds` must be >= 0"):
        traced(bad).block_until_ready()
    with pytest.raises(ValueError, match="must be a scalar parameter to walk in"):
        ebm.continuation(MODEL.Params(), "D_bounds", stop=1.0, model=MODEL)
    params = MODEL.Params(D_bounds=_profile(GRID))
    path = os.fspath(tmp_path / "profile.nc")
    ebm.save(ebm.equilibrium(params, model=MODEL), path, params, model=MODEL)
    assert np.allclose(ebm.load(path).attrs["param_D_bounds"], _profile(GRID))
