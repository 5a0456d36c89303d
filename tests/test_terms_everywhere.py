"""Each of ebm's optional terms through every entry point, by its own parameter.

For each term and one of its parameters: the snowball fold's derivative (implicit,
through the extended system) against central differences, a continuation whose
fold `ebm.fold` refines, `ebm.fit` recovering the parameter from a
synthetic equilibrium, `ebm.sensitivity` (forward mode) against `jax.grad`, and
`ebm.ensemble`'s gradients against each member's. The profile parameter of
`ebm.LatitudeDiffusiveTransport` has its own file (test_latitude_diffusivity.py),
and the moist transport's fold is in test_moist_transport.py.
"""

import equinox as eqx
import jax
import numpy as np
import optax
import pytest

import ebm
from helpers import assert_gradient_matches_fd


GRID = ebm.Grid(18)

# (the term, the parameter values, the parameter tested). The grey
# body at emissivity 0.70 keeps an ice cap far enough from the small-ice-cap
# fold for finite differences to converge (0.68 is close to it on this grid).
CASES = {
    "grey-body": (
        dict(longwave=ebm.GreyBodyLongwave()),
        dict(emissivity=0.70),
        "emissivity",
    ),
    "co2": (dict(forcing=ebm.CO2Forcing()), dict(CO2=560.0), "CO2"),
    "moist": (
        dict(transport=ebm.MoistDiffusiveTransport()),
        dict(D=0.24),
        "relative_humidity",
    ),
}
# The moist transport's fold derivative is checked in test_moist_transport.py.
FOLD_CASES = ("co2", "grey-body")


def _case(name):
    terms, values, parameter = CASES[name]
    model = ebm.EnergyBalanceModel(grid=GRID, **terms)
    return model, model.Params(**values), parameter


@pytest.fixture(params=sorted(CASES), scope="module")
def case(request):
    return _case(request.param)


@pytest.mark.parametrize("term", FOLD_CASES)
def test_snowball_fold_and_its_derivative(term):
    model, params, name = _case(term)
    branch = ebm.continuation(params, "S0", stop=900.0, model=model)
    assert branch.folds, "the walk towards a snowball passes the fold"
    refined = ebm.fold(params, "S0", guess=branch.folds[0], model=model)
    assert float(refined.value) == pytest.approx(float(branch.folds[0].value), rel=1e-6)

    def snowball(p):
        return ebm.fold(p, "S0", guess=branch.folds[0], model=model).value

    gradient = jax.grad(snowball)(params)
    assert_gradient_matches_fd(snowball, params, gradient, (name,), rtol=1e-5)


def test_fit_recovers_the_parameter(case):
    model, params, name = case
    target = ebm.equilibrium(params, model=model).T
    start = eqx.tree_at(
        lambda p: getattr(p, name), params, 1.02 * getattr(params, name)
    )
    result = ebm.fit(
        start, target, fit=(name,), model=model, optimizer=optax.lbfgs(), gtol=1e-10
    )
    assert result.converged
    fitted = float(getattr(result.params, name))
    assert fitted == pytest.approx(float(getattr(params, name)), rel=1e-6)


def test_forward_and_reverse_mode_and_ensembles_agree(case):
    model, params, name = case

    def mean(p):
        return ebm.equilibrium(p, model=model).global_mean

    gradient = jax.grad(mean)(params)
    jacobian = ebm.sensitivity(params, names=(name, "D"), model=model)
    for field in (name, "D"):
        assert float(jacobian[field]) == pytest.approx(
            float(getattr(gradient, field)), rel=1e-9
        )
    value = float(getattr(params, name))
    members = ebm.sweep(params, **{name: [value, 1.01 * value]})
    ensemble = ebm.ensemble(members, model=model, gradient="global_mean")
    for index, member in enumerate((value, 1.01 * value)):
        one = eqx.tree_at(lambda p: getattr(p, name), params, member)
        expected = float(getattr(jax.grad(mean)(one), name))
        assert float(getattr(ensemble.gradient, name)[index]) == pytest.approx(
            expected, rel=1e-9
        )
    assert np.all(ensemble.ok)
