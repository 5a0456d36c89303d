import inspect

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._numerics.tridiagonal import probe_tridiagonal
from helpers import (
    assert_compiles_once,
    assert_gradient_matches_fd,
    compilations,
    replace,
)


HIGH, LOW = 2500.0, 1000.0


@pytest.fixture(scope="module")
def loop():
    # Down from an ice-free climate: around the whole hysteresis loop and out through
    # the snowball branch at LOW.
    return ebm.continuation(
        ebm.Params(S0=HIGH), "S0", stop=LOW, start="warm", save_profiles=True
    )


def _leading_eigenvalue(T, params, model=ebm.EnergyBalanceModel()):
    _, linear = jax.linearize(lambda x: model.energy_budget(x, params), T)
    return float(probe_tridiagonal(linear, T.shape[0], T.dtype).leading_eigenvalue())


def _flips(signs):
    signs = np.asarray(signs)
    return np.flatnonzero(signs[1:] != signs[:-1])


def test_loop_has_the_four_folds_of_the_hysteresis(loop):
    assert loop.result == ebm.RESULTS.successful
    small_cap_low, small_cap_high, snowball, melt = loop.folds
    # The ice-free branch ends at a fold as a small ice cap appears, and the unstable
    # small-cap branch turns back at a slightly higher S0 into the present-day branch.
    assert small_cap_low.value < small_cap_high.value
    assert small_cap_low.ice_edge > small_cap_high.ice_edge > 60
    # The present-day branch ends at the snowball fold, with a large ice cap; the
    # unstable large-cap branch climbs to meet the snowball branch where it melts.
    assert snowball.value < small_cap_low.value
    assert 20 < snowball.ice_edge < 50
    assert melt.value > HIGH / 2 and melt.ice_edge == 0
    assert [int(f.side) for f in loop.folds] == [1, -1, 1, -1]
    # The walk ends on the snowball branch at the lower bound.
    assert float(loop.values[-1]) == LOW
    assert float(loop.ice_edge[-1]) == 0
    assert float(loop.values[0]) == HIGH and float(loop.ice_edge[0]) == 90


def test_branch_is_continuous_and_made_of_equilibria(loop):
    model = ebm.EnergyBalanceModel()
    steps = np.abs(np.diff(np.asarray(loop.T), axis=0))
    assert np.max(steps) < 5.0
    assert np.max(np.abs(np.diff(np.asarray(loop.values)))) <= 5.0 * (HIGH - LOW) / 100
    budgets = jax.vmap(lambda T, S0: model.energy_budget(T, ebm.Params(S0=S0)))(
        loop.T, loop.values
    )
    assert float(jnp.max(jnp.abs(budgets))) < 1e-8


def test_stability_changes_sign_exactly_at_folds(loop):
    folds = _flips(np.sign(loop.slope))
    assert folds.size == len(loop.folds) == 4
    np.testing.assert_array_equal(_flips(loop.stable), folds)
    # Ice-free, present-day and snowball stable; the small and large caps unstable.
    assert [bool(loop.stable[s.start]) for s in loop.segments()] == [
        True,
        False,
        True,
        False,
        True,
    ]
    for fold in loop.folds:
        at_fold = ebm.Params(S0=fold.value)
        assert abs(_leading_eigenvalue(fold.T, at_fold)) < 1e-6
        assert float(fold.residual) < 1e-8


def test_warm_branch_ice_edge_moves_poleward_with_S0(loop):
    present = loop.segments()[2]
    values = np.asarray(loop.values[present])
    edges = np.asarray(loop.ice_edge[present])
    assert np.all(np.diff(values) < 0)
    assert np.all(np.diff(edges) < 0)
    assert edges[0] - edges[-1] > 20


def test_equilibrium_lands_on_the_branch_its_start_selects(loop):
    snowball_fold = float(loop.folds[2].value)
    melt = float(loop.folds[3].value)
    # Below the snowball fold only the snowball exists, whatever the start.
    below = ebm.equilibrium(ebm.Params(S0=snowball_fold - 5.0), start="present")
    assert float(below.ice_edge) == 0
    # Between the folds both exist: the start decides (hysteresis).
    S0 = 1300.0
    cold = ebm.equilibrium(ebm.Params(S0=S0), start="cold")
    present = ebm.equilibrium(ebm.Params(S0=S0), start="present")
    assert float(cold.ice_edge) == 0
    assert 30 < float(present.ice_edge) < 90
    # Each is on the branch: the global means match the stable segments there.
    segments = loop.segments()
    for equilibrium, segment in ((present, segments[2]), (cold, segments[4])):
        values = np.asarray(loop.values[segment])
        means = np.asarray(loop.global_mean[segment])
        order = np.argsort(values)
        on_branch = np.interp(S0, values[order], means[order])
        assert abs(float(equilibrium.global_mean) - on_branch) < 0.05
    assert snowball_fold < S0 < melt


def test_continuation_at_sharp_ice_width():
    branch = ebm.continuation(
        ebm.Params(S0=HIGH, ice_width=0.25), "S0", stop=LOW, start="warm"
    )
    assert branch.result == ebm.RESULTS.successful
    assert len(branch.folds) == 4
    np.testing.assert_array_equal(_flips(branch.stable), _flips(np.sign(branch.slope)))


def test_cell_centred_albedo_pins_the_ice_edge_to_the_grid():
    # The same loop with climlab's cell-centred albedo: the continuation walks the
    # staircase of grid-scale folds on the large-ice-cap branch, given steps short
    # enough not to step over them.
    model = ebm.EnergyBalanceModel(albedo=ebm.SmoothIceAlbedo())
    branch = ebm.continuation(
        ebm.Params(S0=1300.0),
        "S0",
        stop=1200.0,
        bounds=(1200.0, 1400.0),
        model=model,
        max_step=0.5,
    )
    assert branch.result == ebm.RESULTS.successful
    assert len(branch.folds) > 4
    np.testing.assert_array_equal(_flips(branch.stable), _flips(np.sign(branch.slope)))


def test_continuation_in_another_parameter():
    # Warming by a uniform forcing melts the ice: through the small-ice-cap folds.
    branch = ebm.continuation(ebm.Params(), "forcing", stop=20.0, save_profiles=True)
    assert branch.result == ebm.RESULTS.successful
    assert float(branch.values[-1]) == 20.0
    assert len(branch.folds) == 2
    assert float(branch.ice_edge[-1]) == 90
    model = ebm.EnergyBalanceModel()
    budgets = jax.vmap(lambda T, F: model.energy_budget(T, ebm.Params(forcing=F)))(
        branch.T, branch.values
    )
    assert float(jnp.max(jnp.abs(budgets))) < 1e-8


def test_max_points_truncates_the_branch():
    branch = ebm.continuation(ebm.Params(), "S0", stop=LOW, max_points=5)
    assert branch.result == ebm.RESULTS.max_steps_reached
    assert branch.num_points == 5
    assert branch.T is None


@pytest.fixture(scope="module")
def snowball_fold():
    return ebm.fold(ebm.Params(), "S0", stop=LOW)


def test_fold_finds_the_snowball_fold(loop, snowball_fold):
    assert snowball_fold.result == ebm.RESULTS.successful
    assert float(snowball_fold.value) == pytest.approx(
        float(loop.folds[2].value), abs=1e-8
    )
    assert int(snowball_fold.side) == 1
    assert float(jnp.sqrt(jnp.mean(snowball_fold.null_vector**2))) == pytest.approx(1.0)


FOLD_NAMES = ("A", "B", "D", "a0", "a2", "ai", "s2", "Tf", "ice_width", "forcing")


def test_fold_derivative_matches_finite_differences(snowball_fold):
    params = ebm.Params()

    def value(p):
        return ebm.fold(p, "S0", guess=snowball_fold).value

    gradient = jax.grad(value)(params)
    assert float(gradient.S0) == 0.0
    assert float(gradient.water_depth) == 0.0
    assert_gradient_matches_fd(value, params, gradient, FOLD_NAMES, rtol=1e-6)
    # The walk's start is not differentiated; the refined fold is, the same way.
    walked = jax.grad(lambda p: ebm.fold(p, "S0", stop=LOW).value)(params)
    assert float(walked.D) == pytest.approx(float(gradient.D), rel=1e-9)
    forward = jax.jacfwd(lambda D: value(replace(params, "D", D)))(params.D)
    assert float(forward) == pytest.approx(float(gradient.D), rel=1e-9)


def test_fold_ice_edge_derivative_matches_finite_differences(snowball_fold):
    params = ebm.Params()

    def edge(p):
        return ebm.fold(p, "S0", guess=snowball_fold).ice_edge

    gradient = jax.grad(edge)(params)
    assert_gradient_matches_fd(edge, params, gradient, ("D", "B"), rtol=1e-6)


def test_fold_without_a_fold_in_range():
    with pytest.raises(Exception, match="without passing a fold"):
        ebm.fold(ebm.Params(), "S0", stop=1300.0, bounds=(1300.0, 1366.0))
    quiet = ebm.fold(
        ebm.Params(), "S0", stop=1300.0, bounds=(1300.0, 1366.0), throw=False
    )
    assert quiet.result == ebm.RESULTS.no_fold


def test_bad_arguments_are_refused(snowball_fold):
    with pytest.raises(ValueError, match="`parameter` must be one of"):
        ebm.continuation(ebm.Params(), "S1", stop=1000.0)
    with pytest.raises(ValueError, match="`stop` must differ"):
        ebm.continuation(ebm.Params(), "S0", stop=1365.2)
    with pytest.raises(ValueError, match="`bounds`"):
        ebm.continuation(ebm.Params(), "S0", stop=1000.0, bounds=(1400.0, 1500.0))
    with pytest.raises(ValueError, match="`parameter_scale`"):
        ebm.continuation(ebm.Params(), "S0", stop=1000.0, parameter_scale=0.0)
    # A string stop failed in numpy's isfinite.
    with pytest.raises(TypeError, match="`stop` must be a number, got '1000'"):
        ebm.continuation(ebm.Params(), "S0", stop="1000")
    with pytest.raises(ValueError, match="either `stop`"):
        ebm.fold(ebm.Params(), "S0")
    with pytest.raises(ValueError, match="`stop` must differ"):
        ebm.fold(ebm.Params(), "S0", stop=1365.2)
    with pytest.raises(ValueError, match="`stop` must be finite"):
        ebm.fold(ebm.Params(), "S0", stop=float("nan"))
    with pytest.raises(ValueError, match="`parameter_scale`"):
        ebm.fold(ebm.Params(), "S0", stop=1000.0, parameter_scale=-5.0)
    # Inside jit the start is traced: the same mistake is caught there.
    with pytest.raises(Exception, match="`stop` must be finite and differ"):
        jax.jit(lambda p: ebm.fold(p, "S0", stop=1365.2).value)(ebm.Params())
    with pytest.raises(ValueError, match="is a fold in 'S0'"):
        ebm.fold(ebm.Params(), "D", guess=snowball_fold)


def test_fold_vmaps_over_a_parameter(snowball_fold):
    diffusivities = jnp.array([0.54, 0.555, 0.57])

    def value(D):
        params = replace(ebm.Params(), "D", D)
        return ebm.fold(params, "S0", guess=snowball_fold).value

    batched = jax.vmap(value)(diffusivities)
    one_by_one = jnp.array([value(D) for D in diffusivities])
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-12)
    assert float(batched[1]) == pytest.approx(float(snowball_fold.value), rel=1e-12)
    assert bool(jnp.all(jnp.diff(batched) > 0))


def test_equilibrium_warns_near_a_fold(snowball_fold):
    close = ebm.Params(S0=snowball_fold.value + 1e-4)
    with pytest.warns(ebm.NearFoldWarning, match="close to a fold"):
        near = ebm.equilibrium(close)
    # Under eager grad the eigenvalue is known as the call returns: it warns too.
    with pytest.warns(ebm.NearFoldWarning, match="close to a fold"):
        gradient = jax.grad(lambda p: ebm.equilibrium(p).global_mean)(close)
    far_gradient = jax.grad(lambda p: ebm.equilibrium(p).global_mean)(ebm.Params())
    assert float(gradient.S0) > 50 * float(far_gradient.S0)
    assert -0.01 < float(near.leading_eigenvalue) < 0
    far = ebm.equilibrium(ebm.Params())
    assert float(near.condition_number) > 50 * float(far.condition_number)
    quiet = ebm.equilibrium(close, near_fold=None)
    assert float(quiet.leading_eigenvalue) == float(near.leading_eigenvalue)
    assert near.result == ebm.RESULTS.successful


@pytest.mark.parametrize(
    "setting, value, allowed",
    [
        ("max_step", -1.0, "positive, finite"),
        ("min_step", 0.0, "positive, finite"),
        ("step", float("nan"), "positive, finite"),
        ("target_turn", -0.1, "positive, finite"),
        ("max_turn", 4.0, "(0, pi]"),
        ("max_points", 1, ">= 2"),
        ("corrector_steps", 0, ">= 1"),
    ],
)
def test_walk_settings_are_checked_before_the_walk(setting, value, allowed):
    # max_step=-1 used to walk 4 points that never left the start, "successful".
    for entry in (ebm.continuation, ebm.fold):
        with pytest.raises(ValueError, match=f"`{setting}`") as info:
            entry(ebm.Params(), "S0", stop=1300.0, grid=ebm.Grid(6), **{setting: value})
        assert allowed in str(info.value)
        assert str(value) in str(info.value)
    with pytest.raises(ValueError, match="`min_step` must be <= `max_step`"):
        ebm.continuation(ebm.Params(), "S0", stop=1300.0, min_step=2.0, max_step=1.0)


def test_walk_into_an_invalid_parameter_is_refused_by_name():
    # Towards D < 0 the walk used to fold at D = -0.03 and fail there unclearly.
    with pytest.raises(ValueError, match=r"`stop` reaches D = -0.5.*`D` must be >= 0"):
        ebm.continuation(ebm.Params(), "D", stop=-0.5, grid=ebm.Grid(6))
    with pytest.raises(ValueError, match=r"`bounds` reaches D = -0.1.*>= 0"):
        ebm.fold(ebm.Params(), "D", stop=0.3, bounds=(-0.1, 1.0), grid=ebm.Grid(6))
    # Traced, the same range is checked inside jit.
    with pytest.raises(Exception, match="`D` is finite and >= 0"):
        jax.jit(
            lambda stop: ebm.fold(ebm.Params(), "D", stop=stop, grid=ebm.Grid(6)).value
        )(-0.5)


def test_failed_fold_returns_nan_not_the_solver_state():
    quiet = ebm.fold(
        ebm.Params(), "S0", stop=1364.0, grid=ebm.Grid(12), throw=False
    )  # fmt: skip
    assert quiet.result == ebm.RESULTS.no_fold
    for name in ("value", "T", "null_vector", "global_mean", "ice_edge", "residual"):
        assert bool(jnp.all(jnp.isnan(getattr(quiet, name)))), name
    # Its derivatives are NaN too, as a failed equilibrium's are: they used to be
    # zero, which reads as "insensitive".
    gradient = jax.grad(
        lambda p: ebm.fold(p, "S0", stop=1364.0, grid=ebm.Grid(12), throw=False).value
    )(ebm.Params())
    assert all(np.isnan(getattr(gradient, name)) for name in ("D", "B", "A"))


# One bad argument each; `continuation` and `fold` must refuse it alike.
_BAD_ARGUMENTS = [
    ("S1", dict(stop=1000.0), "`parameter` must be one of"),
    ("S0", dict(stop=1365.2), "`stop` must differ"),
    ("S0", dict(stop=float("nan")), "`stop` must be finite"),
    ("S0", dict(stop=1000.0, bounds=(1400.0, 1500.0)), "`bounds` must be"),
    ("S0", dict(stop=1000.0, parameter_scale=0.0), "`parameter_scale` must be > 0"),
    ("D", dict(stop=-0.5), r"`stop` reaches D = -0.5.*`D` must be >= 0"),
    ("D", dict(stop=0.3, bounds=(-0.1, 1.0)), r"`bounds` reaches D = -0.1"),
    ("S0", dict(stop=None), "Give either `stop`"),
    ("S0", dict(stop=1000.0, start="tepid"), "`start` must be one of"),
    ("S0", dict(stop=1000.0, model=ebm.EnergyBalanceModel()), "Pass `grid` or `model`"),
]


@pytest.mark.parametrize("parameter, arguments, message", _BAD_ARGUMENTS)
def test_continuation_and_fold_refuse_a_bad_argument_alike(
    parameter, arguments, message
):
    errors = []
    for entry in (ebm.continuation, ebm.fold):
        with pytest.raises(ValueError, match=message) as info:
            entry(ebm.Params(), parameter, grid=ebm.Grid(6), **arguments)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_continuation_and_fold_share_their_keywords():
    """The walk's arguments are one set: the same names and defaults in both."""
    continuation = inspect.signature(ebm.continuation).parameters
    fold = inspect.signature(ebm.fold).parameters
    shared = set(continuation) & set(fold)
    assert shared >= {"bounds", "start", "parameter_scale", "step", "max_points"}
    assert set(continuation) - shared == {"save_profiles"}
    assert set(fold) - shared == {"guess"}
    for name in shared - {"stop"}:  # `continuation` must be told where to go
        assert continuation[name].default is fold[name].default, name


def test_failed_start_is_reported_alike_by_continuation_and_fold():
    # A start so far out that the equilibrium's root-find runs out of steps.
    arguments = dict(stop=1000.0, grid=ebm.Grid(6), start=np.full(6, 1e300))
    code = ebm.RESULTS.nonlinear_max_steps_reached
    with pytest.raises(eqx.EquinoxRuntimeError, match="starting equilibrium"):
        ebm.continuation(ebm.Params(), "S0", **arguments)
    # With throw=False it used to raise all the same, from inside the start.
    branch = ebm.continuation(ebm.Params(), "S0", throw=False, **arguments)
    assert branch.result == code
    assert branch.num_points == 1 and branch.folds == ()
    assert bool(jnp.isnan(branch.global_mean[0]))
    with pytest.raises(eqx.EquinoxRuntimeError, match="maximum number of steps"):
        ebm.fold(ebm.Params(), "S0", **arguments)
    quiet = ebm.fold(ebm.Params(), "S0", throw=False, **arguments)
    assert quiet.result == code
    assert bool(jnp.isnan(quiet.value))


def test_failed_walk_raises_the_same_error_from_continuation_and_fold():
    # One corrector iteration never converges: the step shrinks below min_step.
    arguments = dict(
        stop=1000.0, grid=ebm.Grid(6), corrector_steps=1, min_step=0.5
    )  # fmt: skip
    message = "fell below `min_step`"
    # continuation raised a plain RuntimeError, fold an EquinoxRuntimeError.
    with pytest.raises(eqx.EquinoxRuntimeError, match=message):
        ebm.continuation(ebm.Params(), "S0", **arguments)
    with pytest.raises(eqx.EquinoxRuntimeError, match=message):
        ebm.fold(ebm.Params(), "S0", **arguments)
    branch = ebm.continuation(ebm.Params(), "S0", throw=False, **arguments)
    assert branch.result == ebm.RESULTS.step_too_small


def test_traced_parameter_out_of_range_is_refused_by_fold():
    with pytest.raises(Exception, match="`ice_width` must be > 0 K"):
        jax.jit(
            lambda w: (
                ebm.fold(
                    ebm.Params(ice_width=w), "S0", stop=1000.0, grid=ebm.Grid(6)
                ).value
            )
        )(-1.0)


def test_continuation_and_fold_compile_once():
    """New parameter values reuse the compiled walk, fold refinement and fold
    solve, although the walk's number of points differs from call to call."""
    values = (ebm.Params(), ebm.Params(D=0.5), ebm.Params(D=0.6, B=2.1))
    counts = []

    def walk(p):
        branch = ebm.continuation(p, "S0", stop=LOW)
        assert branch.folds  # the folds passed are refined every time
        counts.append(branch.num_points)
        return branch.values

    assert_compiles_once(walk, *values)
    assert len(set(counts)) > 1
    assert_compiles_once(lambda p: ebm.fold(p, "S0", stop=LOW).value, *values)
    assert_compiles_once(jax.grad(lambda p: ebm.fold(p, "S0", stop=LOW).value), *values)


def test_walks_with_and_without_bounds_and_scale_share_the_compiled_program():
    """The defaults of `bounds` and `parameter_scale` are values, not a different
    call: giving them compiles nothing new."""

    def fold(settings):
        return ebm.fold(ebm.Params(), "S0", stop=LOW, **settings).value

    assert_compiles_once(fold, {}, {"bounds": (LOW, 1400.0)}, {"parameter_scale": 2.0})


def test_continuation_progress_on_stderr_without_changing_the_branch(capfd):
    params, grid = ebm.Params(S0=1500.0), ebm.Grid(12)

    def branch(**kwargs):
        return ebm.continuation(params, "S0", stop=1200.0, grid=grid, **kwargs)

    quiet = branch()
    output = capfd.readouterr()
    assert output.err == "" and output.out == ""
    shown = branch(progress=True)
    output = capfd.readouterr()
    assert "100.00%|" in output.err and output.out == ""
    assert shown.num_points == quiet.num_points
    np.testing.assert_array_equal(shown.values, quiet.values)
    np.testing.assert_array_equal(shown.global_mean, quiet.global_mean)
    # One program with the meter and one without: toggling compiles neither again.
    with compilations() as compiled:
        branch(progress=False)
        branch(progress=True)
    assert not compiled, compiled


def test_fold_progress_on_stderr_without_changing_the_fold(capfd):
    # The walk to the fold is the long part of `ebm.fold`; it shows progress as
    # `continuation`'s walk does, and the fold found is the same.
    arguments = dict(stop=1200.0, grid=ebm.Grid(12))
    quiet = ebm.fold(ebm.Params(S0=1500.0), "S0", **arguments)
    output = capfd.readouterr()
    assert output.err == "" and output.out == ""
    shown = ebm.fold(ebm.Params(S0=1500.0), "S0", progress=True, **arguments)
    output = capfd.readouterr()
    assert "100.00%|" in output.err and output.out == ""
    assert float(shown.value) == float(quiet.value)


def test_a_deep_ocean_model_folds_where_its_surface_does_under_its_forcing():
    surface = ebm.EnergyBalanceModel(grid=ebm.Grid(12))
    model = ebm.DeepOceanModel(surface=surface, forcing=ebm.AbruptCO2(2.0))
    params = model.Params()

    def snowball(p):
        return ebm.fold(p, "S0", stop=1000.0, model=model)

    found = snowball(params)
    # A root of the whole model's own tendency, the deep ocean at the surface's
    # temperature, at a fold: the surface block of its Jacobian is singular there.
    at = eqx.tree_at(lambda p: p.S0, params, found.value)
    state = {"T": found.T, "T_deep": found.T}
    tendency = model(0.0, state, at)
    assert max(float(jnp.max(jnp.abs(x))) for x in tendency.values()) < 1e-8
    assert abs(_leading_eigenvalue(found.T, model.surface_params(at), surface)) < 1e-6
    # The surface's fold under the 2 x CO2 forcing: walking down from an ice-free
    # climate, the first fold is where ice appears, not the unforced model's.
    bare = model.surface_params(params)
    forced = eqx.tree_at(lambda p: p.forcing, bare, bare.forcing + params.F2x)
    assert np.isclose(
        found.value,
        ebm.fold(forced, "S0", stop=1000.0, model=surface).value,
        rtol=1e-12,
    )
    unforced = ebm.fold(bare, "S0", stop=1000.0, model=surface)
    assert abs(float(found.value) - float(unforced.value)) > 10.0
    # Differentiable in the forcing; the deep ocean's own parameters do not enter.
    gradient = jax.grad(lambda p: snowball(p).value)(params)
    assert float(gradient.gamma) == 0.0 and float(gradient.C_deep) == 0.0
    assert_gradient_matches_fd(
        lambda p: snowball(p).value, params, gradient, ["F2x", "D"], rtol=1e-5
    )
    branch = ebm.continuation(params, "S0", stop=1000.0, model=model)
    values = np.array([float(f.value) for f in branch.folds])
    assert np.isclose(values, float(found.value), rtol=1e-8).sum() == 1


def test_models_without_walkable_branches_are_refused_by_name():
    two = ebm.TwoLayerModel()
    with pytest.raises(ValueError, match="linear .* sweep ebm.equilibrium"):
        ebm.fold(two.Params(), "feedback", stop=2.0, model=two)
    deep = ebm.DeepOceanModel(surface=ebm.EnergyBalanceModel(grid=ebm.Grid(6)))
    with pytest.raises(ValueError, match="'gamma' does not move"):
        ebm.continuation(deep.Params(), "gamma", stop=2.0, model=deep)
    # The walk adds the scenario's forcing to the surface's: walking that forcing
    # or the scenario's F2x would report shifted values.
    for name in ("forcing", "F2x"):
        with pytest.raises(ValueError, match=f"'{name}' moves them through"):
            ebm.fold(deep.Params(), name, stop=-30.0, model=deep)
    with pytest.raises(TypeError, match="must be an ebm model"):
        ebm.fold(ebm.Params(), "S0", stop=1000.0, model="zonal")
    with pytest.raises(ValueError, match="`t` is for a model under a forcing"):
        ebm.fold(ebm.Params(), "S0", stop=1000.0, grid=ebm.Grid(6), t=3.0)
    with pytest.raises(TypeError, match="model.Params"):
        ebm.fold(ebm.Params(), "S0", stop=1000.0, model=deep)
