import jax.numpy as jnp
import numpy as np
import pytest

import ebm


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("D", -0.1, ">= 0"),
        ("B", 0.0, "> 0"),
        ("B", -2.0, "> 0"),
        ("water_depth", 0.0, "> 0"),
        ("ice_width", 0.0, "> 0"),
        ("ice_width", -1.0, "> 0"),
        ("a0", 1.2, "in [0, 1]"),
        ("a0", -0.1, "in [0, 1]"),
        ("ai", 1.5, "in [0, 1]"),
        ("S0", -1.0, ">= 0"),
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
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0+unknown"
