"""`ebm.SeaIceModel` (Wagner & Eisenman 2015): the diffusion on the x grid, the map
from enthalpy to temperature at its switches, the O(n) step, the periodic state
against a long spin-up and its derivatives against finite differences, and the
refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._seaice.model import below_melting, ice_cover, ice_enthalpy
from ebm._seaice.stepper import euler_step
from helpers import assert_gradient_matches_fd, replace


N = 20
STEPS = 100
MODEL = ebm.SeaIceModel(N)
PARAMS = ebm.SeaIceParams()
HARD = ebm.SeaIceParams(enthalpy_width=0.0, melt_width=0.0)


def _reference_diffusion(n, D):
    """WE15's diffusion matrix, as its reference code builds it (Appendix A)."""
    dx = 1.0 / n
    xb = np.arange(dx, 1.0, dx)
    lam = D / dx**2 * (1 - xb**2)
    L1 = np.append(0, -lam)
    L2 = np.append(-lam, 0)
    L3 = -L1 - L2
    return -np.diag(L3) - np.diag(L2[: n - 1], 1) - np.diag(L1[1:n], -1)


def test_the_diffusion_conserves_energy_and_is_the_reference_operator():
    T = jax.random.normal(jax.random.key(0), (N,)) * 10.0
    divergence = MODEL.transport(T, PARAMS)
    # Equal areas: no energy is made or lost.
    assert abs(float(jnp.mean(divergence))) < 1e-12 * float(
        jnp.max(jnp.abs(divergence))
    )
    np.testing.assert_allclose(
        divergence, _reference_diffusion(N, 0.6) @ np.asarray(T), rtol=1e-12, atol=1e-9
    )
    np.testing.assert_allclose(
        MODEL.transport_matrix(PARAMS).mv(T), divergence, rtol=1e-12, atol=1e-9
    )


def test_the_switches_are_continuous_and_converge_to_steps():
    E = jnp.linspace(-3.0, 3.0, 601)
    for width in (2.0, 0.5, 0.1):
        cover = ice_cover(E, width)
        # Continuous: no jump between neighbouring values 0.01 W yr m-2 apart.
        assert float(jnp.max(jnp.abs(jnp.diff(cover)))) < 0.01 / width
        e = ice_enthalpy(E, width)
        assert float(jnp.max(jnp.abs(jnp.diff(e)))) <= 0.01 + 1e-12
    # Away from the switch, each blend is its step to within exp(-2 |E| / width).
    far = jnp.abs(E) > 1.0
    for width in (0.2, 0.1):
        error = jnp.abs(ice_cover(E, width) - ice_cover(E, 0.0))
        assert float(jnp.max(jnp.where(far, error, 0.0))) < np.exp(-2.0 / width)
    T0 = jnp.linspace(-1.0, 1.0, 201)
    for width in (0.1, 0.01):
        # min(T0, 0) within width log 2, everywhere.
        error = jnp.abs(below_melting(T0, width) - jnp.minimum(T0, 0.0))
        assert float(jnp.max(error)) <= width * np.log(2.0) + 1e-12


def test_the_temperature_is_continuous_through_the_ice_edge_and_the_melting_point():
    # One box's temperature as its enthalpy goes from ice to water, for a surface
    # budget that would melt the ice's surface (40 W m-2) and one that freezes it.
    E = jnp.linspace(-2.0, 2.0, 4001)
    for budget in (40.0, -40.0):
        for params in (PARAMS, HARD):
            T = MODEL.temperature_of(E, jnp.full_like(E, budget), params)
            assert float(jnp.max(jnp.abs(jnp.diff(T)))) < 1e-2, (budget, params)
        # At the hard switch, T -> 0 from both sides (open water's E / cw, the
        # ice's conduction-limited T0).
        T = MODEL.temperature_of(jnp.array([-1e-6, 1e-6]), jnp.full(2, budget), HARD)
        assert float(jnp.max(jnp.abs(T))) < 1e-5


def test_the_temperature_rises_with_the_enthalpy_at_any_budget():
    # WE15's T(E) never falls as E rises (0 or below under ice, E / cw above 0);
    # the blended one must not either. With E / cw in the water's part, the blend
    # of a negative E / cw with a melting surface's 0 fell by 0.01 K per W yr m-2
    # just below E = 0, and a step's equations (their Jacobian 1 + dt dT/dE times
    # the transport's ~ 2 D n^2) lost their unique solution at fine grids.
    E = jnp.linspace(-6.0, 6.0, 2401)
    slope = jax.vmap(jax.grad(MODEL.temperature_of), (0, None, None))
    for budget in np.linspace(-300.0, 300.0, 25):
        for params in (PARAMS, ebm.SeaIceParams(enthalpy_width=2.0, melt_width=0.5)):
            assert float(jnp.min(slope(E, budget, params))) >= -1e-12, budget


def test_a_long_step_near_the_summer_ice_edge_is_solved():
    # At n = 50, a step of a tenth of a year in summer from thin ice poleward of
    # x = 0.317: with the falling blend (above) the step's equations had no
    # solution that Newton's method could reach (residual 1e-3 K, the step
    # inaccurate); the same failure, at 365 steps a year and n = 400, stopped every
    # spin-up and periodic state at F = -10 W m-2.
    model = ebm.SeaIceModel(50)
    x = model.x
    edge = 0.3 + 0.67 / 39
    E = jnp.where(x < edge, 20.0 * (edge - x), -0.2 * 50 * (x - edge))
    absorbed = model.absorbed(0.5, E, PARAMS)
    _, residual = model.implicit_temperature(E, absorbed, PARAMS, 0.1)
    assert float(residual) < 1e-9


def test_one_step_solves_its_equations():
    y = MODEL.initial_state(PARAMS)
    E = y["E"] - 150.0  # ice poleward of about 40 degrees
    dt = 1e-3
    E_next, residual = euler_step(MODEL, 0.25, E, HARD, dt)
    assert float(residual) < 1e-9
    # Backward Euler in T: E_next - E = dt (a(E) S - A - B T + D T'' + F + Fb) with
    # T the temperature of E_next under that budget.
    absorbed = MODEL.coalbedo(E, HARD) * MODEL.insolation(0.25 + 0.5 * dt, HARD) - 193.0
    T = (E_next - E) / dt - absorbed - HARD.Fb
    # Solve -B T + D T'' = T_rhs for T, densely, and check T is E_next's.
    matrix = _reference_diffusion(N, 0.6) - 2.1 * np.eye(N)
    T = np.linalg.solve(matrix, np.asarray(T))
    budget = absorbed + MODEL.transport(jnp.asarray(T), HARD)
    np.testing.assert_allclose(MODEL.temperature_of(E_next, budget, HARD), T, atol=1e-8)
    # Both regimes are there: open water, and ice whose surface is below freezing.
    assert np.any(E_next > 0) and np.any((E_next < 0) & (T < -1.0))


def test_the_surface_temperature_is_solved_at_fine_grids_in_a_snowballs_summer():
    # Where the summer sun would melt the snowball's surface without transport, the
    # melting point's switch has no slope and each of Newton's iterations moves the
    # melting region's edge by about a box: at n = 400 it takes 42 iterations, more
    # than a fixed 40 allowed (the temperature was NaN, every step inaccurate, and
    # the periodic state at F = -20 W m-2 out of reach).
    model = ebm.SeaIceModel(400)
    params = ebm.SeaIceParams(F=-20.0)
    y = {"E": jnp.full(400, -130.0)}
    T, residual = model.diagnose(0.5, y, params)
    assert float(residual) < 1e-9
    assert bool(jnp.all(T < 0.0))
    _, residual = euler_step(model, 0.5, y["E"], params, 1.0 / 365)
    assert float(residual) < 1e-9


def test_the_surface_temperature_is_solved_where_newtons_full_steps_circle():
    # At n = 400, F = -10 W m-2, 130 days into the fifth year from the present
    # climate, the full steps of Newton's method for the step's temperature circle
    # at the ice edge's box without converging (every step was inaccurate); the
    # step halved where it would increase the residual converges.
    run = ebm.integrate_fixed(
        ebm.SeaIceParams(F=-10.0), model=ebm.SeaIceModel(400), dt=1.0 / 365,
        steps=4 * 365 + 130, throw=False,
    )  # fmt: skip
    assert bool(run.result == ebm.RESULTS.successful)
    assert bool(jnp.all(jnp.isfinite(run.T)))


@pytest.fixture(scope="module")
def cycle():
    return ebm.periodic_equilibrium(PARAMS, model=MODEL, steps_per_year=STEPS)


def test_the_periodic_state_is_the_long_spin_up(cycle):
    assert isinstance(cycle, ebm.PeriodicState) and bool(cycle.converged)
    assert float(cycle.residual) < 1e-8
    assert [v.name for v in cycle.variables] == ["E"]
    assert cycle.states["E"].shape == (STEPS, N) == cycle.T.shape
    # WE15's climate: ice at the pole all year, that retreats in summer.
    edge = jax.vmap(MODEL.ice_edge)(cycle.states)
    assert 0.75 < float(edge.min()) < float(edge.max()) < 1.0
    assert np.all(cycle.states["E"][:, -1] < 0)
    # The ice's surface melts in summer (T = 0 within the blend) and is far below
    # freezing in winter.
    assert float(cycle.T[:, -1].max()) > -0.1 and float(cycle.T[:, -1].min()) < -20.0
    spun = ebm.seasonal_spinup(PARAMS, model=MODEL, years=300, steps_per_year=STEPS)
    np.testing.assert_allclose(spun.states["E"], cycle.states["E"], atol=1e-6)
    np.testing.assert_allclose(spun.T, cycle.T, atol=1e-6)


def test_plot_run_draws_the_enthalpy_against_time_and_x(cycle):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = ebm.plot_run(cycle)
    try:
        panel = fig.axes[0]
        # One map of E over the year and x = sin(latitude), not a line per box.
        assert len(panel.collections) == 1 and not panel.lines
        assert panel.get_ylabel() == "sine of latitude (x, 1)"
        np.testing.assert_allclose(panel.get_ylim(), (0.0, 1.0), atol=1e-12)
    finally:
        plt.close(fig)


def test_the_figure_labels_its_lines_and_says_when_the_ice_has_no_thermodynamics(
    cycle,
):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = ebm.plot_sea_ice(cycle, MODEL, PARAMS)
    try:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert labels == ["ice edge", "edge of the melting ice surface"]
        assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == [
            "ice edge"
        ]
        assert "ice thickness (m)" in [a.get_ylabel() for a in fig.axes]
    finally:
        plt.close(fig)
    bare = ebm.SeaIceModel(N, thermodynamics=False)
    year = ebm.seasonal_spinup(PARAMS, model=bare, years=1, steps_per_year=STEPS)
    fig = ebm.plot_sea_ice(year, bare, PARAMS)
    try:
        assert "without thermodynamics" in fig._suptitle.get_text()
        words = " ".join(a.get_ylabel() for a in fig.axes)
        assert "thickness" not in words and "surface enthalpy" in words
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert labels == ["ice edge"]  # the ice's surface never melts
    finally:
        plt.close(fig)


def _outputs(params):
    """The annual, hemispheric mean temperature and the summer (most poleward) ice
    edge."""
    cycle = ebm.periodic_equilibrium(params, model=MODEL, steps_per_year=STEPS)
    return jnp.stack([cycle.annual_global_mean, ebm.summer_ice_edge(cycle, MODEL)])


def test_the_periodic_state_is_differentiable():
    jacobian = jax.jacrev(_outputs)(PARAMS)
    for name in ("F", "D", "S1", "ai", "k"):
        step = 1e-5 * max(abs(float(getattr(PARAMS, name))), 1.0)
        up = _outputs(replace(PARAMS, name, getattr(PARAMS, name) + step))
        down = _outputs(replace(PARAMS, name, getattr(PARAMS, name) - step))
        expected = (up - down) / (2 * step)
        np.testing.assert_allclose(
            getattr(jacobian, name), expected, rtol=1e-4, atol=1e-7, err_msg=name
        )
    # More forcing: warmer, and less summer ice.
    assert float(jacobian.F[0]) > 0 and float(jacobian.F[1]) > 0


def test_refusals():
    with pytest.raises(ValueError, match="`n` must be an integer >= 2, got 1"):
        ebm.SeaIceModel(1)
    with pytest.raises(ValueError, match="`ai` must be in \\[0, 1\\], got 1.5"):
        ebm.SeaIceParams(ai=1.5)
    with pytest.raises(ValueError, match="`melt_width` must be >= 0 K"):
        ebm.SeaIceParams(melt_width=-1.0)
    with pytest.raises(ValueError, match="SeaIceEuler steps ebm.SeaIceModel"):
        ebm.integrate_fixed(
            ebm.TwoLayerParams(), model=ebm.TwoLayerModel(), dt=0.1, steps=2,
            stepper=ebm.SeaIceEuler(),
        )  # fmt: skip
    with pytest.raises(TypeError, match="model.temperature\\(t, y, params\\)"):
        MODEL.surface_temperature(MODEL.initial_state(PARAMS))


def test_an_inaccurate_year_names_the_models_own_switches_and_units():
    # Its switches are `enthalpy_width` and `melt_width` (the zonal model's
    # `ice_width` is no parameter of it), its state in W yr m-2, not K.
    with pytest.raises(Exception, match="exceeds `error_tolerance`") as raised:
        ebm.periodic_equilibrium(
            PARAMS, model=MODEL, steps_per_year=STEPS, error_tolerance=1e-6
        )
    message = str(raised.value)
    assert "wider switches (`enthalpy_width`, `melt_width`)" in message
    assert "1e-06 W yr m-2 with SeaIceEuler" in message
    assert "ice_width" not in message and " K " not in message
    # The automatic retry (100 years more of spin-up) failed the same way, and says
    # it was tried.
    assert "after a retry from a spin-up of 104 years: `retry_years`" in message


class _Unsolved(ebm.SeaIceEuler):
    """SeaIceEuler whose every step reports its surface temperature unsolved (an
    infinite error estimate), as its own step does where Newton's method fails."""

    def step(self, model, state, t, v, params, dt):
        v_next, error = super().step(model, state, t, v, params, dt)
        return v_next, jnp.full_like(error, jnp.inf)


def test_a_step_that_did_not_solve_its_equations_says_so():
    # Not "the error exceeds `error_tolerance`" (an infinite error that no tolerance
    # admits): what the step did not solve, and what helps.
    settings = dict(model=MODEL, dt=1.0 / STEPS, steps=2, stepper=_Unsolved())
    run = ebm.integrate_fixed(PARAMS, throw=False, **settings)
    assert run.result == ebm.RESULTS.unsolved_step
    # An infinite tolerance turns the check off, as for the error estimate (the
    # switches as steps leave some steps unsolved; the reference comparisons run
    # them so).
    unchecked = ebm.integrate_fixed(PARAMS, error_tolerance=float("inf"), **settings)
    assert unchecked.result == ebm.RESULTS.successful
    with pytest.raises(Exception, match="did not solve") as raised:
        ebm.seasonal_spinup(
            PARAMS, model=MODEL, years=1, steps_per_year=STEPS, stepper=_Unsolved()
        )
    message = str(raised.value)
    assert "did not solve its equations for the surface temperature" in message
    assert "wider switches (`enthalpy_width`, `melt_width`)" in message
    assert "error_tolerance" not in message and "inf " not in message


def test_a_failed_shooting_is_retried_after_a_longer_spin_up(cycle):
    # Newton's method from the start itself (no spin-up) does not converge in 4
    # steps; after 40 years of spin-up it does, to the periodic state the default
    # call finds. The retry runs the same compiled program.
    settings = dict(model=MODEL, steps_per_year=STEPS, spinup_years=0, max_steps=4)
    failed = ebm.periodic_equilibrium(PARAMS, retry_years=0, throw=False, **settings)
    assert failed.result == ebm.RESULTS.nonlinear_max_steps_reached
    retried = ebm.periodic_equilibrium(PARAMS, retry_years=40, **settings)
    assert retried.converged
    np.testing.assert_allclose(
        retried.state0["E"], cycle.state0["E"], rtol=0, atol=1e-8
    )


NARROW = ebm.SeaIceParams(
    F=-5.0, enthalpy_width=PARAMS.enthalpy_width / 10,
    melt_width=PARAMS.melt_width / 10,
)  # fmt: skip


@pytest.mark.parametrize(
    "n, params, periodic, atol",
    [
        # The paper's n = 50 with its other defaults, where one shooting from the
        # 4-year spin-up does not converge and the retry does; the spin-up's last
        # year is periodic to 3e-9.
        (50, PARAMS, 1e-8, 1e-7),
        # Switches a tenth as wide in a cold climate: the ice edge's box crosses
        # them within days. The spin-up converges by about 0.9 a year here: its
        # last year is periodic to 1.2e-5 W yr m-2 and within 1.3e-4 of the
        # shooting's (other periodic states are watts away).
        (N, NARROW, 1e-4, 1e-3),
    ],
    ids=["papers-grid", "narrow-switches-cold"],
)
def test_the_periodic_state_at_1000_steps_a_year_is_a_150_year_spin_up(
    n, params, periodic, atol
):
    settings = dict(model=ebm.SeaIceModel(n), steps_per_year=1000)
    cycle = ebm.periodic_equilibrium(params, **settings)
    assert float(cycle.residual) < 1e-10
    spun = ebm.seasonal_spinup(params, years=150, **settings)
    assert float(spun.residual) < periodic
    np.testing.assert_allclose(spun.states["E"], cycle.states["E"], rtol=0, atol=atol)


def test_a_sweep_is_the_periodic_states_one_by_one_and_shows_the_snowball_loop():
    # The classic diffusive model (no thermodynamics, no seasonal cycle): cooling
    # from an ice cap falls into the snowball, and warming from there stays in it.
    model = ebm.SeaIceModel(N, thermodynamics=False)
    params = model.Params(S1=0.0)
    F = np.array([0.0, -6.0, -12.0, -18.0])
    cooling = ebm.periodic_sweep(params, "F", F, model=model, steps_per_year=STEPS)
    warming = ebm.periodic_sweep(
        params, "F", F[::-1], model=model, steps_per_year=STEPS,
        start={"E": cooling.state0["E"][-1]},
    )  # fmt: skip
    assert bool(jnp.all(cooling.converged)) and bool(jnp.all(warming.converged))
    edge = jax.vmap(model.ice_edge)
    cooling_edge = edge(cooling.state0)
    warming_edge = edge(warming.state0)[::-1]
    assert float(cooling_edge[0]) > 0.7 and float(cooling_edge[-1]) == 0.0
    assert np.all(np.asarray(warming_edge) == 0.0)  # the snowball persists
    # Each point is the periodic state from its own start, where it is unique.
    one = ebm.periodic_equilibrium(
        model.Params(S1=0.0, F=-6.0), model=model, steps_per_year=STEPS
    )
    np.testing.assert_allclose(cooling.state0["E"][1], one.state0["E"], atol=1e-6)
    # Its file: every variable along the sweep's points (it crashed in xarray).
    dataset = ebm.to_dataset(cooling, params)
    assert dataset["E"].dims == ("point", "time", "x")
    assert dataset["param_F"].values.tolist() == F.tolist()
    assert dataset["converged"].values.all() and "param_F" not in dataset.attrs


def test_the_forcing_that_removes_the_summer_ice_and_its_gradient():
    # On the small grid the last box's summer ice melts out at once (a jump of the
    # polar summer enthalpy f in F) unless the switch is blended over a box's worth
    # of enthalpy: 5 W yr m-2 makes F* a smooth root of f.
    from ebm._seaice.metrics import polar_summer_enthalpy

    params = ebm.SeaIceParams(enthalpy_width=5.0)
    value, gradient = jax.value_and_grad(
        lambda p: ebm.ice_free_forcing(
            p, model=MODEL, bracket=(1.0, 3.0), steps_per_year=STEPS, spinup_years=4
        )
    )(params)

    def f(F, D):
        p = replace(replace(params, "F", F), "D", D)
        cycle = ebm.periodic_equilibrium(p, model=MODEL, steps_per_year=STEPS)
        return float(polar_summer_enthalpy(cycle))

    # Summer ice at the pole just below F*, none just above (f in W yr m-2).
    dF, dD, D = 1e-4, 1e-4, float(params.D)
    below, above = f(value - dF, D), f(value + dF, D)
    assert below < 0.0 < above
    # Its derivative, by central differences of f: dF*/dD = -f_D / f_F.
    f_D = (f(value, D + dD) - f(value, D - dD)) / (2 * dD)
    f_F = (above - below) / (2 * dF)
    # More transport warms the pole: less forcing removes its summer ice.
    assert float(gradient.D) == pytest.approx(-f_D / f_F, rel=1e-4)
    assert float(gradient.D) < 0.0
    assert float(gradient.F) == 0.0

    # A bracket without the root: NaN and a failure code, or the error by name
    # (optimistix's check raised inside the program whatever `throw`).
    def outside(p, throw):
        return ebm.ice_free_forcing(
            p, model=MODEL, bracket=(5.0, 6.0), steps_per_year=STEPS,
            spinup_years=4, throw=throw,
        )  # fmt: skip

    value, gradient = jax.value_and_grad(lambda p: outside(p, False))(params)
    assert np.isnan(value)
    with pytest.raises(Exception, match="The bracket does not hold a root"):
        jax.value_and_grad(lambda p: outside(p, True))(params)


def test_ice_free_forcing_refusals():
    for bracket in ((3.0, 1.0), (1.0,), "ab"):
        with pytest.raises(ValueError, match="`bracket` must be two forcings"):
            ebm.ice_free_forcing(PARAMS, model=MODEL, bracket=bracket)
    with pytest.raises(TypeError, match="`model` must be an ebm.SeaIceModel"):
        ebm.ice_free_forcing(
            ebm.TwoLayerParams(), model=ebm.TwoLayerModel(), bracket=(0.0, 1.0)
        )


def test_sweep_refusals():
    with pytest.raises(ValueError, match="`parameter` must be a scalar parameter"):
        ebm.periodic_sweep(PARAMS, "G", [0.0], model=MODEL)
    with pytest.raises(ValueError, match="`values` must be a non-empty 1-d array"):
        ebm.periodic_sweep(PARAMS, "F", [0.0, np.nan], model=MODEL)
    with pytest.raises(ValueError, match="allowed `ai`, in \\[0, 1\\]; got 2"):
        ebm.periodic_sweep(PARAMS, "ai", [0.5, 2.0], model=MODEL)


def test_integrate_and_equilibrium_take_the_model():
    # diffrax on the ODE (the temperature solved inside the vector field) against
    # the model's own fixed step; and without a seasonal cycle, a steady state.
    # The fixed step is first order: its error halves with its step.
    run = ebm.integrate(PARAMS, model=MODEL, years=0.1)
    errors = []
    for steps in (1000, 2000):
        fixed = ebm.integrate_fixed(PARAMS, model=MODEL, dt=0.1 / steps, steps=steps)
        errors.append(float(jnp.max(jnp.abs(run.state["E"] - fixed.state["E"]))))
    assert errors[0] < 1e-2 and 0.4 < errors[1] / errors[0] < 0.6, errors
    np.testing.assert_allclose(run.T, fixed.T, atol=3e-3)
    steady = ebm.equilibrium(ebm.SeaIceParams(S1=0.0), model=MODEL)
    assert float(steady.residual) < 1e-9
    tendency = MODEL(0.0, {"E": steady.state["E"]}, ebm.SeaIceParams(S1=0.0))
    assert float(jnp.max(jnp.abs(tendency["E"]))) < 1e-9


def test_the_command_line(capsys, tmp_path):
    import json

    import xarray

    from ebm._cli.main import main

    path = tmp_path / "cycle.nc"
    arguments = ["seaice", "--n", str(N), "--steps-per-year", str(STEPS), "--json"]
    arguments += ["--no-plot", "--no-gradient", "--netcdf", str(path), "--F", "2"]
    assert main(arguments) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params"]["F"] == 2.0
    south, north = report["ice_edge_min_max_degN"]
    assert 40.0 < south < north < 90.0
    with xarray.open_dataset(path) as dataset:
        assert dataset["E"].dims == ("time", "x") and dataset["T"].dims == ("time", "x")
        np.testing.assert_allclose(dataset["x"], MODEL.x)
        assert dataset["x"].attrs["long_name"] == "sine of latitude"
        # Its year starts at the solstice, which no calendar date of the file's
        # 365-day calendar from 1 January would say.
        assert dataset["time"].attrs["units"] == "days"
        assert "northern winter solstice" in dataset["time"].attrs["long_name"]
        # Units of the state (enthalpy), the latitude beside x, and what the model
        # computes from its state: the ice's thickness and its edge in degrees.
        for name in ("step_error", "residual"):
            assert dataset[name].attrs["units"] == "W yr m-2"
        np.testing.assert_allclose(
            dataset["x_latitude"], np.degrees(np.arcsin(MODEL.x)), rtol=1e-14
        )
        assert dataset["x_latitude"].attrs["units"] == "degrees_north"
        assert dataset["h"].dims == ("time", "x") and dataset["h"].attrs["units"] == "m"
        assert float(dataset["h"][:, -1].min()) > 0.0  # ice at the pole all year
        edge = dataset["ice_edge"]
        assert edge.dims == ("time",) and edge.attrs["units"] == "degrees_north"
        assert [float(edge.min()), float(edge.max())] == pytest.approx(
            [south, north], rel=1e-12
        )
    assert main(["seaice", "--ai", "2"]) == 2
    assert "`ai` must be in [0, 1], got 2" in capsys.readouterr().err


def test_the_sweeps_stability_check_is_the_years_leading_multiplier():
    # The two-layer model's year multiplies its slowest mode by exp(lambda_max),
    # lambda_max the layers' matrix's largest eigenvalue (its slow relaxation).
    from ebm._steady.periodic_sweep import leading_multiplier
    from ebm._steady.seasonal import _setup

    model = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(2.0))
    params = model.Params()
    year, params, start, _, _ = _setup(
        params, model, None, None, None, "none", 73, None, True
    )  # fmt: skip
    matrix, _ = model.system(params)
    expected = np.exp(np.max(np.linalg.eigvals(np.asarray(matrix)).real))
    multiplier = float(leading_multiplier(year, start, params))
    assert multiplier == pytest.approx(expected, rel=2e-2)
    assert multiplier < 1.0


@pytest.fixture(scope="module")
def branch():
    # The classic diffusive model (no thermodynamics, no seasonal cycle) on the
    # small grid, its albedo switch blended over 5 W yr m-2: the ice edge locks
    # to each box over a range of F, so the branch of the ice cap zig-zags, with a
    # pair of folds per box (the grid's own hysteresis).
    model = ebm.SeaIceModel(N, thermodynamics=False)
    params = model.Params(S1=0.0, enthalpy_width=5.0)
    return model, ebm.periodic_continuation(
        params, "F", stop=-6.0, model=model, steps_per_year=STEPS, max_step=1.0
    )


def test_periodic_continuation_turns_at_folds_where_the_multiplier_crosses_one(
    branch,
):
    model, branch = branch
    assert branch.result == ebm.RESULTS.successful
    F = np.asarray(branch.values)
    assert F[0] == 0.0 and F[-1] == pytest.approx(-6.0, abs=1e-9)
    # Every point is a periodic state.
    assert float(jnp.max(branch.cycles.residual)) < 1e-6
    # Folds: the parameter turns; between each pair the states are unstable, and
    # the leading multiplier passes 1 where the parameter turns (within a step).
    assert branch.folds.shape[0] >= 4
    slope_turns = np.flatnonzero(np.diff(np.sign(branch.slope)) != 0)
    stability_turns = np.flatnonzero(np.diff(np.asarray(branch.stable)) != 0)
    np.testing.assert_array_equal(slope_turns, stability_turns)
    lower, upper = float(branch.folds[0]), float(branch.folds[1])
    assert lower < upper and F[slope_turns[0]] == pytest.approx(lower, abs=0.05)
    # The fold is where the unstable and stable states meet: the multiplier,
    # interpolated in F along the branch to the fold, is 1.
    near = slice(slope_turns[0] - 2, slope_turns[0] + 3)
    multiplier = np.asarray(branch.floquet_multiplier)[near]
    assert multiplier.min() < 1.0 < multiplier.max()
    # The ice edge moves equatorward along the branch as F falls.
    edge = np.asarray(jax.vmap(model.ice_edge)(branch.cycles.state0))
    assert edge[-1] < edge[0] < 1.0


def test_the_branchs_stability_is_what_a_spin_up_does(branch):
    # A stable point's state, disturbed, returns to it; the most unstable point's,
    # disturbed either way, leaves it for the two stable states at its F.
    model, branch = branch
    multiplier = np.asarray(branch.floquet_multiplier)
    unstable, stable = int(np.argmax(multiplier)), int(np.argmin(multiplier))
    params = model.Params(S1=0.0, enthalpy_width=5.0)

    def spun(index, shift, years=60):
        p = replace(params, "F", branch.values[index])
        start = {"E": branch.cycles.state0["E"][index] + shift}
        run = ebm.seasonal_spinup(
            p, model=model, years=years, steps_per_year=STEPS, start=start
        )
        return np.asarray(run.state0["E"] - branch.cycles.state0["E"][index])

    assert np.max(np.abs(spun(stable, 0.5))) < 1e-3
    up, down = spun(unstable, 0.5), spun(unstable, -0.5)
    assert np.mean(up) > 1.0 and np.mean(down) < -1.0


def test_periodic_continuation_does_not_jump_to_another_piece_of_the_branch():
    # The sharp default switch without a seasonal cycle: the ice cap's branch is a
    # staircase of pieces, one per box, joined by folds narrower than a step. A
    # corrector that lands on the next piece (its tangent parallel to this one's)
    # must not be accepted: the step is halved instead, and where a corner is
    # sharper than the smallest step the walk says so rather than jumping on.
    model = ebm.SeaIceModel(N, thermodynamics=False)
    max_step = 1.0
    branch = ebm.periodic_continuation(
        model.Params(S1=0.0), "F", stop=-20.0, model=model, steps_per_year=STEPS,
        max_step=max_step, throw=False,
    )  # fmt: skip
    assert float(jnp.max(branch.cycles.residual)) < 1e-6
    # Each point is at most a step along the tangent plus the corrector's move
    # from the last (a jump to the next piece is several steps long).
    assert np.max(np.diff(np.asarray(branch.arclength))) <= 2 * max_step
    assert branch.result in (ebm.RESULTS.successful, ebm.RESULTS.step_too_small)


def test_periodic_continuation_refusals():
    with pytest.raises(ValueError, match="`parameter` must be a scalar parameter"):
        ebm.periodic_continuation(PARAMS, "G", stop=1.0, model=MODEL)
    with pytest.raises(ValueError, match="`stop` must differ from the starting"):
        ebm.periodic_continuation(PARAMS, "F", stop=0.0, model=MODEL)
    with pytest.raises(ValueError, match="reaches ai = 2.0"):
        ebm.periodic_continuation(PARAMS, "ai", stop=2.0, model=MODEL)


def test_the_ice_edge_in_degrees_and_its_derivative_have_no_nan_without_ice():
    from ebm._seaice.metrics import edge_latitude

    x = jnp.array([0.0, 0.3, 0.9, 1.0])
    np.testing.assert_allclose(
        edge_latitude(x), np.degrees(np.arcsin(np.asarray(x))), rtol=1e-14
    )
    slope = jax.vmap(jax.grad(edge_latitude))(x)
    expected = np.degrees(1.0) / np.sqrt(1.0 - np.asarray(x[:3]) ** 2)
    np.testing.assert_allclose(slope[:3], expected, rtol=1e-14)
    assert float(slope[3]) == 0.0


# --- Without a seasonal cycle (S1 = 0): steady states, their branch and folds -----

STEADY = ebm.SeaIceParams(S1=0.0)


@pytest.fixture(scope="module")
def steady_loop():
    """The S1 = 0 branch from today's climate down through the ice cap's folds,
    back up the unstable branch to the snowball's fold and down the snowball."""
    return ebm.continuation(STEADY, "F", stop=-30.0, bounds=(-30.0, 60.0), model=MODEL)


def test_the_s1_0_hysteresis_loop_is_traced_to_its_end(steady_loop):
    branch = steady_loop
    values, edge = np.asarray(branch.values), np.asarray(branch.ice_edge)
    stable = np.asarray(branch.stable)
    # It starts on the stable warm branch with an ice cap and ends on the bound,
    # on the stable snowball, having turned at the snowball's fold above F = 20.
    assert branch.result == ebm.RESULTS.successful
    assert stable[0] and 45.0 < edge[0] < 90.0
    assert values[-1] == -30.0 and stable[-1] and edge[-1] == 0.0
    snowball_fold = branch.folds[-1]
    assert values.max() <= float(snowball_fold.value) < values.max() + 1e-3
    assert values.max() > 20.0
    # Stability changes at every fold and only there.
    assert len(branch.segments()) == len(branch.folds) + 1
    for fold in branch.folds:
        assert float(fold.residual) < 1e-8
        tendency = MODEL(0.0, fold.state, replace(STEADY, "F", fold.value))["E"]
        assert float(jnp.max(jnp.abs(tendency))) < 1e-8
    # Refuses a seasonal cycle: its states are periodic.
    with pytest.raises(ValueError, match="S1=338.0 W m-2.*periodic"):
        ebm.continuation(PARAMS, "F", stop=-5.0, model=MODEL)
    with pytest.raises(ValueError, match="S1=338.0 W m-2.*periodic"):
        ebm.equilibrium(PARAMS, model=MODEL)


def test_the_s1_0_fold_and_its_gradient(steady_loop):
    first = steady_loop.folds[0]
    refined = ebm.fold(STEADY, "F", guess=first, model=MODEL)
    assert float(refined.value) == pytest.approx(float(first.value), abs=1e-10)
    gradient = jax.grad(lambda p: ebm.fold(p, "F", guess=first, model=MODEL).value)(
        STEADY
    )
    step = 1e-5
    for name in ("D", "B", "ai"):

        def value(delta, name=name):
            moved = replace(STEADY, name, getattr(STEADY, name) + delta)
            return float(ebm.fold(moved, "F", guess=first, model=MODEL).value)

        difference = (value(step) - value(-step)) / (2 * step)
        assert float(getattr(gradient, name)) == pytest.approx(difference, rel=1e-6)


def test_the_s1_0_steady_state_is_a_long_spin_up_and_differentiable():
    run = ebm.integrate(STEADY, model=MODEL, years=300.0)
    steady = ebm.equilibrium(STEADY, model=MODEL, start=run.state)
    assert float(jnp.max(jnp.abs(steady.state["E"] - run.state["E"]))) < 1e-6

    def polar(p):
        # The polar box's temperature (the mean moves with F alone here).
        return ebm.equilibrium(p, model=MODEL, start=run.state).T[-1]

    gradient = jax.grad(polar)(STEADY)
    step = 1e-5
    for name in ("D", "F"):
        moved = [
            replace(STEADY, name, getattr(STEADY, name) + s) for s in (step, -step)
        ]
        difference = (float(polar(moved[0])) - float(polar(moved[1]))) / (2 * step)
        assert float(getattr(gradient, name)) == pytest.approx(difference, rel=1e-6)


# --- Multiple shooting: the unstable states between the folds -------------------


@pytest.fixture(scope="module")
def unstable_state(steady_loop):
    """A state of the S1 = 0 branch's first unstable piece (between its first two
    folds, an ice cap): its F, its steady state (from the folds' states) and its
    year's leading multiplier."""
    from ebm._steady.periodic_sweep import leading_multiplier
    from ebm._steady.seasonal import _setup

    low, high = steady_loop.folds[:2]
    w = 0.9
    params = replace(STEADY, "F", (1 - w) * low.value + w * high.value)
    guess = {"E": (1 - w) * low.state["E"] + w * high.state["E"]}
    state = ebm.equilibrium(params, model=MODEL, start=guess).state
    year, _, start, _, _ = _setup(
        params, MODEL, None, state, None, "none", STEPS, None, True
    )  # fmt: skip
    return params, state, float(leading_multiplier(year, start, params))


def test_multiple_shooting_finds_a_state_that_one_year_of_shooting_leaves(
    unstable_state,
):
    params, state, multiplier = unstable_state
    # A year magnifies a change of the state by hundreds: one year of shooting from
    # the state at F 0.2 W m-2 higher (0.7 W yr m-2 away) lands on another state;
    # five segments, each magnifying a change by the fifth root (about 4), return
    # to this one.
    assert multiplier > 100.0
    near = ebm.equilibrium(
        replace(params, "F", params.F + 0.2), model=MODEL, start=state
    ).state
    settings = dict(
        model=MODEL, start=near, steps_per_year=STEPS, spinup_years=0,
        retry_years=0,
    )  # fmt: skip
    single = ebm.periodic_equilibrium(params, throw=False, **settings)
    assert single.result == ebm.RESULTS.successful and float(single.residual) < 1e-8
    assert float(jnp.max(jnp.abs(single.state0["E"] - state["E"]))) > 1.0
    cycle = ebm.periodic_equilibrium(params, segments=5, **settings)
    assert float(cycle.residual) < 1e-10
    # Without a seasonal cycle the periodic state is the steady state, all year.
    np.testing.assert_allclose(
        cycle.states["E"], np.broadcast_to(state["E"], (STEPS, N)), atol=1e-8
    )

    def polar(p):
        shot = ebm.periodic_equilibrium(p, segments=5, **settings)
        return shot.states["E"][STEPS // 2, -1]

    gradient = jax.grad(polar)(params)
    assert_gradient_matches_fd(polar, params, gradient, ("D", "F"), relative_step=1e-5)


def test_multiple_shooting_finds_the_seasonal_cycle_of_one_year(cycle):
    split = ebm.periodic_equilibrium(
        PARAMS, model=MODEL, steps_per_year=STEPS, segments=4
    )
    # The segments meet, and the year they make is single shooting's, with the
    # same error estimate carried through it.
    assert float(split.residual) < 1e-8
    np.testing.assert_allclose(split.states["E"], cycle.states["E"], atol=1e-8)
    assert float(split.step_error) == pytest.approx(float(cycle.step_error), rel=1e-6)
