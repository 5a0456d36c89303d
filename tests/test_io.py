"""xarray Datasets and netCDF files of every result."""

import os
import pathlib

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import ebm


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
    cycle = ebm.seasonal_spinup(PARAMS, grid=GRID, years=1, steps_per_year=24)
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
