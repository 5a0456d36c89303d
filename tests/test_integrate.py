import functools

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._zonal.run import BACKSOLVE_HORIZON, needed_steps, time_scales
from helpers import assert_compiles_once, assert_gradient_matches_fd, tree_allclose


NAMES = ebm.Params.field_names()
YEARS = 2.0
# One coarse grid for the whole file: the resolution is not what these check (the
# test of runs from a steady state takes its own grids), and each step of a
# gradient's backward pass costs as the grid does.
GRID = ebm.Grid(18)
integrate = functools.partial(ebm.integrate, grid=GRID)
integrate_fixed = functools.partial(ebm.integrate_fixed, grid=GRID)
equilibrium = functools.partial(ebm.equilibrium, grid=GRID)


@pytest.fixture(scope="module")
def params():
    return ebm.Params()


def _final_mean(adjoint, years=YEARS):
    def fn(params):
        return integrate(params, years=years, adjoint=adjoint).global_mean

    return fn


@pytest.mark.parametrize(
    "adjoint",
    ["recursive", "direct", ("recursive", 16)],
    ids=["recursive", "direct", "recursive-16-checkpoints"],
)
def test_reverse_mode_matches_finite_differences(params, adjoint):
    gradient = jax.grad(_final_mean(adjoint))(params)
    # The adjoint changes how the derivative is computed, not the run: the finite
    # differences are of the default adjoint's forward run (one compiled program).
    assert_gradient_matches_fd(
        _final_mean("recursive"), params, gradient, NAMES, rtol=1e-6, atol=1e-10
    )


def _diffusion_time(params, grid):
    model = ebm.EnergyBalanceModel(grid=grid)
    T0 = ebm.present_day_profile(grid)
    return float(time_scales(params, model, T0).diffusion)


def test_backsolve_within_its_horizon_matches_finite_differences(params):
    years = 0.5 * BACKSOLVE_HORIZON * _diffusion_time(params, GRID)
    gradient = jax.grad(_final_mean("backsolve", years))(params)
    reference = jax.grad(_final_mean("recursive", years))(params)
    # The horizon's criterion: within 1e-4 of the reference, relative to its size.
    difference = jnp.stack(
        jax.tree.leaves(jax.tree.map(jnp.subtract, gradient, reference))
    )
    size = jnp.max(jnp.abs(jnp.stack(jax.tree.leaves(reference))))
    assert float(jnp.max(jnp.abs(difference)) / size) < 1e-4
    assert_gradient_matches_fd(
        _final_mean("recursive", years),
        params,
        gradient,
        NAMES,
        rtol=1e-4,
        atol=1e-4 * float(size),
    )


def test_backsolve_beyond_its_horizon_refuses(params):
    with pytest.raises(Exception, match="adjoint='backsolve'.*recursive"):
        jax.grad(_final_mean("backsolve", 1.0))(params)


@pytest.mark.parametrize("adjoint", ["forward", "direct"])
def test_forward_mode_matches_finite_differences(params, adjoint):
    fn = _final_mean(adjoint)
    jacobian = jax.jacfwd(fn)(params)
    assert_gradient_matches_fd(
        _final_mean("recursive"), params, jacobian, NAMES, rtol=1e-6, atol=1e-10
    )
    tangent = jax.tree.map(jnp.zeros_like, params)
    tangent = eqx.tree_at(lambda p: p.D, tangent, jnp.asarray(1.0))
    _, directional = jax.jvp(fn, (params,), (tangent,))
    assert float(directional) == pytest.approx(float(jacobian.D), rel=1e-10)


def test_all_adjoints_agree(params):
    gradients = [jax.grad(_final_mean(a))(params) for a in ("recursive", "direct")]
    gradients.append(jax.jacfwd(_final_mean("forward"))(params))
    # Two compiled programs (two adjoints, or a batch and a single run) round
    # differently, and where a step's error estimate sits at the controller's
    # threshold their adaptive steps differ: two discretisations, each to rtol 1e-8.
    for other in gradients[1:]:
        for name in NAMES:
            np.testing.assert_allclose(
                getattr(other, name), getattr(gradients[0], name), rtol=1e-7, atol=1e-8
            )


@pytest.mark.parametrize("adjoint", ["recursive", "backsolve"])
def test_forward_mode_under_reverse_only_adjoint_names_the_fix(params, adjoint):
    fn = _final_mean(adjoint, 0.01)
    with pytest.raises(ValueError, match="adjoint='forward'"):
        jax.jvp(fn, (params,), (params,))
    with pytest.raises(ValueError, match="adjoint='forward'"):
        jax.jacfwd(fn)(params)


def test_trajectory_is_saved_and_relaxes_to_equilibrium(params):
    ts = jnp.linspace(0.0, 30.0, 7)
    run = integrate(params, years=30.0, saveat=diffrax.SaveAt(ts=ts))
    assert run.Ts.shape == (7, GRID.n_lat)
    np.testing.assert_allclose(run.ts, ts)
    np.testing.assert_allclose(run.Ts[0], ebm.present_day_profile(GRID))
    np.testing.assert_allclose(run.Ts[-1], run.T)
    distance = jnp.max(jnp.abs(run.Ts - equilibrium(params).T[None, :]), axis=1)
    assert bool(jnp.all(jnp.diff(distance[2:]) < 0))
    assert float(run.global_mean) == pytest.approx(
        float(run.Ts[-1] @ GRID.area_weights)
    )


def test_failed_integration_is_reported(params):
    # (max_steps=20 as in the test of unfinished runs below, which shares the program)
    run = integrate(params, years=10.0, max_steps=20, throw=False)
    assert run.result != ebm.RESULTS.successful
    with pytest.raises(Exception, match="maximum number of solver steps"):
        integrate(params, years=10.0, max_steps=20)


def test_gradient_from_a_steady_state_matches_finite_differences(params):
    # From equilibrium the state hardly moves and the controller would take steps of
    # years, but the tangent relaxes on C / B: the default cap on the step keeps the
    # gradient accurate.
    start = equilibrium(params).T
    forced = eqx.tree_at(lambda p: p.forcing, params, jnp.asarray(2.0))

    def fn(params):
        return integrate(params, years=2.0, T0=start).global_mean

    gradient = jax.grad(fn)(forced)
    # (Without the cap the gradient was 1% off; the finite differences are of the
    # forward program, whose steps may differ from the gradient's as above.)
    assert_gradient_matches_fd(fn, forced, gradient, ("D", "B", "forcing"), rtol=1e-7)


def test_progress_meter_is_off_by_default_and_on_when_asked(params, capfd):
    integrate(params, years=0.1)
    output = capfd.readouterr()
    assert "%" not in output.out and "%" not in output.err
    # A bar on stderr, so that `ebm run > out.txt` keeps the report alone.
    integrate(params, years=0.1, progress=True)
    output = capfd.readouterr()
    assert "%" not in output.out
    assert "100.00%|" in output.err
    # A meter of the user's own is used as given.
    integrate(params, years=0.1, progress=diffrax.TextProgressMeter())
    assert "100.00%" in capfd.readouterr().out
    with pytest.raises(ValueError, match="`progress` must be True, False or a"):
        integrate(params, years=0.1, progress="yes")


def test_long_runs_get_enough_steps_for_the_step_cap(params):
    # 1500 years of steps capped at C / (10 B) is about 23,000 steps, past the
    # 16384 that used to be the default limit.
    start = equilibrium(params).T
    run = integrate(params, years=1500.0, T0=start)
    assert int(run.num_steps) > 16384
    assert float(jnp.max(jnp.abs(run.T - start))) < 1e-6


@pytest.mark.parametrize("n_lat", [6, 18])
def test_a_run_from_a_steady_state_takes_the_capped_steps_only(params, n_lat):
    # The implicit stages' chord iterations start at a root there, and their
    # corrections are rounding; taken for divergence, they had most steps at the
    # cap rejected (ten times the steps on coarse grids, past the default budget).
    grid = ebm.Grid(n_lat)
    start = equilibrium(params, grid=grid).T
    run = integrate(params, grid=grid, years=100.0, T0=start, max_steps=2**17)
    model = ebm.EnergyBalanceModel(grid=grid)
    needed = needed_steps(100.0, time_scales(params, model, start).relaxation)
    assert int(run.num_steps) <= needed + 2


def test_grey_body_steps_and_gradients_do_not_depend_on_the_unused_B():
    # The step cap came from `C / (10 B)`: with the grey-body longwave, which does
    # not read B, `B=0.01` gave 4 steps over these 2 years and an emissivity
    # gradient 2e-4 off finite differences; `B=100` made long runs crawl.
    model = ebm.EnergyBalanceModel(grid=GRID, longwave=ebm.GreyBodyLongwave())
    start = ebm.equilibrium(model.Params(), model=model).T

    def run(params):
        return ebm.integrate(params, model=model, years=YEARS, T0=start)

    steps = {B: int(run(model.Params(B=B)).num_steps) for B in (0.01, 2.0, 100.0)}
    assert steps[0.01] == steps[2.0] == steps[100.0]
    relaxation = time_scales(model.Params(), model, start).relaxation
    assert steps[2.0] >= needed_steps(YEARS, relaxation) > 20
    params = model.Params(B=0.01)
    gradient = jax.grad(lambda p: run(p).global_mean)(params)
    assert_gradient_matches_fd(
        lambda p: run(p).global_mean, params, gradient, ("emissivity",), rtol=1e-6
    )


def test_backsolve_horizon_follows_the_transport_the_model_has():
    # The horizon came from `params.D`, which the latitude-dependent diffusion does
    # not read: ten times the diffusivity on every bound shortens it tenfold.
    model = ebm.EnergyBalanceModel(
        grid=GRID, transport=ebm.LatitudeDiffusiveTransport()
    )
    fast = model.Params(D_bounds=10 * ebm.Params().D)
    within_D = 0.5 * BACKSOLVE_HORIZON * _diffusion_time(ebm.Params(), GRID)
    with pytest.raises(eqx.EquinoxRuntimeError, match="adjoint='backsolve'"):
        ebm.integrate(fast, model=model, years=within_D, adjoint="backsolve")
    slow = model.Params(D_bounds=0.1 * ebm.Params().D, D=100.0)
    run = ebm.integrate(slow, model=model, years=5 * within_D, adjoint="backsolve")
    assert run.result == ebm.RESULTS.successful


# Tsit5 in the default run; the implicit-explicit KenCarp5 in the full matrix.
@pytest.mark.parametrize(
    "solver", [pytest.param("kencarp5", marks=pytest.mark.slow), "tsit5"]
)
def test_other_solvers_agree_and_their_gradients_match_finite_differences(
    params, solver
):
    """The implicit-explicit KenCarp5 (transport implicit) and the explicit Tsit5
    reach Kvaerno5's state, and their reverse- and forward-mode derivatives match
    finite differences."""
    years = 0.2
    reference = integrate(params, years=years)
    run = integrate(params, years=years, solver=solver)
    np.testing.assert_allclose(run.T, reference.T, rtol=0, atol=1e-6)

    def fn(params, adjoint="recursive"):
        return integrate(
            params, years=years, solver=solver, adjoint=adjoint
        ).global_mean

    names = ("D", "water_depth")
    gradient = jax.grad(fn)(params)
    # KenCarp5 runs at the explicit stability limit of its radiation terms, so its
    # step sequence (and a finite difference through it) jumps with the parameters:
    # at relative steps of 1e-5 the differences scatter by 1e-5. So the derivative is
    # checked against wider differences, and tightly against Kvaerno5's (itself
    # checked against finite differences above): the same derivative of the ODE.
    assert_gradient_matches_fd(
        fn, params, gradient, names, rtol=1e-5, atol=1e-9, relative_step=1e-4
    )
    reference_gradient = jax.grad(lambda p: integrate(p, years=years).global_mean)(
        params
    )
    for name in NAMES:
        np.testing.assert_allclose(
            getattr(gradient, name),
            getattr(reference_gradient, name),
            rtol=1e-6,  # two discretisations, each to rtol 1e-8 per step
            atol=1e-9,
        )
    jacobian = jax.jacfwd(lambda p: fn(p, "forward"))(params)
    for name in names:
        np.testing.assert_allclose(
            getattr(jacobian, name), getattr(gradient, name), rtol=1e-8
        )


def test_model_split_adds_up_to_the_tendency(params):
    model = ebm.EnergyBalanceModel()
    T = ebm.present_day_profile(model.grid)
    np.testing.assert_allclose(
        model.local_tendency(0.0, T, params) + model.transport_tendency(0.0, T, params),
        model(0.0, T, params),
        rtol=1e-13,
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="`solver` must be one of"):
        integrate(params, years=1.0, solver="euler")


# Long runs: the step budget follows from the run's length, forward and reverse.


def _run_mean(years, adjoint="recursive"):
    def fn(params):
        return integrate(params, years=years, adjoint=adjoint).global_mean

    return fn


def _assert_long_run_gradient(params, years, adjoint="recursive"):
    fn = _run_mean(years, adjoint)
    gradient = jax.grad(fn)(params)
    # Past many relaxation times the run has forgotten its start: its gradient is
    # the equilibrium's, which the implicit function theorem gives independently.
    implicit = jax.grad(lambda p: equilibrium(p).global_mean)(params)
    for name in NAMES:
        np.testing.assert_allclose(
            getattr(gradient, name), getattr(implicit, name), rtol=1e-6, atol=1e-9
        )
    assert_gradient_matches_fd(fn, params, gradient, ["D"], rtol=1e-6)


# The same 30,000 capped steps as the 10,000-year run below, at the default depth:
# in the full matrix (-m slow).
@pytest.mark.slow
def test_gradient_through_2000_years_matches_finite_differences(params):
    # 2000 years of steps capped at C / (10 B) is about 30,000 steps: reverse mode
    # used to get a budget of 16,384 and fail.
    _assert_long_run_gradient(params, 2000.0)


def test_gradient_through_10000_years_matches_finite_differences():
    # A 50 m water column relaxes five times more slowly: 10,000 years are the same
    # 30,000 capped steps as 2,000 years of the default 10 m.
    _assert_long_run_gradient(ebm.Params(water_depth=50.0), 10000.0)


def test_long_run_gradient_under_jit_needs_no_max_steps(params):
    # Inside jit the parameters are traced and the run's length in steps unknown;
    # 1200 years are about 18,000 capped steps, past the 16,384 that used to be the
    # budget there.
    gradient = jax.jit(jax.grad(_run_mean(1200.0)))(params)
    implicit = jax.grad(lambda p: equilibrium(p).global_mean)(params)
    assert tree_allclose(gradient, implicit, rtol=1e-6, atol=1e-9)


def test_run_too_long_for_the_default_budget_is_refused_with_an_estimate():
    with pytest.raises(ValueError, match=r"`years` = 2 needs about 3\.0\d?e\+08 steps"):
        integrate(ebm.Params(water_depth=1e-6), years=2.0)
    with pytest.raises(ValueError, match="hours"):
        integrate(ebm.Params(), years=1e6)


@pytest.mark.parametrize(
    "keyword, value",
    [("max_steps", 0), ("max_steps", -1), ("max_steps", 2.5), ("dt0", 0.0)],
)
def test_bad_step_settings_are_refused_before_the_run(params, keyword, value):
    with pytest.raises(ValueError, match=f"`{keyword}` must be"):
        integrate(params, years=1.0, **{keyword: value})


def test_unfinished_run_gives_nan_and_nan_gradients(params):
    run = integrate(params, years=2.0, max_steps=20, throw=False)
    assert run.result != ebm.RESULTS.successful
    assert np.all(np.isnan(run.T)) and np.isnan(run.global_mean)
    assert np.isnan(run.ice_edge)
    gradient = jax.grad(
        lambda p: integrate(p, years=2.0, max_steps=20, throw=False).global_mean
    )(params)
    assert all(np.isnan(getattr(gradient, name)) for name in NAMES)
    # A run that finishes within its steps (17 of the 20) keeps its gradient.
    finished = jax.grad(
        lambda p: integrate(p, years=0.05, max_steps=20, throw=False).global_mean
    )(params)
    assert all(np.isfinite(getattr(finished, name)) for name in NAMES)


# --- Fixed steps: stability limit and error estimate ------------------------------
# (ebm.integrate_fixed; its checkpoint schedules are tested in test_checkpoint.py)


@pytest.mark.parametrize("dt, steps", [(2.0, 50), (5.0, 20)])
def test_fixed_step_above_the_stability_limit_is_refused(params, dt, steps):
    # IMEX Euler's radiation is explicit: these gave 28.37 degC and 1.06e16 degC
    # (the equilibrium is 14.86) without a word.
    with pytest.raises(ValueError, match=rf"`dt` = {dt:g} years.*limit.*years"):
        integrate_fixed(params, dt=dt, steps=steps)
    run = integrate_fixed(params, dt=dt, steps=steps, throw=False)
    assert run.result == ebm.RESULTS.unstable_step

    # Under the user's jit the limit is traced: the run's own check raises.
    @jax.jit
    def final_mean(params):
        return integrate_fixed(params, dt=dt, steps=steps).global_mean

    with pytest.raises(Exception, match="stability limit"):
        final_mean(params).block_until_ready()


def test_fixed_step_within_its_limit_but_inaccurate_is_refused(params):
    # A year a step is stable for IMEX Euler here (the limit is 1.7 years), but
    # the first years' steps are far from the solution.
    with pytest.raises(Exception, match="error_tolerance"):
        integrate_fixed(params, dt=1.0, steps=10).T.block_until_ready()
    run = integrate_fixed(params, dt=1.0, steps=10, throw=False)
    assert run.result == ebm.RESULTS.inaccurate_step
    fine = integrate_fixed(params, dt=1.0 / 73, steps=730, stepper="imex")
    assert fine.result == ebm.RESULTS.successful
    assert float(fine.global_mean) == pytest.approx(
        float(equilibrium(params).global_mean), abs=0.05
    )


def test_a_stepper_must_return_its_error_estimate(params):
    class BareEuler(ebm.AbstractStepper):
        def init(self, model, params, T0, dt):
            return None

        def step(self, model, state, t, T, params, dt):
            return T + dt * model(t, T, params)

        def stability_limit(self, model, params, T0):
            return jnp.inf

    with pytest.raises(TypeError, match="must return a pair"):
        integrate_fixed(params, dt=0.001, steps=2, stepper=BareEuler())


_VALUES = (ebm.Params(), ebm.Params(D=0.5, water_depth=40.0), ebm.Params(B=2.1))


@pytest.mark.parametrize("adjoint", ["recursive", "forward"])
def test_integrate_and_its_gradient_compile_once(adjoint):
    """New parameter values (same run length, grid and settings) reuse the compiled
    run and its derivative, in reverse and in forward mode."""
    derivative = jax.grad if adjoint == "recursive" else jax.jacfwd

    def run(p):
        return integrate(p, years=2.0, adjoint=adjoint).global_mean

    assert_compiles_once(run, *_VALUES)
    assert_compiles_once(derivative(run), *_VALUES)


def test_integrate_fixed_and_its_gradient_compile_once():
    def run(p):
        return integrate_fixed(p, dt=0.05, steps=40).global_mean

    assert_compiles_once(run, *_VALUES)
    assert_compiles_once(jax.grad(run), *_VALUES)


def test_runs_of_other_lengths_and_steps_share_the_compiled_program(params):
    """The run's length (within one step budget) and a fixed step are traced, not
    static: a sweep over them compiles once."""
    assert_compiles_once(
        lambda years: integrate(params, years=years).global_mean, 2.0, 0.5, 7.0
    )
    assert_compiles_once(
        lambda dt: integrate_fixed(params, dt=dt, steps=40).global_mean,
        0.05,
        0.02,
        0.1,
    )
