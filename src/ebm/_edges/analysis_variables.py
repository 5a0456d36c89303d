"""The variables of the analyses' results in an `xarray.Dataset` (see
`ebm.to_dataset`, `_edges/io.py`): fits, sensitivities, ensembles, periodic states
and their sweeps, projections; built from the variables of the results they hold
(`_edges/variables.py`), following the CF conventions (1.8)."""

import numpy as np

from .._model.protocol import state_units
from .._zonal.params import Params
from .variables import (
    TEMPERATURE,
    as_numpy,
    coordinate_names,
    declared_variables,
    equilibrium_variables,
    flag_variable,
    run_variables,
    scalar_variable,
    seasonal_variables,
    steady_state_variables,
    time_variables,
    trajectory_variables,
    with_parameter_dims,
)


def fit_variables(fit, container: type[Params]) -> dict:
    variables = {
        "loss": (
            "step",
            as_numpy(fit.loss_history),
            {"units": "K2", "long_name": "misfit before each step and at the end"},
        ),
        "converged": flag_variable(
            fit.converged, "whether the fit converged", "converged"
        ),
        "num_steps": scalar_variable(fit.num_steps, "1", "optimiser steps"),
    }
    for name in fit.fitted:
        value = as_numpy(getattr(fit.params, name))
        variables[f"fitted_{name}"] = (
            with_parameter_dims((), value, name, container),
            value,
            {"units": container.declaration(name).units, "long_name": f"fitted {name}"},
        )
    return variables


OUTPUT_UNITS = {
    "T": "degC",
    "global_mean": "degC",
    "ice_edge": "degrees_north",
    "ice_edge_south": "degrees_north",
}


def derivative_attributes(
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
        if denominator == "1":  # a dimensionless parameter
            attributes["units"] = numerator
        else:
            attributes["units"] = f"({numerator}) ({denominator})-1"
    return attributes


def sensitivity_variables(sensitivity, container: type[Params]) -> dict:
    output = sensitivity.output
    on_lat = sensitivity.lat is not None
    dims = "lat" if output == "T" and on_lat else ()
    # A global model's temperatures are anomalies, in K.
    units = OUTPUT_UNITS[output] if on_lat else "K"
    variables = {
        output: (
            dims,
            as_numpy(sensitivity.value),
            {"units": units, "long_name": output},
        )
    }
    for name in sensitivity.names:
        value = as_numpy(sensitivity[name])
        variables[f"d_{output}_d_{name}"] = (
            with_parameter_dims(dims, value, name, container),
            value,
            derivative_attributes(output, units, name, container),
        )
    return variables


def ensemble_variables(ensemble, container: type[Params]) -> dict:
    """An ensemble's variables: its result's, each with a leading `member` axis, the
    varying parameters and gradients along `member`, and which members failed."""
    from .._steady.equilibrium import Equilibrium
    from .._steady.steady_state import SteadyState
    from .._stepping.run import Run
    from .._zonal.cycle import SeasonalCycle
    from .._zonal.run import Trajectory

    kinds = (
        (Equilibrium, equilibrium_variables),
        (SteadyState, steady_state_variables),
        (Run, run_variables),
        (Trajectory, trajectory_variables),
        (SeasonalCycle, seasonal_variables),
    )
    result = ensemble.result
    for cls, variables_of in kinds:
        if isinstance(result, cls):
            break
    else:
        raise TypeError(
            "`to_dataset` writes ensembles of equilibria, steady states, runs, "
            f"trajectories and seasonal cycles, got an ensemble of "
            f"{type(result).__name__}."
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
        elif name == "layer":  # a coordinate, the same for every member
            variables[name] = (dims, data, attributes)
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
        value = as_numpy(getattr(ensemble.params, name))
        variables[f"param_{name}"] = (
            with_parameter_dims(member, value, name, container),
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
            value = as_numpy(getattr(ensemble.gradient, name))
            variables[f"d_{output}_d_{name}"] = (
                with_parameter_dims(member, value, name, container),
                value,
                derivative_attributes(output, units, name, container),
            )
    variables["ok"] = flag_variable(
        ensemble.ok, "whether the member succeeded", "succeeded", member
    )
    reasons = [ensemble.failures.get(i, "") for i in range(ensemble.num_members)]
    variables["failure"] = (
        member,
        np.array(reasons, dtype=object),
        {"long_name": "why the member failed (empty if it succeeded)"},
    )
    return variables


def periodic_variables(cycle, container: type[Params]) -> dict:
    """A protocol model's periodic state: each declared variable through the year
    (on `time` and its own dimensions) and on 1 January (`<name>_start`), the
    global mean through the year, the residual and the step error."""
    del container  # the parameters' declarations are not needed here
    variables = declared_variables(
        cycle.variables,
        cycle.state0,
        f"at the start of the year ({cycle.year_start}): ",
    )
    coordinates = coordinate_names(cycle.variables)
    variables = {
        k if k in coordinates else f"{k}_start": v for k, v in variables.items()
    }
    for variable in cycle.variables:
        variables[variable.name] = (
            ("time", *variable.dims),
            as_numpy(cycle.states[variable.name]),
            {"units": variable.units, "long_name": variable.long_name},
        )
    if "T" not in variables:
        # A surface temperature that is not a state variable (the sea-ice model's),
        # on the dimensions of the state's first variable.
        variables["T"] = (
            ("time", *cycle.variables[0].dims),
            as_numpy(cycle.T),
            {**TEMPERATURE, "long_name": "surface temperature"},
        )
    variables.update(time_variables(cycle.t, cycle.year_start))
    variables["global_mean"] = (
        "time",
        as_numpy(cycle.global_mean),
        {"units": "degC", "long_name": "global-mean surface temperature"},
    )
    # In the state's units where its variables share them (K, degC: a change of
    # the temperature; the sea ice's W yr m-2 of enthalpy).
    units = state_units(cycle.variables)
    of_each = "" if units is not None else ", each variable in its own units"
    variables["residual"] = scalar_variable(
        cycle.residual,
        units or "1",
        f"largest change of any state variable over the year{of_each}",
    )
    variables["step_error"] = scalar_variable(
        cycle.step_error,
        units or "1",
        f"estimated time-stepping error of the state over the year{of_each}",
    )
    variables["num_steps"] = scalar_variable(
        cycle.num_steps, "1", "Newton steps (years spun up)"
    )
    return variables


def sweep_variables(result, container: type[Params], variables_of) -> dict:
    """The points of a sweep (`ebm.periodic_sweep`): each of the result's
    variables (`variables_of`) with a leading `point` axis, the swept parameter's
    values along it (`param_<name>`), and whether each point converged."""
    from .._results import RESULTS

    point = "point"
    coordinates = {"time", "layer"} | coordinate_names(
        getattr(result, "variables", None) or ()
    )
    variables = {}
    for name, (dims, data, attributes) in variables_of(result, container).items():
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        if name == "time":  # every point's year has the same times
            variables[name] = (dims, data[0], attributes)
        elif name in coordinates:
            variables[name] = (dims, data, attributes)
        else:
            variables[name] = ((point, *dims), data, attributes)
    values = as_numpy(result.values)
    variables[point] = (
        point,
        np.arange(values.shape[0]),
        {"long_name": f"point of the sweep in {result.parameter}, in its order"},
    )
    declaration = container.declaration(result.parameter)
    variables[f"param_{result.parameter}"] = (
        point,
        values,
        {"units": declaration.units, "long_name": declaration.long_name},
    )
    variables["converged"] = flag_variable(
        result.result == RESULTS.successful,
        "whether the point's periodic state converged",
        "converged",
        point,
    )
    return variables


def projection_variables(projection, container: type[Params]) -> dict:
    """A projection's runs on `(scenario, draw, time)` (where kept), its periods'
    means on `(scenario, draw, period)` with each period's first and last year,
    their weighted quantiles on `(scenario, period, quantile)`, the draws'
    weights and parameters along `draw`."""
    del container  # the draws carry their own
    scenario, draw, period = "scenario", "draw", "period"
    count = as_numpy(projection.weights).size
    quantiles = np.array([0.05, 0.17, 0.5, 0.83, 0.95])
    variables = {
        scenario: (
            scenario,
            np.array(projection.scenarios, dtype=object),
            {"long_name": "SSP scenario (AR6 WG1 Chapter 7's name)"},
        ),
        draw: (draw, np.arange(count), {"long_name": "parameter draw"}),
        period: (period, np.arange(len(projection.periods)), {"long_name": "period"}),
        "period_years": (
            (period, "nv"),
            np.array(projection.periods, dtype=float),
            {
                "units": "year",
                "long_name": "first and last calendar year of the period",
            },
        ),
        "quantile": (
            "quantile",
            quantiles,
            {"units": "1", "long_name": "quantile over the draws (weighted)"},
        ),
        "period_mean_warming": (
            (scenario, draw, period),
            as_numpy(projection.period_means),
            {
                "units": "K",
                "long_name": "mean warming over the period above the draw's own "
                "1850-1900 mean",
            },
        ),
        "period_warming_quantiles": (
            (scenario, period, "quantile"),
            projection.quantiles(quantiles),
            {"units": "K", "long_name": "weighted quantiles of period_mean_warming"},
        ),
        "weight": (
            draw,
            as_numpy(projection.weights),
            {"units": "1", "long_name": "weight of the draw"},
        ),
        "ok": flag_variable(
            projection.ok, "whether the draw's runs succeeded", "succeeded", draw
        ),
    }
    for name in type(projection.params).field_names():
        declaration = type(projection.params).declaration(name)
        variables[f"param_{name}"] = (
            draw,
            as_numpy(getattr(projection.params, name)),
            {"units": declaration.units, "long_name": declaration.long_name},
        )
    if projection.warming is not None:
        variables.update(time_variables(projection.time))
        variables["warming"] = (
            (scenario, draw, "time"),
            as_numpy(projection.warming),
            {
                "units": "K",
                "long_name": "global surface warming above the draw's own 1850-1900 "
                "mean, annual mean of the calendar year",
            },
        )
    return variables
