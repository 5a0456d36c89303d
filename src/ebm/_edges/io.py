"""xarray Datasets and netCDF files of ebm's results (at the edge: imported lazily).

`ebm.to_dataset(result, params)` turns any result (`Equilibrium`, `Trajectory`,
`SeasonalCycle`, `Branch`, `FitResult`, `Sensitivity`) into an `xarray.Dataset`
following the CF conventions (1.8): a `lat` coordinate (degrees_north) with its cell
bounds `lat_bnds`, a `time` coordinate where there is one (days of the `365_day`
calendar since 0000-01-01, the start, so that year N of the file is model year N),
units and long names on every variable, and the parameters as attributes
(`param_D = 0.555`, with `param_D_units`).
`ebm.save(result_or_dataset, path)` writes netCDF atomically: to a temporary file
beside `path`, flushed to disk, then renamed over it, so that a crash mid-write
never leaves a truncated file where a good one was. `ebm.load(path)` reads it back
bit for bit (times are not decoded: they stay the numbers that were written).
"""

import datetime
import os
import pathlib
import tempfile
import warnings

import jax
import numpy as np

from .._model.grid import Grid
from .._model.parameters import AbstractParams
from .._model.params import Params


_TEMPERATURE = {"units": "degC", "standard_name": "surface_temperature"}


def _xarray():
    try:
        import xarray
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "ebm's xarray and netCDF export needs xarray and netCDF4: "
            "pip install 'ebm-jax[io]'."
        ) from error
    return xarray


def _array(x) -> np.ndarray:
    return np.asarray(x)


_PROFILE_DIMS = {"bounds": "lat_edge", "cells": "lat"}


def _with_parameter_dims(dims, value, name: str, container) -> tuple:
    """The dimensions of `value`, a parameter's value (or a derivative with respect
    to it) laid out along `dims`, followed by the profile's own dimension if
    `value` has one (a profile given as a scalar has not). A profile on cells gets
    `lat_NAME` where `lat` is taken."""
    dims = (dims,) if isinstance(dims, str) else tuple(dims)
    profile = container.declaration(name).profile
    if profile is None or np.ndim(value) == len(dims):
        return dims
    own = _PROFILE_DIMS[profile]
    return (*dims, f"lat_{name}" if own in dims else own)


def _latitude(grid: Grid) -> dict:
    bounds = _array(grid.lat_bounds)
    return {
        "lat": (
            "lat",
            _array(grid.lat),
            {
                "units": "degrees_north",
                "standard_name": "latitude",
                "long_name": "latitude of the cell centre",
                "axis": "Y",
                "bounds": "lat_bnds",
            },
        ),
        "lat_bnds": (
            ("lat", "nv"),
            np.stack([bounds[:-1], bounds[1:]], axis=1),
            # CF: a bounds variable takes its units from its coordinate.
            {"long_name": "latitude of the cell bounds"},
        ),
    }


CALENDAR_DAYS_PER_YEAR = 365
"""Days of the files' `365_day` calendar in one model year."""


def _time(years) -> dict:
    # One model year is one year of CF's 365-day calendar, counted from year 0: the
    # file's year 100 is model year 100, at any length of run (a Gregorian calendar
    # drifts from model years by 0.2422 days a year, and numpy's dates end in 2262).
    return {
        "time": (
            "time",
            _array(years) * CALENDAR_DAYS_PER_YEAR,
            {
                "units": "days since 0000-01-01 00:00:00",
                "calendar": "365_day",
                "standard_name": "time",
                "long_name": "time since the start (1 January of year 0)",
                "comment": (
                    "one model year (the orbit's 365.2422 days) is one year of the "
                    "365_day calendar: a calendar day is 1/365 of a model year"
                ),
                "axis": "T",
            },
        ),
    }


def _parameter_attributes(params: Params | None) -> dict:
    if params is None:
        return {}
    attributes = {}
    for parameter in type(params).declarations:
        value = np.asarray(getattr(params, parameter.name), dtype=float)
        # A profile is an array attribute (netCDF attributes may be 1-d).
        attributes[f"param_{parameter.name}"] = (
            float(value) if value.ndim == 0 else value
        )
        attributes[f"param_{parameter.name}_units"] = parameter.units
    return attributes


def _global_attributes(kind: str, params: Params | None) -> dict:
    from .. import __version__

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return {
        "Conventions": "CF-1.8",
        "title": f"ebm {kind}",
        "source": f"ebm {__version__} (differentiable energy-balance model, JAX)",
        "history": f"{now}: written by ebm {__version__}",
        "ebm_result": kind,
        **_parameter_attributes(params),
    }


def _result_code(result) -> dict:
    from .._results import RESULTS

    successful = bool(_array(result == RESULTS.successful).all())
    return {"result": "successful" if successful else str(result)}


def _scalar(value, units: str, long_name: str):
    return ((), _array(value), {"units": units, "long_name": long_name})


def _flag(value, long_name: str, meaning: str, dims=()):
    """A boolean as CF flags (netCDF has no booleans; xarray restores the dtype)."""
    return (
        dims,
        _array(value),
        {
            "long_name": long_name,
            "flag_values": np.array([0, 1], dtype=np.int8),
            "flag_meanings": f"not_{meaning} {meaning}",
        },
    )


def _equilibrium_variables(state, container: type[Params]) -> dict:
    del container  # the parameters' declarations are not needed here
    return {
        "T": ("lat", _array(state.T), {**_TEMPERATURE, "long_name": "temperature"}),
        "global_mean": _scalar(state.global_mean, "degC", "global-mean temperature"),
        "ice_edge": _scalar(
            state.ice_edge, "degrees_north", "northern-hemisphere ice edge"
        ),
        "ice_edge_south": _scalar(
            state.ice_edge_south, "degrees_north", "southern-hemisphere ice edge"
        ),
        "residual": _scalar(state.residual, "W m-2", "largest energy-budget residual"),
        "leading_eigenvalue": _scalar(
            state.leading_eigenvalue,
            "W m-2 K-1",
            "largest eigenvalue of the energy budget's Jacobian",
        ),
        "condition_number": _scalar(
            state.condition_number, "1", "condition number of the Jacobian"
        ),
        "stable": _flag(state.stable, "whether the equilibrium is stable", "stable"),
        "num_steps": _scalar(state.num_steps, "1", "root-finder iterations"),
    }


def _diagnostics(T, params: Params, model) -> dict:
    """Fluxes of a profile: absorbed solar, OLR (cells) and heat transport (bounds)."""
    return {
        "absorbed_solar": (
            "lat",
            _array(model.absorbed_solar(T, params)),
            {"units": "W m-2", "long_name": "absorbed solar radiation"},
        ),
        "outgoing_longwave": (
            "lat",
            _array(model.outgoing_longwave(T, params)),
            {
                "units": "W m-2",
                "standard_name": "toa_outgoing_longwave_flux",
                "long_name": "outgoing longwave radiation",
            },
        ),
        "heat_transport": (
            "lat_edge",
            _array(model.heat_transport(T, params)),
            {"units": "PW", "long_name": "northward heat transport through the bound"},
        ),
        "lat_edge": (
            "lat_edge",
            _array(model.grid.lat_bounds),
            {
                "units": "degrees_north",
                "standard_name": "latitude",
                "long_name": "latitude of the cell bounds",
            },
        ),
    }


def _trajectory_variables(trajectory, container: type[Params]) -> dict:
    del container  # the parameters' declarations are not needed here
    variables = {
        "T": (
            "lat",
            _array(trajectory.T),
            {**_TEMPERATURE, "long_name": "final temperature"},
        ),
        "global_mean": _scalar(
            trajectory.global_mean, "degC", "final global-mean temperature"
        ),
        "ice_edge": _scalar(
            trajectory.ice_edge, "degrees_north", "final northern-hemisphere ice edge"
        ),
        "ice_edge_south": _scalar(
            trajectory.ice_edge_south,
            "degrees_north",
            "final southern-hemisphere ice edge",
        ),
        "num_steps": _scalar(trajectory.num_steps, "1", "time steps taken"),
    }
    if trajectory.Ts is not None:
        variables.update(_time(trajectory.ts))
        variables["T_history"] = (
            ("time", "lat"),
            _array(trajectory.Ts),
            {**_TEMPERATURE, "long_name": "temperature at the saved times"},
        )
    return variables


def _run_variables(run, container: type[Params]) -> dict:
    """A protocol model's run: each declared variable's final value, and its history
    where times were saved, with the variable's own dimensions, units and name."""
    del container  # the parameters' declarations are not needed here
    variables = {}
    for variable in run.variables:
        attributes = {"units": variable.units, "long_name": variable.long_name}
        value = _array(run.state[variable.name])
        variables[variable.name] = (
            variable.dims,
            value,
            {**attributes, "long_name": f"final {variable.long_name}"},
        )
        for axis, name in enumerate(variable.dims):
            if name not in ("lat", "time") and name not in variables:
                # Layers 2..n below the surface (the surface layer is `T`).
                variables[name] = (
                    name,
                    np.arange(2, 2 + value.shape[axis]),
                    {"long_name": f"{name} number, from the surface (1)"},
                )
        if run.states is not None:
            variables[f"{variable.name}_history"] = (
                ("time", *variable.dims),
                _array(run.states[variable.name]),
                {**attributes, "long_name": f"{variable.long_name} at the saved times"},
            )
    if run.states is not None:
        variables.update(_time(run.ts))
    variables["num_steps"] = _scalar(run.num_steps, "1", "time steps taken")
    return variables


def _seasonal_variables(cycle, container: type[Params]) -> dict:
    del container  # the parameters' declarations are not needed here
    temperature = {**_TEMPERATURE}
    return {
        **_time(cycle.t),
        "T": (
            ("time", "lat"),
            _array(cycle.T),
            {**temperature, "long_name": "temperature"},
        ),
        "T0": ("lat", _array(cycle.T0), {**temperature, "long_name": "T on 1 January"}),
        "annual_mean": (
            "lat",
            _array(cycle.annual_mean),
            {**temperature, "long_name": "annual-mean temperature"},
        ),
        "amplitude": (
            "lat",
            _array(cycle.amplitude),
            {"units": "K", "long_name": "half the seasonal range of temperature"},
        ),
        "global_mean": (
            "time",
            _array(cycle.global_mean),
            {"units": "degC", "long_name": "global-mean temperature"},
        ),
        "ice_edge": (
            "time",
            _array(cycle.ice_edge),
            {"units": "degrees_north", "long_name": "northern-hemisphere ice edge"},
        ),
        "ice_edge_south": (
            "time",
            _array(cycle.ice_edge_south),
            {"units": "degrees_north", "long_name": "southern-hemisphere ice edge"},
        ),
        "annual_mean_ice_edge": _scalar(
            cycle.annual_mean_ice_edge,
            "degrees_north",
            "northern-hemisphere ice edge, annual mean",
        ),
        "annual_mean_ice_edge_south": _scalar(
            cycle.annual_mean_ice_edge_south,
            "degrees_north",
            "southern-hemisphere ice edge, annual mean",
        ),
        "ice_edge_range": _scalar(
            cycle.ice_edge_range,
            "degrees",
            "annual range of the northern-hemisphere ice edge (max - min)",
        ),
        "ice_edge_south_range": _scalar(
            cycle.ice_edge_south_range,
            "degrees",
            "annual range of the southern-hemisphere ice edge (max - min)",
        ),
        "residual": _scalar(cycle.residual, "K", "largest change over one year"),
        "step_error": _scalar(
            cycle.step_error, "K", "estimated error of the time stepping over a year"
        ),
        "num_steps": _scalar(cycle.num_steps, "1", "Newton steps (or years)"),
    }


def _branch_variables(branch, container: type[Params]) -> dict:
    point = "point"
    name = branch.parameter
    units = container.declaration(name).units
    variables = {
        name: (
            point,
            _array(branch.values),
            {"units": units, "long_name": container.declaration(name).long_name},
        ),
        "global_mean": (
            point,
            _array(branch.global_mean),
            {"units": "degC", "long_name": "global-mean temperature"},
        ),
        "ice_edge": (
            point,
            _array(branch.ice_edge),
            {"units": "degrees_north", "long_name": "northern-hemisphere ice edge"},
        ),
        "ice_edge_south": (
            point,
            _array(branch.ice_edge_south),
            {"units": "degrees_north", "long_name": "southern-hemisphere ice edge"},
        ),
        "leading_eigenvalue": (
            point,
            _array(branch.leading_eigenvalue),
            {"units": "W m-2 K-1", "long_name": "largest eigenvalue of the Jacobian"},
        ),
        "stable": _flag(branch.stable, "whether each point is stable", "stable", point),
        "slope": (
            point,
            _array(branch.slope),
            {"units": "1", "long_name": f"d({name})/d(arclength)"},
        ),
        "arclength": (
            point,
            _array(branch.arclength),
            {"units": "1", "long_name": "distance walked along the branch"},
        ),
        "fold_value": (
            "fold",
            np.array([float(f.value) for f in branch.folds]),
            {"units": units, "long_name": f"{name} at each fold"},
        ),
        "fold_ice_edge": (
            "fold",
            np.array([float(f.ice_edge) for f in branch.folds]),
            {
                "units": "degrees_north",
                "long_name": "northern-hemisphere ice edge at each fold",
            },
        ),
        "fold_ice_edge_south": (
            "fold",
            np.array([float(f.ice_edge_south) for f in branch.folds]),
            {
                "units": "degrees_north",
                "long_name": "southern-hemisphere ice edge at each fold",
            },
        ),
        "fold_global_mean": (
            "fold",
            np.array([float(f.global_mean) for f in branch.folds]),
            {"units": "degC", "long_name": "global-mean temperature at each fold"},
        ),
        "fold_side": (
            "fold",
            np.array([int(f.side) for f in branch.folds], dtype=np.int32),
            {"long_name": "-1: the two branches exist below the fold, +1: above"},
        ),
    }
    if branch.T is not None:
        variables["T"] = (
            (point, "lat"),
            _array(branch.T),
            {**_TEMPERATURE, "long_name": "temperature at each point"},
        )
    return variables


def _fit_variables(fit, container: type[Params]) -> dict:
    variables = {
        "loss": (
            "step",
            _array(fit.loss_history),
            {"units": "K2", "long_name": "misfit before each step and at the end"},
        ),
        "converged": _flag(fit.converged, "whether the fit converged", "converged"),
        "num_steps": _scalar(fit.num_steps, "1", "optimiser steps"),
    }
    for name in fit.fitted:
        value = _array(getattr(fit.params, name))
        variables[f"fitted_{name}"] = (
            _with_parameter_dims((), value, name, container),
            value,
            {"units": container.declaration(name).units, "long_name": f"fitted {name}"},
        )
    return variables


_OUTPUT_UNITS = {
    "T": "degC",
    "global_mean": "degC",
    "ice_edge": "degrees_north",
    "ice_edge_south": "degrees_north",
}


def _derivative_attributes(
    output: str, units: str | None, name: str, container: type[Params]
) -> dict:
    """Long name and units of d `output` / d parameter `name` (no units when the
    output's are unknown). A derivative is a ratio of differences, and temperature
    differences are in K."""
    attributes = {"long_name": f"derivative of {output} with respect to {name}"}
    if units is not None:
        difference = {"degC": "K"}
        numerator = difference.get(units, units)
        parameter_units = container.declaration(name).units
        denominator = difference.get(parameter_units, parameter_units)
        attributes["units"] = f"({numerator}) ({denominator})-1"
    return attributes


def _sensitivity_variables(sensitivity, container: type[Params]) -> dict:
    output = sensitivity.output
    dims = "lat" if output == "T" else ()
    units = _OUTPUT_UNITS[output]
    variables = {
        output: (dims, _array(sensitivity.value), {"units": units, "long_name": output})
    }
    for name in sensitivity.names:
        value = _array(sensitivity[name])
        variables[f"d_{output}_d_{name}"] = (
            _with_parameter_dims(dims, value, name, container),
            value,
            _derivative_attributes(output, units, name, container),
        )
    return variables


def _ensemble_variables(ensemble, container: type[Params]) -> dict:
    """An ensemble's variables: its result's, each with a leading `member` axis, the
    varying parameters and gradients along `member`, and which members failed."""
    from .._steady.equilibrium import Equilibrium
    from .._steady.seasonal import SeasonalCycle
    from .._stepping.integrate import Trajectory

    kinds = (
        (Equilibrium, _equilibrium_variables),
        (Trajectory, _trajectory_variables),
        (SeasonalCycle, _seasonal_variables),
    )
    result = ensemble.result
    for cls, variables_of in kinds:
        if isinstance(result, cls):
            break
    else:
        raise TypeError(
            "`to_dataset` writes ensembles of equilibria, trajectories and seasonal "
            f"cycles, got an ensemble of {type(result).__name__}."
        )
    member = "member"
    ok = np.asarray(ensemble.ok)
    # One time axis, shared by every member: a failed run's stops where it failed.
    first = int(np.flatnonzero(ok)[0]) if ok.any() else 0
    variables = {}
    for name, (dims, data, attributes) in variables_of(result, container).items():
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        if name == "time":
            variables[name] = (dims, data[first], attributes)
        else:
            if "flag_values" in attributes:
                # `ebm.ensemble` sets a failed member's booleans to False.
                attributes = {
                    **attributes,
                    "comment": "0 (not claimed) for the members that failed; see ok",
                }
            variables[name] = ((member, *dims), data, attributes)
    variables[member] = (
        member,
        np.arange(ensemble.num_members),
        {"long_name": "ensemble member"},
    )
    for name in ensemble.varying:
        value = _array(getattr(ensemble.params, name))
        variables[f"param_{name}"] = (
            _with_parameter_dims(member, value, name, container),
            value,
            {
                "units": container.declaration(name).units,
                "long_name": container.declaration(name).long_name,
            },
        )
    if ensemble.gradient is not None:
        output = ensemble.output
        # The output's units, where the result's own variable has them.
        units = variables.get(output, ((), None, {}))[2].get("units")
        for name in container.field_names():
            value = _array(getattr(ensemble.gradient, name))
            variables[f"d_{output}_d_{name}"] = (
                _with_parameter_dims(member, value, name, container),
                value,
                _derivative_attributes(output, units, name, container),
            )
    variables["ok"] = _flag(
        ensemble.ok, "whether the member succeeded", "succeeded", member
    )
    reasons = [ensemble.failures.get(i, "") for i in range(ensemble.num_members)]
    variables["failure"] = (
        member,
        np.array(reasons, dtype=object),
        {"long_name": "why the member failed (empty if it succeeded)"},
    )
    return variables


def to_dataset(result, params: Params | None = None, *, model=None):
    """An `xarray.Dataset` of a result, following the CF conventions.

    **Arguments:**

    - `result`: an `ebm.Equilibrium`, `Trajectory`, `Run` (each declared variable
        of the model, and its history as `<name>_history`), `SeasonalCycle`, `Branch`,
        `FitResult`, `Sensitivity`, or an `Ensemble` of equilibria, trajectories or
        seasonal cycles (every variable gains a leading `member` dimension; the
        varying parameters are variables `param_<name>(member)`, the gradients
        `d_<output>_d_<name>(member)`, and `ok` and `failure` say which members
        failed and why; failed members' values are NaN).
    - `params`: the parameters it was computed with, stored as attributes (a
        `FitResult` carries its own).
    - `model`: the model, to add an equilibrium's absorbed solar, outgoing
        longwave and heat transport (on the cell bounds, `lat_edge`); needs
        `params`.

    **Returns:**

    The `xarray.Dataset`.

    **Raises:**

    - `TypeError`: for a result of another type.
    """
    from .._analysis.ensemble import Ensemble
    from .._analysis.fit import FitResult
    from .._analysis.sensitivity import Sensitivity
    from .._layers.run import Run
    from .._steady.continuation import Branch
    from .._steady.equilibrium import Equilibrium
    from .._steady.seasonal import SeasonalCycle
    from .._stepping.integrate import Trajectory

    xarray = _xarray()
    kinds = (
        (Ensemble, "ensemble", _ensemble_variables),
        (Run, "run", _run_variables),
        (Equilibrium, "equilibrium", _equilibrium_variables),
        (Trajectory, "trajectory", _trajectory_variables),
        (SeasonalCycle, "seasonal cycle", _seasonal_variables),
        (Branch, "branch", _branch_variables),
        (FitResult, "fit", _fit_variables),
        (Sensitivity, "sensitivity", _sensitivity_variables),
    )
    for cls, kind, variables_of in kinds:
        if isinstance(result, cls):
            break
    else:
        raise TypeError(
            "`result` must be an ebm Equilibrium, Trajectory, Run, SeasonalCycle, "
            f"Branch, FitResult or Sensitivity, got {type(result).__name__}."
        )
    if params is not None and not isinstance(params, AbstractParams):
        raise TypeError(
            "`params` must be the ebm parameters the result was computed with "
            f"(ebm.Params or model.Params), got {type(params).__name__}."
        )
    if isinstance(result, FitResult):
        params = result.params
    if isinstance(result, Ensemble | FitResult):
        container = type(result.params)
    elif params is not None:
        container = type(params)
    else:
        container = Params if model is None else model.Params
    variables = variables_of(result, container)
    if isinstance(result, Ensemble):
        if model is not None:
            raise ValueError(
                "`model` adds an equilibrium's fluxes, which are not written for "
                "ensembles: pass model=None."
            )
        # The fixed parameters are attributes; the varying ones are variables.
        params = jax.tree.map(lambda x: np.asarray(x)[0], result.params)
        result = result.result
    lat = getattr(result, "lat", None)
    if lat is not None and np.ndim(lat) == 2:
        lat = np.asarray(lat)[0]
    if lat is None and kind == "run":
        # A protocol model's variables on latitudes (the zonal model over a deep
        # ocean): the grid from their length.
        sizes = [
            np.shape(result.state[v.name])[v.dims.index("lat")]
            for v in result.variables
            if "lat" in v.dims
        ]
        lat = np.zeros(sizes[0]) if sizes else None
    if lat is None and kind == "branch" and result.T is not None:
        lat = np.asarray(result.T)[0]  # a branch's profiles: (point, lat)
    uses_lat = any("lat" in np.atleast_1d(spec[0]) for spec in variables.values())
    if lat is not None and uses_lat:
        variables.update(_latitude(Grid(int(np.asarray(lat).shape[-1]))))
    if isinstance(result, Equilibrium) and model is not None and params is not None:
        variables.update(_diagnostics(result.T, params, model))
    attributes = _global_attributes(kind, params)
    if kind == "ensemble":
        for name in variables:
            if name.startswith("param_"):
                for key in (name, f"{name}_units"):
                    attributes.pop(key, None)
    elif hasattr(result, "result"):
        attributes.update(_result_code(result.result))
    # Bounds are data variables: as coordinates xarray would write a global
    # `coordinates` attribute, which CF does not define.
    coordinates = {"lat", "time", "lat_edge", "member", "layer"}
    dataset = xarray.Dataset(
        {k: v for k, v in variables.items() if k not in coordinates},
        coords={k: v for k, v in variables.items() if k in coordinates},
        attrs=attributes,
    )
    return dataset


def save(result, path, params: Params | None = None, *, model=None) -> pathlib.Path:
    """Write a result (or an `xarray.Dataset`) to netCDF, atomically.

    The file is written beside `path` under a temporary name, flushed to disk and
    renamed over `path`: a crash mid-write leaves any previous file intact.

    **Arguments:**

    - `result`: an ebm result (see `ebm.to_dataset`) or an `xarray.Dataset`.
    - `path`: where to write.
    - `params`, `model`: as for `ebm.to_dataset`.

    **Returns:**

    The path written. A symbolic link is followed: the file it points to is
    replaced, and the link stays.

    **Raises:**

    - `IsADirectoryError`, `FileNotFoundError`: for a folder, or a missing folder.
    - `PermissionError`: when the folder cannot be written (naming `path` and the
        folder, not the temporary file).
    """
    xarray = _xarray()
    dataset = (
        result
        if isinstance(result, xarray.Dataset)
        else to_dataset(result, params, model=model)
    )
    if "ebm_result" not in dataset.attrs:
        # A Dataset of the caller's own: marked as written by ebm, for `load`.
        dataset = dataset.assign_attrs(ebm_result="dataset")
    path = pathlib.Path(path)
    # Write through a symbolic link, not over it (os.replace would swap the link for
    # a file); relative links resolve from the link's own folder.
    written = pathlib.Path(os.path.realpath(path)) if path.is_symlink() else path
    # No fill values: NaN stays NaN and every float is written as it is.
    encoding = {
        name: {"_FillValue": None}
        for name, variable in dataset.variables.items()
        if np.issubdtype(variable.dtype, np.floating)
    }
    # Text as CF's character arrays (a string-length dimension), not netCDF-4's
    # variable-length strings, which CF does not define.
    encoding.update(
        {
            name: {"dtype": "S1"}
            for name, variable in dataset.variables.items()
            if variable.dtype.kind in "UO"
        }
    )
    if written.is_dir():
        raise IsADirectoryError(f"`path` {path} is a directory, not a file name.")
    if not written.parent.is_dir():
        raise FileNotFoundError(
            f"`path` {path}: the folder {written.parent} is missing."
        )
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=written.parent, prefix=f".{written.name}.", suffix=".tmp"
        )
    except OSError as error:
        raise PermissionError(
            f"`path` {path}: cannot write in the folder {written.parent} "
            f"({error.strerror}); choose a writable folder."
        ) from None
    os.close(descriptor)
    try:
        dataset.to_netcdf(temporary, engine="netcdf4", encoding=encoding)
        # mkstemp's file is private (0600): give it the mode the file would have had.
        os.chmod(temporary, _mode(written))
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, written)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
    # The rename is durable once the folder's entry is on disk too.
    folder = os.open(written.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return path


def _mode(path: pathlib.Path) -> int:
    """The mode of the file `path` replaces, or a new file's under the umask."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def load(path):
    """Read a netCDF file written by `ebm.save` as an `xarray.Dataset`, bit for bit.

    Times are left as written (days of the `365_day` calendar since 0000-01-01,
    the start); `xarray.decode_cf` decodes them to `cftime` dates whose year is
    the model year.

    **Raises:**

    - `FileNotFoundError`: when there is no file at `path`.
    - `OSError`: when the file is not a readable netCDF file (truncated, corrupt,
        or another format), naming `path`.

    **Warns:**

    - `UserWarning`: for a netCDF file that ebm did not write (no `ebm_result`
        attribute), returned as `xarray.open_dataset` reads it.
    """
    xarray = _xarray()
    if pathlib.Path(path).is_dir():
        raise IsADirectoryError(f"`path` {path} is a directory, not a netCDF file.")
    if not pathlib.Path(path).is_file():
        raise FileNotFoundError(f"`path` {path}: no such file.")
    try:
        with xarray.open_dataset(path, engine="netcdf4", decode_times=False) as dataset:
            dataset = dataset.load()
    except (OSError, ValueError) as error:
        raise OSError(
            f"`path` {path} is not a readable netCDF file (truncated or corrupt?): "
            f"{error}"
        ) from error
    if "ebm_result" not in dataset.attrs:
        warnings.warn(
            f"`path` {path} was not written by ebm (it has no `ebm_result` "
            "attribute): returned as xarray reads it; ebm's plots and CLI may not "
            "understand its variables.",
            UserWarning,
            stacklevel=2,
        )
    return dataset
