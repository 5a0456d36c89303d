"""The ocean-layer models against FaIR 2.x's `EnergyBalanceModel` and
openscm-twolayermodel (optional: skipped where they are not installed; CI runs this
file with the `compare` extra).

Both step in whole years: FaIR by the exact matrix exponential of a system whose
forcing first passes through a low-pass filter (rate `gamma_autocorrelation`, 2 per
year), openscm-twolayermodel by forward Euler. ebm integrates the unfiltered
equations in continuous time. So each is compared with the exact solution of the
same equations (the matrix exponential), and the distance of each stepping scheme
from it is stated.
"""

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import ebm


EFFICACY = 1.3
F4X = 6.9
YEARS = np.arange(151.0)


def _exact(matrix, forcing_vector, F):
    """The abrupt experiment's exact solution at `YEARS`."""
    eye = np.eye(matrix.shape[0])
    return np.array(
        [
            np.linalg.solve(
                matrix, (scipy.linalg.expm(matrix * t) - eye) @ forcing_vector
            )
            * F
            for t in YEARS
        ]
    )


def _yearly(model, params):
    run = ebm.integrate(
        params, model=model, years=150.0, saveat=diffrax.SaveAt(ts=jnp.asarray(YEARS))
    )
    return np.asarray(run.Ts)


def test_three_layers_against_fair():
    fair_ebm = pytest.importorskip("fair.energy_balance_model")
    from fair.constants import DOUBLING_TIME_1PCT

    capacities, transfers = [7.3, 30.0, 100.0], [1.13, 1.5, 0.7]
    fair = fair_ebm.EnergyBalanceModel(
        ocean_heat_capacity=capacities,
        ocean_heat_transfer=transfers,
        deep_ocean_efficacy=EFFICACY,
        forcing_4co2=F4X,
        n_timesteps=YEARS.size,
    )
    model = ebm.NLayerModel(3, forcing=ebm.AbruptCO2(4.0))
    params = model.Params(
        **{f"C{k + 1}": c for k, c in enumerate(capacities)},
        feedback=transfers[0],  # FaIR's kappa1
        **{f"kappa{k + 1}": c for k, c in enumerate(transfers) if k > 0},
        efficacy=EFFICACY,
        F2x=F4X / 2,
    )
    # The same equations: the efficacy on the exchange into the deepest layer.
    matrix, forcing_vector = (np.asarray(x) for x in model.system(params))
    np.testing.assert_allclose(matrix, fair._eb_matrix()[1:, 1:], rtol=0, atol=1e-15)
    # FaIR's ECS; its TCR is the warming when CO2 has doubled under 1pctCO2
    # (year 69.66), from the modes of the unfiltered equations.
    fair.emergent_parameters()
    assert float(ebm.ecs(params, model)) == pytest.approx(fair.ecs, rel=1e-12)
    ramp = ebm.NLayerModel(3, forcing=ebm.OnePercentCO2())
    doubled = ebm.integrate(params, model=ramp, years=DOUBLING_TIME_1PCT)
    assert float(doubled.T) == pytest.approx(fair.tcr, rel=1e-8)
    # abrupt-4xCO2: ebm is within 1e-8 K of the exact solution; FaIR's filtered
    # forcing lags it by up to 0.32 K in the first years, 0.002 K at year 150.
    fair.add_forcing(np.full(YEARS.size, F4X), 1)
    fair.run()
    exact = _exact(matrix, forcing_vector, F4X)[:, 0]
    assert np.max(np.abs(_yearly(model, params) - exact)) < 1e-8
    lag = np.abs(fair.temperature[:, 0] - exact)
    assert 0.25 < lag.max() < 0.4 and lag[-1] < 3e-3


def test_two_layers_against_openscm_twolayermodel():
    openscm = pytest.importorskip("openscm_twolayermodel")
    from openscm_twolayermodel.constants import DENSITY_WATER, HEAT_CAPACITY_WATER
    from openscm_units import unit_registry as ur

    depths = {"du": 50.0, "dl": 1200.0}
    theirs = openscm.TwoLayerModel(
        du=depths["du"] * ur("m"),
        dl=depths["dl"] * ur("m"),
        lambda0=1.13 * ur("W/m^2/delta_degC"),
        efficacy=EFFICACY * ur("dimensionless"),
        eta=0.73 * ur("W/m^2/delta_degC"),
    )
    theirs.set_drivers(np.full(YEARS.size, F4X) * ur("W/m^2"))
    theirs.reset()
    theirs.run()
    # Their heat capacities (a water column of each depth), per their year.
    seconds = (1 * ur("yr")).to("s").magnitude
    C, C_deep = (
        (d * ur("m") * DENSITY_WATER * HEAT_CAPACITY_WATER)
        .to("J/delta_degC/m^2")
        .magnitude
        / seconds
        for d in depths.values()
    )
    model = ebm.TwoLayerModel(forcing=ebm.AbruptCO2(4.0))
    params = model.Params(
        feedback=1.13, gamma=0.73, C=C, C_deep=C_deep, efficacy=EFFICACY, F2x=F4X / 2
    )
    matrix, forcing_vector = (np.asarray(x) for x in model.system(params))
    # Theirs is forward Euler of the same equations with 1-year steps (read from
    # its run's state, which it keeps in private arrays)...
    state, euler = np.zeros(2), [np.zeros(2)]
    for _ in YEARS[1:]:
        state = state + matrix @ state + forcing_vector * F4X
        euler.append(state)
    euler = np.array(euler)
    np.testing.assert_allclose(theirs._temp_upper_mag, euler[:, 0], atol=1e-12)
    np.testing.assert_allclose(theirs._temp_lower_mag, euler[:, 1], atol=1e-12)
    # ... 0.22 K from the exact solution at worst (the first years), 0.001 K at
    # year 150; ebm within 1e-7 K of it.
    exact = _exact(matrix, forcing_vector, F4X)[:, 0]
    assert np.max(np.abs(_yearly(model, params) - exact)) < 1e-7
    error = np.abs(theirs._temp_upper_mag - exact)
    assert 0.15 < error.max() < 0.3 and error[-1] < 2e-3


def test_three_layers_under_an_ssp_against_fair():
    # The same three-layer model, forcing-driven by the same effective radiative
    # forcing (the AR6 history continued by ssp245), 1750-2100.
    fair_ebm = pytest.importorskip("fair.energy_balance_model")

    capacities, transfers = [7.3, 30.0, 100.0], [1.13, 1.5, 0.7]
    scenario = ebm.SSPForcing("ssp245", end=2100)
    model = ebm.NLayerModel(3, forcing=scenario)
    params = model.Params(
        C1=7.3, C2=30.0, C3=100.0, feedback=1.13, kappa2=1.5, kappa3=0.7,
        efficacy=EFFICACY,
    )  # fmt: skip
    # The annual means, at the middle of each year 1750-2100.
    times = np.asarray(scenario.rest.times)
    forcing = np.array([float(scenario(t, params)) for t in times])
    ends = jnp.arange(1751.0, 2101.0)
    run = ebm.integrate(
        params, model=model, years=350.0, solver="exact",
        saveat=diffrax.SaveAt(ts=ends),
    )  # fmt: skip
    ours = np.asarray(run.Ts)

    def fair_run(**options):
        fair = fair_ebm.EnergyBalanceModel(
            ocean_heat_capacity=capacities, ocean_heat_transfer=transfers,
            deep_ocean_efficacy=EFFICACY, forcing_4co2=F4X, n_timesteps=times.size,
            **options,
        )  # fmt: skip
        fair.add_forcing(forcing, 1)
        fair.run()
        # FaIR's state after k yearly steps, each under that year's mean forcing.
        return fair.temperature[1 : 1 + ends.size, 0]

    # FaIR filters its forcing (2 per year): up to 0.16 K off at volcanic
    # eruptions (1816, after Tambora), 0.005 K in 2100.
    difference = np.abs(ours - fair_run())
    assert 0.1 < difference.max() < 0.2 and difference[-1] < 0.01
    # Without its filter, what remains is its forcing held through each year where
    # ebm's is linear between the years' middles: 0.06 K at eruptions, 4e-4 K in
    # 2100.
    difference = np.abs(ours - fair_run(gamma_autocorrelation=1e3))
    assert difference.max() < 0.07 and difference[-1] < 1e-3
