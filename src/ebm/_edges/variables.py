"""The variables of each kind of result in an `xarray.Dataset` (see `ebm.to_dataset`,
`_edges/io.py`): names, dimensions, units and long names, following the CF
conventions (1.8)."""

import datetime

import numpy as np

from .._zonal.grid import Grid
from .._zonal.params import Params


TEMPERATURE = {"units": "degC", "standard_name": "surface_temperature"}


def xarray_module():
    try:
        import xarray
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "ebm's xarray and netCDF export needs xarray and netCDF4: "
            "pip install 'ebm-jax[io]'."
        ) from error
    return xarray


def as_numpy(x) -> np.ndarray:
    return np.asarray(x)


PROFILE_DIMS = {"bounds": "lat_edge", "cells": "lat"}


def with_parameter_dims(dims, value, name: str, container) -> tuple:
    """The dimensions of `value`, a parameter's value (or a derivative with respect
    to it) laid out along `dims`, followed by the profile's own dimension if
    `value` has one (a profile given as a scalar has not). A profile on cells gets
    `lat_NAME` where `lat` is taken."""
    dims = (dims,) if isinstance(dims, str) else tuple(dims)
    profile = container.declaration(name).profile
    if profile is None or np.ndim(value) == len(dims):
        return dims
    own = PROFILE_DIMS[profile]
    return (*dims, f"lat_{name}" if own in dims else own)


def latitude_variables(grid: Grid) -> dict:
    bounds = as_numpy(grid.lat_bounds)
    return {
        "lat": (
            "lat",
            as_numpy(grid.lat),
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


def time_variables(years, year_start: str = "1 January") -> dict:
    """The `time` coordinate of times in years: days of CF's `365_day` calendar
    from 1 January of year 0; or, for a model whose year starts elsewhere
    (`year_start`, the sea-ice model's solstice), days from that start, which no
    calendar date names."""
    if year_start != "1 January":
        return {
            "time": (
                "time",
                as_numpy(years) * CALENDAR_DAYS_PER_YEAR,
                {
                    "units": "days",
                    "long_name": f"time since {year_start}",
                    "comment": (
                        f"day 0 is {year_start}, the start of the model's year; "
                        "one model year is 365 days"
                    ),
                    "axis": "T",
                },
            ),
        }
    # One model year is one year of CF's 365-day calendar, counted from year 0: the
    # file's year 100 is model year 100, at any length of run (a Gregorian calendar
    # drifts from model years by 0.2422 days a year, and numpy's dates end in 2262).
    return {
        "time": (
            "time",
            as_numpy(years) * CALENDAR_DAYS_PER_YEAR,
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


def parameter_attributes(params: Params | None) -> dict:
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


def global_attributes(kind: str, params: Params | None) -> dict:
    from .._version import __version__

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return {
        "Conventions": "CF-1.8",
        "title": f"ebm {kind}",
        "source": f"ebm {__version__} (differentiable energy-balance model, JAX)",
        "history": f"{now}: written by ebm {__version__}",
        "ebm_result": kind,
        **parameter_attributes(params),
    }


def result_code_attributes(result) -> dict:
    from .._results import failure_message

    failed = failure_message(result)
    return {"result": "successful" if failed is None else failed}


def scalar_variable(value, units: str, long_name: str):
    return ((), as_numpy(value), {"units": units, "long_name": long_name})


def flag_variable(value, long_name: str, meaning: str, dims=()):
    """A boolean as CF flags (netCDF has no booleans; xarray restores the dtype)."""
    return (
        dims,
        as_numpy(value),
        {
            "long_name": long_name,
            "flag_values": np.array([0, 1], dtype=np.int8),
            "flag_meanings": f"not_{meaning} {meaning}",
        },
    )


def equilibrium_variables(state, container: type[Params]) -> dict:
    del container  # the parameters' declarations are not needed here
    return {
        "T": ("lat", as_numpy(state.T), {**TEMPERATURE, "long_name": "temperature"}),
        "global_mean": scalar_variable(
            state.global_mean, "degC", "global-mean temperature"
        ),
        "ice_edge": scalar_variable(
            state.ice_edge, "degrees_north", "northern-hemisphere ice edge"
        ),
        "ice_edge_south": scalar_variable(
            state.ice_edge_south, "degrees_north", "southern-hemisphere ice edge"
        ),
        "residual": scalar_variable(
            state.residual, "W m-2", "largest energy-budget residual"
        ),
        "leading_eigenvalue": scalar_variable(
            state.leading_eigenvalue,
            "W m-2 K-1",
            "largest eigenvalue of the energy budget's Jacobian",
        ),
        "condition_number": scalar_variable(
            state.condition_number, "1", "condition number of the Jacobian"
        ),
        "stable": flag_variable(
            state.stable, "whether the equilibrium is stable", "stable"
        ),
        "num_steps": scalar_variable(state.num_steps, "1", "root-finder iterations"),
    }


def flux_diagnostics(T, params: Params, model) -> dict:
    """Fluxes of a profile: absorbed solar, OLR (cells) and heat transport (bounds)."""
    return {
        "absorbed_solar": (
            "lat",
            as_numpy(model.absorbed_solar(T, params)),
            {"units": "W m-2", "long_name": "absorbed solar radiation"},
        ),
        "outgoing_longwave": (
            "lat",
            as_numpy(model.outgoing_longwave(T, params)),
            {
                "units": "W m-2",
                "standard_name": "toa_outgoing_longwave_flux",
                "long_name": "outgoing longwave radiation",
            },
        ),
        "heat_transport": (
            "lat_edge",
            as_numpy(model.heat_transport(T, params)),
            {"units": "PW", "long_name": "northward heat transport through the bound"},
        ),
        "lat_edge": (
            "lat_edge",
            as_numpy(model.grid.lat_bounds),
            {
                "units": "degrees_north",
                "standard_name": "latitude",
                "long_name": "latitude of the cell bounds",
            },
        ),
    }


def trajectory_variables(trajectory, container: type[Params]) -> dict:
    del container  # the parameters' declarations are not needed here
    variables = {
        "T": (
            "lat",
            as_numpy(trajectory.T),
            {**TEMPERATURE, "long_name": "final temperature"},
        ),
        "global_mean": scalar_variable(
            trajectory.global_mean, "degC", "final global-mean temperature"
        ),
        "ice_edge": scalar_variable(
            trajectory.ice_edge, "degrees_north", "final northern-hemisphere ice edge"
        ),
        "ice_edge_south": scalar_variable(
            trajectory.ice_edge_south,
            "degrees_north",
            "final southern-hemisphere ice edge",
        ),
        "num_steps": scalar_variable(trajectory.num_steps, "1", "time steps taken"),
    }
    if trajectory.Ts is not None:
        variables.update(time_variables(trajectory.ts))
        variables["T_history"] = (
            ("time", "lat"),
            as_numpy(trajectory.Ts),
            {**TEMPERATURE, "long_name": "temperature at the saved times"},
        )
    return variables


def declared_variables(declared, state: dict, long_prefix: str = "") -> dict:
    """Each declared variable (`ebm.Variable`) of a protocol model's `state`, with
    its own dimensions, units and long name (after `long_prefix`), and the `layer`
    coordinate of the ocean layers below the surface."""
    variables = {}
    for variable in declared:
        value = as_numpy(state[variable.name])
        variables[variable.name] = (
            variable.dims,
            value,
            {"units": variable.units, "long_name": long_prefix + variable.long_name},
        )
        for coordinate in variable.coordinates:
            variables[coordinate.name] = (
                coordinate.name,
                np.asarray(coordinate.values),
                {"units": coordinate.units, "long_name": coordinate.long_name},
            )
            if coordinate.latitude is not None:
                variables[f"{coordinate.name}_latitude"] = (
                    coordinate.name,
                    np.asarray(coordinate.latitude),
                    {
                        "units": "degrees_north",
                        "standard_name": "latitude",
                        "long_name": f"latitude of each {coordinate.name}",
                    },
                )
        # (Counted from the end: an ensemble's values have a leading member axis.)
        first = value.ndim - len(variable.dims)
        for axis, name in enumerate(variable.dims):
            if name not in ("lat", "time") and name not in variables:
                # Layers 2..n below the surface (the surface layer is `T`).
                variables[name] = (
                    name,
                    np.arange(2, 2 + value.shape[first + axis]),
                    {"long_name": f"{name} number, from the surface (1)"},
                )
    return variables


def coordinate_names(declared) -> set[str]:
    """The names of the coordinates that `declared_variables` writes for
    `declared`: each variable's own, and `layer`."""
    names = {c.name for variable in declared for c in variable.coordinates}
    latitudes = {
        f"{c.name}_latitude"
        for variable in declared
        for c in variable.coordinates
        if c.latitude is not None
    }
    return names | latitudes | {"layer"}


def run_variables(run, container: type[Params]) -> dict:
    """A protocol model's run: each declared variable's final value, and its history
    where times were saved, with the variable's own dimensions, units and name."""
    del container  # the parameters' declarations are not needed here
    variables = declared_variables(run.variables, run.state, "final ")
    fluxes = (
        ("N", run.N, run.Ns, "net downward flux at the top of the atmosphere, "
         "global mean"),
        ("F", run.F, run.Fs, "effective radiative forcing of the scenario"),
    )  # fmt: skip
    for name, final, history, long_name in fluxes:
        if final is not None and name not in variables:
            variables[name] = (
                (),
                as_numpy(final),
                {"units": "W m-2", "long_name": f"final {long_name}"},
            )
    if run.states is not None:
        for variable in run.variables:
            variables[f"{variable.name}_history"] = (
                ("time", *variable.dims),
                as_numpy(run.states[variable.name]),
                {
                    "units": variable.units,
                    "long_name": f"{variable.long_name} at the saved times",
                },
            )
        for name, _, history, long_name in fluxes:
            if history is not None and f"{name}_history" not in variables:
                variables[f"{name}_history"] = (
                    "time",
                    as_numpy(history),
                    {"units": "W m-2", "long_name": f"{long_name} at the saved times"},
                )
        variables.update(time_variables(run.ts))
    variables["num_steps"] = scalar_variable(run.num_steps, "1", "time steps taken")
    return variables


def steady_state_variables(steady, container: type[Params]) -> dict:
    """A protocol model's steady state: each declared variable, the time whose
    forcing is held, the residual and, over a deep ocean, the surface's ice
    edges."""
    del container  # the parameters' declarations are not needed here
    variables = declared_variables(steady.variables, steady.state, "steady ")
    variables["forcing_time"] = scalar_variable(
        steady.t, "years", "time of the forcing held (on the forcing's clock)"
    )
    variables["residual"] = scalar_variable(
        steady.residual, "year-1", "largest absolute tendency (per year)"
    )
    variables["num_steps"] = scalar_variable(
        steady.num_steps, "1", "root-finder iterations"
    )
    if steady.surface is not None:
        for name, hemisphere in (
            ("ice_edge", "northern"),
            ("ice_edge_south", "southern"),
        ):
            variables[name] = scalar_variable(
                getattr(steady.surface, name),
                "degrees_north",
                f"{hemisphere}-hemisphere ice edge",
            )
    return variables


def seasonal_variables(cycle, container: type[Params]) -> dict:
    del container  # the parameters' declarations are not needed here
    temperature = {**TEMPERATURE}
    return {
        **time_variables(cycle.t),
        "T": (
            ("time", "lat"),
            as_numpy(cycle.T),
            {**temperature, "long_name": "temperature"},
        ),
        "T0": (
            "lat",
            as_numpy(cycle.T0),
            {**temperature, "long_name": "T on 1 January"},
        ),
        "annual_mean": (
            "lat",
            as_numpy(cycle.annual_mean),
            {**temperature, "long_name": "annual-mean temperature"},
        ),
        "amplitude": (
            "lat",
            as_numpy(cycle.amplitude),
            {"units": "K", "long_name": "half the seasonal range of temperature"},
        ),
        "global_mean": (
            "time",
            as_numpy(cycle.global_mean),
            {"units": "degC", "long_name": "global-mean temperature"},
        ),
        "ice_edge": (
            "time",
            as_numpy(cycle.ice_edge),
            {"units": "degrees_north", "long_name": "northern-hemisphere ice edge"},
        ),
        "ice_edge_south": (
            "time",
            as_numpy(cycle.ice_edge_south),
            {"units": "degrees_north", "long_name": "southern-hemisphere ice edge"},
        ),
        "annual_mean_ice_edge": scalar_variable(
            cycle.annual_mean_ice_edge,
            "degrees_north",
            "northern-hemisphere ice edge, annual mean",
        ),
        "annual_mean_ice_edge_south": scalar_variable(
            cycle.annual_mean_ice_edge_south,
            "degrees_north",
            "southern-hemisphere ice edge, annual mean",
        ),
        "ice_edge_range": scalar_variable(
            cycle.ice_edge_range,
            "degrees",
            "annual range of the northern-hemisphere ice edge (max - min)",
        ),
        "ice_edge_south_range": scalar_variable(
            cycle.ice_edge_south_range,
            "degrees",
            "annual range of the southern-hemisphere ice edge (max - min)",
        ),
        "residual": scalar_variable(
            cycle.residual, "K", "largest change over one year"
        ),
        "step_error": scalar_variable(
            cycle.step_error, "K", "estimated error of the time stepping over a year"
        ),
        "num_steps": scalar_variable(cycle.num_steps, "1", "Newton steps (or years)"),
    }


def branch_variables(branch, container: type[Params]) -> dict:
    point = "point"
    name = branch.parameter
    units = container.declaration(name).units
    variables = {
        name: (
            point,
            as_numpy(branch.values),
            {"units": units, "long_name": container.declaration(name).long_name},
        ),
        "global_mean": (
            point,
            as_numpy(branch.global_mean),
            {"units": branch.temperature_units, "long_name": "global-mean temperature"},
        ),
        "ice_edge": (
            point,
            as_numpy(branch.ice_edge),
            {"units": "degrees_north", "long_name": "northern-hemisphere ice edge"},
        ),
        "ice_edge_south": (
            point,
            as_numpy(branch.ice_edge_south),
            {"units": "degrees_north", "long_name": "southern-hemisphere ice edge"},
        ),
        "leading_eigenvalue": (
            point,
            as_numpy(branch.leading_eigenvalue),
            {
                "units": branch.eigenvalue_units,
                "long_name": "largest real part of the Jacobian's eigenvalues",
            },
        ),
        "stable": flag_variable(
            branch.stable, "whether each point is stable", "stable", point
        ),
        "slope": (
            point,
            as_numpy(branch.slope),
            {"units": "1", "long_name": f"d({name})/d(arclength)"},
        ),
        "arclength": (
            point,
            as_numpy(branch.arclength),
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
            {
                "units": branch.temperature_units,
                "long_name": "global-mean temperature at each fold",
            },
        ),
        "fold_side": (
            "fold",
            np.array([int(f.side) for f in branch.folds], dtype=np.int32),
            {"long_name": "-1: the two branches exist below the fold, +1: above"},
        ),
    }
    for edge in ("ice_edge", "ice_edge_south"):
        # A model without sea ice (or with one hemisphere) has no such edge.
        if np.all(np.isnan(variables[edge][1])):
            del variables[edge], variables[f"fold_{edge}"]
    if branch.T is not None:
        T = as_numpy(branch.T)
        dims = branch.profile_dims
        if len(dims) != T.ndim - 1:
            dims = tuple(f"cell_{i}" for i in range(T.ndim - 1))
        variables["T"] = (
            (point, *dims),
            T,
            {
                **TEMPERATURE,
                "units": branch.temperature_units,
                "long_name": "surface temperature at each point",
            },
        )
    return variables


def diagnostic_variables(model, params, t, states, leading: tuple[str, ...]) -> dict:
    """`model.diagnostics` of `states` at times `t` (each with the leading axes
    `leading`, as `("time",)`), with their declared units and long names."""
    import jax

    def diagnose(t, y):
        return model.diagnostics(t, y, params)

    for _ in leading:
        diagnose = jax.vmap(diagnose)
    values = diagnose(t, states)
    return {
        v.name: (
            (*leading, *v.dims),
            as_numpy(values[v.name]),
            {"units": v.units, "long_name": v.long_name},
        )
        for v in model.diagnostic_variables
    }
