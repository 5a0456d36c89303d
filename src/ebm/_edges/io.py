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

import os
import pathlib
import tempfile
import warnings

import jax
import numpy as np

from .._model.parameters import AbstractParams
from .._zonal.grid import Grid
from .._zonal.params import Params
from .analysis_variables import (
    ensemble_variables,
    fit_variables,
    periodic_variables,
    projection_variables,
    sensitivity_variables,
    sweep_variables,
)
from .variables import (
    branch_variables,
    coordinate_names,
    diagnostic_variables,
    equilibrium_variables,
    flux_diagnostics,
    global_attributes,
    latitude_variables,
    result_code_attributes,
    run_variables,
    seasonal_variables,
    steady_state_variables,
    trajectory_variables,
    xarray_module,
)


def to_dataset(result, params: Params | None = None, *, model=None):
    """An `xarray.Dataset` of a result, following the CF conventions.

    **Arguments:**

    - `result`: an `ebm.Equilibrium`, `Trajectory`, `Run` (each declared variable
        of the model, and its history as `<name>_history`), `SteadyState` (each
        declared variable), `SeasonalCycle`, `PeriodicState` (each declared
        variable through the year, and on 1 January as `<name>_start`), `Branch`,
        `FitResult`, `Sensitivity`, or an `Ensemble` of equilibria, trajectories or
        seasonal cycles (every variable gains a leading `member` dimension; the
        varying parameters are variables `param_<name>(member)`, the gradients
        `d_<output>_d_<name>(member)`, and `ok` and `failure` say which members
        failed and why; failed members' values are NaN), or an `ebm.Posterior`
        (its draws on `(chain, draw)`: `Posterior.to_dataset()`). The result of
        `ebm.periodic_sweep` has a leading `point` dimension, the swept
        parameter's values `param_<name>(point)` and `converged(point)`.
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
    from .._analysis.posterior import Posterior
    from .._analysis.project import Projection
    from .._analysis.sensitivity import Sensitivity
    from .._steady.continuation import Branch
    from .._steady.equilibrium import Equilibrium
    from .._steady.periodic_models import PeriodicState
    from .._steady.steady_state import SteadyState
    from .._stepping.run import Run
    from .._zonal.cycle import SeasonalCycle
    from .._zonal.run import Trajectory

    if isinstance(result, Posterior):
        if params is not None or model is not None:
            raise ValueError(
                "A posterior's file holds its own draws of the parameters: call "
                "ebm.to_dataset(posterior) (or posterior.to_dataset()) without "
                "`params` or `model`."
            )
        return result.to_dataset()
    xarray = xarray_module()
    kinds = (
        (Ensemble, "ensemble", ensemble_variables),
        (Run, "run", run_variables),
        (SteadyState, "steady state", steady_state_variables),
        (Equilibrium, "equilibrium", equilibrium_variables),
        (Trajectory, "trajectory", trajectory_variables),
        (SeasonalCycle, "seasonal cycle", seasonal_variables),
        (PeriodicState, "periodic state", periodic_variables),
        (Branch, "branch", branch_variables),
        (FitResult, "fit", fit_variables),
        (Sensitivity, "sensitivity", sensitivity_variables),
        (Projection, "projection", projection_variables),
    )
    for cls, kind, variables_of in kinds:
        if isinstance(result, cls):
            break
    else:
        raise TypeError(
            "`result` must be an ebm Equilibrium, SteadyState, Trajectory, Run, "
            "SeasonalCycle, PeriodicState, Branch, FitResult, Sensitivity, "
            "Ensemble, Posterior or Projection, got "
            f"{type(result).__name__}."
        )
    if params is not None and not isinstance(params, AbstractParams):
        raise TypeError(
            "`params` must be the ebm parameters the result was computed with "
            f"(ebm.Params or model.Params), got {type(params).__name__}."
        )
    check_params_fit(result, params, model)
    if isinstance(result, FitResult):
        params = result.params
    if isinstance(result, Ensemble | FitResult):
        container = type(result.params)
    elif params is not None:
        container = type(params)
    else:
        container = Params if model is None else model.Params
    # (A Branch has a `parameter` too: the one its walk continues.)
    swept = (
        result.parameter if isinstance(result, PeriodicState | SeasonalCycle) else None
    )
    if swept is not None:
        variables = sweep_variables(result, container, variables_of)
    else:
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
    if lat is None and kind in ("run", "steady state", "periodic state"):
        # A protocol model's variables on latitudes (the zonal model over a deep
        # ocean): the grid from their length.
        state = result.state0 if kind == "periodic state" else result.state
        # (Counted from the end: a sweep's arrays have a leading axis.)
        sizes = [
            np.shape(state[v.name])[v.dims.index("lat") - len(v.dims)]
            for v in result.variables
            if "lat" in v.dims
        ]
        lat = np.zeros(sizes[0]) if sizes else None
    if lat is None and kind == "branch" and result.T is not None:
        lat = np.asarray(result.T)[0]  # a branch's profiles: (point, lat)
    uses_lat = any("lat" in np.atleast_1d(spec[0]) for spec in variables.values())
    if lat is not None and uses_lat:
        variables.update(latitude_variables(Grid(int(np.asarray(lat).shape[-1]))))
    if isinstance(result, Equilibrium) and model is not None and params is not None:
        variables.update(flux_diagnostics(result.T, params, model))
    if (
        kind == "periodic state"
        and swept is None
        and model is not None
        and params is not None
    ):
        # What the model computes from its state (the sea ice's thickness and edge).
        variables.update(
            diagnostic_variables(model, params, result.t, result.states, ("time",))
        )
    attributes = global_attributes(kind, params)
    if kind == "ensemble":
        for name in variables:
            if name.startswith("param_"):
                for key in (name, f"{name}_units"):
                    attributes.pop(key, None)
    elif hasattr(result, "result"):
        attributes.update(result_code_attributes(result.result))
    if swept is not None:
        # The swept parameter is a variable along `point`, not one number.
        for key in (f"param_{swept}", f"param_{swept}_units"):
            attributes.pop(key, None)
    # Bounds are data variables: as coordinates xarray would write a global
    # `coordinates` attribute, which CF does not define.
    coordinates = {"lat", "time", "lat_edge", "member", "layer", "point"}
    coordinates |= {"scenario", "draw", "period", "quantile"}
    coordinates |= coordinate_names(getattr(result, "variables", None) or ())
    dataset = xarray.Dataset(
        {k: v for k, v in variables.items() if k not in coordinates},
        coords={k: v for k, v in variables.items() if k in coordinates},
        attrs=attributes,
    )
    return dataset


def check_params_fit(result, params, model) -> None:
    """Refuse parameters that are not those of `model`, or (without a model) not a
    zonal model's for a result only the zonal model gives: written as the file's
    attributes, they would describe another model."""
    from .._steady.equilibrium import Equilibrium
    from .._zonal.cycle import SeasonalCycle
    from .._zonal.run import Trajectory

    if params is None:
        return
    if model is not None:
        missing = sorted(set(model.Params.field_names()) - set(params.field_names()))
        if missing:
            raise TypeError(
                f"`params` are {type(params).__name__}, not the parameters of "
                f"`model` ({type(model).__name__}, whose parameters are "
                f"{model.Params.__name__}: they lack {', '.join(missing[:4])}"
                f"{', ...' if len(missing) > 4 else ''}). Pass the parameters the "
                "result was computed with."
            )
    elif isinstance(result, Equilibrium | Trajectory | SeasonalCycle) and not (
        isinstance(params, Params)
    ):
        raise TypeError(
            f"`params` are {type(params).__name__}, not the zonal model's parameters "
            f"(ebm.Params or a zonal model's `model.Params`), which an "
            f"{type(result).__name__} was computed with."
        )


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
    xarray = xarray_module()
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
    xarray = xarray_module()
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
