"""The shipped historical data, the historical forcing scenario, the exact solver
of the layer models, and the AR(1) likelihood with an anomaly reference."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._analysis.forward import ForwardProblem
from ebm._analysis.log_posterior import LogPosterior
from ebm._constants import SECONDS_PER_YEAR
from helpers import abrupt_exact, assert_gradient_matches_fd


HISTORICAL = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())


def test_the_shipped_series_are_the_ar6_assessment():
    times, warming = ebm.observed_warming()
    assert times[0] == 1850.5 and times[-1] == 2020.5 and len(times) == 171
    # AR6 WG1 SPM A.1.2: 1.09 K for 2011-2020 above 1850-1900.
    assert np.isclose(warming[-10:].mean(), 1.09, atol=0.005)
    assert np.isclose(warming[:51].mean(), 0.0, atol=1e-6)
    forcing = ebm.forcing_components()
    # AR6 WG1 chapter 7: anthropogenic ERF 2.72 W m-2 in 2019 relative to 1750,
    # aerosols -1.1 W m-2.
    assert forcing["time"][-1] == 2019.5
    assert np.isclose(forcing["total_anthropogenic"][-1], 2.72, atol=0.005)
    assert np.isclose(forcing["aerosol"][-1], -1.06, atol=0.01)
    total = forcing["total_anthropogenic"] + forcing["total_natural"]
    np.testing.assert_allclose(forcing["total"], total, atol=2e-6)
    with pytest.raises(ValueError, match="covers the years 1850-2020"):
        ebm.observed_warming(1800, 2000)


def test_the_aerosol_scale_is_a_parameter_of_the_model_it_drives():
    params = HISTORICAL.Params()
    assert params.aerosol_scale == 1.0 and "aerosol_scale" in type(params).field_names()
    assert ebm.TwoLayerModel().Params is ebm.TwoLayerParams
    forcing = ebm.forcing_components()
    t = forcing["time"][-1]
    value = HISTORICAL.forcing(t, params)
    assert np.isclose(value, forcing["total"][-1], rtol=1e-12)
    # dF/d(aerosol_scale) is the aerosol forcing itself.
    derivative = jax.grad(lambda p: HISTORICAL.forcing(t, p))(params).aerosol_scale
    assert np.isclose(derivative, forcing["aerosol"][-1], rtol=1e-12)
    with pytest.raises(ValueError, match="aerosol_scale"):
        HISTORICAL.Params(aerosol_scale=-1.0)
    with pytest.raises(ValueError, match="`end` must be a whole year"):
        ebm.HistoricalForcing(end=1750)
    # The zonal model over a deep ocean gains it too, and its tendency reads it.
    surface = ebm.EnergyBalanceModel(grid=ebm.Grid(6))
    deep = ebm.DeepOceanModel(surface=surface, forcing=ebm.HistoricalForcing())
    at = deep.Params(aerosol_scale=0.5)
    state = deep.initial_state(at)
    scaled = deep(t, state, at)["T"] - deep(t, state, deep.Params())["T"]
    capacity = surface.heat_capacity(surface.Params(), surface.grid)
    expected = -0.5 * forcing["aerosol"][-1] * SECONDS_PER_YEAR
    np.testing.assert_allclose(scaled * capacity, expected, rtol=1e-10)


def test_the_exact_solver_is_the_matrix_exponential_and_the_adaptive_run():
    abrupt = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(4.0))
    params = abrupt.Params(efficacy=1.3)
    ts = jnp.array([1.0, 7.5, 40.0])
    run = ebm.integrate(
        params, model=abrupt, years=40.0, saveat=diffrax.SaveAt(ts=ts), solver="exact"
    )
    exact = jax.vmap(lambda t: abrupt_exact(abrupt, params, t))(ts)
    np.testing.assert_allclose(run.Ts, exact[:, 0], rtol=1e-11)
    np.testing.assert_allclose(run.states["T_deep"], exact[:, 1], rtol=1e-11)
    # Under the piecewise-linear historical forcing, against diffrax at 1e-9.
    params = HISTORICAL.Params()
    times, _ = ebm.observed_warming(1850, 2019)

    def warming(p, solver):
        saveat = diffrax.SaveAt(ts=jnp.asarray(times))
        return ebm.integrate(
            p, model=HISTORICAL, years=269.0, saveat=saveat, solver=solver
        ).Ts

    np.testing.assert_allclose(
        warming(params, "exact"), warming(params, None), rtol=1e-7, atol=1e-9
    )

    def last(p):
        return warming(p, "exact")[-1]

    gradient = jax.grad(last)(params)
    names = ["feedback", "gamma", "C", "C_deep", "efficacy", "aerosol_scale"]
    assert_gradient_matches_fd(last, params, gradient, names, rtol=1e-6)


def test_the_exact_solver_refuses_what_it_cannot_solve():
    with pytest.raises(ValueError, match="global layer model"):
        deep = ebm.DeepOceanModel(surface=ebm.EnergyBalanceModel(grid=ebm.Grid(6)))
        ebm.integrate(deep.Params(), model=deep, years=1.0, solver="exact")
    params = HISTORICAL.Params()
    # Saved times outside the run (1750.5 to 1760.5), or not increasing.
    for ts in ([1749.0, 1752.0], [1752.0, 1761.0], [1755.0, 1752.0]):
        with pytest.raises(ValueError, match="increasing and within the run"):
            ebm.integrate(
                params,
                model=HISTORICAL,
                years=10.0,
                saveat=diffrax.SaveAt(ts=jnp.asarray(ts)),
                solver="exact",
            )
    with pytest.raises(ValueError, match="SaveAt"):
        ebm.integrate(
            params,
            model=HISTORICAL,
            years=1.0,
            saveat=diffrax.SaveAt(steps=True),
            solver="exact",
        )


def _log_posterior(observed, times, correlation=0.0, reference=None):
    problem = ForwardProblem(
        HISTORICAL, "trajectory", years=float(times[-1]) - 1750.5, times=times,
        solver="exact",
    )  # fmt: skip
    return LogPosterior(
        params=HISTORICAL.Params(),
        names=(),
        parameters=(),
        supports=(),
        priors=(),
        observed={"global_mean": jnp.asarray(observed)},
        noise={"global_mean": jnp.asarray(0.1)},
        problem=problem,
        regime=jnp.asarray(False),
        correlation=correlation,
        reference=reference,
    )


def test_the_ar1_likelihood_is_the_multivariate_normal_density():
    times, observed = ebm.observed_warming(1850, 1869)
    outputs = {"global_mean": jnp.asarray(observed) + 0.03 * jnp.sin(times)}
    residual = np.asarray(observed - outputs["global_mean"])
    n, sigma = len(times), 0.1
    for rho in (0.0, 0.6):
        value = _log_posterior(observed, times, rho).log_likelihood(outputs, {})
        # Stationary AR(1): covariance sigma^2 / (1 - rho^2) rho^|i - j|.
        lag = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
        covariance = sigma**2 / (1 - rho**2) * rho**lag
        _, logdet = np.linalg.slogdet(covariance)
        quadratic = residual @ np.linalg.solve(covariance, residual)
        # Up to the constant the likelihood drops: n log(2 pi) / 2.
        expected = -0.5 * (quadratic + logdet)
        assert np.isclose(float(value), expected, rtol=1e-10), rho


def test_the_simulated_warming_is_taken_from_its_reference_period():
    times, observed = ebm.observed_warming(1850, 2019)
    mask = jnp.asarray((times >= 1850) & (times <= 1901), dtype=float)
    log_posterior = _log_posterior(observed, times, 0.5, mask)
    outputs, ok = log_posterior.simulate(HISTORICAL.Params())
    simulated = np.asarray(outputs["global_mean"])
    assert bool(ok) and np.isclose(simulated[:51].mean(), 0.0, atol=1e-12)
    raw = _log_posterior(observed, times).simulate(HISTORICAL.Params())[0]
    shift = np.asarray(raw["global_mean"])[:51].mean()
    np.testing.assert_allclose(simulated, raw["global_mean"] - shift, atol=1e-12)


@pytest.mark.parametrize(
    "arguments, match",
    [
        (dict(noise_correlation=1.0), r"`noise_correlation` must be a number in"),
        (dict(anomaly_reference=(1700, 1750)), "holds none of the observed"),
        (dict(anomaly_reference=(1900, 1850)), "first <= last"),
        (dict(noise_correlation=0.5, through="equilibrium"), "through='trajectory'"),
        (dict(through="equilibrium", solver="exact"), "`solver` is the run's"),
    ],
)
def test_bad_time_structure_is_refused_by_name(arguments, match):
    times, observed = ebm.observed_warming(1850, 1900)
    settings = dict(through="trajectory", times=times, solver="exact")
    settings.update(arguments)
    if settings["through"] == "equilibrium":
        settings.pop("times")
        if "solver" not in arguments:
            settings.pop("solver")
        observed = observed[-1]
    with pytest.raises(ValueError, match=match):
        ebm.posterior(
            HISTORICAL.Params(),
            {"global_mean": observed},
            priors={"feedback": ebm.LogNormal(1.2, 0.3)},
            noise=0.1,
            model=HISTORICAL,
            **settings,
        )


def test_the_command_calibrates_against_the_observed_warming(capsys, tmp_path):
    import json

    from ebm._cli.main import main

    # The example's short chains (its --fast settings): the same programs.
    argv = ["calibrate", "--chains", "2", "--warmup", "20", "--samples", "20"]
    argv += ["--max-doublings", "5", "--no-progress", "--json"]
    argv += ["--plot", str(tmp_path / "c.png"), "--netcdf", str(tmp_path / "c.nc")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["years"] == [1850, 2019] and report["params"]["F2x"] == 3.93
    assert set(report["posterior"]) == {
        *ebm.historical_priors(),
        "noise_global_mean",
        "ecs",
        "tcr",
    }
    for name, values in report["posterior"].items():
        assert np.all(np.isfinite(values)) and values == sorted(values), name
    assert report["ar6_ranges_K"]["tcr"]["likely"] == [1.4, 2.2]
    saved = ebm.load(tmp_path / "c.nc")
    assert saved["ecs"].dims == ("chain", "draw") and saved["ecs"].shape == (2, 20)
    # ECS = F2x / feedback for every draw (the efficacy acts only in transients).
    np.testing.assert_allclose(saved["ecs"], 3.93 / saved["feedback"], rtol=1e-10)
    assert np.quantile(saved["tcr"], 0.5) == pytest.approx(
        report["posterior"]["tcr"][2]
    )
    assert (tmp_path / "c.png").stat().st_size > 10_000
    # Bad input is named before any sampling.
    assert main(["calibrate", "--end", "2020", "--no-plot"]) == 2
    assert "`end` must be at most 2019" in capsys.readouterr().err
    with pytest.raises(ValueError, match="driven by ebm.HistoricalForcing"):
        ebm.calibrate_historical(model=ebm.TwoLayerModel())


def test_the_historical_warming_is_the_run_above_its_own_1850_1900_mean():
    params = HISTORICAL.Params(F2x=3.93)
    times, _ = ebm.observed_warming(1850, 2019)
    warming = ebm.historical_warming(params)
    assert warming.shape == times.shape
    assert abs(float(jnp.mean(warming[times < 1901]))) < 1e-12
    run = ebm.integrate(
        params,
        model=HISTORICAL,
        years=2019.5 - 1750.5,
        saveat=diffrax.SaveAt(ts=jnp.asarray(times)),
        solver="exact",
    )
    np.testing.assert_allclose(
        warming[-1] - warming[0], run.Ts[-1] - run.Ts[0], rtol=1e-12
    )
    with pytest.raises(ValueError, match="some within 1850-1901"):
        ebm.historical_warming(params, times=np.arange(1950.5, 2000.0))
