import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

import ebm
from ebm._constants import EARTH_RADIUS, PETAWATT
from ebm._zonal.albedo.ice import ice_fraction, mean_ice_fraction


@settings(max_examples=40, deadline=None)
@given(
    n_lat=st.sampled_from([2, 3, 7, 60, 201]),
    D=st.floats(0.0, 5.0),
    data=st.data(),
)
def test_diffusion_conserves_energy(n_lat, D, data):
    grid = ebm.Grid(n_lat)
    T = data.draw(
        hnp.arrays(np.float64, n_lat, elements=st.floats(-80.0, 60.0, width=64))
    )
    model = ebm.EnergyBalanceModel(grid=grid)
    convergence = model.heat_convergence(jnp.asarray(T), ebm.Params(D=D))
    scale = max(1.0, float(jnp.max(jnp.abs(convergence))))
    assert abs(float(grid.global_mean(convergence))) <= 1e-13 * scale


def test_no_heat_flux_through_poles_and_transport_consistent():
    model = ebm.EnergyBalanceModel()
    params = ebm.Params()
    T = ebm.present_day_profile(model.grid) + 3.0 * model.grid.sin_lat
    transport = model.heat_transport(T, params)
    assert float(transport[0]) == 0.0 == float(transport[-1])
    # Convergence in a cell is the transport into it over the cell's area.
    area = 4 * np.pi * EARTH_RADIUS**2 * model.grid.area_weights
    inflow = -jnp.diff(transport) * PETAWATT / area
    np.testing.assert_allclose(inflow, model.heat_convergence(T, params), rtol=1e-12)


def test_hemispheric_symmetry():
    model = ebm.EnergyBalanceModel()
    params = ebm.Params()
    T = ebm.present_day_profile(model.grid)
    budget = model.energy_budget(T, params)
    np.testing.assert_allclose(budget, budget[::-1], rtol=0, atol=1e-10)
    equilibrium = ebm.equilibrium(params)
    np.testing.assert_allclose(equilibrium.T, equilibrium.T[::-1], atol=1e-9)
    transport = model.heat_transport(equilibrium.T, params)
    np.testing.assert_allclose(transport, -transport[::-1], atol=1e-9)
    assert float(transport[45]) > 0  # poleward in the north


def test_insolation_global_mean_tends_to_quarter_solar_constant():
    params = ebm.Params()
    errors = []
    for n_lat in (30, 60, 120):
        model = ebm.EnergyBalanceModel(grid=ebm.Grid(n_lat))
        mean = model.global_mean(model.insolation(params, model.grid))
        errors.append(abs(float(mean) - float(params.S0) / 4))
    assert errors[1] < 0.1 and errors[2] < errors[1] / 3.5  # second order


def test_smooth_albedo_tends_to_step():
    model = ebm.EnergyBalanceModel(albedo=ebm.SmoothIceAlbedo())
    T = jnp.linspace(-40, 30, 60)
    for width in (1.0, 0.1, 0.01):
        params = ebm.Params(ice_width=width)
        albedo = model.albedo(T, params, model.grid)
        warm = params.a0 + params.a2 * 0.5 * (3 * model.grid.sin_lat**2 - 1)
        away = jnp.abs(T - params.Tf) > 20 * width
        step = jnp.where(T < params.Tf, params.ai, warm)
        np.testing.assert_allclose(albedo[away], step[away], atol=1e-12)
        assert bool(jnp.all((albedo >= 0) & (albedo <= 1)))


def test_subgrid_albedo_is_the_mean_over_each_cell():
    grid = ebm.Grid()
    params = ebm.Params(ice_width=0.5)
    # Uniform temperature: the cell mean is the centre value.
    for T in (-30.0, -10.2, -9.9, 5.0):
        profile = jnp.full(grid.n_lat, T)
        np.testing.assert_allclose(
            ebm.SubgridIceAlbedo()(profile, params, grid),
            ebm.SmoothIceAlbedo()(profile, params, grid),
            atol=1e-14,
        )
    # A linear profile: each half-cell's closed form against quadrature of the blend.
    T = jnp.linspace(-25.0, 5.0, grid.n_lat)
    albedo = ebm.SubgridIceAlbedo()(T, params, grid)
    faces = 0.5 * (T[1:] + T[:-1])
    south = jnp.concatenate([T[:1], faces])
    north = jnp.concatenate([faces, T[-1:]])
    nodes = (jnp.arange(4000.0) + 0.5) / 4000

    def half_cell_mean(a, b):
        return jnp.mean(
            jax.vmap(lambda s: ice_fraction(a + s * (b - a), params))(nodes), axis=0
        )

    ice = 0.5 * (half_cell_mean(south, T) + half_cell_mean(T, north))
    warm = params.a0 + params.a2 * 0.5 * (3 * grid.sin_lat**2 - 1)
    np.testing.assert_allclose(albedo, warm + (params.ai - warm) * ice, atol=1e-8)


def test_subgrid_albedo_moves_the_ice_edge_continuously():
    # Shift a linear profile through one cell: the cell-centred albedo jumps as the
    # centre crosses Tf; the cell mean changes smoothly, even for a sharp step.
    grid = ebm.Grid()
    params = ebm.Params(ice_width=0.01)
    base = jnp.linspace(-40.0, 20.0, grid.n_lat)
    shifts = jnp.linspace(0.0, 1.0, 201)

    def absorbed(albedo, shift):
        return jnp.sum(albedo(base + shift, params, grid))

    for albedo, continuous in (
        (ebm.SubgridIceAlbedo(), True),
        (ebm.SmoothIceAlbedo(), False),
    ):
        values = jax.jit(jax.vmap(lambda s: absorbed(albedo, s)))(shifts)
        largest_jump = float(jnp.max(jnp.abs(jnp.diff(values))))
        assert (largest_jump < 0.01) == continuous, (albedo, largest_jump)


@pytest.mark.parametrize("width, start", [(1.0, -10.3), (0.25, -10.1), (0.01, 30.0)])
def test_mean_ice_fraction_and_its_derivatives_match_quadrature(width, start):
    # Either side of the switch to the series (|b - a| = 1e-3 width), near Tf and far
    # from it: values and first and second derivatives in `b` equal those of a
    # quadrature of the blend (a sum, so its derivatives are exact).
    params = ebm.Params(ice_width=width)
    a = jnp.array(start)
    nodes = (jnp.arange(2000.0) + 0.5) / 2000

    def quadrature(b):
        return jnp.mean(ice_fraction(a + (b - a) * nodes, params))

    def closed_form(b):
        return mean_ice_fraction(a, b, params)

    for order in range(3):
        exact, ours = quadrature, closed_form
        for _ in range(order):
            exact, ours = jax.grad(exact), jax.grad(ours)
        # Compiled once for every gap (op by op, each operation would compile).
        exact, ours = jax.jit(exact), jax.jit(ours)
        scale = width ** (-order)
        for gap in (3e-2, 1.1e-3, 0.9e-3, 1e-5, 0.0):
            b = a + gap * width
            np.testing.assert_allclose(
                ours(b), exact(b), rtol=1e-6, atol=1e-9 * scale, err_msg=(gap, order)
            )


def test_swapping_one_term():
    class CubicLongwave(ebm.AbstractLongwave):
        def __call__(self, T, params, grid):
            del grid
            return params.A + params.B * T + 1e-5 * T**3

    params = ebm.Params()
    default = ebm.equilibrium(params)
    swapped = ebm.equilibrium(
        params, model=ebm.EnergyBalanceModel(longwave=CubicLongwave())
    )
    assert bool(swapped.converged) and bool(swapped.stable)
    assert float(swapped.residual) < 1e-9
    # More longwave cooling at warm temperatures: a cooler tropics.
    assert float(swapped.T[30]) < float(default.T[30])


def test_ice_edge_diagnostic():
    grid = ebm.Grid(60)
    params = ebm.Params()
    lat = grid.lat
    assert float(ebm.ice_edge(jnp.full(60, 20.0), params, grid)) == 90.0
    assert float(ebm.ice_edge(jnp.full(60, -40.0), params, grid)) == 0.0
    # A profile crossing Tf exactly half-way between two centres.
    T = params.Tf + (60.0 - jnp.abs(lat)) / 3.0 + 0.5
    edge = float(ebm.ice_edge(T, params, grid))
    assert edge == pytest.approx(61.5, abs=1e-9)


@pytest.mark.parametrize("n_lat", [3, 5, 7])
def test_ice_edge_on_an_odd_grid_starts_at_the_equator_cell(n_lat):
    # A warm equator cell with icy neighbours used to read as a snowball (0): the
    # equator's own cell is not "northern", and the edge was never interpolated.
    grid = ebm.Grid(n_lat)
    params = ebm.Params()
    lat = grid.lat
    middle = n_lat // 2
    T = jnp.where(jnp.arange(n_lat) == middle, 26.0, -29.3)
    expected = float(lat[middle] + (36.0 / 55.3) * (lat[middle + 1] - lat[middle]))
    edge = float(ebm.ice_edge(T, params, grid))
    assert 0.0 < edge < float(lat[middle + 1])
    assert edge == pytest.approx(expected, rel=1e-12)
    # An icy equator cell is still a snowball; a warm grid still ice-free.
    assert float(ebm.ice_edge(jnp.full(n_lat, -29.3), params, grid)) == 0.0
    assert float(ebm.ice_edge(jnp.full(n_lat, 26.0), params, grid)) == 90.0


@pytest.mark.parametrize("n_lat", [6, 7])
def test_each_hemisphere_has_its_own_ice_edge(n_lat):
    # Only the northern edge was reported: an asymmetric state needs both.
    grid = ebm.Grid(n_lat)
    params = ebm.Params()
    lat = np.asarray(grid.lat)
    # Warm to 40 degrees north and to 65 degrees south, linear in latitude.
    T = jnp.asarray(
        params.Tf + np.where(lat >= 0, 40.0 - lat, 65.0 + lat) / 10.0, float
    )
    north = float(ebm.ice_edge(T, params, grid))
    south = float(ebm.ice_edge(T, params, grid, "south"))
    assert north == pytest.approx(40.0, abs=1e-9)
    assert south == pytest.approx(-65.0, abs=1e-9)
    # Ice-free south: -90; snowball: 0.
    T = jnp.where(jnp.asarray(lat) < 0, 30.0, T)
    assert float(ebm.ice_edge(T, params, grid, "south")) == -90.0
    frozen = jnp.full(n_lat, -40.0)
    assert float(ebm.ice_edge(frozen, params, grid, "south")) == 0.0
    with pytest.raises(ValueError, match="`hemisphere` must be 'north' or 'south'"):
        ebm.ice_edge(T, params, grid, "east")


def test_ice_edge_of_a_batch_a_nan_and_bad_arguments():
    # A (time, lat) array gave one meaningless number per cell; NaN read as
    # ice-free; a snowball's southern edge was -0.0.
    grid = ebm.Grid(60)
    params = ebm.Params()
    lat = np.asarray(grid.lat)
    T = jnp.asarray(20.0 - 40.0 * np.sin(np.deg2rad(lat)) ** 2)
    batch = jnp.stack([T, T + 5.0])
    one_by_one = [float(ebm.ice_edge(row, params, grid)) for row in batch]
    np.testing.assert_array_equal(ebm.ice_edge(batch, params, grid), one_by_one)
    south = ebm.ice_edge(batch, params, grid, "south")
    np.testing.assert_allclose(south, -np.asarray(one_by_one), rtol=1e-12)
    assert np.isnan(float(ebm.ice_edge(jnp.full(60, jnp.nan), params, grid)))
    frozen = ebm.ice_edge(jnp.full(60, -50.0), params, grid, "south")
    assert float(frozen) == 0.0 and not np.signbit(float(frozen))
    with pytest.raises(ValueError, match=r"`T` must have 30 values .* shape \(60,\)"):
        ebm.ice_edge(T, params, ebm.Grid(30))
    with pytest.raises(TypeError, match="`params` must be ebm parameters"):
        ebm.ice_edge(T, None, grid)
    with pytest.raises(TypeError, match="`grid` must be an ebm.Grid"):
        ebm.ice_edge(T, params, 60)


def test_coarse_equilibrium_reports_its_ice_edge():
    state = ebm.equilibrium(ebm.Params(), grid=ebm.Grid(3))
    assert state.T[1] > ebm.Params().Tf > state.T[2]
    assert 0.0 < float(state.ice_edge) < 60.0
    # A symmetric model's southern edge is the northern one's mirror.
    assert float(state.ice_edge_south) == pytest.approx(-float(state.ice_edge))


@pytest.mark.parametrize("lat", [100.0, -90.5, float("nan")])
def test_insolation_refuses_a_latitude_beyond_the_poles(lat):
    # daily_insolation(lat=100) used to return 517 W m-2.
    params = ebm.Params()
    with pytest.raises(ValueError, match=r"`lat` must be in \[-90, 90\]"):
        ebm.daily_insolation(lat, 80.0, params)
    with pytest.raises(ValueError, match=r"`lat` must be in \[-90, 90\]"):
        ebm.annual_mean_insolation(jnp.array([0.0, lat]), params)
    with pytest.raises(Exception, match=r"`lat` must be in \[-90, 90\]"):
        jax.jit(lambda x: ebm.daily_insolation(x, 80.0, params))(lat)
    # The poles themselves are fine.
    assert float(ebm.daily_insolation(90.0, 172.0, params)) > 500.0
