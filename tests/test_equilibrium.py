import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
import pytest

import ebm
from ebm._numerics.tridiagonal import (
    BATCHED_ELIMINATION_MIN,
    TridiagonalMatrix,
    _backward_error,
    _eliminate,
    probe_tridiagonal,
)
from helpers import (
    assert_compiles_once,
    assert_gradient_matches_fd,
    compilations,
    replace,
)


NAMES = ebm.Params.field_names()


@pytest.fixture(scope="module")
def params():
    return ebm.Params()


def test_present_day_equilibrium(params):
    state = ebm.equilibrium(params)
    assert bool(state.converged) and bool(state.stable)
    assert float(state.leading_eigenvalue) < 0
    assert float(state.residual) < 1e-9
    model = ebm.EnergyBalanceModel()
    assert float(jnp.max(jnp.abs(model.energy_budget(state.T, params)))) < 1e-9
    assert 0 < float(state.ice_edge) < 90
    # Energy balance of the whole planet: absorbed solar equals OLR in the mean, to
    # within the residual (transport moves energy and creates none).
    absorbed = model.global_mean(model.absorbed_solar(state.T, params))
    emitted = model.global_mean(model.outgoing_longwave(state.T, params))
    assert abs(float(absorbed - emitted)) <= float(state.residual) + 1e-12


def test_cold_start_is_a_snowball(params):
    state = ebm.equilibrium(params, start="cold")
    assert bool(state.stable)
    assert float(state.ice_edge) == 0.0
    assert bool(jnp.all(state.T < params.Tf))


def test_low_solar_constant_is_a_snowball():
    state = ebm.equilibrium(ebm.Params(S0=1100.0))
    assert float(state.ice_edge) == 0.0
    assert bool(jnp.all(state.T < -10.0))


def test_ice_edge_moves_poleward_with_solar_constant():
    edges = [
        float(ebm.equilibrium(ebm.Params(S0=S0)).ice_edge)
        for S0 in (1300.0, 1330.0, 1350.0, 1365.2)
    ]
    assert all(0 < edge < 90 for edge in edges)
    assert np.all(np.diff(edges) > 0)


def _long_run(params, start, grid):
    return ebm.integrate(params, years=300.0, T0=start, grid=grid, max_steps=65536)


@pytest.mark.parametrize("ice_width", [0.25, 1.0, 5.0])
@pytest.mark.parametrize("start", ["present", "warm", "cold"])
def test_equilibrium_is_where_integration_goes(start, ice_width):
    params = ebm.Params(ice_width=ice_width)
    grid = ebm.Grid(60)
    state = ebm.equilibrium(params, start=start, grid=grid)
    run = _long_run(params, start, grid)
    assert bool(state.stable)
    np.testing.assert_allclose(state.T, run.T, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "S0, start", [(1300.0, "present"), (1340.0, "warm"), (1355.0, "warm")]
)
def test_sharp_ice_edge_passes_unstable_states(S0, start):
    # With a 0.25 K ice-albedo transition the way from these starts crosses states
    # whose Jacobian has unstable directions; plain pseudo-transient continuation
    # stalls there or lands on a saddle.
    params = ebm.Params(S0=S0, ice_width=0.25)
    state = ebm.equilibrium(params, start=start)
    run = _long_run(params, start, ebm.Grid(60))
    assert bool(state.stable) and int(state.restarts) == 0
    np.testing.assert_allclose(state.T, run.T, rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("n_lat", [90, 180, 360, 1000])
@pytest.mark.parametrize("ice_width", [0.25, 1.0, 5.0])
@pytest.mark.parametrize("start", ["present", "warm", "cold"])
def test_equilibrium_is_where_integration_goes_fine_grids(start, ice_width, n_lat):
    params = ebm.Params(ice_width=ice_width)
    grid = ebm.Grid(n_lat)
    state = ebm.equilibrium(params, start=start, grid=grid)
    run = _long_run(params, start, grid)
    np.testing.assert_allclose(state.T, run.T, rtol=0, atol=1e-6)


def _global_mean(params):
    return ebm.equilibrium(params).global_mean


def _ice_edge(params):
    return ebm.equilibrium(params).ice_edge


@pytest.mark.parametrize("output", [_global_mean, _ice_edge])
def test_implicit_gradient_matches_finite_differences(params, output):
    gradient = jax.grad(output)(params)
    names = [n for n in NAMES if n != "water_depth"]
    assert_gradient_matches_fd(output, params, gradient, names, rtol=1e-6)
    # Heat capacity sets how fast, not where.
    assert float(gradient.water_depth) == 0.0


def test_forward_and_reverse_mode_agree(params):
    forward = jax.jacfwd(lambda p: ebm.equilibrium(p).T)(params)
    reverse = jax.jacrev(lambda p: ebm.equilibrium(p).T)(params)
    for name in NAMES:
        np.testing.assert_allclose(
            getattr(forward, name), getattr(reverse, name), rtol=1e-8, atol=1e-12
        )


def test_jacfwd_of_profile_matches_finite_differences(params):
    jacobian = jax.jacfwd(lambda p: ebm.equilibrium(p).T)(params)
    for index in (5, 30, 55):
        assert_gradient_matches_fd(
            lambda p: ebm.equilibrium(p).T[index],
            params,
            jax.tree.map(lambda column: column[index], jacobian),
            ["D", "S0", "Tf"],
            rtol=1e-6,
        )


def test_implicit_gradient_matches_unrolled_spin_up(params):
    implicit = jax.grad(_global_mean)(params)

    def spun_up(params):
        return ebm.integrate(params, years=200.0, max_steps=8192).global_mean

    unrolled = jax.grad(spun_up)(params)
    for name in NAMES:
        if name == "water_depth":
            # A 200-year run remembers its start only to ~1e-12 K.
            assert abs(float(unrolled.water_depth)) < 1e-8
            continue
        np.testing.assert_allclose(
            getattr(unrolled, name), getattr(implicit, name), rtol=1e-7
        )


def test_non_convergence_is_reported(params):
    failed = ebm.equilibrium(params, max_steps=3, throw=False)
    assert not bool(failed.converged)
    with pytest.raises(Exception, match="maximum number of steps"):
        ebm.equilibrium(params, max_steps=3)


def test_under_vmap():
    S0 = jnp.array([1340.0, 1365.2, 1390.0])
    batched = eqx.filter_vmap(lambda s: ebm.equilibrium(replace(ebm.Params(), "S0", s)))
    states = batched(S0)
    for s, edge in zip(S0, states.ice_edge):
        single = ebm.equilibrium(ebm.Params(S0=s))
        assert float(edge) == pytest.approx(float(single.ice_edge), abs=1e-9)


class _GlobalFeedbackLongwave(ebm.AbstractLongwave):
    """OLR with a term in the global mean: a dense, rank-one part of the Jacobian."""

    def __call__(self, T, params, grid):
        return params.A + params.B * T + 0.5 * grid.global_mean(T)


def test_non_local_term_gradient_runs_gmres_and_matches_finite_differences(params):
    """The tridiagonal preconditioner is inexact for a non-local term, so the implicit
    solve runs GMRES (the default model skips it); the gradient is still exact."""
    model = ebm.EnergyBalanceModel(longwave=_GlobalFeedbackLongwave())

    def global_mean(p):
        return ebm.equilibrium(p, model=model).global_mean

    gradient = jax.grad(global_mean)(params)
    assert_gradient_matches_fd(global_mean, params, gradient, ("A", "B", "D", "S0"))
    # The global feedback damps the response: less warming per unit of forcing.
    local = jax.grad(lambda p: ebm.equilibrium(p).global_mean)(params)
    assert 0 < float(gradient.forcing) < float(local.forcing)
    # GMRES did run: the solver reports its iterations (one compiled program each:
    # op by op, every operation would compile for its shapes).
    solver = ebm.TridiagonalPreconditionedGMRES()
    T = ebm.equilibrium(params, model=model).T

    @eqx.filter_jit
    def iterations(model, T):
        operator = lx.JacobianLinearOperator(
            lambda x, _: model.energy_budget(x, params), T, None
        )
        _, result, stats = solver.compute(
            solver.init(operator, {}), jnp.ones_like(T), {}
        )
        return result, stats["num_steps"]

    result, steps = iterations(model, T)
    assert result == lx.RESULTS.successful and int(steps) > 0
    assert int(iterations(ebm.EnergyBalanceModel(), T)[1]) == 0


def test_fine_grid_implicit_solve_is_direct_and_eigenvalues_exact(params):
    """On 20,000 cells the Jacobian's condition number (~ 4 D / (B dlat^2), 4e7) put
    the preconditioned residual of the exact tridiagonal solve above GMRES's
    tolerance, and every gradient ran GMRES iterations that could not improve it
    (the 100,000-cell gradient took 140 times the 10,000-cell one). The solve is
    direct, and the probed Jacobian's extreme eigenvalues are numpy's."""
    grid = ebm.Grid(20_000)
    model = ebm.EnergyBalanceModel(grid)
    T = ebm.present_day_profile(grid)
    operator = lx.JacobianLinearOperator(
        lambda x, _: model.energy_budget(x, params), T, None
    )
    solver = ebm.TridiagonalPreconditionedGMRES()
    vector = jnp.sin(jnp.linspace(0.0, 3.0, grid.n_lat))
    solution, result, stats = jax.jit(
        lambda b: solver.compute(solver.init(operator, {}), b, {})
    )(vector)
    assert result == lx.RESULTS.successful and int(stats["num_steps"]) == 0
    # Exact to rounding: the componentwise backward error is a few eps. (Each check
    # is one compiled program: op by op, each operation compiles for its shapes.)
    backward_error = jax.jit(
        lambda x, b: _backward_error(
            operator, probe_tridiagonal(operator.mv, grid.n_lat, T.dtype), x, b
        )
    )
    assert float(backward_error(solution, vector)) < 1e-14

    @jax.jit
    def probed(params):
        small = ebm.Grid(361)
        small_model = ebm.EnergyBalanceModel(small)
        _, linear = jax.linearize(
            lambda x: small_model.energy_budget(x, params),
            ebm.present_day_profile(small),
        )
        tridiagonal = probe_tridiagonal(linear, small.n_lat, T.dtype)
        return (
            tridiagonal.diagonal,
            tridiagonal._symmetrised_off_diagonal(),
            tridiagonal.leading_eigenvalue(),
            tridiagonal.lowest_eigenvalue(),
        )

    diagonal, off, leading, lowest = map(np.asarray, probed(params))
    dense = np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1)
    expected = np.linalg.eigvalsh(dense)
    assert float(leading) == pytest.approx(expected[-1], rel=1e-9)
    assert float(lowest) == pytest.approx(expected[0], rel=1e-12)


def _tridiagonal_batch():
    """Systems of every kind a batch can mix: the shifted Jacobian of a stable state
    (no pivot needed), an indefinite one whose elimination without pivoting breaks
    down (a zero pivot) or loses digits (a tiny one), and one with a NaN."""
    rng = np.random.default_rng(0)
    n = 12
    off = rng.uniform(0.5, 1.5, (6, n - 1))
    diagonal = -(2.5 + rng.uniform(0, 1, (6, n)))
    lower, upper = off.copy(), off * rng.uniform(0.5, 2.0, (6, n - 1))
    diagonal[1, 0] = 0.0  # zero first pivot
    diagonal[2, 0] = 1e-13  # tiny first pivot: huge growth without pivoting
    diagonal[3] = rng.uniform(-1, 1, n)  # indefinite
    vector = rng.normal(size=(6, n))
    vector[4, 3] = np.nan
    return TridiagonalMatrix(
        jnp.asarray(diagonal), jnp.asarray(lower), jnp.asarray(upper)
    ), jnp.asarray(vector)


@pytest.mark.parametrize("copies", [1, 11])
def test_batched_tridiagonal_solve_is_each_systems_solve(copies):
    # Under vmap a batch of 64 or more is eliminated without pivoting, all at once;
    # a system that needs pivoting must still get gtsv's answer, and a NaN must not
    # spread. A smaller batch is gtsv's, one system at a time.
    matrices, vectors = _tridiagonal_batch()
    bands = jax.vmap(TridiagonalMatrix._bands)(matrices)
    _, exact = _eliminate(*bands, vectors)
    assert [bool(exact[i]) for i in (0, 1, 2, 4, 5)] == [True, False, False, True, True]

    def tiled(x):
        return jnp.concatenate([x] * copies)

    stable = jnp.array([0, 5] * (BATCHED_ELIMINATION_MIN // 2 + 1))
    batches = [
        (jax.tree.map(tiled, matrices), tiled(vectors)),
        (jax.tree.map(lambda x: x[stable], matrices), vectors[stable]),
    ]
    one = jax.jit(lambda m, b: m.solve(b))
    for matrices, vectors in batches:
        batched = jax.jit(jax.vmap(lambda m, b: m.solve(b)))(matrices, vectors)
        for i in range(vectors.shape[0]):
            if not bool(jnp.all(jnp.isfinite(vectors[i]))):
                assert bool(jnp.all(jnp.isnan(batched[i])))
                continue
            matrix = jax.tree.map(lambda x: x[i], matrices)
            np.testing.assert_allclose(
                batched[i], one(matrix, vectors[i]), rtol=1e-11, atol=1e-13
            )
    # The transposed solve of reverse mode goes the same way.
    matrices, vectors = batches[0]
    loss = lambda m, b: jnp.sum(jnp.sin(m.solve(b)))  # noqa: E731
    cotangents = jax.vmap(jax.grad(loss, argnums=1))(matrices, vectors)
    for i in (0, 1, 2, 3):
        matrix = jax.tree.map(lambda x: x[i], matrices)
        alone = jax.grad(loss, argnums=1)(matrix, vectors[i])
        np.testing.assert_allclose(cotangents[i], alone, rtol=1e-10, atol=1e-12)


def test_vmapped_eigenvalue_bound_is_each_members():
    # Under vmap the bisection runs while any member has a positive eigenvalue;
    # members without one get zero, as alone.
    matrices, _ = _tridiagonal_batch()
    bound = jax.vmap(lambda m: m.leading_eigenvalue_bound())
    batched = jax.jit(bound)(matrices)
    alone = [
        float(
            jax.jit(lambda m: m.leading_eigenvalue_bound())(
                jax.tree.map(lambda x: x[i], matrices)
            )
        )
        for i in range(batched.shape[0])
    ]
    np.testing.assert_array_equal(batched, alone)
    assert alone[0] == 0.0 and alone[3] > 0.0
    leading = [
        float(jax.tree.map(lambda x: x[i], matrices).leading_eigenvalue())
        for i in (1, 2, 3)
    ]
    for i, eigenvalue in zip((1, 2, 3), leading):
        if eigenvalue > 0:
            assert eigenvalue <= alone[i] <= eigenvalue * 1.01


# Next to a fold: the vanished state's ghost slows the dynamics down, not the solve.

_FOLD_GRID = ebm.Grid(360)


@pytest.mark.parametrize("S0", [1257.6, 1258.5, 1259.04])
def test_equilibrium_below_the_snowball_fold_converges_from_warm(S0):
    # The snowball fold of this set-up is at 1259.05 W m-2: below it the warm state
    # is gone, and the way from the warm start crawls past its ghost.
    params = ebm.Params(S0=S0, ice_width=0.25)
    state = ebm.equilibrium(params, grid=_FOLD_GRID, start="warm")
    snowball = ebm.equilibrium(params, grid=_FOLD_GRID, start="cold")
    assert bool(state.converged) and bool(state.stable)
    np.testing.assert_allclose(state.T, snowball.T, rtol=0, atol=1e-6)
    far = ebm.equilibrium(ebm.Params(ice_width=0.25), grid=_FOLD_GRID, start="warm")
    assert int(state.num_steps) <= 10 * int(far.num_steps)


def test_equilibrium_next_to_the_fold_is_where_integration_goes():
    params = ebm.Params(S0=1259.04, ice_width=0.25)
    state = ebm.equilibrium(params, grid=_FOLD_GRID, start="warm")
    run = ebm.integrate(
        params,
        years=2000.0,
        T0="warm",
        grid=_FOLD_GRID,
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10),
    )
    np.testing.assert_allclose(state.T, run.T, rtol=0, atol=1e-6)


def test_equilibrium_just_above_the_fold_stays_on_the_warm_branch():
    params = ebm.Params(S0=1259.06, ice_width=0.25)
    state = ebm.equilibrium(params, grid=_FOLD_GRID, start="warm", near_fold=None)
    assert bool(state.converged) and bool(state.stable)
    assert 0 < float(state.ice_edge) < 90
    # It is a steady state of the dynamics: a run from it stays there.
    run = ebm.integrate(params, years=50.0, T0=state.T, grid=_FOLD_GRID)
    np.testing.assert_allclose(run.T, state.T, rtol=0, atol=1e-6)


def test_any_optimistix_root_finder_is_accepted(params):
    state = ebm.equilibrium(params, solver=optx.Newton(rtol=1e-10, atol=1e-10))
    default = ebm.equilibrium(params)
    assert bool(state.converged) and int(state.restarts) == 0
    np.testing.assert_allclose(state.T, default.T, rtol=0, atol=1e-8)


def test_root_finder_landing_on_a_saddle_is_reported():
    params = ebm.Params()
    branch = ebm.continuation(
        params, "S0", stop=1200.0, save_profiles=True, max_points=200
    )
    unstable = np.flatnonzero(~np.asarray(branch.stable))[3]
    on_saddle = replace(params, "S0", branch.values[unstable])
    newton = optx.Newton(rtol=1e-10, atol=1e-10)
    state = ebm.equilibrium(
        on_saddle, solver=newton, start=branch.T[unstable], throw=False
    )
    assert state.result == ebm.RESULTS.unstable_equilibrium
    assert np.isnan(state.global_mean)
    with pytest.raises(Exception, match="unstable equilibrium"):
        ebm.equilibrium(on_saddle, solver=newton, start=branch.T[unstable])


def test_failed_solve_gives_nan_and_nan_gradients(params):
    failed = ebm.equilibrium(params, max_steps=3, throw=False)
    assert np.all(np.isnan(failed.T))
    assert np.isnan(failed.global_mean) and np.isnan(failed.ice_edge)
    assert np.isfinite(failed.residual)  # how far it got: a diagnostic
    gradient = jax.grad(
        lambda p: ebm.equilibrium(p, max_steps=3, throw=False).global_mean
    )(params)
    assert all(np.isnan(getattr(gradient, name)) for name in NAMES)


def test_bad_start_and_max_steps_are_refused_at_once(params):
    with pytest.raises(ValueError, match="`start` must be finite"):
        ebm.equilibrium(params, start=np.full(60, np.nan))
    for max_steps in (0, -1, 2.5):
        with pytest.raises(ValueError, match="`max_steps` must be an integer >= 1"):
            ebm.equilibrium(params, max_steps=max_steps)
    # A negative threshold was accepted (and never warned); a dict or None for the
    # parameters failed with an AttributeError.
    for near_fold in (-1.0, 0.0, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match="`near_fold` must be a positive"):
            ebm.equilibrium(params, near_fold=near_fold)
    for bad in ({"D": 0.5}, None):
        with pytest.raises(TypeError, match="`params` must be a parameter container"):
            ebm.equilibrium(bad)


def test_compile_counter_sees_a_new_program_and_not_a_cached_one():
    fn = jax.jit(lambda x: jnp.sin(x) + 0.25)
    x, y = jnp.ones(7), jnp.zeros(7)
    with compilations() as first:
        fn(x)
    with compilations() as second:
        fn(y)
    assert len(first) == 1 and second == []


# Values on both sides of the default: a loop over cases, a fit's iterates.
_VALUES = (ebm.Params(), ebm.Params(D=0.5, S0=1370.0), ebm.Params(D=0.6, A=205.0))


def test_equilibrium_and_its_derivatives_compile_once():
    """A second call with new parameter values (same grid and settings) compiles
    nothing: the equilibrium, its reverse- and forward-mode derivatives."""
    assert_compiles_once(lambda p: ebm.equilibrium(p).T, *_VALUES)
    assert_compiles_once(jax.grad(lambda p: ebm.equilibrium(p).global_mean), *_VALUES)
    assert_compiles_once(jax.jacfwd(lambda p: ebm.equilibrium(p).ice_edge), *_VALUES)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"grid": 60}, TypeError, r"`grid` must be an ebm.Grid \(e.g. ebm.Grid\(60\)"),
        ({"model": "default"}, TypeError, "takes the zonal model .* got str"),
        ({"adjoint": "implicit"}, TypeError, "`adjoint` must be an optimistix adjoint"),
        ({"solver": None}, TypeError, "`solver` must be an optimistix root-finder"),
        ({"start": None}, ValueError, "`start` must be one of .* got None"),
        ({"throw": "yes"}, TypeError, "`throw` must be True or False"),
    ],
)
def test_arguments_of_the_wrong_kind_are_named(kwargs, error, match):
    # Each gave an AttributeError from deep inside (or, for throw, was accepted).
    with pytest.raises(error, match=match):
        ebm.equilibrium(ebm.Params(), **kwargs)


def test_a_copy_of_the_default_adjoint_is_the_default():
    # eqx.filter_jit rebuilds the Modules it is given, so the default adjoint
    # reaches `equilibrium` through a compiled function (fit's step, the
    # sensitivities' Jacobian) as a copy. It must still become the model's own
    # direct tridiagonal solve, not the GMRES it stands for in general.
    import copy

    from ebm._steady.equilibrium import DEFAULT_ADJOINT

    grid = ebm.Grid(6)

    def program(adjoint):
        def global_mean(params):
            return ebm.equilibrium(params, grid=grid, adjoint=adjoint).global_mean

        return str(jax.make_jaxpr(jax.grad(global_mean))(ebm.Params()))

    assert program(copy.deepcopy(DEFAULT_ADJOINT)) == program(DEFAULT_ADJOINT)
