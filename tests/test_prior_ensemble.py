"""Prior ensembles and observational constraints: Latin hypercube strata, priors cut
to the allowed ranges, importance weights against the conjugate-normal posterior,
the rejection sample, a historical ensemble of the two-layer model, and the
refusals."""

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm


MODEL = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
PARAMS = MODEL.Params()
PRIORS = {
    "feedback": ebm.LogNormal(1.2, 0.35),
    "gamma": ebm.Uniform(0.4, 1.2),
    "F2x": ebm.Normal(3.9, 0.4),
    "aerosol_scale": ebm.Normal(1.0, 0.4),
}


def test_a_latin_hypercube_puts_one_member_in_each_stratum_of_each_prior():
    members = ebm.sample_prior(PRIORS, PARAMS, 500, seed=3)
    for name, prior in PRIORS.items():
        values = np.asarray(getattr(members, name))
        assert values.shape == (500,)
        # (On the prior cut to the allowed range: aerosol_scale >= 0.)
        lower = MODEL.Params.declaration(name).lower
        low = 0.0 if lower is None else float(prior.cdf(lower))
        cut = (np.asarray(prior.cdf(values)) - low) / (1.0 - low)
        strata = np.floor(cut * 500).astype(int)
        assert sorted(strata) == list(range(500)), name
    # The fields not sampled are the given ones, for every member.
    np.testing.assert_array_equal(members.C, np.full(500, PARAMS.C))
    # Another seed pairs the strata differently.
    other = ebm.sample_prior(PRIORS, PARAMS, 500, seed=4)
    assert not np.array_equal(members.gamma, other.gamma)


def test_a_prior_is_cut_to_the_parameters_allowed_range():
    # Half of Normal(0, 1) lies below zero, where a feedback parameter is not
    # allowed: the draws are the positive half-normal.
    members = ebm.sample_prior(
        {"feedback": ebm.Normal(0.0, 1.0)}, PARAMS, 20_000, method="random"
    )
    values = np.asarray(members.feedback)
    assert values.min() > 0.0
    assert np.mean(values) == pytest.approx(np.sqrt(2 / np.pi), rel=0.02)


def test_weights_give_the_conjugate_normal_posterior():
    # An output x with prior N(0, 1) (here F2x - 5 with F2x from N(5, 1): F2x must
    # be positive, and N(5, 1) has 3e-7 of its mass below 0), observed as 1 with
    # std 0.5: the posterior is N(0.8, 0.2), by the weights and by the rejection
    # sample.
    members = ebm.sample_prior(
        {"F2x": ebm.Normal(5.0, 1.0)}, ebm.TwoLayerModel().Params(), 200_000
    )
    outputs = {"x": np.asarray(members.F2x) - 5.0}
    weighted = ebm.constrain(outputs, {"x": ebm.Normal(1.0, 0.5)}, seed=1)
    assert weighted.mean(outputs["x"]) == pytest.approx(0.8, abs=0.01)
    median, upper = weighted.quantile(outputs["x"], [0.5, 0.95])
    assert median == pytest.approx(0.8, abs=0.01)
    assert upper == pytest.approx(0.8 + 1.6449 * np.sqrt(0.2), abs=0.02)
    kept = outputs["x"][np.asarray(weighted.accepted)]
    assert weighted.num_accepted == kept.size
    assert np.mean(kept) == pytest.approx(0.8, abs=0.02)
    assert np.std(kept) == pytest.approx(np.sqrt(0.2), rel=0.03)
    # Kish's effective size n E[w]^2 / E[w^2], with w the likelihood: for these
    # normals, n sqrt(1 - 1 / (1 + 4)^2) exp(-(1 - 0)^2 ... ) computed numerically.
    x = np.linspace(-8, 8, 20001)
    prior = np.exp(-0.5 * x**2) / np.sqrt(2 * np.pi)
    likelihood = np.exp(-0.5 * ((x - 1.0) / 0.5) ** 2)
    mean, square = (
        np.trapezoid(prior * likelihood, x),
        np.trapezoid(prior * likelihood**2, x),
    )
    expected = 200_000 * mean**2 / square
    assert weighted.effective_size == pytest.approx(expected, rel=0.03)


def test_a_hard_range_and_failed_members_weigh_nothing():
    outputs = {"x": np.array([0.1, 0.5, np.nan, 0.9, 1.5])}
    weighted = ebm.constrain(outputs, {"x": ebm.Uniform(0.2, 1.0)})
    np.testing.assert_allclose(weighted.weights, [0.0, 0.5, 0.0, 0.5, 0.0])
    assert weighted.failed == 1
    assert weighted.effective_size == pytest.approx(2.0)
    assert not np.asarray(weighted.accepted)[[0, 2, 4]].any()


def test_a_historical_ensemble_is_constrained_by_the_observed_warming():
    members = ebm.sample_prior(PRIORS, PARAMS, 2_000)
    times, observed = ebm.observed_warming(1850, 2019)
    reference, recent = times < 1901, times >= 2010

    def task(params):
        run = ebm.integrate(
            params, model=MODEL, years=269.0, solver="exact", throw=False,
            saveat=diffrax.SaveAt(ts=jnp.asarray(times)),
        )  # fmt: skip
        return {
            "warming": run.Ts[recent].mean() - run.Ts[reference].mean(),
            "tcr": ebm.tcr(params, MODEL),
        }

    run = ebm.ensemble(members, task=task, block_size=512, on_failure="raise")
    outputs = {k: np.asarray(v) for k, v in run.result.items()}
    target = float(observed[recent].mean() - observed[reference].mean())
    weighted = ebm.constrain(outputs, {"warming": ebm.Normal(target, 0.1)})
    # The constraint pulls the members' warming to the observed one, and narrows
    # it; TCR follows the warming it shares its physics with.
    prior_spread = np.subtract(*np.percentile(outputs["warming"], [95, 5]))
    low, middle, high = weighted.quantile(outputs["warming"], [0.05, 0.5, 0.95])
    assert middle == pytest.approx(target, abs=0.03)
    assert high - low < 0.6 * prior_spread
    tcr_low, tcr_high = weighted.quantile(outputs["tcr"], [0.05, 0.95])
    prior_low, prior_high = np.percentile(outputs["tcr"], [5, 95])
    assert tcr_high - tcr_low < 0.9 * (prior_high - prior_low)
    assert 100 < weighted.effective_size < 2_000


def test_bad_priors_members_and_constraints_are_named():
    with pytest.raises(ValueError, match="`albedo` is not a parameter"):
        ebm.sample_prior({"albedo": ebm.Normal(0.3, 0.1)}, PARAMS, 10)
    with pytest.raises(ValueError, match="no probability inside its allowed range"):
        ebm.sample_prior({"feedback": ebm.Normal(-100.0, 1.0)}, PARAMS, 10)
    with pytest.raises(ValueError, match="`members` must be an integer >= 1"):
        ebm.sample_prior(PRIORS, PARAMS, 0)
    with pytest.raises(ValueError, match="`method` must be one of"):
        ebm.sample_prior(PRIORS, PARAMS, 10, method="sobol")
    with pytest.raises(TypeError, match="must be an ebm prior"):
        ebm.sample_prior({"gamma": (0.5, 1.0)}, PARAMS, 10)
    with pytest.raises(NotImplementedError, match="no quantile function"):
        ebm.sample_prior({"gamma": ebm.LogDensity(lambda x: -x)}, PARAMS, 10)
    with pytest.raises(ValueError, match="Normal prior: `mean` must be finite"):
        ebm.Normal(float("nan"), 0.1)
    outputs = {"x": np.zeros(3), "y": np.zeros(4)}
    with pytest.raises(ValueError, match="1-d arrays of one length"):
        ebm.constrain(outputs, {"x": ebm.Normal(0.0, 1.0)})
    with pytest.raises(ValueError, match="has no output of that name"):
        ebm.constrain({"x": np.zeros(3)}, {"z": ebm.Normal(0.0, 1.0)})
    with pytest.raises(TypeError, match="must be an ebm prior's density"):
        ebm.constrain({"x": np.zeros(3)}, {"x": 1.0})
    with pytest.raises(ValueError, match="No member of 3 satisfies"):
        ebm.constrain({"x": np.zeros(3)}, {"x": ebm.Uniform(1.0, 2.0)})
