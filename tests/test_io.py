"""xarray Datasets and netCDF files of every result."""

import os
import pathlib
import subprocess
import sys
import warnings

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import ebm
from helpers import SUBPROCESS_TIMEOUT


GRID = ebm.Grid(12)
PARAMS = ebm.Params()


@pytest.fixture(scope="module")
def results():
    model = ebm.EnergyBalanceModel(grid=GRID)
    equilibrium = ebm.equilibrium(PARAMS, grid=GRID)
    trajectory = ebm.integrate(
        PARAMS,
        grid=GRID,
        years=0.5,
        saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 0.5, 6)),
    )
    cycle = ebm.seasonal_spinup(PARAMS, grid=GRID, years=1, steps_per_year=73)
    branch = ebm.continuation(
        ebm.Params(S0=1400.0), "S0", stop=1340.0, grid=GRID, save_profiles=True
    )
    fit = ebm.fit(ebm.Params(D=0.4), equilibrium.T, fit=("D",), grid=GRID, steps=3)
    profile = ebm.sensitivity(PARAMS, "T", names=("D", "obliquity"), grid=GRID)
    scalar = ebm.sensitivity(PARAMS, "ice_edge", names=("A",), grid=GRID)
    return {
        "equilibrium": (equilibrium, model),
        "trajectory": (trajectory, None),
        "seasonal cycle": (cycle, None),
        "branch": (branch, None),
        "fit": (fit, None),
        "sensitivity": (profile, None),
        "scalar sensitivity": (scalar, None),
    }


KINDS = [
    "equilibrium",
    "trajectory",
    "seasonal cycle",
    "branch",
    "fit",
    "sensitivity",
    "scalar sensitivity",
]


def _bits(array):
    array = np.asarray(array)
    if np.issubdtype(array.dtype, np.floating):
        return array.view(np.uint64 if array.itemsize == 8 else np.uint32)
    return array


@pytest.mark.parametrize("kind", KINDS)
def test_dataset_follows_cf_conventions(results, kind):
    result, model = results[kind]
    dataset = ebm.to_dataset(result, PARAMS, model=model)
    assert dataset.attrs["Conventions"] == "CF-1.8"
    assert dataset.attrs["param_D"] == pytest.approx(
        float((result.params if kind == "fit" else PARAMS).D)
    )
    assert dataset.attrs["param_obliquity_units"] == "degree"
    for name, variable in dataset.data_vars.items():
        assert "long_name" in variable.attrs, name
    if "lat" in dataset.coords:
        lat = dataset["lat"]
        assert lat.attrs["units"] == "degrees_north"
        assert lat.attrs["bounds"] == "lat_bnds"
        bounds = dataset["lat_bnds"].values
        np.testing.assert_allclose(bounds[:, 1] - bounds[:, 0], 180.0 / GRID.n_lat)
        assert np.all((bounds[:, 0] < lat.values) & (lat.values < bounds[:, 1]))
    if "time" in dataset.coords:
        assert dataset["time"].attrs["units"].startswith("days since")


@pytest.mark.parametrize("kind", KINDS)
def test_netcdf_round_trip_is_bit_for_bit(results, kind, tmp_path):
    result, model = results[kind]
    dataset = ebm.to_dataset(result, PARAMS, model=model)
    path = ebm.save(dataset, tmp_path / f"{kind}.nc")
    loaded = ebm.load(path)
    xr.testing.assert_identical(loaded, dataset)
    for name, variable in dataset.variables.items():
        assert loaded[name].dtype == variable.dtype, name
        np.testing.assert_array_equal(
            _bits(loaded[name].values), _bits(variable.values)
        )


def test_file_years_are_model_years_at_any_length():
    # 365-day calendar years from year 0: year 300 of a run is 0300-01-01 when
    # decoded, with no warning (a Gregorian calendar drifted from model years, and
    # past 2262 numpy's dates ran out and xarray warned as it fell back to cftime).
    grid = ebm.Grid(6)
    ts = jnp.asarray([0.0, 100.0, 300.0])
    run = ebm.integrate(PARAMS, grid=grid, years=300.0, saveat=diffrax.SaveAt(ts=ts))
    dataset = ebm.to_dataset(run, PARAMS)
    assert dataset["time"].attrs["calendar"] == "365_day"
    np.testing.assert_allclose(dataset["time"].values, [0.0, 36500.0, 109500.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decoded = xr.decode_cf(dataset)["time"].values
    assert [date.year for date in decoded] == [0, 100, 300]
    assert all((date.month, date.day) == (1, 1) for date in decoded)


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("equilibrium", ["ice_edge", "ice_edge_south"]),
        ("trajectory", ["ice_edge", "ice_edge_south"]),
        (
            "seasonal cycle",
            [
                "ice_edge",
                "ice_edge_south",
                "annual_mean_ice_edge",
                "annual_mean_ice_edge_south",
                "ice_edge_range",
                "ice_edge_south_range",
            ],
        ),
        ("branch", ["ice_edge", "ice_edge_south", "fold_ice_edge_south"]),
    ],
)
def test_files_hold_both_hemispheres_ice_edges(results, kind, names):
    if kind == "seasonal cycle":
        names = [*names, "step_error"]
    result, model = results[kind]
    dataset = ebm.to_dataset(result, PARAMS, model=model)
    for name in names:
        assert name in dataset, name
    south, north = dataset["ice_edge_south"].values, dataset["ice_edge"].values
    assert dataset["ice_edge_south"].attrs["units"] == "degrees_north"
    assert np.all((-90.0 <= south) & (south <= 0.0) & (0.0 <= north))
    if kind != "seasonal cycle":
        # ebm's default model is symmetric about the equator.
        np.testing.assert_allclose(south, -north, atol=1e-9)


def test_equilibrium_dataset_holds_the_fluxes(results):
    state, model = results["equilibrium"]
    dataset = ebm.to_dataset(state, PARAMS, model=model)
    assert dataset["heat_transport"].dims == ("lat_edge",)
    assert dataset["heat_transport"].attrs["units"] == "PW"
    # No heat through the poles; at equilibrium absorbed minus emitted balances the
    # transport convergence in each cell, so its global mean vanishes.
    assert float(abs(dataset["heat_transport"][0])) < 1e-12
    net = dataset["absorbed_solar"] - dataset["outgoing_longwave"]
    weights = np.asarray(GRID.area_weights)
    assert abs(float((net.values * weights).sum())) < 1e-8


def test_save_is_atomic(results, tmp_path, monkeypatch):
    state, _ = results["equilibrium"]
    path = ebm.save(state, tmp_path / "state.nc", PARAMS)
    before = path.read_bytes()

    def crash(self, target, *args, **kwargs):
        pathlib.Path(target).write_bytes(b"CDF\x01 truncated")
        raise OSError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", crash)
    with pytest.raises(OSError, match="disk full"):
        ebm.save(state, path, PARAMS)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["state.nc"]


def test_saved_files_get_the_usual_mode(results, tmp_path):
    state, _ = results["equilibrium"]
    umask = os.umask(0o022)
    try:
        fresh = ebm.save(state, tmp_path / "fresh.nc", PARAMS)
        assert fresh.stat().st_mode & 0o777 == 0o644
        shared = tmp_path / "shared.nc"
        shared.write_bytes(b"")
        shared.chmod(0o664)
        ebm.save(state, shared, PARAMS)
        assert shared.stat().st_mode & 0o777 == 0o664
    finally:
        os.umask(umask)
    with pytest.raises(IsADirectoryError):
        ebm.save(state, tmp_path, PARAMS)


def test_to_dataset_rejects_other_objects():
    with pytest.raises(TypeError, match="`result`"):
        ebm.to_dataset(PARAMS)


def test_save_through_a_symlink_keeps_the_link(results, tmp_path):
    state, model = results["equilibrium"]
    target = tmp_path / "data" / "state.nc"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "latest.nc"
    link.symlink_to(os.path.relpath(target, tmp_path))
    # The link used to be replaced by a file, and the target left stale.
    assert ebm.save(state, link, PARAMS, model=model) == link
    assert link.is_symlink() and link.resolve() == target.resolve()
    np.testing.assert_array_equal(ebm.load(target)["T"].values, np.asarray(state.T))


def test_load_of_a_truncated_file_names_it(results, tmp_path):
    state, model = results["equilibrium"]
    path = ebm.save(state, tmp_path / "state.nc", PARAMS, model=model)
    truncated = tmp_path / "truncated.nc"
    truncated.write_bytes(path.read_bytes()[:2000])
    # Used to be a bare "NetCDF: HDF error".
    with pytest.raises(OSError, match="not a readable netCDF file") as info:
        ebm.load(truncated)
    assert str(truncated) in str(info.value)
    with pytest.raises(FileNotFoundError, match="no such file"):
        ebm.load(tmp_path / "missing.nc")


def test_load_of_a_file_ebm_did_not_write_warns(results, tmp_path):
    # It was returned as if ebm had written it.
    import xarray

    foreign = tmp_path / "foreign.nc"
    xarray.Dataset({"T": ("lat", np.zeros(3))}).to_netcdf(foreign)
    with pytest.warns(UserWarning, match="not written by ebm") as record:
        dataset = ebm.load(foreign)
    assert str(foreign) in str(record[0].message)
    assert dataset["T"].shape == (3,)


def test_save_into_a_read_only_folder_names_the_folder(results, tmp_path):
    state, model = results["equilibrium"]
    if os.geteuid() == 0:
        # Root writes through permission bits; sysfs refuses new files even so.
        folder = pathlib.Path("/sys")
    else:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
    path = folder / "state.nc"
    with pytest.raises(PermissionError) as info:
        ebm.save(state, path, PARAMS, model=model)
    message = str(info.value)
    # The folder and the user's path, not the hidden temporary file.
    assert f"`path` {path}: cannot write in the folder {folder}" in message
    assert ".tmp" not in message


def test_unconverged_state_is_marked_on_its_plot(tmp_path):
    grid = ebm.Grid(6)
    # Used to be drawn, and titled, as if it were the equilibrium.
    failed = ebm.equilibrium(PARAMS, grid=grid, max_steps=1, throw=False)
    assert failed.result != ebm.RESULTS.successful
    figure = ebm.plot_equilibrium(failed, params=PARAMS, path=tmp_path / "failed.png")
    ax = figure.axes[0]
    assert "not converged: The maximum number of steps" in ax.get_title()
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert any("not converged" in label for label in labels)
    model = ebm.EnergyBalanceModel(grid)
    transport = ebm.plot_heat_transport(failed, PARAMS, model)
    assert "not converged" in transport.axes[0].get_title()
    converged = ebm.equilibrium(PARAMS, grid=grid)
    figure = ebm.plot_equilibrium(converged, params=PARAMS)
    assert "not converged" not in figure.axes[0].get_title()
    import matplotlib.pyplot as plt

    plt.close("all")


def test_plots_leave_the_users_backend_alone():
    # A Jupyter kernel's `%matplotlib inline` backend must stay, so that the figure
    # and the user's next one show; matplotlib's "template" backend stands in for
    # it here (the helpers used to switch every such backend to Agg).
    script = (
        "import matplotlib\n"
        "matplotlib.use('template')\n"
        "import ebm\n"
        "grid = ebm.Grid(6)\n"
        "state = ebm.equilibrium(ebm.Params(), grid=grid)\n"
        "figure = ebm.plot_equilibrium(state)\n"
        "import matplotlib.pyplot as plt\n"
        "assert plt.gcf() is figure\n"
        "print(matplotlib.get_backend())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "template"


def test_sensitivity_lines_have_a_colour_each_and_the_seasonal_axes_their_units():
    grid = ebm.Grid(6)
    sensitivity = ebm.sensitivity(PARAMS, "T", grid=grid)
    figure = ebm.plot_sensitivity(sensitivity, PARAMS)
    lines = {
        line.get_label(): (line.get_color(), line.get_linestyle())
        for line in figure.axes[0].get_lines()
        if not line.get_label().startswith("_")
    }
    # A and forcing shared the cycle's first colour (eleven apart).
    assert len(lines) > 10
    assert len(set(lines.values())) == len(lines)
    cycle = ebm.seasonal_spinup(PARAMS, grid=grid, years=1, steps_per_year=24)
    figure = ebm.plot_seasonal_cycle(cycle, params=PARAMS)
    labels = {axis.get_ylabel() for axis in figure.axes}
    assert "annual mean (°C)" in labels
    assert "amplitude, half the seasonal range (K)" in labels
    # Both hemispheres' ice edges are drawn, and their annual means and ranges
    # given in the title.
    edges = {line.get_label(): line.get_ydata() for line in figure.axes[0].get_lines()}
    np.testing.assert_array_equal(edges["ice edge (S)"], cycle.ice_edge_south)
    np.testing.assert_array_equal(edges["ice edge (N)"], cycle.ice_edge)
    title = figure.get_suptitle()
    assert f"{-float(cycle.annual_mean_ice_edge_south):.1f}°S" in title
    assert f"range {float(cycle.ice_edge_south_range):.1f}°" in title
    import matplotlib.pyplot as plt

    plt.close("all")


def test_an_asymmetric_equilibrium_labels_both_edges_and_bad_arguments_are_named(
    results, tmp_path
):
    import types

    import matplotlib.pyplot as plt

    grid = ebm.Grid(6)
    state = types.SimpleNamespace(
        lat=grid.lat,
        T=jnp.asarray([-30.0, 0.0, 10.0, 10.0, 5.0, 3.0]),
        global_mean=jnp.asarray(3.0),
        ice_edge=jnp.asarray(90.0),
        ice_edge_south=jnp.asarray(-48.5),
    )
    figure = ebm.plot_equilibrium(state, params=PARAMS)
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert "ice edge 48.5°S" in texts
    assert "ice edges 90.0°N, 48.5°S" in figure.axes[0].get_title()
    plt.close("all")
    equilibrium, _ = results["equilibrium"]
    with pytest.raises(TypeError, match="`params` must be the ebm parameters"):
        ebm.to_dataset(equilibrium, params={"D": 1.0})
    # Another model's parameters would describe another model in the file.
    layers = ebm.TwoLayerModel().Params()
    with pytest.raises(TypeError, match="TwoLayerParams, not the zonal model's"):
        ebm.to_dataset(equilibrium, layers)
    with pytest.raises(TypeError, match="not the parameters of `model`"):
        ebm.to_dataset(equilibrium, layers, model=ebm.EnergyBalanceModel(grid=grid))
    with pytest.raises(TypeError, match="they lack C_deep, F2x, efficacy, gamma"):
        ebm.to_dataset(equilibrium, PARAMS, model=ebm.DeepOceanModel())
    with pytest.raises(IsADirectoryError, match="is a directory"):
        ebm.load(tmp_path)


def test_a_sweep_of_seasonal_cycles_is_written_along_its_points(results, tmp_path):
    # The result of ebm.periodic_sweep, two points: it crashed inside xarray, and
    # its ranges were taken over every point at once.
    import dataclasses

    import jax

    cycle, _ = results["seasonal cycle"]
    late = jax.tree.map(lambda x: x + 1.0, cycle.ice_edge)
    points = jax.tree.map(lambda *x: jnp.stack(x), cycle, cycle)
    points = dataclasses.replace(
        points,
        ice_edge=jnp.stack([cycle.ice_edge, 2.0 * late]),
        parameter="S0",
        values=jnp.array([1360.0, 1370.0]),
    )
    assert points.ice_edge_range.shape == (2,)
    assert float(points.ice_edge_range[0]) == pytest.approx(float(cycle.ice_edge_range))
    path = ebm.save(points, tmp_path / "sweep.nc", PARAMS)
    with xr.open_dataset(path) as dataset:
        assert dataset["T"].dims == ("point", "time", "lat")
        assert dataset["param_S0"].values.tolist() == [1360.0, 1370.0]
        assert dataset["param_S0"].attrs["units"] == "W m-2"
        assert "param_S0" not in dataset.attrs and "param_D" in dataset.attrs
        assert dataset["ice_edge_range"].dims == ("point",)
        assert dataset.sizes["time"] == cycle.t.shape[0]


def test_text_is_written_as_cf_character_arrays(tmp_path):
    # CF defines text as char arrays with a string-length dimension; netCDF-4's
    # variable-length strings (which xarray writes by default) are not CF.
    import netCDF4

    words = ["", "The maximum number of steps"]
    dataset = xr.Dataset({"failure": ("member", np.array(words))})
    path = ebm.save(dataset, tmp_path / "text.nc")
    with netCDF4.Dataset(path) as raw:
        variable = raw.variables["failure"]
        assert variable.dtype == np.dtype("S1")
        assert variable.dimensions[0] == "member" and len(variable.dimensions) == 2
    assert ebm.load(path)["failure"].values.tolist() == [
        "",
        "The maximum number of steps",
    ]
