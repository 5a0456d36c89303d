"""Parameters declared by the terms that use them, and a term from outside ebm."""

import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._analysis.forward import from_unconstrained, to_unconstrained
from helpers import SUBPROCESS_TIMEOUT


CUBIC = ebm.Parameter(
    "c", 2e-5, "W m-2 K-3", "cubic coefficient of the OLR", lower=0.0, transform="log"
)


class _CubicLongwave(ebm.AbstractLongwave):
    parameters = (*ebm.LinearLongwave.parameters, CUBIC)
    tridiagonal = True

    def __call__(self, T, params, grid):
        del grid
        return params.A + params.B * T + params.c * T**3


GRID = ebm.Grid(18)
MODEL = ebm.EnergyBalanceModel(grid=GRID, longwave=_CubicLongwave())


def test_every_builtin_parameter_is_declared_by_a_term_that_uses_it():
    # The container is the union of the terms' declarations, each with its default,
    # and no parameter is declared by a term that does not read it.
    defaults = ebm.Params()
    for parameter in ebm.Params.declarations:
        assert float(getattr(defaults, parameter.name)) == parameter.default
        assert ebm.Params.units()[parameter.name] == parameter.units
        assert parameter.long_name in ebm.Params.__doc__
    from ebm._zonal.params import BUILTIN_TERMS

    for term in BUILTIN_TERMS:
        for parameter in term.parameters:
            assert parameter in ebm.Params.declarations, (term, parameter)


@pytest.mark.parametrize("parameter", ebm.Params.declarations, ids=lambda p: p.name)
def test_fit_transform_keeps_each_parameter_in_its_range(parameter):
    # From any unconstrained coordinate, the fit lands inside the declared range:
    # every parameter with an end has a transform that keeps it there.
    assert parameter.transform != "none" or parameter.allowed == "finite"
    for coordinate in (-30.0, -1.0, 0.0, 2.0, 30.0):
        value = from_unconstrained(parameter.name, jnp.asarray(coordinate))
        assert bool(parameter.contains(value)), (parameter.name, coordinate, value)
        if parameter.transform != "none" and abs(coordinate) < 20:
            back = to_unconstrained(parameter.name, value)
            assert float(back) == pytest.approx(coordinate, abs=1e-12)


def test_declarations_are_checked_when_made():
    with pytest.raises(ValueError, match="identifier"):
        ebm.Parameter("not a name", 1.0, "1", "x")
    with pytest.raises(ValueError, match="log transform needs a `lower` end"):
        ebm.Parameter("x", 1.0, "1", "x", transform="log")
    with pytest.raises(ValueError, match="default -1.0 is not >= 0"):
        ebm.Parameter("x", -1.0, "1", "x", lower=0.0)


def test_a_custom_term_declares_its_parameter_for_every_part():
    params = MODEL.Params(c=3e-5, D=0.4)
    assert MODEL.Params.field_names() == (*ebm.Params.field_names(), "c")
    assert isinstance(params, ebm.Params)
    # The same class for every model with these terms: one compiled program.
    assert ebm.EnergyBalanceModel(longwave=_CubicLongwave()).Params is MODEL.Params
    # Range checks at construction and under jit.
    with pytest.raises(ValueError, match="`c` must be >= 0 W m-2 K-3, got -1.0"):
        MODEL.Params(c=-1.0)
    with pytest.raises(Exception, match="`c` must be >= 0 W m-2 K-3;"):
        jax.jit(lambda c: MODEL.Params(c=c).check())(-1.0)
    # Sweeps and fit names.
    batch = ebm.sweep(params, c=[1e-5, 2e-5])
    assert type(batch) is MODEL.Params and batch.c.shape == (2,)
    with pytest.raises(ValueError, match="`c` is not a parameter"):
        ebm.sweep(c=[1e-5, 2e-5])
    coordinate = jnp.log(2e-5)
    assert float(from_unconstrained("c", coordinate, MODEL.Params)) == pytest.approx(
        2e-5
    )
    # Files: the parameter and its units are attributes.
    state = ebm.equilibrium(params, model=MODEL)
    attributes = ebm.to_dataset(state, params).attrs
    assert attributes["param_c"] == 3e-5
    assert attributes["param_c_units"] == "W m-2 K-3"
    # The term is in the budget: a larger cubic term cools.
    warmer = ebm.equilibrium(MODEL.Params(c=1e-5, D=0.4), model=MODEL)
    assert float(warmer.global_mean) > float(state.global_mean)


def test_parameters_without_the_terms_parameter_are_refused_by_name():
    with pytest.raises(AttributeError, match=r"no parameter `c`.*model\.Params"):
        ebm.equilibrium(ebm.Params(), model=MODEL)


def test_two_declarations_of_one_name_must_agree():
    other = ebm.Parameter("D", 0.5, "W m-2 K-1", "another diffusivity", lower=0.0)

    class _OtherTransport(ebm.DiffusiveTransport):
        parameters = (other,)

    with pytest.raises(ValueError, match="declares parameter `D`.*another name"):
        ebm.EnergyBalanceModel(transport=_OtherTransport())


def test_custom_parameter_is_fitted_and_differentiated_through_equilibrium():
    # The fit moves in the declared log coordinate and recovers c from a profile.
    truth = MODEL.Params(c=3e-5)
    target = ebm.equilibrium(truth, model=MODEL).T
    result = ebm.fit(
        MODEL.Params(c=1.5e-5),
        target,
        fit=("c",),
        model=MODEL,
        optimizer=_LBFGS,
        steps=30,
    )
    assert float(result.params.c) == pytest.approx(3e-5, rel=1e-5)
    # The gradient with respect to c matches central differences.
    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=MODEL).global_mean)(truth)
    step = 1e-8

    def mean(c):
        changed = eqx.tree_at(lambda p: p.c, truth, c)
        return float(ebm.equilibrium(changed, model=MODEL).global_mean)

    central = (mean(3e-5 + step) - mean(3e-5 - step)) / (2 * step)
    assert float(gradient.c) == pytest.approx(central, rel=1e-6)


import optax  # noqa: E402


_LBFGS = optax.lbfgs()


def test_cli_help_shows_each_parameter_with_units_and_meaning():
    done = subprocess.run(
        [sys.executable, "-m", "ebm", "equilibrium", "--help"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for parameter in ebm.Params.declarations:
        assert f"--{parameter.name.replace('_', '-')}" in text
        assert " ".join(parameter.long_name.split()) in text
    assert "meridional heat diffusivity (0.555, W m-2 K-1; >= 0 W m-2 K-1)" in text
    assert np.isfinite(ebm.Params.declaration("D").default)
