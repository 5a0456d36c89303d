"""Fitting with optax, sensitivities in forward mode, Hessians, and the forcing term.

Fits are checked by recovering known parameters from synthetic targets;
derivatives against reverse mode and central finite differences.
"""

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import ebm
from ebm._analysis.forward import from_unconstrained, to_unconstrained
from helpers import assert_compiles_once, compilations, finite_difference, replace


NAMES = ebm.Params.field_names()
# One optimizer object for every L-BFGS fit: an optax optimizer's functions are
# static and compared by identity, so fits of the same shape share a compiled step.
LBFGS = optax.lbfgs()
# One coarse grid for the file (tests that need another say so): the resolution is
# not what these check, and each derivative through a run costs as the grid does.
GRID = ebm.Grid(18)
fit = functools.partial(ebm.fit, grid=GRID)
sensitivity = functools.partial(ebm.sensitivity, grid=GRID)
hessian = functools.partial(ebm.hessian, grid=GRID)
integrate = functools.partial(ebm.integrate, grid=GRID)
equilibrium = functools.partial(ebm.equilibrium, grid=GRID)


@pytest.fixture(scope="module")
def params():
    return ebm.Params()


# --- The forcing term ------------------------------------------------------------


def test_forcing_enters_the_budget_like_minus_a(params):
    grid = GRID
    model = ebm.EnergyBalanceModel(grid)
    T = ebm.present_day_profile(grid)
    forced = replace(params, "forcing", 3.7)
    difference = model.energy_budget(T, forced) - model.energy_budget(T, params)
    assert np.allclose(difference, 3.7, rtol=1e-14)
    mean = sensitivity(params, "global_mean", names=("A", "forcing"))
    assert np.isclose(mean["forcing"], -mean["A"], rtol=1e-10)


def test_sensitivity_without_ice_feedback_is_forcing_over_b(params):
    # With the albedo held fixed, diffusion conserves energy and OLR is linear, so
    # the global mean must warm by exactly F / B.
    reference = equilibrium(params)
    model = ebm.EnergyBalanceModel(GRID)
    held = ebm.PrescribedAlbedo(model.albedo(reference.T, params, model.grid))
    forced = ebm.equilibrium(
        replace(params, "forcing", 3.7),
        model=ebm.EnergyBalanceModel(GRID, albedo=held),
    )
    warming = float(forced.global_mean - reference.global_mean)
    assert np.isclose(warming, 3.7 / float(params.B), rtol=1e-9)
    # The ice-albedo feedback amplifies it.
    assert float(equilibrium(replace(params, "forcing", 3.7)).global_mean) > (
        float(reference.global_mean) + 1.01 * warming
    )


@pytest.mark.parametrize(
    "albedo, match",
    [(np.full(60, 1.5), r"in \[0, 1\]"), (np.full((2, 60), 0.3), "1-d profile")],
)
def test_prescribed_albedo_is_checked(albedo, match):
    with pytest.raises(ValueError, match=match):
        ebm.PrescribedAlbedo(albedo)


def test_nonfinite_forcing_is_refused():
    with pytest.raises(ValueError, match="`forcing` must be finite"):
        ebm.Params(forcing=float("nan"))


# --- Fitting ---------------------------------------------------------------------


def test_lbfgs_recovers_diffusivity(params):
    target = equilibrium(replace(params, "D", 0.3)).T
    result = fit(params, target, fit=("D",), optimizer=LBFGS, steps=30)
    assert result.converged and result.num_steps <= 30
    assert np.isclose(float(result.params.D), 0.3, rtol=1e-6, atol=0)
    assert result.loss_history[-1] < 1e-12 < result.loss_history[0]
    # Fields not fitted are untouched.
    assert float(result.params.B) == float(params.B)


def test_lbfgs_recovers_d_a_and_b_together():
    # A 1 K ice-albedo transition is narrower than a 3-degree cell: equilibria then
    # pin the ice edge to the grid, several nearly equal, and a three-parameter fit
    # wanders among them. 2 K resolves it at 60 cells (so this fit is on them).
    grid = ebm.Grid(60)
    start = ebm.Params(ice_width=2.0)
    truth = ebm.Params(ice_width=2.0, D=0.4, A=205.0, B=2.2)
    target = equilibrium(truth, grid=grid).T
    result = fit(start, target, fit=("D", "A", "B"), optimizer=LBFGS, grid=grid)
    assert result.converged
    for name in ("D", "A", "B"):
        fitted, true = float(getattr(result.params, name)), float(getattr(truth, name))
        assert np.isclose(fitted, true, rtol=1e-6, atol=0), name


def test_noisy_fit_falls_within_the_spread_the_noise_implies(params):
    truth = replace(params, "D", 0.3)
    clean = equilibrium(truth).T
    sigma = 0.5
    noisy = clean + sigma * jax.random.normal(jax.random.key(1), clean.shape)
    result = fit(params, noisy, fit=("D",), optimizer=LBFGS, steps=50)
    assert result.converged
    # Weighted least squares with weights w: var(D) = sigma^2 sum(w^2 J^2) /
    # (sum(w J^2))^2, with J = dT/dD at the truth (linearised).
    jacobian = sensitivity(truth, "T", names=("D",))["D"]
    weights = GRID.area_weights
    spread = sigma * jnp.sqrt(
        jnp.sum(weights**2 * jacobian**2) / jnp.sum(weights * jacobian**2) ** 2
    )
    error = abs(float(result.params.D) - 0.3)
    assert 0 < error < 4 * float(spread)


def test_adam_keeps_parameters_physical_and_lowers_the_loss(params):
    target = equilibrium(ebm.Params(D=0.35, a0=0.32)).T
    result = fit(params, target, fit=("D", "a0"), steps=25)
    assert result.loss_history[-1] < 0.2 * result.loss_history[0]
    assert 0 < float(result.params.a0) < 1 and float(result.params.D) > 0
    assert len(result.loss_history) == result.num_steps + 1


def test_constraint_transforms_round_trip():
    for name, value in (("D", 0.555), ("a0", 0.3), ("A", 210.0), ("long_peri", -4.0)):
        coordinate = to_unconstrained(name, jnp.asarray(value))
        assert np.isclose(from_unconstrained(name, coordinate), value, rtol=1e-14)


def _forced_trajectory_problem(params):
    """Snapshots of the response to a step in forcing, from the unforced state."""
    start = equilibrium(params).T
    times = np.array([0.25, 0.5, 1.0])
    saveat = diffrax.SaveAt(ts=jnp.asarray(times))
    truth = replace(params, "forcing", 2.0)
    target = integrate(truth, years=1.0, T0=start, saveat=saveat).Ts
    return start, times, target


def test_trajectory_fit_recovers_the_forcing(params):
    start, times, target = _forced_trajectory_problem(params)
    initial = replace(params, "forcing", 0.5)
    result = fit(
        initial,
        target,
        fit=("forcing",),
        through="trajectory",
        times=times,
        T0=start,
        optimizer=LBFGS,
        steps=30,
    )
    assert result.converged
    assert np.isclose(float(result.params.forcing), 2.0, rtol=1e-6)


@pytest.mark.parametrize("through", ["equilibrium", "trajectory"])
def test_fit_loss_gradient_matches_finite_differences(params, through):
    from ebm._analysis.fit import _loss_function

    start, times, target = _forced_trajectory_problem(params)
    if through == "equilibrium":
        target = target[-1]
    model = ebm.EnergyBalanceModel(GRID)
    names = ("D", "forcing")
    loss = _loss_function(
        params, target, names, through, times, start, model, "present", "recursive"
    )

    def of_params(p):
        return loss({name: to_unconstrained(name, getattr(p, name)) for name in names})

    gradient = jax.grad(of_params)(params)
    for name in names:
        expected = finite_difference(of_params, params, name)
        assert np.isclose(float(getattr(gradient, name)), expected, rtol=1e-6), name


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(fit=("kappa",)), "`fit` must be distinct names"),
        (dict(fit=("D", "D")), "`fit` must be distinct names"),
        (dict(through="spinup"), "`through` must be"),
        (dict(target=np.zeros(10)), r"shape \(18,\)"),
        (dict(through="trajectory"), "needs `times`"),
        (dict(through="trajectory", times=[2.0, 1.0]), "increasing and positive"),
        (dict(steps=2.5), "`steps` must be an integer >= 1, got 2.5"),
    ],
)
def test_bad_fit_arguments_are_named(params, kwargs, match):
    arguments = dict(target=np.zeros(GRID.n_lat)) | kwargs
    target = arguments.pop("target")
    with pytest.raises(ValueError, match=match):
        fit(params, target, **arguments)


def test_fit_reports_progress_on_stderr_without_changing_the_fit(params, capsys):
    target = equilibrium(replace(params, "D", 0.5)).T
    quiet = fit(params, target, steps=3)
    output = capsys.readouterr()
    assert output.err == "" and output.out == ""
    shown = fit(params, target, steps=3, progress=True)
    output = capsys.readouterr()
    # A tqdm bar of the steps, with the loss; stdout left to the caller.
    assert "3/3" in output.err and "loss" in output.err
    assert output.out == ""
    np.testing.assert_array_equal(shown.loss_history, quiet.loss_history)
    assert float(shown.params.D) == float(quiet.params.D)
    # The bar is drawn on the host: toggling it compiles nothing.
    with compilations() as compiled:
        fit(params, target, steps=3, progress=False)
        fit(params, target, steps=3, progress=True)
    assert not compiled, compiled


# --- Sensitivities and Hessians ---------------------------------------------------


@pytest.mark.parametrize("output", ["global_mean", "ice_edge"])
def test_forward_sensitivity_equals_reverse_and_finite_differences(params, output):
    forward = sensitivity(params, output)
    reverse = jax.grad(lambda p: getattr(equilibrium(p), output))(params)
    for name in NAMES:
        assert np.isclose(forward[name], getattr(reverse, name), rtol=1e-10, atol=1e-12)
    for name in ("D", "S0", "ai", "forcing"):
        expected = finite_difference(
            lambda p: getattr(equilibrium(p), output), params, name
        )
        assert np.isclose(forward[name], expected, rtol=1e-6), name


def test_southern_ice_edge_sensitivity_mirrors_the_northern(params):
    # ebm's default model is symmetric about the equator.
    north = sensitivity(params, "ice_edge")
    south = sensitivity(params, "ice_edge_south")
    assert float(south.value) == pytest.approx(-float(north.value), abs=1e-9)
    for name in NAMES:
        assert np.isclose(south[name], -north[name], rtol=1e-7, atol=1e-9), name


def test_trajectory_profile_sensitivity_matches_finite_differences(params):
    names = ("D", "B", "forcing")
    result = sensitivity(params, "T", names=names, through="trajectory", years=2.0)
    assert result["D"].shape == (GRID.n_lat,)
    cell = 13
    reverse = jax.grad(lambda p: integrate(p, years=2.0).T[cell])(params)
    # Two compiled programs (two adjoints, or a batch and a single run) round
    # differently, and where a step's error estimate sits at the controller's
    # threshold their adaptive steps differ: two discretisations, each to rtol 1e-8.
    for name in names:
        assert np.isclose(result[name][cell], getattr(reverse, name), rtol=1e-7)
        expected = finite_difference(
            lambda p: integrate(p, years=2.0).T[cell], params, name
        )
        assert np.isclose(result[name][cell], expected, rtol=1e-6), name


def test_hessian_matches_finite_differences_of_the_gradient(params):
    names = ("D", "B", "A")
    result = hessian(params, "global_mean", names=names)
    assert np.allclose(result.matrix, result.matrix.T, rtol=1e-8)

    def gradient_component(column):
        return lambda p: getattr(
            jax.grad(lambda q: equilibrium(q).global_mean)(p), column
        )

    for i, row in enumerate(names):
        for j, column in enumerate(names):
            # Small steps: the 1 K ice-albedo transition makes the gradient change
            # quickly with the parameters.
            expected = finite_difference(gradient_component(column), params, row)
            assert np.isclose(result.matrix[i, j], expected, rtol=1e-6), (row, column)


def test_hessian_through_a_run_matches_finite_differences_of_the_gradient(params):
    result = hessian(
        params, "global_mean", names=("D", "B"), through="trajectory", years=0.5
    )
    # The gradient as one compiled program (used for the gradient and for its
    # finite difference): eagerly, its forward run and the backward pass's
    # recomputation of it are two programs, which can take steps differing by
    # rounding, and a finite difference of it at relative steps of 1e-6 then jumps
    # by as much as the derivative (seen: 15%).
    gradient_of = jax.jit(jax.grad(lambda q: integrate(q, years=0.5).global_mean))
    gradient = gradient_of(params)
    # Two compiled programs (two adjoints, or a batch and a single run) round
    # differently, and where a step's error estimate sits at the controller's
    # threshold their adaptive steps differ: two discretisations, each to rtol 1e-8.
    assert np.allclose(result.gradient, [gradient.D, gradient.B], rtol=1e-7)
    assert np.isclose(result.matrix[0, 1], result.matrix[1, 0], rtol=1e-8)
    expected = finite_difference(lambda p: gradient_of(p).B, params, "D")
    assert np.isclose(result.matrix[0, 1], expected, rtol=1e-6)


def test_sensitivity_arguments_are_checked(params):
    with pytest.raises(ValueError, match="`output` must be one of"):
        sensitivity(params, "albedo")
    with pytest.raises(ValueError, match="needs `years`"):
        sensitivity(params, through="trajectory")
    with pytest.raises(ValueError, match="scalar"):
        hessian(params, "T")


def test_sensitivity_profiles_plot(params, tmp_path):
    from ebm._edges.plot import plot_sensitivity

    result = sensitivity(params, "T", names=("D", "forcing", "water_depth"))
    plot_sensitivity(result, params, path=tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 10_000
    assert result.names == ("D", "forcing", "water_depth")


# --- Refusals up front -----------------------------------------------------------


@pytest.mark.parametrize("name", ["eccentricity", "obliquity", "long_peri"])
def test_fit_refuses_a_parameter_the_model_does_not_use(params, name):
    # The default P2Insolation has no orbit: the gradient is exactly zero, and the
    # fit used to report convergence at step 0.
    grid = ebm.Grid(6)
    target = equilibrium(params, grid=grid).T + 0.5
    with pytest.raises(ValueError, match=f"`{name}`.*does not depend on") as info:
        fit(params, target, fit=("D", name), grid=grid)
    message = str(info.value)
    assert "insolation (P2Insolation): S0, s2" in message
    assert "transport (DiffusiveTransport): D" in message
    assert "DailyInsolation" in message


def test_fit_refuses_water_depth_through_an_equilibrium_only(params):
    model = ebm.EnergyBalanceModel(ebm.Grid(6))
    with pytest.raises(ValueError, match="`water_depth`.*equilibrium"):
        model.check_fitted(params, ("water_depth",), "equilibrium", "present")
    # A run's tendency does depend on the heat capacity.
    model.check_fitted(params, ("water_depth",), "trajectory", "present")


def test_fit_refuses_a_non_finite_target(params):
    grid = ebm.Grid(6)
    target = np.asarray(equilibrium(params, grid=grid).T).copy()
    target[2] = np.nan
    # Used to be blamed on "a fold" at step 0.
    with pytest.raises(ValueError, match=r"`target` must be finite.*index \(2,\)"):
        fit(params, target, grid=grid)


def test_sensitivity_and_hessian_warn_near_a_fold(params):
    # Near a fold the derivatives blow up; equilibrium warned, these two did not.
    # The threshold is raised past this state's leading eigenvalue (-1.6 W m-2 K-1
    # on 6 cells) so that the warning's wiring is tested without walking to a fold.
    grid = ebm.Grid(6)
    leading = float(equilibrium(params, grid=grid).leading_eigenvalue)
    assert -2.0 < leading < -1.0
    with pytest.warns(ebm.NearFoldWarning, match="close to a fold") as record:
        sensitivity(params, names=("D",), grid=grid, near_fold=2.0)
    assert f"{leading:.3g}" in str(record[0].message)
    with pytest.warns(ebm.NearFoldWarning, match="close to a fold"):
        hessian(params, names=("D",), grid=grid, near_fold=2.0)
    # Far from it (the default threshold), or opted out: silent (warnings are
    # errors in this suite).
    sensitivity(params, names=("D",), grid=grid)
    hessian(params, names=("D",), grid=grid, near_fold=None)


def test_fit_sensitivity_and_hessian_compile_once(params):
    """New starting values (same target shape, names and settings) reuse the
    compiled optimiser step, Jacobian and Hessian: a loop of fits is cheap."""
    values = (params, replace(params, "D", 0.5), replace(params, "D", 0.6))
    target = equilibrium(params).T
    assert_compiles_once(lambda p: fit(p, target, steps=2).loss_history, *values)
    # The trajectory fit of test_trajectory_fit_recovers_the_forcing, shortened.
    start, times, snapshots = _forced_trajectory_problem(params)
    assert_compiles_once(
        lambda p: (
            fit(
                p,
                snapshots,
                fit=("forcing",),
                through="trajectory",
                times=times,
                T0=start,
                optimizer=LBFGS,
                steps=2,
            ).loss_history
        ),
        *values,
    )
    assert_compiles_once(lambda p: sensitivity(p, "global_mean").jacobian, *values)
    assert_compiles_once(
        lambda p: hessian(p, "global_mean", names=("D", "B", "A")).matrix, *values
    )


def test_first_lbfgs_fit_compiles_its_step_once(params):
    """optax's L-BFGS starts from weakly typed scalars and returns them strongly
    typed: the fit must not compile the step a second time for its second step."""
    target = equilibrium(replace(params, "D", 0.4)).T
    with compilations() as compiled:
        fit(params, target, fit=("D", "B"), optimizer=optax.lbfgs(), steps=3)
    assert compiled.count("jit(_fit_step)") == 1, compiled


def test_an_optimizer_named_by_a_string_is_refused(params):
    # It failed inside with "'str' object has no attribute 'init'".
    with pytest.raises(TypeError, match="`optimizer` must be an optax optimizer"):
        fit(params, jnp.zeros(GRID.n_lat), optimizer="adam")


def test_a_forward_problem_names_what_it_cannot_solve():
    from ebm._analysis.forward import ForwardProblem

    with pytest.raises(ValueError, match="`through` must be 'equilibrium' or"):
        ForwardProblem(ebm.EnergyBalanceModel(GRID), "steady")
