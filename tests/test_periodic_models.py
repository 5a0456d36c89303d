"""`ebm.periodic_equilibrium` and `ebm.seasonal_spinup` of the other models of the
protocol: the zonal model over a deep ocean under the seasonal cycle against a long
spin-up, its gradient against finite differences, a model without a seasonal cycle
against its equilibrium, and the refusals."""

import jax
import numpy as np
import pytest

import ebm
from helpers import finite_difference


STEPS = 146  # 2.5 days: the test is of the shooting, not of the stepping
# A shallow deep ocean (C_deep = 10 W yr m-2 K-1), so that a spin-up of 400 years
# reaches the periodic state: its slowest mode decays in about 20 years.
DEEP = ebm.DeepOceanModel(
    surface=ebm.seasonal_model(ebm.Grid(6)), forcing=ebm.AbruptCO2(2.0)
)
PARAMS = DEEP.Params(C_deep=10.0)


def _annual_mean(params):
    return ebm.periodic_equilibrium(
        params, model=DEEP, steps_per_year=STEPS
    ).annual_global_mean


@pytest.fixture(scope="module")
def cycle():
    # From the present-day profile (a seasonal surface has no equilibrium to start
    # the deep ocean at).
    return ebm.periodic_equilibrium(PARAMS, model=DEEP, steps_per_year=STEPS)


def test_a_deep_ocean_under_the_seasonal_cycle_shoots_to_its_spun_up_cycle(cycle):
    assert isinstance(cycle, ebm.PeriodicState) and bool(cycle.converged)
    assert float(cycle.residual) < 1e-9
    assert [v.name for v in cycle.variables] == ["T", "T_deep"]
    assert cycle.states["T_deep"].shape == (STEPS, 6) == cycle.T.shape
    # The seasonal cycle is there, at the surface far more than in the deep.
    range_T = np.ptp(cycle.states["T"], axis=0)
    assert np.all(range_T > 5.0)
    assert np.all(np.ptp(cycle.states["T_deep"], axis=0) < 0.1 * range_T)
    spun = ebm.seasonal_spinup(PARAMS, model=DEEP, years=400, steps_per_year=STEPS)
    assert float(spun.residual) < 1e-8
    for name in ("T", "T_deep"):
        np.testing.assert_allclose(spun.states[name], cycle.states[name], atol=1e-7)
    np.testing.assert_allclose(spun.global_mean, cycle.global_mean, atol=1e-7)


def test_the_periodic_state_of_a_deep_ocean_is_differentiable():
    gradient = jax.grad(_annual_mean)(PARAMS)
    for name in ("F2x", "D", "gamma"):
        expected = finite_difference(_annual_mean, PARAMS, name, relative_step=1e-4)
        assert np.isclose(getattr(gradient, name), expected, rtol=1e-5, atol=1e-9), name
    # Doubled CO2 warms; the deep ocean's exchange is a redistribution.
    assert float(gradient.F2x) > 0.0


def test_a_model_without_a_seasonal_cycle_has_its_equilibrium_as_its_cycle():
    model = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(4.0))
    params = model.Params(efficacy=1.3)
    cycle = ebm.periodic_equilibrium(params, model=model, steps_per_year=12)
    steady = ebm.equilibrium(params, model=model)
    for name in ("T", "T_deep"):
        np.testing.assert_allclose(
            cycle.states[name], np.broadcast_to(steady.state[name], (12,)), rtol=1e-9
        )


def test_a_forcing_that_changes_from_year_to_year_and_other_mistakes_are_named():
    rising = ebm.DeepOceanModel(
        surface=ebm.seasonal_model(ebm.Grid(6)), forcing=ebm.OnePercentCO2()
    )
    with pytest.raises(ValueError, match="OnePercentCO2 changes from year to year"):
        ebm.periodic_equilibrium(rising.Params(), model=rising)
    with pytest.raises(ValueError, match="repeats every year"):
        ebm.seasonal_spinup(rising.Params(), model=rising, years=2)
    with pytest.raises(ValueError, match="`grid` is for the zonal model"):
        ebm.periodic_equilibrium(PARAMS, model=DEEP, grid=ebm.Grid(6))
    with pytest.raises(ValueError, match="stepper='imex'"):
        ebm.periodic_equilibrium(PARAMS, model=DEEP, stepper="imex")
    with pytest.raises(ValueError, match="must be a state of the model"):
        ebm.periodic_equilibrium(PARAMS, model=DEEP, start="warm")
    with pytest.raises(TypeError, match="model.Params"):
        ebm.periodic_equilibrium(ebm.Params(), model=DEEP)
    # An inaccurate year names the remedies that apply: not the zonal model's
    # stepper='imex', which this model refuses.
    with pytest.raises(Exception, match="exceeds `error_tolerance`") as raised:
        ebm.periodic_equilibrium(
            PARAMS, model=DEEP, steps_per_year=STEPS, error_tolerance=1e-6
        )
    assert "imex" not in str(raised.value) and "steps_per_year" in str(raised.value)


def test_a_periodic_state_is_written_with_each_variable_through_the_year(
    cycle, tmp_path
):
    path = ebm.save(cycle, tmp_path / "cycle.nc", PARAMS)
    saved = ebm.load(path)
    assert saved.attrs["ebm_result"] == "periodic state"
    for variable in cycle.variables:
        assert saved[variable.name].dims == ("time", "lat")
        assert saved[variable.name].attrs["units"] == variable.units
        np.testing.assert_array_equal(
            saved[variable.name].values, cycle.states[variable.name]
        )
        np.testing.assert_array_equal(
            saved[f"{variable.name}_start"].values, cycle.state0[variable.name]
        )
    assert saved.sizes["time"] == STEPS
    assert float(saved["residual"]) == float(cycle.residual)


def test_a_periodic_state_is_plotted_per_variable_through_the_year(cycle, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    figure = ebm.plot_run(cycle, path=tmp_path / "cycle.png")
    # One Hovmoller panel per variable on latitudes, each with its colour bar.
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titles == [v.long_name for v in cycle.variables]
    # The time of year in days from the start of the model's year (it was "years
    # from 1 January" here, and "years from the winter solstice" for sea ice).
    assert figure.axes[0].get_xlabel() == "day of the year (days from 1 January)"
    assert figure.axes[0].get_xlim()[1] > 300
    assert (tmp_path / "cycle.png").stat().st_size > 10_000


def test_the_command_line_gives_the_librarys_periodic_state_of_a_deep_ocean(
    cycle, capsys, tmp_path
):
    import json

    from ebm._cli.main import main

    argv = ["seasonal", "--model", "zonal-deep-ocean", "--n-lat", "6", "--json"]
    argv += ["--steps-per-year", str(STEPS), "--C-deep", "10", "--co2-factor", "2"]
    argv += ["--plot", str(tmp_path / "d.png"), "--netcdf", str(tmp_path / "d.nc")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "zonal-deep-ocean" and report["params"]["C_deep"] == 10
    assert report["residual_K"] < 1e-9
    assert report["annual_global_mean_degC"] == pytest.approx(
        float(cycle.annual_global_mean), abs=1e-10
    )
    deep = DEEP.surface.grid.global_mean(cycle.states["T_deep"])
    assert report["annual_global_mean_deep_degC"] == pytest.approx(
        float(np.mean(deep)), abs=1e-10
    )
    assert 0 < report["amplitude_deep_K_north_pole"] < report["amplitude_K_north_pole"]
    saved = ebm.load(tmp_path / "d.nc")
    np.testing.assert_allclose(
        saved["T_deep"].values, cycle.states["T_deep"], atol=1e-10
    )
    assert (tmp_path / "d.png").stat().st_size > 10_000
    # The deep ocean's parameters are refused for the zonal model alone.
    assert main(["seasonal", "--n-lat", "6", "--gamma", "1"]) == 2
    assert "`--gamma` is a parameter of the deep ocean" in capsys.readouterr().err


def test_a_seasonal_deep_ocean_runs_for_years_within_its_default_budget():
    # Five years take some 6,000 implicit steps here (7,308 on 12 cells): the
    # budget of 4,096 that the model's time scales gave stopped them.
    run = ebm.integrate(PARAMS, model=DEEP, years=5.0)
    assert run.result == ebm.RESULTS.successful and int(run.num_steps) > 4096
