"""The SSP scenarios, CMIP6 emulation and warming projections: the scenario is the
historical forcing to 2019, an emulation recovers a synthetic model and fits the
CMIP6 runs at least as well as the chapter's own tunings, a projection of one draw
is its run, and what is refused is named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._analysis.emulate import annual_means, profile_loss, tuning_misfit
from helpers import replace


TWO = ebm.TwoLayerModel()
TRUTH = TWO.Params(feedback=1.1, gamma=0.6, C=8.0, C_deep=90.0, efficacy=1.3, F2x=3.8)


def test_an_ssp_is_the_historical_forcing_continued():
    scenario = ebm.SSPForcing("ssp245")
    params = ebm.TwoLayerModel(forcing=scenario).Params(aerosol_scale=0.7)
    history = ebm.HistoricalForcing()
    times = jnp.arange(1750.5, 2020.0, 1.0)
    # To 2019 the assessed history, with its aerosol scaled alike.
    np.testing.assert_array_equal(
        jax.vmap(lambda t: scenario(t, params))(times),
        jax.vmap(lambda t: history(t, params))(times),
    )
    # From 2020 the scenario's own forcing.
    future = ebm.ssp_forcing_range("ssp245")
    total = future["total"] - 0.3 * future["aerosol"]
    np.testing.assert_allclose(
        jax.vmap(lambda t: scenario(t, params))(jnp.asarray(future["time"])), total
    )
    assert scenario.span == (1750.5, 2500.5)
    for bad, match in (
        ("ssp2-4.5", r"did you mean 'ssp245'"),
        ("rcp45", r"`scenario` must be one of \('ssp119'"),
    ):
        with pytest.raises(ValueError, match=match):
            ebm.SSPForcing(bad)
    with pytest.raises(ValueError, match=r"`end` must be a whole year within 2020"):
        ebm.SSPForcing("ssp585", end=2600)
    model = ebm.TwoLayerModel(forcing=ebm.SSPForcing("ssp126", end=2030))
    with pytest.raises(ValueError, match="leaves the forcing series' span"):
        ebm.integrate(model.Params(), model=model, years=300.0, solver="exact")


def test_the_cmip6_runs_and_the_chapters_tunings():
    assert len(ebm.cmip6_models()) == 40 and "CanESM5" in ebm.cmip6_models()
    years, T, N = ebm.cmip6_run("CanESM5")
    assert years[0] == 1 and years.size == T.size == N.size == 150
    assert 8.0 < T[-1] < 12.0 and 5.0 < N[0] < 10.0
    with pytest.raises(ValueError, match=r"'CanESM' is not a CMIP6.*CanESM5"):
        ebm.cmip6_run("CanESM")
    with pytest.raises(ValueError, match="has no 1pctCO2 run"):
        ebm.cmip6_run("TaiESM1", "1pctCO2")
    with pytest.raises(ValueError, match="The chapter did not tune 'TaiESM1'"):
        ebm.cmip6_tuning("TaiESM1")


def test_an_emulation_recovers_a_synthetic_model():
    T, N = annual_means(TWO, TRUTH, 150)
    noise = np.random.default_rng(0).normal(size=(2, 150))
    data = (np.asarray(T) + 0.05 * noise[0], np.asarray(N) + 0.2 * noise[1])
    emulation = ebm.emulate(data)
    assert emulation.result == ebm.RESULTS.successful and emulation.name == "data"
    for name, rtol in (("feedback", 0.03), ("F2x", 0.03), ("C", 0.2), ("gamma", 0.1)):
        assert float(getattr(emulation.params, name)) == pytest.approx(
            float(getattr(TRUTH, name)), rel=rtol
        ), name
    assert float(emulation.rmse_T) == pytest.approx(0.05, rel=0.2)
    # Bad data are named, not fitted.
    for bad, match in (
        ((T[:10], N[:9]), "two 1-d series of the same length"),
        ((np.full(150, np.nan), N), "must be finite"),
        (3.0, "must be a CMIP6 model's name or"),
    ):
        with pytest.raises(ValueError, match=match):
            ebm.emulate(bad)
    with pytest.raises(ValueError, match="`years` = 200 is longer than the run"):
        ebm.emulate(data, years=200)


def test_the_fits_gradient_matches_finite_differences():
    _, T, N = ebm.cmip6_run("MIROC6")
    T, N = jnp.asarray(T), jnp.asarray(N)
    gradient = jax.grad(lambda p: profile_loss(p, TWO, T, N))(TRUTH)
    for name in ("feedback", "C_deep", "efficacy"):
        h = 1e-6 * float(getattr(TRUTH, name))

        def at(value):
            return float(profile_loss(replace(TRUTH, name, value), TWO, T, N))

        value = float(getattr(TRUTH, name))
        difference = (at(value + h) - at(value - h)) / (2 * h)
        assert float(getattr(gradient, name)) == pytest.approx(difference, rel=1e-6)


def test_an_emulation_fits_a_cmip6_model_at_least_as_well_as_the_chapter():
    # Maximum likelihood over the same parameters: the product of the mean squared
    # misfits is no larger at the fit than at the chapter's tuning (which the fit
    # could have chosen).
    emulation = ebm.emulate("MIROC6")
    chapter_T, chapter_N = tuning_misfit("MIROC6")
    assert float(emulation.rmse_T * emulation.rmse_N) <= chapter_T * chapter_N
    # Its TCR is out of sample: from the model's 1pctCO2 run.
    _, ramp, _ = ebm.cmip6_run("MIROC6", "1pctCO2")
    assert float(emulation.tcr_cmip6) == pytest.approx(np.mean(ramp[60:80]))
    assert abs(float(emulation.tcr) - float(emulation.tcr_cmip6)) < 0.3


def test_a_projection_of_one_draw_is_its_run_and_bad_input_is_named():
    params = TWO.Params(F2x=3.93)
    projection = ebm.project(params, ("ssp245", "ssp585"), end=2040)
    assert projection.warming.shape == (2, 1, 191) and bool(projection.ok.all())
    model = ebm.TwoLayerModel(forcing=ebm.SSPForcing("ssp585", end=2040))
    times = np.arange(1850, 2041) + 0.5
    run = ebm.historical_warming(model.Params(F2x=3.93), model, times)
    np.testing.assert_allclose(projection.warming[1, 0], run, rtol=1e-12, atol=1e-12)
    # The near-term mean is the mean of its years' warming.
    near = (times > 2021) & (times < 2041)
    assert float(projection.period_means[1, 0, 0]) == pytest.approx(
        float(np.mean(np.asarray(run)[near]))
    )
    table = projection.table()
    assert table[0]["scenario"] == "ssp245" and len(table[0]["2021-2040"]) == 3
    with pytest.raises(ValueError, match=r"did you mean 'ssp126'"):
        ebm.project(params, "ssp1-2.6")
    with pytest.raises(ValueError, match="one weight per draw"):
        ebm.project(params, "ssp245", weights=[0.5, 0.5], end=2040)
    with pytest.raises(ValueError, match=r"Each period must be within 1850-2040"):
        ebm.project(params, "ssp245", end=2040, periods=((2081, 2100),))
    with pytest.raises(ValueError, match="lack gamma"):
        ebm.project(ebm.NLayerModel(3).Params(), "ssp245", end=2040)


def test_the_commands_emulate_and_project(tmp_path, capsys):
    import json

    from ebm._cli.main import main

    argv = ["emulate", "MIROC6", "--json", "--no-plot"]
    argv += ["--table", str(tmp_path / "e.csv")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["emulations"]
    assert row["model"] == "MIROC6" and row["chapter_rmse_T_K"] > 0
    assert (tmp_path / "e.csv").read_text().startswith("model,feedback,")
    argv = ["project", "--emulate", "MIROC6", "--scenario", "ssp245", "--end", "2040"]
    argv += ["--json", "--plot", str(tmp_path / "p.png")]
    argv += ["--netcdf", str(tmp_path / "p.nc")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["projection_K"]
    low, median, high = row["2021-2040"]
    assert low == median == high  # one draw
    saved = ebm.load(tmp_path / "p.nc")
    assert saved["warming"].dims == ("scenario", "draw", "time")
    assert saved["period_mean_warming"].attrs["units"] == "K"
    assert float(saved["period_mean_warming"][0, 0, 0]) == pytest.approx(median)
    assert (tmp_path / "p.png").stat().st_size > 10_000
    assert main(["emulate", "NoSuchModel", "--no-plot"]) == 2
    assert "not a CMIP6 model shipped" in capsys.readouterr().err
    # Draws from a file of `ebm calibrate --netcdf`'s kind: (chain, draw) arrays of
    # the sampled parameters, the others at their defaults.
    import xarray as xr

    feedback = np.array([[1.0, 1.2, 1.4], [1.1, 1.3, 1.5]])
    draws = xr.Dataset({"feedback": (("chain", "draw"), feedback)})
    ebm.save(draws, tmp_path / "draws.nc")
    argv = ["project", "--draws", str(tmp_path / "draws.nc"), "--json", "--no-plot"]
    assert main([*argv, "--scenario", "ssp245", "--end", "2040"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["count"] == 6
    low, median, high = report["projection_K"][0]["2021-2040"]
    assert low < median < high
    ebm.save(xr.Dataset({"B": ("x", [1.0])}), tmp_path / "other.nc")
    assert main(["project", "--draws", str(tmp_path / "other.nc"), "--no-plot"]) == 2
    assert "holds none of the two-layer model's parameters" in capsys.readouterr().err
