import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from helpers import SUBPROCESS_TIMEOUT


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("D", -0.1, ">= 0"),
        ("B", 0.0, "> 0"),
        ("B", -2.0, "> 0"),
        ("water_depth", 0.0, "in (0, 11000] m"),
        ("water_depth", 1e5, "the deepest ocean"),
        ("ice_width", 0.0, "> 0"),
        ("ice_width", -1.0, "> 0"),
        ("a0", 1.2, "in [0, 1]"),
        ("a0", -0.1, "in [0, 1]"),
        ("ai", 1.5, "in [0, 1]"),
        ("S0", -1.0, "in [0, 20000]"),
        # Physically absurd values, once accepted silently (A = 1e6 gave a global
        # mean of -499,935 degC; S0 = 1e20 failed later, with a generic error).
        ("S0", 1e20, "in [0, 20000]"),
        ("A", 1e6, "in [0, 316] W m-2, at most a black body's"),
        ("A", -1e4, "in [0, 316]"),
        ("Tf", -300.0, "in [-100, 30] degC"),
        ("Tf", 1e5, "in [-100, 30] degC"),
        ("forcing", 1e4, "in [-500, 500] W m-2"),
        ("s2", -3.0, "nowhere negative"),
        ("A", float("nan"), "finite"),
        ("D", float("inf"), "finite"),
        ("Tf", float("nan"), "finite"),
        ("s2", float("-inf"), "finite"),
    ],
)
def test_bad_parameter_is_named(name, value, allowed):
    with pytest.raises(ValueError) as info:
        ebm.Params(**{name: value})
    message = str(info.value)
    assert f"`{name}`" in message
    assert allowed in message
    assert str(value) in message


def test_every_declared_parameter_has_a_physical_range():
    # Finite alone is no range, except for an angle (the perihelion's longitude is
    # any angle, modulo 360 degrees).
    from ebm._zonal.catalogue import parameters_by_name

    for name, (parameter, _) in parameters_by_name().items():
        if name != "long_peri":
            assert parameter.allowed != "finite", name


@pytest.mark.parametrize("value", ["0.5", True, np.bool_(False), b"1"])
def test_strings_and_booleans_are_not_parameter_values(value):
    # numpy reads "0.5" as 0.5 and True as 1.0: both were accepted as `D`.
    with pytest.raises(ValueError, match="`D` must be a real scalar"):
        ebm.Params(D=value)


def test_model_parameter_sets_and_results_pickle():
    # A model's own parameter set was a class named `ebm.Params` made at run time,
    # which pickle could not find by that name.
    import pickle

    from ebm._zonal.catalogue import KINDS, selectable

    grid = ebm.Grid(6)
    for kind in KINDS:
        for name, term in selectable(kind).items():
            model = ebm.EnergyBalanceModel(grid=grid, **{kind: term()})
            params = model.Params()
            again = pickle.loads(pickle.dumps(params))
            assert type(again) is type(params), (kind, name)
            assert eqx.tree_equal(again, params), (kind, name)
    model = ebm.EnergyBalanceModel(
        grid=grid, longwave=ebm.GreyBodyLongwave(), forcing=ebm.CO2Forcing()
    )
    params = model.Params(CO2=560.0)
    assert type(params).__name__ == "GreyBodyLongwaveCO2ForcingParams"
    assert type(pickle.loads(pickle.dumps(params))) is type(params)
    model = ebm.EnergyBalanceModel(grid=grid, longwave=ebm.GreyBodyLongwave())
    params = model.Params(emissivity=0.69)
    assert type(params).__name__ == "GreyBodyLongwaveParams"
    state = ebm.equilibrium(params, model=model)
    again = pickle.loads(pickle.dumps(state))
    assert float(again.global_mean) == float(state.global_mean)


def test_ice_free_albedo_must_stay_physical():
    with pytest.raises(ValueError, match="`a2`.*pole"):
        ebm.Params(a0=0.9, a2=0.2)
    with pytest.raises(ValueError, match="`a2`.*equator"):
        ebm.Params(a0=0.05, a2=0.2)


def test_defaults_are_climlabs():
    params = ebm.Params()
    expected = dict(
        A=210.0,
        B=2.0,
        D=0.555,
        S0=1365.2,
        s2=-0.48,
        a0=0.3,
        a2=0.078,
        ai=0.62,
        Tf=-10.0,
        water_depth=10.0,
    )
    for name, value in expected.items():
        assert float(getattr(params, name)) == value
    assert all(getattr(params, n).dtype == jnp.float64 for n in params.field_names())


@pytest.mark.parametrize("n_lat", [1, 0, -3, 2.5, True])
def test_bad_n_lat(n_lat):
    with pytest.raises(ValueError, match="`n_lat`"):
        ebm.Grid(n_lat)


def test_grid_geometry():
    grid = ebm.Grid(60)
    assert grid.lat.shape == (60,)
    assert grid.lat_bounds.shape == (61,)
    np.testing.assert_allclose(np.asarray(grid.lat_bounds)[[0, -1]], [-90, 90])
    np.testing.assert_allclose(np.diff(grid.lat), 3.0)
    np.testing.assert_allclose(float(jnp.sum(grid.area_weights)), 1.0, rtol=1e-14)
    assert float(grid.cos_lat_bounds[0]) == 0.0 == float(grid.cos_lat_bounds[-1])
    assert float(grid.global_mean(jnp.full(60, 3.0))) == pytest.approx(3.0, rel=1e-14)


def test_unknown_start():
    with pytest.raises(ValueError, match="`start`.*'tropical'"):
        ebm.equilibrium(ebm.Params(), start="tropical")


@pytest.mark.parametrize("shape", [(59,), (60, 1), ()])
def test_profile_of_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"`start` must have shape \(60,\)"):
        ebm.equilibrium(ebm.Params(), start=jnp.zeros(shape))
    with pytest.raises(ValueError, match=r"`T0` must have shape \(60,\)"):
        ebm.integrate(ebm.Params(), years=1.0, T0=jnp.zeros(shape))


def test_non_finite_profile():
    T0 = jnp.zeros(60).at[3].set(jnp.nan)
    with pytest.raises(ValueError, match="`T0` must be finite"):
        ebm.integrate(ebm.Params(), years=1.0, T0=T0)


def test_bad_years_and_adjoint():
    with pytest.raises(ValueError, match="`years`.*-1"):
        ebm.integrate(ebm.Params(), years=-1.0)
    with pytest.raises(ValueError, match="`adjoint`.*'adjoint_please'"):
        ebm.integrate(ebm.Params(), years=1.0, adjoint="adjoint_please")


def test_version_from_a_source_checkout_without_metadata():
    # A checkout on PYTHONPATH with no installed distribution: `import ebm` must
    # still work. The subprocess hides the metadata by making the lookup fail.
    import pathlib
    import subprocess
    import sys

    src = pathlib.Path(ebm.__file__).resolve().parent.parent
    code = (
        "import importlib.metadata as m\n"
        "found = m.version\n"
        "def version(name):\n"
        "    if name == 'ebm-jax':\n"
        "        raise m.PackageNotFoundError(name)\n"
        "    return found(name)\n"
        "m.version = version\n"
        "import ebm\n"
        "print(ebm.__version__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "", "JAX_PLATFORMS": "cpu"},
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0+unknown"


_GRID = ebm.Grid(6)
_ENTRY_POINTS = {
    "equilibrium": lambda p: ebm.equilibrium(p, grid=_GRID).global_mean,
    "integrate": lambda p: ebm.integrate(p, years=0.05, grid=_GRID).global_mean,
    "integrate_fixed": lambda p: (
        ebm.integrate_fixed(p, dt=0.01, steps=2, grid=_GRID).global_mean
    ),
    "seasonal_spinup": lambda p: (
        ebm.seasonal_spinup(p, years=0, grid=_GRID, steps_per_year=4).annual_global_mean
    ),
}


@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
@pytest.mark.parametrize(
    "name, value, allowed",
    [("a0", 1.5, "in [0, 1]"), ("ice_width", -1.0, "> 0 K"), ("D", jnp.nan, "finite")],
)
def test_traced_parameter_out_of_range_is_refused(entry, name, value, allowed):
    # Under the user's jit the value is traced: construction cannot check it, and
    # these used to return `successful`.
    run = _ENTRY_POINTS[entry]
    with pytest.raises(Exception, match=f"`{name}` must be {re.escape(allowed)}"):
        jax.jit(lambda x: run(ebm.Params(**{name: x})))(value)


@pytest.mark.parametrize("transform", ["vmap", "grad"])
def test_range_check_under_vmap_and_grad(transform):
    run = _ENTRY_POINTS["equilibrium"]
    bad = jnp.array([0.3, 1.5])
    if transform == "vmap":
        with pytest.raises(Exception, match="`a0` must be in"):
            jax.vmap(lambda a: run(ebm.Params(a0=a)))(bad)
        good = jax.vmap(lambda a: run(ebm.Params(a0=a)))(jnp.array([0.3, 0.32]))
        assert bool(jnp.all(jnp.isfinite(good)))
    else:
        with pytest.raises(Exception, match="`a0` must be in"):
            jax.grad(lambda a: run(ebm.Params(a0=a)))(1.5)
        # The check is transparent to differentiation: the same gradient as
        # differentiating the unchecked model's finite difference.
        gradient = jax.jit(jax.grad(lambda a: run(ebm.Params(a0=a))))(0.3)
        step = 1e-6
        expected = (run(ebm.Params(a0=0.3 + step)) - run(ebm.Params(a0=0.3 - step))) / (
            2 * step
        )
        assert float(gradient) == pytest.approx(float(expected), rel=1e-5)


def test_check_is_one_declaration_for_construction_and_jit():
    _RANGES = ebm.Params.ranges

    # Every declared range is raised at construction with the value, and inside jit
    # with the same words.
    for declared in _RANGES:
        if declared.allowed == "finite":
            continue
        assert declared.allowed in declared.traced_message()
    with pytest.raises(ValueError, match="`ice_width` must be > 0 K, got -1.0"):
        ebm.Params(ice_width=-1.0)
    with pytest.raises(Exception, match="`ice_width` must be > 0 K;"):
        jax.jit(lambda w: ebm.Params(ice_width=w).check())(-1.0)


@pytest.mark.parametrize(
    "value, shown",
    [("abc", "'abc'"), (1 + 2j, "(1+2j)"), ([1.0, 2.0, 3.0], None)],
)
def test_parameter_that_is_not_a_real_number_is_named(value, shown):
    if shown is None:
        # A 1-d array is a batch (`ebm.sweep`): accepted here, refused by an entry
        # point, which runs one member.
        params = ebm.Params(D=jnp.asarray(value))
        with pytest.raises(ValueError, match=r"`D` must be a real scalar, got shape"):
            ebm.equilibrium(params, grid=_GRID)
        with pytest.raises(ValueError, match=r"`D` must be a real scalar .*\(2, 2\)"):
            ebm.Params(D=jnp.ones((2, 2)))
        return
    with pytest.raises(ValueError, match="must be a real scalar") as info:
        ebm.Params(S0=value)
    assert "`S0`" in str(info.value) and shown in str(info.value)


def test_params_print_their_values():
    # Printing shows values, as they were set, not equinox's shapes (`A=f64[]`).
    text = repr(ebm.Params(D=0.3))
    assert text.startswith("Params(A=210.0, B=2.0, D=0.3, S0=1365.2,")
    assert "f64" not in text
    batch = repr(ebm.sweep(D=[0.3, 0.5]))
    assert "D=[0.3, 0.5]" in batch
    # Inside jit the values are traced: shapes, as equinox shows them.
    shown = []
    jax.jit(lambda p: shown.append(repr(p)) or p.A)(ebm.Params())
    assert "A=f64[]" in shown[0]
