"""The edges of the protocol's entry points for the models other than the zonal
one (ocean layers, the zonal model over a deep ocean, sea ice): what they refuse,
by name, and the failures they report instead of returning wrong numbers."""

import warnings
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from helpers import abrupt_exact


TWO = ebm.TwoLayerModel()
PARAMS = TWO.Params()
RAMP = ebm.TwoLayerModel(forcing=ebm.OnePercentCO2())


def _gradient(model, years, adjoint, output=lambda run: run.T):
    return jax.grad(
        lambda p: output(ebm.integrate(p, model=model, years=years, adjoint=adjoint))
    )(model.Params())


# --- Backsolve's horizon, from the model's own time scales -----------------------


def test_backsolve_is_refused_past_its_horizon_for_every_model():
    # These were 1.6e7 (against -0.0228) and 2.8e11 (against -0.236), as successes.
    three = ebm.NLayerModel(3, forcing=ebm.OnePercentCO2())
    with pytest.raises(eqx.EquinoxRuntimeError, match=r"backsolve.*\(17\.7 years here"):
        _gradient(three, 150.0, "backsolve")
    deep = ebm.DeepOceanModel(surface=ebm.EnergyBalanceModel(grid=ebm.Grid(6)))
    with pytest.raises(eqx.EquinoxRuntimeError, match="fastest relaxation time"):
        _gradient(deep, 20.0, "backsolve", lambda run: run.global_mean)


# --- Solvers, adjoints and run arguments, named ----------------------------------


def test_solver_names_are_resolved_or_refused_by_name():
    # Each crashed inside diffrax ('str' object has no attribute 'term_structure').
    run = ebm.integrate(PARAMS, model=TWO, years=10.0, solver="tsit5")
    assert float(run.T) == pytest.approx(float(abrupt_exact(TWO, PARAMS, 10.0)[0]))
    with pytest.raises(ValueError, match="KenCarp|kencarp5.*has no such split"):
        ebm.integrate(PARAMS, model=TWO, years=10.0, solver="kencarp5")
    with pytest.raises(ValueError, match=r"`solver` must be one of \('tsit5'"):
        ebm.integrate(PARAMS, model=TWO, years=10.0, solver="bogus")
    with pytest.raises(ValueError, match="solver='exact' solves a global layer"):
        ebm.tcr(ebm.DeepOceanModel().Params(), ebm.DeepOceanModel(), solver="exact")


@pytest.mark.parametrize(
    "keyword, value, match",
    [
        ("max_steps", 0, "`max_steps` must be an integer >= 1"),
        ("max_steps", -1, "`max_steps` must be an integer >= 1"),
        ("dt0", -1.0, "`dt0` must be positive"),
        ("saveat", diffrax.SaveAt(ts=jnp.array([5.0, 1.0])), "increasing and within"),
        ("saveat", diffrax.SaveAt(ts=jnp.array([5.0, 20.0])), r"within the run \[0"),
        ("T0", {"T": jnp.nan, "T_deep": 0.0}, r"`T0` must be finite.*T0\['T'\]"),
        ("T0", {"T": 1j, "T_deep": 0.0}, "`T0` must hold real numbers"),
    ],
)
def test_bad_run_arguments_are_refused_by_name(keyword, value, match):
    with pytest.raises(ValueError, match=match):
        ebm.integrate(PARAMS, model=TWO, years=10.0, **{keyword: value})


def test_traced_run_arguments_are_checked_in_the_run():
    # Under jit these were integrated backwards (-9.58 K) and clipped to the run
    # (the year-10 state for t = 20), each reported as a success.
    run = jax.jit(
        lambda years: ebm.integrate(
            PARAMS, model=TWO, years=years, t0=10.0, throw=False
        )
    )(-5.0)
    assert run.result == ebm.RESULTS.invalid_run_length and np.isnan(run.T)
    with pytest.raises(Exception, match="must be positive and finite"):
        jax.jit(lambda y: ebm.integrate(PARAMS, model=TWO, years=y).T)(-5.0)

    def exact(ts, throw):
        saveat = diffrax.SaveAt(ts=ts)
        return ebm.integrate(
            PARAMS, model=RAMP, years=10.0, solver="exact", saveat=saveat, throw=throw
        )

    inside = jax.jit(lambda ts: exact(ts, False))(jnp.array([1.0, 5.0, 10.0]))
    assert inside.result == ebm.RESULTS.successful
    outside = jax.jit(lambda ts: exact(ts, False))(jnp.array([1.0, 5.0, 20.0]))
    assert outside.result == ebm.RESULTS.saved_times_outside_run
    assert np.all(np.isnan(outside.Ts))
    with pytest.raises(Exception, match="must be increasing and within the run"):
        jax.jit(lambda ts: exact(ts, True).Ts)(jnp.array([-5.0, 5.0]))


def test_the_differentiation_mode_of_the_adjoint_is_named():
    with pytest.raises(ValueError, match="adjoint='forward' supports forward mode"):
        _gradient(TWO, 10.0, "forward")
    for adjoint in ("recursive", "interpolating"):
        with pytest.raises(ValueError, match=f"adjoint='{adjoint}' supports reverse"):
            jax.jacfwd(
                lambda p: ebm.integrate(p, model=TWO, years=10.0, adjoint=adjoint).T
            )(PARAMS)


def test_stiff_layer_parameters_take_an_implicit_solver_and_their_gradient():
    # C = 1e-4 took 674,727 explicit steps; its gradient failed on the budget.
    params = RAMP.Params(C=1e-4)
    run = ebm.integrate(params, model=RAMP, years=80.0)
    assert int(run.num_steps) < 1000
    exact = ebm.integrate(params, model=RAMP, years=80.0, solver="exact")
    assert float(run.T) == pytest.approx(float(exact.T), rel=1e-7)
    gradient = jax.grad(lambda p: ebm.integrate(p, model=RAMP, years=80.0).T)(params)
    expected = jax.grad(
        lambda p: ebm.integrate(p, model=RAMP, years=80.0, solver="exact").T
    )(params)
    assert float(gradient.feedback) == pytest.approx(float(expected.feedback), 1e-6)


def test_metrics_take_the_runs_options_and_say_when_the_ice_cap_goes():
    # The metrics took no budget or solver: a model that needed more steps than
    # the default could not be measured.
    exact = ebm.tcr(PARAMS, TWO)
    assert float(ebm.tcr(PARAMS, TWO, solver="tsit5")) == pytest.approx(
        float(exact), rel=1e-8
    )
    with pytest.raises(eqx.EquinoxRuntimeError, match="maximum number of"):
        ebm.tcr(PARAMS, TWO, solver="tsit5", max_steps=10)
    # A forcing strong enough to melt the ice cap of the zonal model over a deep
    # ocean: its ECS is the jump across the fold, and says so.
    deep = ebm.DeepOceanModel(surface=ebm.EnergyBalanceModel(grid=ebm.Grid(6)))
    with pytest.warns(ebm.RegimeChangeWarning, match="ice cap.*ends with no ice"):
        ebm.ecs(deep.Params(F2x=10.0), deep)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ebm.ecs(deep.Params(), deep)


# --- Constructors ------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, error, match",
    [
        (lambda: ebm.TwoLayerModel(forcing=3.7), TypeError, "got float 3.7"),
        (lambda: ebm.NLayerModel(3, forcing="abrupt"), TypeError, "got str"),
        (
            lambda: ebm.TwoLayerModel(forcing=lambda t, p: 1.0),
            TypeError,
            "got a function.*subclass of ebm.AbstractScenario",
        ),
        (
            lambda: ebm.DeepOceanModel(surface=ebm.SeaIceModel(10)),
            TypeError,
            "`surface` must be a zonal model.*got SeaIceModel",
        ),
        (
            lambda: ebm.DeepOceanModel(surface=ebm.TwoLayerModel()),
            TypeError,
            "got TwoLayerModel",
        ),
        (lambda: ebm.AbruptCO2(True), ValueError, "`factor` must be a positive"),
        (lambda: ebm.OnePercentCO2(-0.01), ValueError, "`rate` must be a positive"),
        (
            lambda: ebm.ForcingSeries([0.0, 1.0], ["a", "b"]),
            ValueError,
            "`values` must be real numbers",
        ),
        (
            lambda: ebm.ForcingSeries([0.0, 1.0], [1j, 2.0]),
            ValueError,
            "`values` must be real numbers, got an array of complex",
        ),
    ],
)
def test_constructors_refuse_bad_fields(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_numpy_numbers_are_taken_as_python_numbers():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # equinox's "JAX array set as static"
        assert ebm.NLayerModel(np.int64(3)).n == 3
        assert type(ebm.SeaIceModel(np.int64(10)).n) is int
        assert type(ebm.AbruptCO2(np.float64(4.0)).factor) is float


# --- Messages that name the right thing --------------------------------------------


def test_messages_name_what_the_user_gave():
    historical = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    with pytest.raises(ValueError, match=r"`t` must be within .*got t=2030"):
        ebm.equilibrium(historical.Params(), model=historical, t=2030.0)
    sea_ice = ebm.SeaIceModel(10)
    with pytest.raises(ValueError, match="`start` must be a state of the model"):
        ebm.periodic_equilibrium(
            ebm.SeaIceParams(), model=sea_ice, start={"E": jnp.zeros(3)}
        )
    with pytest.raises(ValueError, match="SeaIceEuler \\(the default here\\)"):
        ebm.periodic_equilibrium(ebm.SeaIceParams(), model=sea_ice, stepper="imex")
    with pytest.raises(TypeError, match="not the zonal model's parameters"):
        ebm.integrate(ebm.TwoLayerParams(), years=1.0)
    with pytest.raises(TypeError, match="are `params` and `model` swapped"):
        ebm.ecs(TWO, PARAMS)
    with pytest.raises(ValueError, match="one model, of one class"):
        ebm.ensemble([ebm.TwoLayerParams(), ebm.NLayerModel(2).Params()])
    for state in ({"E": jnp.zeros((3, 10))}, {"E": jnp.zeros(7)}):
        with pytest.raises(ValueError, match=r"one state of the model.*jax\.vmap"):
            sea_ice.ice_edge(state)


def test_the_command_names_its_own_flags(capsys):
    from ebm._cli.main import main

    # They were refused as `num_chains`, `num_warmup`, `num_samples`.
    for flag in ("--chains", "--warmup", "--samples"):
        with pytest.raises(SystemExit) as info:
            main(["calibrate", flag, "0"])
        assert info.value.code == 2
        assert f"argument {flag}: expected an integer" in capsys.readouterr().err


# --- What differs between models is a method of the model -------------------------

BoxParams = ebm.params_class(
    "BoxParams",
    (
        ebm.Parameter("C", 8.0, "W yr m-2 K-1", "heat capacity", lower=0.0),
        ebm.Parameter("feedback", 1.2, "W m-2 K-1", "feedback parameter", lower=0.0),
        ebm.Parameter("F2x", 3.45, "W m-2", "forcing of doubled CO2"),
    ),
)


class _Box(ebm.AbstractModel):
    """One box, `C dT/dt = F(t) - feedback T`: a model of the user's own."""

    forcing: ebm.AbstractScenario = ebm.AbruptCO2()

    @property
    def variables(self):
        return (ebm.Variable("T", "K", "temperature anomaly"),)

    @property
    def Params(self):
        return BoxParams

    def __call__(self, t, y, p):
        return {"T": (self.forcing(t, p) - p.feedback * y["T"]) / p.C}

    def initial_state(self, p):
        return {"T": jnp.zeros(())}

    def surface_temperature(self, y):
        return y["T"]

    def toa_imbalance(self, t, y, p):
        return self.forcing(t, p) - p.feedback * y["T"]

    def heat_content(self, y, p):
        return p.C * y["T"]


class _AnalyticBox(_Box):
    """The box with its steady state in closed form, `F / feedback`."""

    def steady_state(self, params, t, start, **options):
        state = {"T": self.forcing(t, params) / params.feedback}
        return ebm.SteadyState.of(self, params, state, t)


def test_a_models_own_steady_state_and_names_are_what_the_entry_points_use():
    params = BoxParams()
    expected = 2 * params.F2x / params.feedback
    newton = ebm.equilibrium(params, model=_Box(ebm.AbruptCO2(4.0)))
    own = ebm.equilibrium(params, model=_AnalyticBox(ebm.AbruptCO2(4.0)))
    assert int(newton.num_steps) > 0 and int(own.num_steps) == 0
    assert float(own.T) == pytest.approx(float(expected), rel=1e-14)
    assert float(newton.T) == pytest.approx(float(expected), rel=1e-12)
    # Differentiated through the model's own method: d/dfeedback of 2 F2x/feedback
    # (4xCO2).
    gradient = jax.grad(
        lambda p: ebm.equilibrium(p, model=_AnalyticBox(ebm.AbruptCO2(4.0))).T
    )(params)
    assert float(gradient.feedback) == pytest.approx(
        float(-2 * params.F2x / params.feedback**2), rel=1e-14
    )
    # A model names the starts it takes; its own branch is walked, and a linear
    # one has no fold.
    assert _Box.start_names == ("present",)
    with pytest.raises(ValueError, match="branches by name are the zonal model's"):
        ebm.equilibrium(params, model=_Box(), start="warm")
    with pytest.raises(eqx.EquinoxRuntimeError, match="without passing a fold"):
        ebm.fold(params, "feedback", stop=2.0, model=_Box())


class _DeclaringBox(_Box):
    """The box, declaring what the analysis takes by default and by name."""

    derived_names: ClassVar[tuple[str, ...]] = ("tcr",)
    fitted_by_default: ClassVar[tuple[str, ...] | None] = ("feedback",)
    varied_by_default: ClassVar[tuple[str, ...] | None] = ("feedback",)


def test_a_models_declared_names_are_what_the_analysis_takes():
    model = _DeclaringBox(ebm.AbruptCO2(4.0))
    params = BoxParams()
    # 4xCO2: T = 2 F2x / feedback, whose second derivative is 4 F2x / feedback^3.
    hessian = ebm.hessian(params, model=model)
    assert hessian.names == ("feedback",)
    assert float(hessian.matrix[0, 0]) == pytest.approx(
        float(4 * params.F2x / params.feedback**3), rel=1e-8
    )
    # Fitted without `fit=`: the model's own default, back to the true feedback.
    target = 2 * params.F2x / params.feedback
    result = ebm.fit(BoxParams(feedback=1.5), target, model=model, steps=200)
    assert result.fitted == ("feedback",)
    assert float(result.params.feedback) == pytest.approx(
        float(params.feedback), rel=1e-4
    )
    known = r"known names for _DeclaringBox are \('tcr',\)"
    with pytest.raises(ValueError, match=known):
        ebm.posterior(
            params,
            {"global_mean": target},
            priors={"feedback": ebm.Uniform(0.5, 2.0)},
            noise=0.1,
            model=model,
            derived=("ecs",),
        )


def test_a_run_of_any_model_shows_its_progress(capsys):
    run = ebm.integrate(
        PARAMS, model=TWO, years=10.0, progress=diffrax.TextProgressMeter()
    )
    assert run.result == ebm.RESULTS.successful
    printed = capsys.readouterr().out
    assert "100.00%" in printed


class _ArrayBox(_Box):
    """The box with its state one array, not a dict of named variables."""

    def __call__(self, t, y, p):
        return (self.forcing(t, p) - p.feedback * y) / p.C

    def initial_state(self, p):
        return jnp.zeros(())

    def surface_temperature(self, y):
        return y

    def toa_imbalance(self, t, y, p):
        return self.forcing(t, p) - p.feedback * y

    def heat_content(self, y, p):
        return p.C * y


def test_the_posterior_starts_its_equilibria_from_the_reference_for_any_state():
    # The chains' equilibria start from the reference's state, given back in the
    # model's own structure (a bare array here; `state` of every steady result is
    # `{name: array}`), for the zonal model as for a user's.
    params = BoxParams()
    model = _ArrayBox(ebm.AbruptCO2(2.0))
    target = params.F2x / 1.5
    posterior = ebm.posterior(
        params,
        {"global_mean": target},
        priors={"feedback": ebm.Uniform(0.5, 2.0)},
        noise=0.05,
        model=model,
        num_chains=1,
        num_warmup=20,
        num_samples=20,
        max_doublings=3,
    )
    assert np.all(np.isfinite(posterior.draws["feedback"]))
    assert float(np.mean(posterior.draws["feedback"])) == pytest.approx(1.5, abs=0.2)
    zonal = ebm.equilibrium(ebm.Params(), grid=ebm.Grid(6))
    assert set(zonal.state) == {"T"} and zonal.state["T"] is zonal.T


def test_the_root_finder_and_the_adjoint_reach_the_model_that_solves():
    # One path: ebm.equilibrium hands `solver` and `adjoint` to the model's own
    # steady state. The deep ocean's surface takes the zonal model's root-finder
    # (Newton's method from the default's state: fewer iterations than the
    # default's pseudo-time steps, to the same state); a Newton-solved model
    # takes an adjoint of the user's, whose gradient matches central differences.
    import lineax as lx
    import optimistix as optx

    surface = ebm.EnergyBalanceModel(grid=ebm.Grid(6))
    deep = ebm.DeepOceanModel(surface=surface, forcing=ebm.AbruptCO2(2.0))
    params = deep.Params()
    default = ebm.equilibrium(params, model=deep)
    newton = ebm.equilibrium(
        params,
        model=deep,
        start=default.state,
        solver=optx.Newton(rtol=1e-10, atol=1e-10),
    )
    np.testing.assert_allclose(newton.T, default.T, atol=1e-8)
    assert int(newton.num_steps) < int(default.num_steps)
    assert deep.steady_adjoint() == surface.steady_adjoint()

    box = _Box(ebm.AbruptCO2(4.0))
    adjoint = optx.ImplicitAdjoint(linear_solver=lx.LU())

    def mean(p):
        return ebm.equilibrium(p, model=box, adjoint=adjoint).global_mean

    box_params = BoxParams()
    gradient = jax.grad(mean)(box_params)
    h = 1e-6
    up, down = (
        float(
            mean(eqx.tree_at(lambda p: p.feedback, box_params, box_params.feedback + s))
        )
        for s in (h, -h)
    )
    assert float(gradient.feedback) == pytest.approx((up - down) / (2 * h), rel=1e-7)


def test_an_entry_point_for_any_model_says_so_when_given_something_else():
    # ebm.equilibrium and ebm.sensitivity take every model of the protocol: their
    # error for a `model` of another kind says so, not that only the zonal model
    # is taken (the message of the zonal model's own entry points).
    for call in (
        lambda: ebm.equilibrium(ebm.Params(), model="default"),
        lambda: ebm.sensitivity(ebm.Params(), model="default"),
    ):
        with pytest.raises(TypeError, match="or any other model of the protocol"):
            call()
