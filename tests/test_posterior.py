"""Bayesian calibration with NUTS: priors, the guarded log density, and a posterior
of (A, B) from a noisy synthetic profile on a coarse grid.

The sampling test is small (two chains, a short warm-up) and checks what it can
honestly check at that size: the truth is covered, the chains agree, the draws
agree with the Laplace approximation, and failed proposals are zero-probability
points rather than NaNs.
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._analysis.log_posterior import is_snowball


GRID = ebm.Grid(18)
PRIORS = {"A": ebm.Normal(210.0, 20.0), "B": ebm.LogNormal(2.0, 0.3)}


@pytest.fixture(scope="module")
def synthetic():
    params = ebm.Params()
    truth = ebm.equilibrium(params, grid=GRID)
    noise = np.random.default_rng(3).standard_normal(GRID.n_lat)
    return params, np.asarray(truth.T) + 0.5 * noise


@pytest.fixture(scope="module")
def draws(synthetic):
    params, observed = synthetic
    return ebm.posterior(
        params,
        observed,
        priors=PRIORS,
        noise=0.5,
        grid=GRID,
        num_chains=2,
        num_warmup=150,
        num_samples=150,
        seed=1,
    )


# --- Priors ------------------------------------------------------------------------


def test_priors_check_their_arguments():
    with pytest.raises(ValueError, match="std"):
        ebm.Normal(1.0, -2.0)
    with pytest.raises(ValueError, match="median"):
        ebm.LogNormal(0.0, 0.1)
    with pytest.raises(ValueError, match="lower"):
        ebm.Uniform(2.0, 1.0)


def test_uniform_on_an_unbounded_parameter_needs_its_ends():
    with pytest.raises(ValueError, match="no finite lower end"):
        ebm.Uniform().coordinate(ebm.Params.declaration("long_peri"))
    support = ebm.Uniform().coordinate(ebm.Params.declaration("a0"))
    assert (support.lower, support.upper, support.transform) == (0.0, 1.0, "logit")


def test_coordinates_stay_inside_the_support():
    support = ebm.LogNormal(2.0, 0.3).coordinate(ebm.Params.declaration("B"))
    z = jnp.linspace(-40.0, 40.0, 9)
    values = support.from_unconstrained(z)
    assert np.all(np.asarray(values) > 0)
    middle = z[2:-2]
    roundtrip = support.to_unconstrained(support.from_unconstrained(middle))
    assert np.allclose(roundtrip, middle, rtol=1e-12)


@pytest.mark.parametrize(
    "prior, name",
    [
        (ebm.LogNormal(2.0, 0.3), "B"),
        (ebm.Normal(0.5, 0.1), "D"),
        (ebm.Uniform(0.2, 0.4), "a0"),
        (ebm.Normal(210.0, 20.0), "A"),
        (ebm.LogDensity(lambda x: -x, lower=0.0), "D"),
    ],
)
def test_log_jacobian_is_the_derivative_of_the_transform(prior, name):
    support = prior.coordinate(ebm.Params.declaration(name))
    z = jnp.linspace(-3.0, 3.0, 7)
    slope = jax.vmap(jax.grad(support.from_unconstrained))(z)
    assert np.allclose(support.log_jacobian(z), np.log(slope), rtol=1e-12, atol=1e-12)


# --- Arguments ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, match",
    [
        ({"priors": {"nope": ebm.Normal(0.0, 1.0)}}, "nope"),
        ({"priors": {"A": 3.0}}, "must be an ebm prior"),
        ({"noise": -1.0}, "noise"),
        ({"observed": np.zeros(5)}, "shape"),
        ({"observed": {"albedo": 0.3}}, "albedo"),
        # An edge in the wrong hemisphere's sign (a common slip) drove D to 0.
        (
            {"observed": {"ice_edge_south": 74.4}},
            r"`observed\['ice_edge_south'\]` must be in \[-90, 0\]",
        ),
        ({"observed": {"ice_edge": -70.0}}, r"must be in \[0, 90\]"),
        ({"through": "spin-up"}, "through"),
        ({"derived": ("tcr",)}, "tcr"),
        ({"num_samples": 1}, "num_samples"),
        # Sampled around 4.4 without a word: the prior has no mass in the range.
        (
            {"priors": {"A": ebm.Normal(210.0, 1.0), "B": ebm.Normal(-1.0, 0.1)}},
            "The prior of `B` has no probability inside its allowed range",
        ),
    ],
)
def test_bad_arguments_are_named(synthetic, change, match):
    params, observed = synthetic
    arguments = dict(observed=observed, priors=PRIORS, noise=0.5, grid=GRID)
    arguments.update(change)
    with pytest.raises(ValueError, match=match):
        ebm.posterior(params, **arguments)


# --- The guarded log density -------------------------------------------------------


def test_a_snowball_proposal_is_minus_infinity_with_a_zero_gradient(draws):
    # The observations are warm; A = 300 W m-2 sends the planet to a snowball.
    log_posterior = draws.log_posterior
    assert not bool(log_posterior.regime)
    cold = log_posterior.coordinates({"A": 300.0, "B": 2.0})
    snowball = ebm.equilibrium(
        log_posterior.with_parameters({"A": 300.0, "B": 2.0}), grid=GRID
    )
    assert bool(is_snowball(snowball.ice_edge))
    value, gradient = jax.value_and_grad(log_posterior)(cold)
    assert float(value) == -np.inf
    assert all(float(g) == 0.0 for g in jax.tree.leaves(gradient))
    # Where the model works, the gradient matches central differences.
    at = log_posterior.coordinates({"A": 211.0, "B": 2.05})
    gradient = jax.grad(log_posterior)(at)
    for name in ("A", "B"):
        h = 1e-5
        up = dict(at, **{name: at[name] + h})
        down = dict(at, **{name: at[name] - h})
        difference = (log_posterior(up) - log_posterior(down)) / (2 * h)
        assert np.isclose(gradient[name], difference, rtol=1e-5)


def test_an_out_of_range_value_is_minus_infinity(draws):
    # An overflowing log coordinate (B = inf) is caught, not solved.
    log_posterior = draws.log_posterior
    value = log_posterior({"A": jnp.asarray(210.0), "B": jnp.asarray(800.0)})
    assert float(value) == -np.inf


# --- Sampling ----------------------------------------------------------------------


def test_the_posterior_covers_the_truth_and_the_chains_agree(draws):
    assert draws.draws["A"].shape == (2, 150)
    assert draws.failed == 0
    for name, truth in (("A", 210.0), ("B", 2.0)):
        assert np.all(np.isfinite(draws[name]))
        assert abs(float(draws.mean(name)) - truth) < 3 * float(draws.std(name))
        assert float(draws.rhat[name]) < 1.1
        assert float(draws.ess[name]) > 20
    ecs = np.asarray(draws["ecs"])
    # ECS = 3.7 / (B - ice-albedo feedback): positive, and larger than 3.7 / B.
    assert np.all(ecs > 3.7 / np.asarray(draws["B"]))


def test_the_draws_agree_with_the_laplace_approximation(draws):
    std, covariance = draws.laplace()
    for name in ("A", "B"):
        assert np.isclose(float(draws.std(name)), float(std[name]), rtol=0.35)
    sampled = np.corrcoef(
        np.asarray(draws["A"]).ravel(), np.asarray(draws["B"]).ravel()
    )[0, 1]
    laplace = covariance[0, 1] / np.sqrt(covariance[0, 0] * covariance[1, 1])
    assert abs(sampled - float(laplace)) < 0.1


def test_the_draws_as_a_dataset(draws, tmp_path):
    dataset = draws.to_dataset()
    assert dataset["A"].dims == ("chain", "draw")
    assert dataset["B"].attrs["units"] == ebm.Params.declaration("B").units
    assert dataset["ecs"].attrs["units"] == "K"
    assert np.array_equal(dataset["A"].values, np.asarray(draws["A"]))
    assert "divergences" in draws.summary()
    # The library's file functions take it too (they refused it without a word
    # of `Posterior.to_dataset`).
    ebm.save(draws, tmp_path / "draws.nc")
    assert np.array_equal(ebm.load(tmp_path / "draws.nc")["B"].values, draws["B"])
    with pytest.raises(ValueError, match="holds its own draws"):
        ebm.to_dataset(draws, ebm.Params())
    # Quantiles of a list of levels (jnp refused the list), and bad ones named.
    quantiles = draws.quantile("A", [0.05, 0.5, 0.95])
    assert quantiles.shape == (3,) and float(quantiles[0]) < float(quantiles[2])
    with pytest.raises(ValueError, match=r"`q` must be in \[0, 1\]"):
        draws.quantile("A", 5)
    with pytest.raises(KeyError, match="'nope' is not among"):
        draws["nope"]
    # Short chains that have not mixed say so.
    problem = draws.mixing_problem()
    short = float(min(draws.ess["A"], draws.ess["B"])) < 100 * draws.num_chains
    assert (problem is not None) == (
        short or int(draws.divergences) > 0 or max(draws.rhat.values()) > 1.01
    )
    if problem is not None:
        assert "WARNING: the chains have not mixed" in draws.summary()


def test_a_transition_that_stops_at_minus_infinity_is_counted_as_failed():
    # blackjax ends a trajectory at the divergent point, outermost in its direction;
    # one that diverged at finite log density is a divergence but not a failure.
    from types import SimpleNamespace

    from ebm._analysis.nuts import failed_transition

    def info(divergent, left, right):
        return SimpleNamespace(
            is_divergent=jnp.asarray(divergent),
            trajectory_leftmost_state=SimpleNamespace(logdensity=jnp.asarray(left)),
            trajectory_rightmost_state=SimpleNamespace(logdensity=jnp.asarray(right)),
        )

    assert bool(failed_transition(info(True, -3.0, -jnp.inf)))
    assert bool(failed_transition(info(True, -jnp.inf, -3.0)))
    assert not bool(failed_transition(info(True, -3.0, -900.0)))
    assert not bool(failed_transition(info(False, -3.0, -2.0)))


def test_through_a_run_the_gradient_matches_finite_differences():
    params = ebm.Params()
    times = np.array([0.5, 1.0])
    T0 = ebm.present_day_profile(GRID)
    truth = ebm.integrate(
        params, years=1.0, grid=GRID, T0=T0, saveat=diffrax.SaveAt(ts=times)
    )
    observed = np.asarray(truth.Ts) + 0.1
    draws = ebm.posterior(
        params,
        observed,
        priors={"B": ebm.LogNormal(2.0, 0.3)},
        noise=0.5,
        through="trajectory",
        times=times,
        T0=T0,
        grid=GRID,
        # An explicit solver: the posterior's plumbing through a run is what is
        # checked here (the default solver's gradients through runs are
        # test_integrate's), and the sampler's programs, each holding the run's
        # gradient, compile in half the time of Kvaerno5's.
        solver="tsit5",
        num_chains=1,
        num_warmup=3,
        num_samples=2,
        max_doublings=2,
        derived=(),
    )
    assert draws.draws["B"].shape == (1, 2)
    log_posterior = draws.log_posterior
    at = log_posterior.coordinates({"B": 2.1})
    # One compiled program for the density and its gradient, which the finite
    # difference evaluates too.
    value_and_grad = jax.jit(jax.value_and_grad(log_posterior))
    gradient = value_and_grad(at)[1]["B"]
    h = 1e-5
    difference = (
        value_and_grad({"B": at["B"] + h})[0] - value_and_grad({"B": at["B"] - h})[0]
    ) / (2 * h)
    assert np.isfinite(float(gradient))
    assert np.isclose(gradient, difference, rtol=1e-5)


MANY_DRAWS = """
import jax
import numpy as np
jax.config.update("jax_enable_x64", True)
import ebm
from ebm._analysis import derived
grid = ebm.Grid(18)
model = ebm.EnergyBalanceModel(grid=grid)
params = ebm.Params()
start = ebm.equilibrium(params, grid=grid).T
rng = np.random.default_rng(0)
flat = {
    "A": 210.0 + 2.0 * rng.standard_normal(4000),
    "B": 1.9 + 0.1 * rng.standard_normal(4000),
    "D": 0.58 + 0.006 * rng.standard_normal(4000),
}
ecs = derived.map_draws(
    derived.ClimateSensitivity(model, start), params, flat, grid.n_lat
)
assert ecs.shape == (4000,) and bool(np.all(np.isfinite(ecs))), ecs
assert 1.0 < float(np.median(ecs)) < 10.0, np.median(ecs)
"""


def test_derived_quantities_of_thousands_of_draws_return():
    # One vmap of "ecs" over 4000 draws at 18 cells wedged XLA's CPU runtime (the
    # process idled and never returned); batched, it returns in seconds. Run apart
    # so that a wedge fails the test instead of stopping the suite.
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", MANY_DRAWS], check=True, timeout=240)


def test_a_singular_gradient_solve_gives_a_finite_gradient_instead_of_raising():
    # Next to a fold the equilibrium's Jacobian is singular to working precision:
    # lineax raised on the non-finite solution and stopped every chain (seen in
    # simulation-based calibration). The posterior's solver returns zeros there.
    import equinox as eqx
    import lineax as lx

    from ebm._analysis.log_posterior import finite_adjoint
    from ebm._numerics.implicit import FailedAs
    from ebm._numerics.tridiagonal import ProbedTridiagonal

    singular = lx.MatrixLinearOperator(jnp.diag(jnp.array([1.0, 0.0, 2.0])))
    vector = jnp.ones(3)
    with pytest.raises(eqx.EquinoxRuntimeError):
        lx.linear_solve(singular, vector, ProbedTridiagonal()).value.block_until_ready()
    solution = lx.linear_solve(singular, vector, FailedAs(ProbedTridiagonal(), 0.0))
    assert bool(jnp.all(solution.value == 0.0))
    regular = lx.MatrixLinearOperator(jnp.diag(jnp.array([1.0, 4.0, 2.0])))
    solution = lx.linear_solve(regular, vector, FailedAs(ProbedTridiagonal(), 0.0))
    assert np.allclose(solution.value, [1.0, 0.25, 0.5])
    adjoint = finite_adjoint(ebm.EnergyBalanceModel(grid=GRID))
    assert isinstance(adjoint.linear_solver, FailedAs)
    assert isinstance(adjoint.linear_solver.solver, ProbedTridiagonal)


def test_a_posterior_much_narrower_than_one_is_sampled_with_an_adapted_mass_matrix():
    # Stan's window adaptation (blackjax's) regularises the inverse mass matrix
    # toward 1e-3 I. On raw coordinates a posterior with variances far below that
    # (here 0.02 K of noise) would get a mass matrix set by the regularisation, not
    # by the posterior, and steps that much shorter; the sampler standardises the
    # coordinates by the Laplace approximation first.
    params = ebm.Params()
    truth = ebm.equilibrium(params, grid=GRID)
    noise = 0.02 * np.random.default_rng(4).standard_normal(GRID.n_lat)
    draws = ebm.posterior(
        params,
        np.asarray(truth.T) + noise,
        priors=PRIORS,
        noise=0.02,
        grid=GRID,
        num_chains=2,
        num_warmup=150,
        num_samples=150,
        seed=2,
        derived=(),
    )
    log_posterior = draws.log_posterior
    coordinates = jax.vmap(jax.vmap(log_posterior.coordinates))(draws.draws)
    flat = np.stack([np.asarray(coordinates[n]).ravel() for n in draws.names])
    variance = np.diag(np.cov(flat))
    assert np.all(variance < 1e-3)
    for chain in range(draws.num_chains):
        adapted = np.diag(np.asarray(draws.inverse_mass_matrix[chain]))
        assert np.allclose(adapted, variance, rtol=0.6), (adapted, variance)
    assert draws.num_gradients / (draws.num_chains * draws.num_draws) < 8
    assert draws.divergences == 0


def test_a_layer_model_is_calibrated_through_a_forcing_series():
    # The two-layer model under a forcing series in calendar years, its surface
    # warming observed every year: the feedback parameter's posterior covers the
    # truth, and each draw's derived ECS and TCR are the model's own.
    series = ebm.ForcingSeries(np.arange(1850.0, 1881.0), np.linspace(0.0, 1.5, 31))
    model = ebm.TwoLayerModel(forcing=series)
    truth = model.Params(feedback=1.2)
    times = np.arange(1851.0, 1881.0)
    run = ebm.integrate(truth, model=model, years=30.0, saveat=diffrax.SaveAt(ts=times))
    noise = 0.05 * np.random.default_rng(1).standard_normal(len(times))
    observed = {"global_mean": np.asarray(run.Ts) + noise}
    draws = ebm.posterior(
        model.Params(),
        observed,
        priors={"feedback": ebm.LogNormal(1.0, 0.5)},
        noise=0.05,
        through="trajectory",
        times=times,
        model=model,
        num_chains=2,
        num_warmup=60,
        num_samples=60,
        derived=("ecs", "tcr"),
    )
    feedback = np.asarray(draws.draws["feedback"])
    assert np.quantile(feedback, 0.01) < 1.2 < np.quantile(feedback, 0.99)
    assert draws.divergences == 0 and draws.failed == 0
    np.testing.assert_allclose(draws.derived["ecs"], truth.F2x / feedback, rtol=1e-9)
    one = draws.params(1, 7)
    assert float(draws.derived["tcr"][1, 7]) == pytest.approx(
        float(ebm.tcr(one, model)), rel=1e-8
    )
    dataset = draws.to_dataset()
    assert dataset["ecs"].attrs["units"] == "K"
    assert "F2x" in dataset["ecs"].attrs["long_name"]
    # The density's gradient through the run against central differences (one
    # compiled program for both).
    log_posterior = draws.log_posterior
    value_and_grad = jax.jit(jax.value_and_grad(log_posterior))
    at = log_posterior.coordinates({"feedback": 1.1})
    gradient = value_and_grad(at)[1]["feedback"]
    h = 1e-5
    difference = (
        value_and_grad({"feedback": at["feedback"] + h})[0]
        - value_and_grad({"feedback": at["feedback"] - h})[0]
    ) / (2 * h)
    assert float(gradient) == pytest.approx(float(difference), rel=1e-6)
    # Times on the series' clock; names the model does not have.
    with pytest.raises(ValueError, match="after the run's start, 1850"):
        ebm.posterior(
            model.Params(), observed, priors={"feedback": ebm.LogNormal(1.0, 0.5)},
            noise=0.05, through="trajectory", times=times - 10.0, model=model,
        )  # fmt: skip
    with pytest.raises(ValueError, match="known names for TwoLayerModel"):
        ebm.posterior(
            model.Params(), observed, priors={"feedback": ebm.LogNormal(1.0, 0.5)},
            noise=0.05, through="trajectory", times=times, model=model,
            derived=("snowball_S0",),
        )  # fmt: skip
