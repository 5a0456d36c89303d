"""Orbital insolation, the seasonal model and its periodic steady state."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special

import ebm
from ebm._zonal.insolation.orbital import VERNAL_EQUINOX_DAY
from helpers import (
    assert_compiles_once,
    assert_gradient_matches_fd,
    compilations,
    finite_difference,
    replace,
)


YEAR = 365.2422
PARAMS = ebm.Params()


def _sphere_mean(fn, points=400):
    """Area mean over the sphere of `fn(lat_degrees)`, Gauss-Legendre in sin(lat)."""
    x, w = np.polynomial.legendre.leggauss(points)
    return float(jnp.sum(fn(jnp.rad2deg(jnp.arcsin(jnp.asarray(x)))) * w)) / 2


def _solstice_day(params, which):
    """The calendar day on which the solar longitude is `which` (radians)."""
    days = np.linspace(0.0, YEAR, 20001)
    longitude = np.asarray(ebm.solar_longitude(days, params))
    distance = np.abs(np.angle(np.exp(1j * (longitude - which))))
    return float(days[np.argmin(distance)])


def _berger_longitude(day, params):
    """Berger's (1978) third-order series, as in climlab and daily_insolation.m."""
    e = float(params.eccentricity)
    w = np.deg2rad(float(params.long_peri))
    beta = np.sqrt(1 - e**2)
    mean_at_equinox = -2 * (
        (e / 2 + e**3 / 8) * (1 + beta) * np.sin(-w)
        - e**2 / 4 * (1 / 2 + beta) * np.sin(-2 * w)
        + e**3 / 8 * (1 / 3 + beta) * np.sin(-3 * w)
    )
    mean = mean_at_equinox + (day - 80.0) * 2 * np.pi / YEAR
    return (
        mean
        + (2 * e - e**3 / 4) * np.sin(mean - w)
        + 5 / 4 * e**2 * np.sin(2 * (mean - w))
        + 13 / 12 * e**3 * np.sin(3 * (mean - w))
    )


# --- insolation -----------------------------------------------------------------


def test_solar_longitude_matches_bergers_series():
    days = np.linspace(0.0, YEAR, 367)
    exact = np.asarray(ebm.solar_longitude(days, PARAMS))
    series = _berger_longitude(days, PARAMS)
    difference = np.angle(np.exp(1j * (exact - series)))
    # The series is third order in e: what is left is O(e^4), 1e-7 rad today.
    assert np.max(np.abs(difference)) < 5 * float(PARAMS.eccentricity) ** 4
    assert float(ebm.solar_longitude(VERNAL_EQUINOX_DAY, PARAMS)) == pytest.approx(
        0.0, abs=1e-14
    )


def test_global_mean_on_any_day_is_s0_over_4_times_distance_factor():
    for day in (0.0, 80.0, 172.0, 266.0, 355.0):
        mean = _sphere_mean(lambda lat: ebm.daily_insolation(lat, day, PARAMS))
        longitude = float(ebm.solar_longitude(day, PARAMS))
        e, w = float(PARAMS.eccentricity), np.deg2rad(float(PARAMS.long_peri))
        factor = ((1 + e * np.cos(longitude - w)) / (1 - e**2)) ** 2
        # Latitude quadrature across the polar circles limits this to ~1e-8.
        assert mean == pytest.approx(float(PARAMS.S0) / 4 * factor, rel=1e-7)


@pytest.mark.parametrize("eccentricity", [0.0, 0.017236, 0.06, 0.5])
def test_annual_global_mean_is_s0_over_4_sqrt_one_minus_e2(eccentricity):
    params = ebm.Params(eccentricity=eccentricity, obliquity=30.0, long_peri=100.0)
    mean = _sphere_mean(lambda lat: ebm.annual_mean_insolation(lat, params))
    expected = float(params.S0) / (4 * np.sqrt(1 - eccentricity**2))
    assert mean == pytest.approx(expected, rel=1e-7)


def test_annual_mean_is_the_mean_of_the_daily_values():
    lat = jnp.array([-90.0, -75.0, -66.0, -20.0, 0.0, 45.0, 70.0, 89.0])
    days = jnp.arange(40000) / 40000 * YEAR
    daily = ebm.daily_insolation(lat[:, None], days[None, :], PARAMS)
    np.testing.assert_allclose(
        ebm.annual_mean_insolation(lat, PARAMS), jnp.mean(daily, axis=1), rtol=1e-8
    )


def test_annual_mean_closed_forms_at_pole_and_equator():
    # At the pole the sun is up half the year at height delta:
    # Qbar = S0 sin(obliquity) / (pi sqrt(1 - e^2)); at the equator the daily value
    # is S0/pi cos(delta) (a/r)^2, whose annual mean is a complete elliptic integral.
    S0, e = float(PARAMS.S0), float(PARAMS.eccentricity)
    eps = np.deg2rad(float(PARAMS.obliquity))
    pole = S0 * np.sin(eps) / (np.pi * np.sqrt(1 - e**2))
    equator = 2 * S0 * scipy.special.ellipe(np.sin(eps) ** 2) / np.pi**2
    equator /= np.sqrt(1 - e**2)
    values = ebm.annual_mean_insolation(jnp.array([90.0, -90.0, 0.0]), PARAMS)
    np.testing.assert_allclose(values, [pole, pole, equator], rtol=1e-12)
    # Textbook values for today's orbit (S0 = 1365.2): 173 and 417 W m-2.
    assert pole == pytest.approx(172.93, abs=0.01)
    assert equator == pytest.approx(416.87, abs=0.01)


def test_polar_night_and_the_summer_solstice_polar_maximum():
    june = _solstice_day(PARAMS, np.pi / 2)
    december = _solstice_day(PARAMS, 3 * np.pi / 2)
    assert 170 < june < 174 and 353 < december < 357
    lat = jnp.linspace(-90.0, 90.0, 181)
    q_june = np.asarray(ebm.daily_insolation(lat, june, PARAMS))
    # Polar night poleward of 90 - obliquity in the winter hemisphere.
    night = np.asarray(lat) < -(90 - float(PARAMS.obliquity)) - 0.1
    assert np.all(q_june[night] == 0.0) and np.all(q_june[~night] > 0.0)
    # The summer pole gets more than anywhere else: S0 sin(obliquity) (a/r)^2.
    assert np.argmax(q_june) == len(lat) - 1
    factor = float(ebm.daily_insolation(90.0, june, PARAMS)) / float(PARAMS.S0)
    sin_eps = np.sin(np.deg2rad(float(PARAMS.obliquity)))
    assert factor / sin_eps == pytest.approx(0.9675, abs=1e-3)  # near aphelion
    assert float(ebm.daily_insolation(90.0, december, PARAMS)) == 0.0


def test_p2_fit_of_the_annual_mean_is_norths_s2():
    # North (1975): s2 = -0.48 is the P2 fit of today's annual-mean insolation.
    def p2(lat):
        x = jnp.sin(jnp.deg2rad(lat))
        return (3 * x**2 - 1) / 2

    mean = _sphere_mean(lambda lat: ebm.annual_mean_insolation(lat, PARAMS))
    projection = _sphere_mean(
        lambda lat: ebm.annual_mean_insolation(lat, PARAMS) * p2(lat)
    )
    s2 = 5 * projection / mean
    assert s2 == pytest.approx(-0.48, abs=0.005)


def test_insolation_derivatives_match_finite_differences():
    lat, day = jnp.array([-80.0, -30.0, 10.0, 65.0, 85.0]), 200.0

    # Compiled (op by op, each operation of the gradient would compile).
    @jax.jit
    def daily(p):
        return jnp.sum(ebm.daily_insolation(lat, day, p))

    @jax.jit
    def annual(p):
        return jnp.sum(ebm.annual_mean_insolation(lat, p))

    for fn in (daily, annual):
        gradient = jax.jit(jax.grad(fn))(PARAMS)
        for name in ("obliquity", "eccentricity", "long_peri", "S0"):
            expected = finite_difference(fn, PARAMS, name, relative_step=1e-5)
            assert float(getattr(gradient, name)) == pytest.approx(
                expected, rel=1e-6, abs=1e-9
            )


@pytest.mark.parametrize("obliquity", [0.0, 90.0])
def test_insolation_gradients_stay_finite_at_extreme_obliquities(obliquity):
    # The Sun overhead at a pole (90), no seasons (0); the equator and the poles.
    params = ebm.Params(obliquity=obliquity)
    lat = jnp.array([-90.0, -60.0, 0.0, 45.0, 90.0])
    solstice = _solstice_day(params, np.pi / 2)
    for fn in (
        lambda p: jnp.sum(ebm.annual_mean_insolation(lat, p)),
        lambda p: jnp.sum(ebm.daily_insolation(lat, solstice, p)),
    ):
        gradient = jax.grad(fn)(params)
        assert all(np.isfinite(float(leaf)) for leaf in jax.tree.leaves(gradient))


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("eccentricity", 1.0, "in [0, 1)"),
        ("eccentricity", -0.1, "in [0, 1)"),
        ("eccentricity", float("nan"), "finite"),
        ("obliquity", 200.0, "in [0, 180]"),
        ("obliquity", float("inf"), "finite"),
        ("long_peri", float("nan"), "finite"),
    ],
)
def test_bad_orbital_parameter_is_named(name, value, allowed):
    with pytest.raises(ValueError) as info:
        ebm.Params(**{name: value})
    assert f"`{name}`" in str(info.value) and allowed in str(info.value)


def test_traced_bad_eccentricity_is_rejected_inside_jit():
    def cycle(e):
        params = eqx.tree_at(lambda p: p.eccentricity, PARAMS, e)
        return ebm.seasonal_spinup(params, years=0, grid=ebm.Grid(12)).annual_mean

    with pytest.raises(Exception, match="eccentricity"):
        jax.jit(cycle)(jnp.asarray(1.5))


def test_annual_mean_insolation_model_has_an_equilibrium_differentiable_in_obliquity():
    model = ebm.EnergyBalanceModel(insolation=ebm.AnnualMeanInsolation())

    def edge(p):
        return ebm.equilibrium(p, model=model).ice_edge

    gradient = jax.grad(edge)(PARAMS).obliquity
    expected = finite_difference(edge, PARAMS, "obliquity")
    assert float(gradient) == pytest.approx(expected, rel=1e-6)
    # More tilt, less polar-versus-tropical contrast in the annual mean: the ice
    # retreats.
    assert float(gradient) > 0


def test_seasonal_model_has_no_steady_state():
    with pytest.raises(ValueError, match="periodic_equilibrium"):
        ebm.equilibrium(PARAMS, model=ebm.seasonal_model())


# --- heat capacity --------------------------------------------------------------


def test_land_ocean_heat_capacity_validates_and_mixes():
    with pytest.raises(ValueError, match="`land_fraction`"):
        ebm.LandOceanHeatCapacity(land_fraction=1.2)
    with pytest.raises(ValueError, match="`land_water_depth`"):
        ebm.LandOceanHeatCapacity(land_fraction=0.3, land_water_depth=0.0)
    with pytest.raises(ValueError, match="`heat_capacity`"):
        ebm.EnergyBalanceModel(
            grid=ebm.Grid(10),
            heat_capacity=ebm.LandOceanHeatCapacity(land_fraction=jnp.zeros(12)),
        )
    grid = ebm.Grid(10)
    fraction = jnp.linspace(0.0, 1.0, 10)
    capacity = ebm.LandOceanHeatCapacity(fraction, land_water_depth=2.0)(PARAMS, grid)
    per_metre = float(PARAMS.heat_capacity) / float(PARAMS.water_depth)
    ends = capacity[jnp.array([0, -1])]
    np.testing.assert_allclose(ends, [10 * per_metre, 2 * per_metre])


# --- the seasonal model in time -------------------------------------------------


SHORT_RUN = ebm.seasonal_model(ebm.Grid(18))


def _polar_after_a_short_run(obliquity, adjoint="recursive"):
    params = replace(PARAMS, "obliquity", obliquity)
    trajectory = ebm.integrate(
        params, model=SHORT_RUN, years=0.05, T0="present", adjoint=adjoint
    )
    return trajectory.T[-1]


@pytest.fixture(scope="module")
def short_run_finite_difference():
    step, obliquity = 1e-3, 23.446
    up = _polar_after_a_short_run(jnp.asarray(obliquity + step))
    down = _polar_after_a_short_run(jnp.asarray(obliquity - step))
    return float((up - down) / (2 * step))


# The default run checks the reverse adjoint and forward mode on the seasonal model;
# "direct" and "backsolve" are checked against finite differences on the annual
# model by tests/test_integrate.py and here with the full matrix (-m slow).
@pytest.mark.parametrize(
    "adjoint",
    [
        "recursive",
        "forward",
        pytest.param("direct", marks=pytest.mark.slow),
        pytest.param("backsolve", marks=pytest.mark.slow),
    ],
)
def test_seasonal_integration_gradient_under_every_adjoint(
    adjoint, short_run_finite_difference
):
    def polar(obliquity):
        return _polar_after_a_short_run(obliquity, adjoint)

    differentiate = jax.jacfwd if adjoint == "forward" else jax.grad
    gradient = differentiate(polar)(jnp.asarray(23.446))
    # Adaptive steps at rtol 1e-8: differences agree to the solver's tolerance.
    assert float(gradient) == pytest.approx(short_run_finite_difference, rel=1e-5)


def test_seasonal_integration_inside_jit_with_fixed_parameters():
    model = ebm.seasonal_model(ebm.Grid(12))
    model = eqx.tree_at(
        lambda m: m.heat_capacity,
        model,
        ebm.LandOceanHeatCapacity(land_fraction=0.3),
    )

    @jax.jit
    def run():
        return ebm.integrate(PARAMS, model=model, years=0.05).T

    np.testing.assert_allclose(
        run(), ebm.integrate(PARAMS, model=model, years=0.05).T, rtol=1e-12
    )


def test_rosenbrock2_is_second_order():
    # A wide ice transition keeps the forcing smooth enough for the asymptotic order
    # to show at these steps (at 1 K it needs smaller ones: see docs/seasonal.md,
    # "The time step").
    model = ebm.seasonal_model(ebm.Grid(18))
    params = replace(PARAMS, "ice_width", 10.0)

    def run(steps):
        return ebm.integrate_fixed(
            params, model=model, dt=0.5 / steps, steps=steps, stepper="rosenbrock"
        ).T

    reference = run(4096)
    errors = [float(jnp.max(jnp.abs(run(n) - reference))) for n in (32, 64, 128)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 1.85), orders


# --- the periodic steady state --------------------------------------------------

GRID = ebm.Grid(30)
STEPS = 73


@pytest.fixture(scope="module")
def cycle():
    return ebm.periodic_equilibrium(PARAMS, grid=GRID, steps_per_year=STEPS)


def test_shooting_agrees_with_a_long_spinup(cycle):
    assert cycle.converged and cycle.residual < 1e-10
    spun = ebm.seasonal_spinup(PARAMS, grid=GRID, steps_per_year=STEPS, years=80)
    assert float(jnp.max(jnp.abs(spun.T0 - cycle.T0))) < 1e-8
    assert float(jnp.max(jnp.abs(spun.T - cycle.T))) < 1e-8
    # The spin-up is the same map iterated: integrate_fixed over the same steps.
    again = ebm.integrate_fixed(
        PARAMS,
        model=ebm.seasonal_model(GRID),
        dt=1.0 / STEPS,
        steps=STEPS,
        T0=cycle.T0,
        stepper="rosenbrock",
    )
    assert float(jnp.max(jnp.abs(again.T - cycle.T0))) < 1e-9


def test_seasonal_cycle_physics(cycle):
    lat = np.asarray(cycle.lat)
    amplitude = np.asarray(cycle.amplitude)
    # The seasonal range grows from the equator to the poles.
    assert amplitude[np.argmin(np.abs(lat))] < 3.0 < amplitude[-1]
    # Northern summer is warmer than northern winter at high latitude, and the
    # reverse in the south; the ice edge moves with the seasons.
    t = np.asarray(cycle.t)
    july = np.argmin(np.abs(t - 200 / YEAR))
    january = np.argmin(np.abs(t - 15 / YEAR))
    T = np.asarray(cycle.T)
    assert T[july, -1] > T[january, -1] and T[july, 0] < T[january, 0]
    edge = np.asarray(cycle.ice_edge)
    assert edge.max() - edge.min() > 5.0
    assert float(cycle.annual_mean_ice_edge) == pytest.approx(edge.mean())
    # Each hemisphere's edge retreats in its own summer: the southern one is
    # furthest from the equator in January, the northern one in July.
    south = np.asarray(cycle.ice_edge_south)
    assert south[january] < south[july] < 0.0 < edge[january] < edge[july]
    assert float(cycle.ice_edge_range) == pytest.approx(np.ptp(edge))
    assert float(cycle.ice_edge_south_range) == pytest.approx(np.ptp(south))
    assert float(cycle.annual_mean_ice_edge_south) == pytest.approx(south.mean())
    # The orbit is eccentric (perihelion in southern summer): the two hemispheres'
    # cycles are not mirror images: the southern edge's range is the wider.
    assert np.ptp(south) > np.ptp(edge) + 1.0
    # The annual mean of the cycle is close to, not equal to, the annual-mean model's.
    annual_model = ebm.EnergyBalanceModel(
        grid=GRID, insolation=ebm.AnnualMeanInsolation()
    )
    steady = ebm.equilibrium(PARAMS, model=annual_model)
    difference = np.abs(np.asarray(cycle.annual_mean - steady.T))
    assert 0.01 < difference.max() < 10.0


def _cycle_output(params):
    state = ebm.periodic_equilibrium(params, grid=GRID, steps_per_year=STEPS)
    return state.annual_global_mean + 0.1 * state.T[30, -1]


def test_periodic_equilibrium_gradient_matches_finite_differences(cycle):
    output = _cycle_output
    gradient = jax.grad(output)(PARAMS)
    forward = jax.jacfwd(output)(PARAMS)
    for name in ("obliquity", "eccentricity", "long_peri", "D", "water_depth", "A"):
        value = float(getattr(gradient, name))
        assert value == pytest.approx(float(getattr(forward, name)), rel=1e-9)
        expected = finite_difference(output, PARAMS, name, relative_step=1e-5)
        assert value == pytest.approx(expected, rel=1e-6, abs=1e-10)


def test_deep_ocean_and_land_are_differentiable_model_leaves():
    heat_capacity = ebm.LandOceanHeatCapacity(
        land_fraction=jnp.where(GRID.lat > 30, 0.5, 0.1), land_water_depth=1.0
    )
    model = ebm.seasonal_model(GRID, heat_capacity=heat_capacity)
    params = replace(PARAMS, "water_depth", 50.0)

    def polar_range(depth):
        land = eqx.tree_at(lambda m: m.heat_capacity.land_water_depth, model, depth)
        state = ebm.periodic_equilibrium(params, model=land, steps_per_year=STEPS)
        return state.amplitude[-1]

    depth = jnp.asarray(1.0)
    gradient = float(jax.grad(polar_range)(depth))
    step = 1e-4
    expected = (polar_range(depth + step) - polar_range(depth - step)) / (2 * step)
    assert gradient == pytest.approx(float(expected), rel=1e-5)
    # Heavier land damps the seasons.
    assert gradient < 0


def test_unconverged_shooting_says_so():
    # (Without the retry: a longer spin-up brings even one Newton step home.)
    state = ebm.periodic_equilibrium(
        PARAMS, grid=GRID, steps_per_year=STEPS, max_steps=1, retry_years=0,
        throw=False,
    )  # fmt: skip
    assert not state.converged

    # Inside the user's jit, where only a derived field is used, it still raises.
    @jax.jit
    def mean(params):
        return ebm.periodic_equilibrium(
            params, grid=GRID, steps_per_year=STEPS, max_steps=1
        ).annual_global_mean

    with pytest.raises(Exception, match="steps"):
        mean(PARAMS).block_until_ready()


def test_multiple_shooting_gives_single_shootings_cycle_and_gradient():
    # Four parts of the year on a small grid, through the per-step checkpoint
    # (`tests/test_seaice.py` takes the default one, on a model stepped flat): the
    # same cycle and error estimate as one part, and derivatives equal to central
    # finite differences.
    def solve(params, segments):
        return ebm.periodic_equilibrium(
            params, grid=ebm.Grid(6), steps_per_year=20, checkpoint="step",
            segments=segments,
        )  # fmt: skip

    single, split = solve(PARAMS, 1), solve(PARAMS, 4)
    assert float(split.residual) < 1e-10
    np.testing.assert_allclose(split.T, single.T, rtol=0, atol=1e-10)
    assert float(split.step_error) == pytest.approx(float(single.step_error), rel=1e-9)

    def output(params):
        state = solve(params, 4)
        return state.annual_global_mean + 0.1 * state.T[5, -1]

    gradient = jax.grad(output)(PARAMS)
    names = ("obliquity", "D")
    assert_gradient_matches_fd(output, PARAMS, gradient, names, relative_step=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(steps_per_year=2), "`steps_per_year`"),
        (dict(spinup_years=-1), "`spinup_years`"),
        (dict(checkpoint=("binomial", 4)), "reverse mode only"),
        (dict(stepper="rk4"), "`stepper`"),
        (dict(start="tropical"), "`start`"),
        (dict(steps_per_year=365.5), "`steps_per_year`"),
        (dict(segments=0), "`segments`"),
        (dict(segments=2), "segments=2 must divide steps_per_year=365"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ebm.periodic_equilibrium(PARAMS, grid=GRID, **kwargs)


# --- a fixed step that is wrong says so -----------------------------------------

# climlab's configuration (90 cells) with its near-step albedo, cell-centred.
SHARP_MODEL = ebm.seasonal_model(ebm.Grid(90), albedo=ebm.SmoothIceAlbedo())


@pytest.fixture(scope="module")
def sharp_reference():
    """The converged cycle's annual global mean at each width: IMEX at 5,840 steps
    (ROS2 at 5,840 agrees to 0.003 K at 0.1 K; at 0.01 K it is refused)."""
    return {
        width: float(
            ebm.seasonal_spinup(
                replace(PARAMS, "ice_width", width),
                model=SHARP_MODEL,
                years=10,
                stepper="imex",
                steps_per_year=5840,
            ).annual_global_mean
        )
        for width in (0.1, 0.01)
    }


@pytest.mark.parametrize("width", [0.1, 0.01])
def test_sharp_ice_edge_is_right_or_refused(width, sharp_reference):
    # ROS2 linearises the albedo across a 0.1 K step: the spin-up went to a snowball
    # (-40 degC) at 0.1 K and to 17.9 degC at 0.01 K, both reported as successes.
    params = replace(PARAMS, "ice_width", width)
    with pytest.raises(Exception, match="error_tolerance"):
        ebm.seasonal_spinup(params, model=SHARP_MODEL, years=3).T0.block_until_ready()
    failed = ebm.seasonal_spinup(params, model=SHARP_MODEL, years=3, throw=False)
    assert failed.result == ebm.RESULTS.inaccurate_step
    assert float(failed.step_error) > 10.0
    # IMEX (radiation explicit) at the default 365 steps is right, and passes.
    imex = ebm.seasonal_spinup(params, model=SHARP_MODEL, years=10, stepper="imex")
    assert imex.converged and float(imex.step_error) < 1.0
    assert float(imex.annual_global_mean) == pytest.approx(
        sharp_reference[width], abs=0.05
    )


def test_too_few_steps_per_year_are_refused():
    # Four steps a year gave -5.3 degC (12.5 at 48) as a success.
    with pytest.raises(Exception, match="steps_per_year"):
        ebm.seasonal_spinup(PARAMS, grid=GRID, years=1, steps_per_year=4).T0
    cycle = ebm.seasonal_spinup(
        PARAMS, grid=GRID, years=1, steps_per_year=4, throw=False
    )
    assert cycle.result == ebm.RESULTS.inaccurate_step
    # The refusal says both numbers and the remedies for the stepper in use: it
    # recommended stepper='imex' to a run already using it, without the numbers.
    estimate = f"{float(cycle.step_error):.3g} K"
    with pytest.raises(Exception) as refused:
        ebm.seasonal_spinup(PARAMS, grid=GRID, years=1, steps_per_year=4)
    message = str(refused.value)
    assert estimate in message and "`error_tolerance` = 10 K" in message
    assert "Rosenbrock2 and 4 steps a year" in message and "stepper='imex'" in message
    tight = dict(grid=GRID, years=1, stepper="imex", error_tolerance=1e-6)
    imex = ebm.seasonal_spinup(PARAMS, throw=False, **tight)
    assert imex.result == ebm.RESULTS.inaccurate_step
    with pytest.raises(Exception, match="`error_tolerance` = 1e-06 K") as refused:
        ebm.seasonal_spinup(PARAMS, **tight)
    assert "IMEXEuler" in str(refused.value)
    assert "stepper='imex'" not in str(refused.value)
    # The estimate is conservative, not a wall: a looser tolerance lets it through.
    loose = ebm.seasonal_spinup(
        PARAMS,
        grid=GRID,
        years=1,
        steps_per_year=4,
        error_tolerance=2 * float(cycle.step_error),
    )
    assert loose.converged
    with pytest.raises(ValueError, match="`error_tolerance`"):
        ebm.seasonal_spinup(PARAMS, grid=GRID, years=1, error_tolerance=-1.0)


def test_default_cycle_passes_its_error_check(cycle):
    # 73 ROS2 steps a year are within 0.1 K of the converged cycle; the estimate
    # (its embedded first-order solution's) is several K but within the default.
    assert cycle.converged and 0.0 < float(cycle.step_error) < 10.0


def test_seasonal_entry_points_compile_once():
    values = (PARAMS, ebm.Params(D=0.5, obliquity=24.0), ebm.Params(water_depth=30.0))

    def cycle(params):
        return ebm.periodic_equilibrium(params, grid=GRID, steps_per_year=STEPS)

    assert_compiles_once(lambda p: cycle(p).T, *values)
    # (the output whose gradient is checked against finite differences above)
    assert_compiles_once(jax.grad(_cycle_output), *values)
    assert_compiles_once(
        lambda p: ebm.seasonal_spinup(p, grid=GRID, steps_per_year=STEPS, years=80).T,
        *values,
    )


def test_seasonal_progress_on_stderr_without_changing_the_cycle(capfd):
    kwargs = dict(grid=ebm.Grid(12), steps_per_year=24)
    quiet = ebm.periodic_equilibrium(PARAMS, **kwargs)
    output = capfd.readouterr()
    assert output.err == "" and output.out == ""
    shown = ebm.periodic_equilibrium(PARAMS, progress=True, **kwargs)
    output = capfd.readouterr()
    assert "100.00%|" in output.err and output.out == ""
    assert int(shown.num_steps) == int(quiet.num_steps)
    np.testing.assert_array_equal(shown.T, quiet.T)
    with compilations() as compiled:
        ebm.periodic_equilibrium(PARAMS, progress=False, **kwargs)
        ebm.periodic_equilibrium(PARAMS, progress=True, **kwargs)
    assert not compiled, compiled
    # A spin-up counts its years.
    spin = dict(years=3, error_tolerance=float("inf"), **kwargs)
    quiet = ebm.seasonal_spinup(PARAMS, **spin)
    shown = ebm.seasonal_spinup(PARAMS, progress=True, **spin)
    assert "100.00%|" in capfd.readouterr().err
    np.testing.assert_array_equal(shown.T, quiet.T)
