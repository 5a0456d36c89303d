"""The global ocean-layer models: exact solutions, energy conservation, the
field's metrics and their gradients, and the forcing scenarios' edges."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from helpers import abrupt_exact, replace


TWO = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(4.0))
# Efficacy away from 1 (Geoffroy et al. 2013, Part II): N is not F - lambda T.
PARAMS = TWO.Params(efficacy=1.3)
YEARS = jnp.asarray(40.0)


def _surface(params, adjoint, years=YEARS):
    return ebm.integrate(params, model=TWO, years=years, adjoint=adjoint).T


def test_abrupt_run_matches_the_matrix_exponential():
    run = ebm.integrate(
        PARAMS, model=TWO, years=YEARS, saveat=diffrax.SaveAt(ts=jnp.arange(41.0))
    )
    exact = jax.vmap(lambda t: abrupt_exact(TWO, PARAMS, t))(run.ts)
    np.testing.assert_allclose(run.Ts, exact[:, 0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(run.states["T_deep"], exact[:, 1], rtol=1e-7, atol=1e-9)
    assert run.variables[1].name == "T_deep" and run.variables[1].units == "K"


@pytest.mark.parametrize(
    "adjoint", ["recursive", "direct", "backsolve", "forward", "interpolating"]
)
def test_gradient_under_every_adjoint_matches_the_exact_solutions(adjoint):
    # Backsolve within its horizon, 10 Gershgorin times of the layers' matrix.
    years = 20.0 if adjoint == "backsolve" else YEARS
    exact = jax.grad(lambda p: abrupt_exact(TWO, p, years)[0])(PARAMS)
    if adjoint == "forward":
        derivative = jax.jacfwd(lambda p: _surface(p, adjoint, years))(PARAMS)
    else:
        derivative = jax.grad(lambda p: _surface(p, adjoint, years))(PARAMS)
    # Backsolve differentiates the continuous equations: its backward solve is
    # accurate to the controller's tolerance, not exact for the discrete run. (So
    # does the interpolating adjoint, on the state's leaves raveled into one
    # vector, but against the forward run's checkpoints.)
    rtol = 1e-4 if adjoint == "backsolve" else 1e-6
    for name in PARAMS.field_names():
        expected = getattr(exact, name)
        assert np.isclose(getattr(derivative, name), expected, rtol=rtol), name


@pytest.mark.parametrize("solver", [None, "exact"])
def test_the_co2_experiments_hold_the_control_before_time_zero(solver):
    # A run from 10 years before the experiment: nothing happens until time 0, and
    # from there it is the run that starts at 0.
    ts = jnp.asarray([-10.0, -0.5, 0.0, 30.0])
    for scenario in (ebm.AbruptCO2(4.0), ebm.OnePercentCO2()):
        model = ebm.TwoLayerModel(forcing=scenario)
        before = ebm.integrate(
            PARAMS,
            model=model,
            years=YEARS,
            t0=-10.0,
            saveat=diffrax.SaveAt(ts=ts),
            solver=solver,
        )
        np.testing.assert_array_equal(before.Ts[:3], 0.0)
        from_zero = ebm.integrate(PARAMS, model=model, years=30.0, solver=solver)
        np.testing.assert_allclose(before.Ts[-1], from_zero.T, rtol=1e-7)
        assert float(scenario(-1.0, PARAMS)) == 0.0
    # The steady state of the control, held before the experiment.
    control = ebm.equilibrium(PARAMS, model=TWO, t=-1.0)
    np.testing.assert_array_equal(control.state["T"], 0.0)
    with pytest.raises(ValueError, match="`t0` must be a finite number"):
        ebm.integrate(PARAMS, model=TWO, years=YEARS, t0=float("nan"))
    with pytest.raises(ValueError, match="the zonal model's runs start at 0"):
        ebm.integrate(ebm.Params(), years=1.0, t0=-1.0)


def test_heat_content_changes_by_the_integrated_toa_imbalance():
    # Energy conservation, with efficacy != 1 and in three layers.
    for model in (TWO, ebm.NLayerModel(3)):
        params = model.Params(efficacy=1.3)
        run = ebm.integrate(params, model=model, years=jnp.asarray(150.0))
        regression = ebm.gregory(params, model)
        content = model.heat_content(run.state, params)
        assert float(content) == pytest.approx(float(jnp.sum(regression.N)), 1e-7)


def test_ecs_tcr_and_the_gregory_regression():
    # ECS is F2x / lambda whatever the efficacy and the layers.
    for model in (TWO, ebm.NLayerModel(3)):
        params = model.Params(efficacy=1.3)
        feedback = params.feedback
        assert float(ebm.ecs(params, model)) == pytest.approx(
            float(params.F2x / feedback), rel=1e-10
        )
    # With efficacy 1, N = F - lambda T exactly: the regression recovers them.
    plain = ebm.gregory(TWO.Params(), TWO)
    assert float(plain.feedback) == pytest.approx(1.13, rel=1e-7)
    assert float(plain.forcing) == pytest.approx(6.9, rel=1e-7)
    # Efficacy > 1 makes the effective sensitivity underestimate ECS.
    assert float(ebm.gregory(PARAMS, TWO).effective_sensitivity) < float(
        ebm.ecs(PARAMS, TWO)
    )
    # TCR against the exact solution of the ramp: the state, the forcing, a
    # constant and int T dt, evolved by one matrix exponential.
    matrix, b = TWO.system(PARAMS)
    rate = PARAMS.F2x * jnp.log2(1.01)
    augmented = jnp.zeros((5, 5))
    augmented = augmented.at[:2, :2].set(matrix).at[:2, 2].set(b)
    augmented = augmented.at[2, 3].set(rate).at[4, 0].set(1.0)
    start = jnp.zeros(5).at[3].set(1.0)
    q = [(jax.scipy.linalg.expm(augmented * t) @ start)[4] for t in (60.0, 80.0)]
    assert float(ebm.tcr(PARAMS, TWO)) == pytest.approx(float(q[1] - q[0]) / 20, 1e-8)
    assert 0.0 < float(ebm.heat_uptake_efficiency(PARAMS, TWO)) < 2.0


def test_tcr_gradient_matches_finite_differences():
    gradient = jax.grad(lambda p: ebm.tcr(p, TWO))(PARAMS)
    for name in ("gamma", "C_deep", "efficacy", "feedback"):
        step = 1e-4 * float(getattr(PARAMS, name))
        up = ebm.tcr(replace(PARAMS, name, getattr(PARAMS, name) + step), TWO)
        down = ebm.tcr(replace(PARAMS, name, getattr(PARAMS, name) - step), TWO)
        expected = float(up - down) / (2 * step)
        assert float(getattr(gradient, name)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("model", [TWO, ebm.NLayerModel()], ids=["two", "three"])
def test_metrics_of_a_layer_model_are_exact_and_agree_with_the_integration(model):
    # The metrics of the global layer models take their run's integrals from the
    # matrix exponential; diffrax's integration of the same run (which the zonal
    # model over a deep ocean uses) agrees to its tolerance.
    from ebm._layers import metrics

    params = model.Params(efficacy=1.3)
    for scenario, years in (
        (ebm.OnePercentCO2(), np.array([60.0, 80.0])),
        (ebm.AbruptCO2(4.0), np.arange(0.0, 151.0)),
    ):
        ramp = metrics._scenario(model, scenario)
        exact, result, _ = metrics._integrals(ramp, params, years)
        integrated, _, _ = metrics._integrals(
            ramp, params, years, options=metrics.RunOptions(solver="tsit5")
        )
        assert bool(result == ebm.RESULTS.successful)
        np.testing.assert_allclose(exact, integrated, rtol=1e-8, atol=1e-8)


def test_n_layer_model_of_two_layers_is_the_two_layer_model():
    two = ebm.NLayerModel(2, forcing=ebm.AbruptCO2(4.0))
    params = two.Params(C1=7.3, C2=106.0, feedback=1.13, kappa2=0.73, efficacy=1.3)
    a, _ = two.system(params)
    b, _ = TWO.system(PARAMS)
    np.testing.assert_allclose(a, b, rtol=1e-15)


def test_forcing_series_is_interpolated_and_differentiable():
    times = jnp.arange(1850.0, 1861.0)
    values = jnp.linspace(0.0, 2.0, 11)
    model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(times, values))
    params = model.Params()
    run = ebm.integrate(params, model=model, years=jnp.asarray(10.0))
    # A ramp F = 0.2 (t - 1850): the same as 1pctCO2 with its rate matched.
    ramp = ebm.TwoLayerModel(forcing=ebm.OnePercentCO2(2 ** (0.2 / 3.45) - 1))
    same = ebm.integrate(params, model=ramp, years=jnp.asarray(10.0))
    assert float(run.T) == pytest.approx(float(same.T), rel=1e-8)

    def warming(values):
        model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(times, values))
        return ebm.integrate(params, model=model, years=jnp.asarray(10.0)).T

    # The run is linear in the values, so the difference is exact. Steps that
    # crossed the series' kinks gave a gradient 0.6% off: they end on them.
    gradient = jax.grad(warming)(values)
    step = 1e-3
    k = 5
    expected = (warming(values.at[k].add(step)) - warming(values.at[k].add(-step))) / (
        2 * step
    )
    assert float(gradient[k]) == pytest.approx(float(expected), rel=1e-6)
    assert float(gradient[-1]) > 0.0 and np.all(np.asarray(gradient) >= 0.0)


@pytest.mark.parametrize(
    ("times", "values", "match"),
    [
        ([0.0, 2.0, 1.0], [0.0, 1.0, 2.0], r"strictly increasing, got times\[1\]"),
        ([0.0, 1.0, 1.0], [0.0, 1.0, 2.0], "strictly increasing"),
        ([0.0, 1.0, 2.0], [0.0, np.nan, 2.0], r"finite, got values\[1\] = nan"),
        ([0.0, 1.0, 2.0], [0.0, 1.0], "must have the shape of `times`"),
        ([0.0], [1.0], "at least 2"),
    ],
)
def test_bad_forcing_series_are_named(times, values, match):
    with pytest.raises(ValueError, match=match):
        ebm.ForcingSeries(times, values)


def test_a_run_outside_the_series_or_with_foreign_parameters_is_refused():
    model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries([1850.0, 1900.0], [0.0, 1.0]))
    with pytest.raises(ValueError, match=r"leaves the forcing series' span"):
        ebm.integrate(model.Params(), model=model, years=100.0)
    with pytest.raises(TypeError, match=r"`model.Params` \(TwoLayerParams\)"):
        ebm.integrate(ebm.Params(), model=TWO, years=1.0)
    with pytest.raises(ValueError, match="`feedback` must be"):
        TWO.Params(feedback=-1.0)
    with pytest.raises(ValueError, match="`T0` must be a state of the model"):
        ebm.integrate(PARAMS, model=TWO, years=1.0, T0={"T": 0.0})
    with pytest.raises(ValueError, match="are the zonal model's, got 'warm'"):
        ebm.integrate(PARAMS, model=TWO, years=1.0, T0="warm")
    with pytest.raises(ValueError, match="`layers` must be an integer >= 2"):
        ebm.NLayerModel(1)


def test_steady_states_of_the_layer_models_and_their_gradients(tmp_path):
    # Under 4xCO2 every layer ends at F / lambda, whatever the efficacy.
    state = ebm.equilibrium(PARAMS, model=TWO)
    forcing = 2.0 * PARAMS.F2x
    assert state.converged and float(state.residual) < 1e-12
    for name in ("T", "T_deep"):
        assert float(state.state[name]) == pytest.approx(
            float(forcing / PARAMS.feedback), rel=1e-12
        )
    assert state.variables == TWO.variables and float(state.t) == 0.0
    # d/d(feedback) = -F / lambda^2, d/dF2x = 2 / lambda, and no other parameter
    # moves it; the first also against central differences.
    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=TWO).global_mean)(PARAMS)
    lam = float(PARAMS.feedback)
    assert float(gradient.feedback) == pytest.approx(
        -float(forcing) / lam**2, rel=1e-10
    )
    assert float(gradient.F2x) == pytest.approx(2.0 / lam, rel=1e-10)
    for name in ("gamma", "C", "C_deep", "efficacy"):
        assert abs(float(getattr(gradient, name))) < 1e-12
    h = 1e-6
    difference = (
        ebm.equilibrium(replace(PARAMS, "feedback", lam + h), model=TWO).global_mean
        - ebm.equilibrium(replace(PARAMS, "feedback", lam - h), model=TWO).global_mean
    ) / (2 * h)
    assert float(gradient.feedback) == pytest.approx(float(difference), rel=1e-7)
    # Under doubled CO2, the warming is ebm.ecs, found by another root-find.
    doubled = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(2.0))
    assert float(ebm.equilibrium(PARAMS, model=doubled).T) == pytest.approx(
        float(ebm.ecs(PARAMS, TWO)), rel=1e-12
    )
    # Three layers, from a start of one's own.
    three = ebm.NLayerModel(3, forcing=ebm.AbruptCO2(4.0))
    params = three.Params()
    start = {"T": 1.0, "T_deep": jnp.array([0.5, 0.2])}
    steady = ebm.equilibrium(params, model=three, start=start)
    expected = float(2.0 * params.F2x / params.feedback)
    np.testing.assert_allclose(steady.state["T_deep"], [expected] * 2, rtol=1e-12)
    # Its file: each declared variable with its dimensions, read back as written.
    dataset = ebm.to_dataset(steady, params)
    assert dataset["T_deep"].dims == ("layer",)
    assert dataset["T_deep"].attrs["units"] == "K"
    np.testing.assert_array_equal(dataset["layer"], [2, 3])
    assert dataset.attrs["ebm_result"] == "steady state"
    assert dataset.attrs["param_feedback"] == pytest.approx(float(params.feedback))
    import xarray as xr

    xr.testing.assert_identical(ebm.load(ebm.save(dataset, tmp_path / "s.nc")), dataset)
    # An ensemble of steady states, with gradients, and its file.
    members = ebm.sweep(params, feedback=[0.8, 1.2])
    ensemble = ebm.ensemble(members, "equilibrium", model=three, gradient="global_mean")
    forcing = 2.0 * float(params.F2x)
    np.testing.assert_allclose(ensemble.result.T, [forcing / 0.8, forcing / 1.2])
    np.testing.assert_allclose(
        ensemble.gradient.feedback, [-forcing / 0.8**2, -forcing / 1.2**2], rtol=1e-10
    )
    dataset = ebm.to_dataset(ensemble)
    assert dataset["T_deep"].dims == ("member", "layer")
    np.testing.assert_array_equal(dataset["layer"], [2, 3])


def test_sensitivity_and_hessian_of_a_layer_model_match_the_exact_solution():
    # Through a run: the derivatives of the matrix exponential's solution, and the
    # first against central differences; through the steady state: F / lambda's.
    years = 20.0

    def exact(params):
        return abrupt_exact(TWO, params, years)[0]

    result = ebm.sensitivity(PARAMS, model=TWO, through="trajectory", years=years)
    assert result.lat is None and result.names == TWO.Params.field_names()
    expected = jax.grad(exact)(PARAMS)
    for name in result.names:
        assert float(result[name]) == pytest.approx(
            float(getattr(expected, name)), rel=1e-6, abs=1e-9
        )
    h = 1e-6
    difference = (
        exact(replace(PARAMS, "gamma", PARAMS.gamma + h))
        - exact(replace(PARAMS, "gamma", PARAMS.gamma - h))
    ) / (2 * h)
    assert float(result["gamma"]) == pytest.approx(float(difference), rel=1e-6)
    names = ("feedback", "gamma", "efficacy")
    second = ebm.hessian(
        PARAMS, model=TWO, names=names, through="trajectory", years=years
    )
    matrix = jax.hessian(
        lambda v: exact(
            eqx.tree_at(lambda p: (p.feedback, p.gamma, p.efficacy), PARAMS, tuple(v))
        )
    )(jnp.array([PARAMS.feedback, PARAMS.gamma, PARAMS.efficacy]))
    np.testing.assert_allclose(second.matrix, matrix, rtol=1e-6, atol=1e-9)
    steady = ebm.hessian(PARAMS, model=TWO, names=("feedback", "F2x"))
    lam, forcing = float(PARAMS.feedback), 2.0 * float(PARAMS.F2x)
    np.testing.assert_allclose(
        steady.matrix,
        [[2 * forcing / lam**3, -2.0 / lam**2], [-2.0 / lam**2, 0.0]],
        rtol=1e-10,
        atol=1e-12,
    )
    # Its file: a global model's derivatives are scalars, in K per unit.
    dataset = ebm.to_dataset(result, PARAMS)
    assert dataset["d_global_mean_d_gamma"].dims == ()
    assert dataset["d_global_mean_d_gamma"].attrs["units"] == "(K) (W m-2 K-1)-1"
    with pytest.raises(ValueError, match="must be one of .'T', 'global_mean'. for"):
        ebm.sensitivity(PARAMS, "ice_edge", model=TWO)
    with pytest.raises(TypeError, match=r"`model.Params` \(TwoLayerParams\)"):
        ebm.sensitivity(ebm.Params(), model=TWO)


def test_fit_recovers_a_layer_model_through_a_series_and_its_steady_state():
    import optax

    series = ebm.ForcingSeries(np.arange(1850.0, 1881.0), np.linspace(0.0, 1.5, 31))
    model = ebm.TwoLayerModel(forcing=series)
    truth = model.Params(feedback=1.2, gamma=0.9)
    times = np.arange(1851.0, 1881.0)
    run = ebm.integrate(truth, model=model, years=30.0, saveat=diffrax.SaveAt(ts=times))
    optimizer = optax.lbfgs()
    result = ebm.fit(
        model.Params(),
        np.asarray(run.Ts),
        fit=("feedback", "gamma"),
        through="trajectory",
        times=times,
        model=model,
        optimizer=optimizer,
        steps=200,
    )
    assert result.converged
    assert float(result.params.feedback) == pytest.approx(1.2, rel=1e-4)
    assert float(result.params.gamma) == pytest.approx(0.9, rel=1e-4)
    target = ebm.equilibrium(truth, model=TWO).T
    steady = ebm.fit(
        PARAMS, target, fit=("feedback",), model=TWO, optimizer=optimizer, steps=100
    )
    assert steady.converged
    assert float(steady.params.feedback) == pytest.approx(1.2, rel=1e-8)
    # The steady state does not move with gamma: refused, not "converged".
    with pytest.raises(ValueError, match="`gamma`, which TwoLayerModel's solve does"):
        ebm.fit(PARAMS, target, fit=("gamma",), model=TWO, optimizer=optimizer)
    with pytest.raises(ValueError, match=r"must have the shape \(\) of the surface"):
        ebm.fit(PARAMS, np.zeros(3), fit=("feedback",), model=TWO)
    with pytest.raises(ValueError, match=r"must have shape \(30,\) \(times, then"):
        ebm.fit(
            PARAMS, np.zeros(3), fit=("feedback",), model=model, through="trajectory",
            times=times,
        )  # fmt: skip


def test_steady_state_under_a_series_holds_one_year_and_refuses_bad_input():
    times = jnp.arange(1850.0, 1861.0)
    model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(times, jnp.linspace(0, 2, 11)))
    params = model.Params()
    state = ebm.equilibrium(params, model=model, t=1855.5)
    assert float(state.T) == pytest.approx(1.1 / float(params.feedback), rel=1e-12)
    with pytest.raises(ValueError, match="within the forcing series' span"):
        ebm.equilibrium(params, model=model, t=1900.0)
    with pytest.raises(ValueError, match="`t` must be a finite number"):
        ebm.equilibrium(params, model=model, t=float("nan"))
    with pytest.raises(ValueError, match="`start` must be a state of the model"):
        ebm.equilibrium(PARAMS, model=TWO, start={"T": 0.0})
    with pytest.raises(ValueError, match="branches by name are the zonal model's"):
        ebm.equilibrium(PARAMS, model=TWO, start="warm")
    with pytest.raises(ValueError, match="`solver` is the zonal model's option"):
        ebm.equilibrium(
            PARAMS, model=TWO, solver=ebm.PseudoTransientContinuation(initial_shift=9.0)
        )
    with pytest.raises(ValueError, match="`grid` is the zonal model's"):
        ebm.equilibrium(PARAMS, model=TWO, grid=ebm.Grid(6))
    with pytest.raises(ValueError, match="takes no `t`"):
        ebm.equilibrium(ebm.Params(), grid=ebm.Grid(6), t=1.0)


def test_a_run_is_written_plotted_and_reported_by_the_command(tmp_path, capsys):
    import json

    import xarray as xr

    from ebm._cli.main import main

    model = ebm.NLayerModel(3, forcing=ebm.OnePercentCO2())
    params = model.Params()
    run = ebm.integrate(
        params, model=model, years=20.0, saveat=diffrax.SaveAt(ts=jnp.arange(21.0))
    )
    dataset = ebm.to_dataset(run, params)
    assert dataset["T_deep_history"].dims == ("time", "layer")
    assert list(dataset["layer"].values) == [2, 3]
    assert dataset["T_deep"].attrs["units"] == "K"
    assert dataset.attrs["param_kappa3_units"] == "W m-2 K-1"
    loaded = ebm.load(ebm.save(dataset, tmp_path / "run.nc"))
    xr.testing.assert_identical(loaded, dataset)
    figure = ebm.plot_run(run)
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert labels == [
        "surface temperature anomaly",
        "temperature anomaly of ocean layers, layer 2",
        "temperature anomaly of ocean layers, layer 3",
    ]
    argv = ["transient", "--json", "--efficacy", "1.3", "--years", "100"]
    argv += ["--plot", str(tmp_path / "t.png"), "--netcdf", str(tmp_path / "t.nc")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tcr_K"] == pytest.approx(float(ebm.tcr(PARAMS, TWO)), rel=1e-12)
    assert report["ecs_K"] == pytest.approx(3.45 / 1.13, rel=1e-10)
    assert report["d_tcr_d"]["gamma"] < 0.0
    assert ebm.load(tmp_path / "t.nc")["T_history"].sizes["time"] == 101
    assert report["d_tcr_d_units"]["gamma"] == "(K) (W m-2 K-1)-1"
    assert main(["transient", "--model", "three-layer", "--gamma", "1.0"]) == 2
    assert "not of --model three-layer" in capsys.readouterr().err


def test_the_command_runs_the_historical_forcing_and_a_file_of_ones_own(
    tmp_path, capsys
):
    import json

    from ebm._cli.main import main

    # The feedback has one name in every model (the three-layer one's was kappa1).
    argv = ["transient", "--model", "three-layer", "--feedback", "1.0", "--json"]
    argv += ["--scenario", "historical", "--no-gradient", "--no-plot"]
    argv += ["--netcdf", str(tmp_path / "h.nc")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    model = ebm.NLayerModel(3, forcing=ebm.HistoricalForcing())
    run = ebm.integrate(model.Params(feedback=1.0), model=model, years=269.0)
    assert report["start_year"] == 1750.5 and report["years"] == 269.0
    assert report["final_warming_K"] == pytest.approx(float(run.T), rel=1e-9)
    assert report["final_forcing_W_m2"] == pytest.approx(float(run.F), rel=1e-12)
    assert "d_tcr_d" not in report
    # The run's file keeps the imbalance and the forcing through the run.
    saved = ebm.load(tmp_path / "h.nc")
    assert saved["N_history"].attrs["units"] == "W m-2"
    assert float(saved["F_history"][-1]) == pytest.approx(float(run.F), rel=1e-12)
    # A forcing of one's own: 2 W m-2 from 2000, ramped from 0 in 1990.
    path = tmp_path / "forcing.csv"
    path.write_text("year,forcing\n1990,0\n2000,2\n2100,2\n")
    argv = ["transient", "--forcing-file", str(path), "--json", "--no-gradient"]
    argv += ["--plot", str(tmp_path / "f.png")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["start_year"] == 1990.0 and report["final_forcing_W_m2"] == 2.0
    assert (tmp_path / "f.png").stat().st_size > 10_000
    path.write_text("year,forcing\n1990,0\n1980,2\n")
    assert main(["transient", "--forcing-file", str(path), "--no-plot"]) == 2
    assert "`times` must be strictly increasing" in capsys.readouterr().err


def test_an_ensemble_of_two_layer_members_with_gradients():
    members = ebm.sweep(PARAMS, gamma=[0.5, 0.73, 1.0])
    run = ebm.ensemble(members, task=lambda p: ebm.tcr(p, TWO), gradient=lambda r: r)
    gradient = jax.grad(lambda p: ebm.tcr(p, TWO))(replace(PARAMS, "gamma", 1.0))
    assert float(run.result[2]) == pytest.approx(
        float(ebm.tcr(replace(PARAMS, "gamma", 1.0), TWO)), rel=1e-9
    )
    assert float(run.gradient.gamma[2]) == pytest.approx(float(gradient.gamma), 1e-8)
    # More exchange with the deep ocean: less transient warming.
    assert np.all(np.diff(np.asarray(run.result)) < 0.0)


# --- the zonal model over a deep ocean ------------------------------------------

ZONAL_GRID = ebm.Grid(6)


def test_zonal_deep_ocean_global_mean_obeys_the_two_layer_equations():
    # Uniform heat capacity and no ice-albedo feedback (the albedo of the start,
    # held fixed): the global mean of the zonal model over a deep ocean is the
    # global two-layer model with feedback B, exactly.
    from ebm._constants import SECONDS_PER_YEAR

    plain = ebm.EnergyBalanceModel(grid=ZONAL_GRID)
    start = ebm.equilibrium(ebm.Params(), model=plain)
    albedo = ebm.PrescribedAlbedo(plain.albedo(start.T, ebm.Params(), ZONAL_GRID))
    surface = ebm.EnergyBalanceModel(grid=ZONAL_GRID, albedo=albedo)
    model = ebm.DeepOceanModel(surface=surface, forcing=ebm.AbruptCO2(4.0))
    params = model.Params(efficacy=1.3)
    saveat = diffrax.SaveAt(ts=jnp.arange(31.0))
    run = ebm.integrate(params, model=model, years=30.0, saveat=saveat)
    assert run.variables[1].dims == ("lat",)
    mean = np.asarray(ZONAL_GRID.global_mean(run.states["T"]))
    capacity = surface.heat_capacity(params, ZONAL_GRID) / SECONDS_PER_YEAR
    assert np.ptp(np.asarray(capacity)) == 0.0
    global_model = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(4.0))
    global_params = global_model.Params(
        feedback=params.B,
        gamma=params.gamma,
        C=capacity[0],
        C_deep=params.C_deep,
        efficacy=params.efficacy,
        F2x=params.F2x,
    )
    expected = ebm.integrate(
        global_params, model=global_model, years=30.0, saveat=saveat
    )
    np.testing.assert_allclose(mean - mean[0], expected.Ts, atol=1e-6)
    # Its TCR and ECS are warmings (they were its temperatures, in degC).
    for metric in (ebm.tcr, ebm.ecs):
        assert float(metric(params, model)) == pytest.approx(
            float(metric(global_params, global_model)), rel=1e-6
        )
    # A warming uniform in latitude has no polar amplification.
    assert float(ebm.polar_amplification(params, model)) == pytest.approx(1.0, abs=1e-6)


def test_zonal_deep_ocean_with_ice_conserves_energy():
    # With the ice-albedo feedback, energy is still conserved: the change of heat
    # content is the integral of the top-of-atmosphere imbalance.
    surface = ebm.EnergyBalanceModel(grid=ZONAL_GRID)
    model = ebm.DeepOceanModel(surface=surface, forcing=ebm.AbruptCO2(4.0))
    params = model.Params(efficacy=1.3)
    run = ebm.integrate(params, model=model, years=20.0)
    start = model.initial_state(params)
    change = model.heat_content(run.state, params) - model.heat_content(start, params)
    imbalance = ebm.gregory(params, model, years=20).N
    assert float(change) == pytest.approx(float(jnp.sum(imbalance)), rel=1e-6)
    # The ice retreats: the poles warm more than the globe.
    warming = run.state["T"] - start["T"]
    assert float(warming[-1]) > float(ZONAL_GRID.global_mean(warming)) > 0.0
    # So the transient warming is amplified at the poles, and the amplification is
    # differentiable: d/dD against central differences.
    amplification, gradient = jax.value_and_grad(ebm.polar_amplification)(params, model)
    assert float(amplification) > 1.1
    h = 1e-5
    difference = (
        ebm.polar_amplification(eqx.tree_at(lambda p: p.D, params, params.D + h), model)
        - ebm.polar_amplification(
            eqx.tree_at(lambda p: p.D, params, params.D - h), model
        )
    ) / (2 * h)
    assert float(gradient.D) == pytest.approx(float(difference), rel=1e-5)
    # Its file has both variables on the latitudes, with their bounds.
    dataset = ebm.to_dataset(run, params)
    assert dataset["T_deep"].dims == ("lat",)
    np.testing.assert_allclose(dataset["lat"].values, ZONAL_GRID.lat)
    assert "lat_bnds" in dataset


def test_the_command_runs_the_zonal_model_over_a_deep_ocean(tmp_path, capsys):
    import json

    import xarray as xr

    from ebm._cli.main import main

    argv = ["transient", "--model", "zonal-deep-ocean", "--n-lat", "6", "--json"]
    argv += ["--efficacy", "1.3", "--scenario", "abrupt-4xCO2", "--years", "20"]
    argv += ["--plot", str(tmp_path / "z.png"), "--netcdf", str(tmp_path / "z.nc")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    model = ebm.DeepOceanModel(surface=ebm.EnergyBalanceModel(grid=ZONAL_GRID))
    params = model.Params(efficacy=1.3)
    assert report["polar_amplification"] == pytest.approx(
        float(ebm.polar_amplification(params, model)), rel=1e-12
    )
    assert report["polar_amplification"] > 1.1
    assert report["d_tcr_d"]["gamma"] < 0.0 and report["n_lat"] == 6
    # The run's file: both variables on latitudes, saved every year.
    with xr.open_dataset(tmp_path / "z.nc") as saved:
        assert saved["T_deep_history"].dims == ("time", "lat")
        assert saved.sizes["time"] == 21
    # One panel per variable on latitudes: the change against time and latitude.
    assert (tmp_path / "z.png").stat().st_size > 10_000
    assert main(["transient", "--n-lat", "6"]) == 2
    assert "--n-lat is the zonal model's" in capsys.readouterr().err


def test_polar_caps_are_weighted_by_area():
    from ebm._layers.metrics import polar_weights

    # Cells of 30 degrees: the caps poleward of 60 are the two outermost cells.
    np.testing.assert_allclose(
        polar_weights(ebm.Grid(6)), [0.5, 0, 0, 0, 0, 0.5], atol=1e-12
    )
    # Cells of 20 degrees: the circle at 60 crosses the cells of 50-70 degrees,
    # which count for their area poleward of it.
    weights = np.asarray(polar_weights(ebm.Grid(9)))
    assert weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(weights, weights[::-1])
    sin = np.sin(np.deg2rad([60.0, 70.0]))
    assert weights[1] / weights[0] == pytest.approx((sin[1] - sin[0]) / (1 - sin[1]))
    np.testing.assert_allclose(weights[2:7], 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="`latitude` must be in"):
        polar_weights(ebm.Grid(6), 90.0)
    with pytest.raises(TypeError, match="needs a zonal model"):
        ebm.polar_amplification(PARAMS, TWO)


def test_zonal_deep_ocean_steady_state_is_a_root_of_the_whole_model():
    # The deep ocean at the surface's temperature and the surface in the zonal
    # model's equilibrium under the added forcing: the whole model's own tendency
    # vanishes there, and the warming under doubled CO2 is ebm.ecs (Newton's
    # method on the whole model, from the start state).
    surface = ebm.EnergyBalanceModel(grid=ZONAL_GRID)
    model = ebm.DeepOceanModel(surface=surface, forcing=ebm.AbruptCO2(2.0))
    params = model.Params(efficacy=1.3)
    state = ebm.equilibrium(params, model=model)
    np.testing.assert_array_equal(state.state["T_deep"], state.state["T"])
    tendency = model(0.0, state.state, params)
    assert max(float(jnp.max(jnp.abs(x))) for x in tendency.values()) < 1e-9
    assert float(state.residual) < 1e-9
    assert bool(state.surface.stable)
    dataset = ebm.to_dataset(state, params)
    assert dataset["T_deep"].dims == ("lat",) and "lat_bnds" in dataset
    assert float(dataset["ice_edge"]) == pytest.approx(float(state.surface.ice_edge))
    start = model.initial_state(params)
    warming = state.global_mean - model.global_mean(start)
    assert float(warming) == pytest.approx(float(ebm.ecs(params, model)), rel=1e-8)
    # d/dF2x against central differences; the deep ocean's gamma does not move it.
    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=model).global_mean)(params)
    h = 1e-5

    def mean(F2x):
        changed = eqx.tree_at(lambda p: p.F2x, params, F2x)
        return float(ebm.equilibrium(changed, model=model).global_mean)

    difference = (mean(params.F2x + h) - mean(params.F2x - h)) / (2 * h)
    assert float(gradient.F2x) == pytest.approx(difference, rel=1e-6)
    assert abs(float(gradient.gamma)) < 1e-12


def test_layer_steady_states_trace_and_mistakes_are_named(tmp_path):
    # Under jit, with the forcing's time given; and a series traced under grad: the
    # steady state at a time between two years weighs both values by half.
    ramp = ebm.TwoLayerModel(forcing=ebm.OnePercentCO2())
    at_70 = jax.jit(lambda p: ebm.equilibrium(p, model=ramp, t=70.0).T)(PARAMS)
    expected = PARAMS.F2x * 70.0 * np.log2(1.01) / PARAMS.feedback
    assert float(at_70) == pytest.approx(float(expected), rel=1e-12)
    times = jnp.arange(1850.0, 1861.0)

    def steady(values):
        model = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(times, values))
        return ebm.equilibrium(PARAMS, model=model, t=1855.5).T

    gradient = jax.grad(steady)(jnp.linspace(0.0, 2.0, 11))
    weights = np.zeros(11)
    weights[5:7] = 0.5 / float(PARAMS.feedback)
    np.testing.assert_allclose(gradient, weights, atol=1e-12)
    series = ebm.TwoLayerModel(forcing=ebm.ForcingSeries(times, jnp.ones(11)))
    with pytest.raises(ValueError, match=r"within the forcing series' span \[1850"):
        ebm.equilibrium(PARAMS, model=series, t=1900.0)
    # Runs past the series' end are refused by every entry point, not extrapolated.
    with pytest.raises(ValueError, match="leaves the forcing series' span"):
        ebm.sensitivity(PARAMS, model=series, through="trajectory", years=20.0)
    with pytest.raises(ValueError, match="leaves the forcing series' span"):
        ebm.fit(
            PARAMS, np.zeros(5), fit=("feedback",), model=series, through="trajectory",
            times=np.arange(1857.0, 1862.0),
        )  # fmt: skip
    with pytest.raises(ValueError, match="are the zonal model's, got 'warm'"):
        ebm.sensitivity(PARAMS, model=TWO, through="trajectory", years=5.0, T0="warm")
    # Parameters of a layer model without its model; fit's zonal default.
    with pytest.raises(TypeError, match="TwoLayerParams, not the zonal model's"):
        ebm.equilibrium(PARAMS)
    with pytest.raises(TypeError, match="TwoLayerParams, not the zonal model's"):
        ebm.sensitivity(PARAMS)
    with pytest.raises(ValueError, match="`fit` must name the parameters to fit"):
        ebm.fit(PARAMS, 1.0, model=TWO)
    with pytest.raises(TypeError, match="`run` must be an ebm.Run"):
        ebm.plot_run(ebm.equilibrium(PARAMS, model=TWO))
