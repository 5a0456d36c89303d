"""The `ebm` command: one subcommand per main job.

- `ebm equilibrium`: the equilibrium from a start, its global mean, ice edge and the
    gradient of the global mean with respect to every parameter; plots T(lat).
- `ebm run`: a time integration under a chosen adjoint (or fixed steps with a
    checkpoint schedule), with the gradient of the final global mean; plots the
    latitude-time (Hovmoller) diagram.
- `ebm fit`: fits parameters to a target profile (a netCDF file with `T`, or the
    equilibrium at `--truth` values); plots the fit.
- `ebm sensitivity`: the forward-mode Jacobian of an output; plots the profiles.
- `ebm hysteresis`: the branch of equilibria in a parameter, with its folds.
- `ebm seasonal`: the seasonal cycle (periodic steady state); Hovmoller plot.
- `ebm memory`: memory and time of reverse mode under each checkpoint schedule.

Every subcommand takes `--json` (print JSON instead of text), `--plot FILE` /
`--no-plot`, `--netcdf FILE` (the result as CF netCDF, see `ebm.save`) and the model's
`--n-lat` and parameters (`--D 0.3 ...`). Bad arguments or parameters print one line
on stderr and exit with status 2; a solve that fails prints one line (after the
compile notice, if there was one) and exits with status 1. The long jobs show
progress (`run`: diffrax's meter on stdout; `fit`: a line on stderr) unless `--json`
or `--no-progress`. A subcommand whose first compilation lasts more than a second
says so on stderr (JAX compiles each program the first time it meets a grid and
settings, 10-30 s for some on 2 cores).
"""

import argparse
import json
import sys
import threading
import time


# The functions of JAX (in jax/_src) on the stack while it traces, lowers and
# compiles a program for `jit`: seen on the main thread, JAX is compiling.
_COMPILING = frozenset(
    ("_infer_params", "lower_sharding_computation", "compile_or_get_cached")
)


def _is_compiling(frame) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name in _COMPILING and "jax" in code.co_filename:
            return True
        frame = frame.f_back
    return False


class _CompileNotice:
    """Writes one line to stderr once JAX has been compiling on this thread for
    `delay` seconds without a break (checked every `interval` seconds by a daemon
    thread that reads the thread's stack); nothing for a quick compile, and
    nothing after the first line."""

    def __init__(self, command: str, delay: float = 1.0, interval: float = 0.05):
        self.command = command
        self.delay = delay
        self.interval = interval
        self.said = False
        self._thread_id = threading.get_ident()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self):
        self._watcher.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._watcher.join()

    def _watch(self) -> None:
        since = None
        while not self._stop.wait(self.interval):
            frame = sys._current_frames().get(self._thread_id)
            if not _is_compiling(frame):
                since = None
                continue
            now = time.monotonic()
            since = now if since is None else since
            if now - since >= self.delay:
                sys.stderr.write(
                    f"ebm {self.command}: compiling (once per process: JAX compiles "
                    "each program on first use for a grid and settings; 10-30 s for "
                    "some on 2 cores)...\n"
                )
                sys.stderr.flush()
                self.said = True
                return


def _add_common(parser: argparse.ArgumentParser, plot: str | None) -> None:
    from .._model.params import Params

    parser.add_argument("--n-lat", type=int, default=60, help="latitude cells (60)")
    parser.add_argument("--json", action="store_true", help="print JSON, not text")
    if plot is not None:
        parser.add_argument(
            "--plot", default=plot, metavar="FILE", help=f"plot file ({plot})"
        )
        parser.add_argument("--no-plot", action="store_true", help="do not plot")
    parser.add_argument(
        "--netcdf", metavar="FILE", default=None, help="write the result as netCDF"
    )
    group = parser.add_argument_group(
        "parameters (defaults: climlab's; ice_width, forcing and today's orbit are "
        "ebm's)"
    )
    for parameter in Params.declarations:
        spellings = [f"--{parameter.name}"]
        if "_" in parameter.name:
            spellings.append(f"--{parameter.name.replace('_', '-')}")
        units = "" if parameter.units == "1" else f", {parameter.units}"
        group.add_argument(
            *spellings,
            dest=parameter.name,
            type=float,
            default=None,
            metavar="X",
            help=f"{parameter.long_name} ({parameter.default:g}{units}; "
            f"{parameter.allowed})".replace("%", "%%"),
        )


def _add_max_steps(parser: argparse.ArgumentParser, limit: str) -> None:
    parser.add_argument(
        "--max-steps", type=int, default=None, metavar="N", help=f"{limit}"
    )


def _limits(arguments, name: str = "max_steps") -> dict:
    """`{name: --max-steps}` if it was given, else nothing (the API's default)."""
    value = getattr(arguments, name, None)
    return {} if value is None else {name: value}


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (and exit status 2, as argparse's)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ebm", description="Differentiable energy-balance climate model."
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser
    )
    starts = ["present", "warm", "cold"]

    eq = commands.add_parser(
        "equilibrium",
        help="equilibrium, its gradient, and a plot",
        description=(
            "Find the stable equilibrium reached from a start; print the global mean, "
            "ice edge, and d(global mean)/d(parameter) for every parameter by "
            "implicit differentiation; plot T(lat)."
        ),
    )
    eq.add_argument(
        "--start", default="present", choices=starts, help="branch (present)"
    )
    _add_max_steps(eq, "root-finder iteration limit (256)")
    eq.add_argument(
        "--transport-plot",
        metavar="FILE",
        default=None,
        help="also plot the northward heat transport",
    )
    _add_common(eq, "equilibrium.png")

    run = commands.add_parser(
        "run",
        help="time integration and its gradient",
        description=(
            "Integrate for --years from --start and differentiate the final global "
            "mean with respect to every parameter, under --adjoint (adaptive "
            "diffrax) or, with --dt, fixed steps under --checkpoint."
        ),
    )
    run.add_argument("--years", type=float, default=10.0, help="length (10)")
    run.add_argument(
        "--start", default="present", choices=starts, help="initial profile (present)"
    )
    run.add_argument(
        "--adjoint",
        default="recursive",
        choices=["recursive", "direct", "forward", "backsolve"],
        help="diffrax adjoint of the adaptive run (recursive)",
    )
    run.add_argument(
        "--dt",
        type=float,
        default=None,
        help="fixed step, years: fixed-step run (no history, so no plot)",
    )
    run.add_argument(
        "--stepper",
        default="imex",
        choices=["imex", "explicit", "implicit", "rosenbrock"],
        help="fixed-step stepper (imex)",
    )
    run.add_argument(
        "--checkpoint",
        default="sqrt",
        choices=["none", "step", "sqrt", "recursive"],
        help="reverse-mode schedule of fixed steps (sqrt)",
    )
    run.add_argument(
        "--saves", type=int, default=50, help="saved times of the adaptive run (50)"
    )
    _add_max_steps(
        run, "step limit of the adaptive run (default: integrate's, from --years)"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress meter")
    _add_common(run, "run.png")

    fit = commands.add_parser(
        "fit",
        help="fit parameters to a profile",
        description=(
            "Fit --fit parameters to the profile T in --target (a netCDF file, e.g. "
            "from `ebm equilibrium --netcdf`) or to the equilibrium at --truth "
            "NAME=VALUE, starting from the given parameters, with L-BFGS."
        ),
    )
    fit.add_argument(
        "--fit", nargs="+", default=["D"], metavar="NAME", help="parameters (D)"
    )
    source = fit.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--target", metavar="FILE", help="netCDF file with T(lat); sets the grid"
    )
    source.add_argument(
        "--truth",
        nargs="+",
        metavar="NAME=VALUE",
        help="fit the equilibrium at these parameter values",
    )
    fit.add_argument("--steps", type=int, default=100, help="most steps (100)")
    fit.add_argument("--no-progress", action="store_true", help="no progress line")
    _add_common(fit, "fit.png")

    sensitivity = commands.add_parser(
        "sensitivity",
        help="forward-mode Jacobian of an output",
        description=(
            "d output / d parameter for every (or --names) parameter, through the "
            "equilibrium's implicit solve."
        ),
    )
    sensitivity.add_argument(
        "--output",
        default="T",
        choices=["T", "global_mean", "ice_edge"],
        help="what to differentiate (T; only T is plotted)",
    )
    sensitivity.add_argument(
        "--names", nargs="+", default=None, metavar="NAME", help="(every parameter)"
    )
    sensitivity.add_argument(
        "--start", default="present", choices=starts, help="branch (present)"
    )
    _add_common(sensitivity, "sensitivity.png")

    hysteresis = commands.add_parser(
        "hysteresis",
        help="branch of equilibria and its folds",
        description=(
            "Continue the equilibria in --parameter from its value (--S0 etc.) to "
            "--stop, by pseudo-arclength continuation; print the folds."
        ),
    )
    hysteresis.add_argument(
        "--parameter", default="S0", help="parameter to continue in (S0)"
    )
    hysteresis.add_argument(
        "--stop",
        type=float,
        default=None,
        help="where to stop (required unless the parameter is S0: then 1000)",
    )
    hysteresis.add_argument(
        "--start", default="warm", choices=starts, help="branch to start on (warm)"
    )
    hysteresis.add_argument(
        "--max-points",
        type=int,
        default=None,
        metavar="N",
        help="most points of the branch (continuation's default, 2000)",
    )
    _add_common(hysteresis, "hysteresis.png")

    seasonal = commands.add_parser(
        "seasonal",
        help="the seasonal cycle (periodic steady state)",
        description=(
            "The periodic steady state of the model with daily insolation, by "
            "Newton-Krylov shooting; print its diagnostics and plot it."
        ),
    )
    seasonal.add_argument(
        "--steps-per-year", type=int, default=365, help="equal steps, >= 4 (365)"
    )
    _add_max_steps(seasonal, "Newton step limit of the shooting (32)")
    _add_common(seasonal, "seasonal_cycle.png")

    memory = commands.add_parser(
        "memory",
        help="memory of reverse mode under each checkpoint schedule",
        description=(
            "Compile and time the gradient of a fixed-step run under each schedule; "
            "print XLA's temporary memory and the time against the number of steps."
        ),
    )
    memory.add_argument(
        "--steps",
        type=int,
        nargs="+",
        default=[1000, 4000],
        metavar="N",
        help="run lengths (1000 4000)",
    )
    memory.add_argument(
        "--schedules",
        nargs="+",
        default=["none", "step", "sqrt"],
        metavar="NAME",
        help="none, step, sqrt, recursive, or nested:LEVELS, binomial:CHECKPOINTS, "
        "recursive:CHECKPOINTS (none step sqrt)",
    )
    memory.add_argument("--repeats", type=int, default=3, help="timed runs (3)")
    _add_common(memory, "memory.png")
    return parser


def _params(arguments):
    from .._model.params import Params

    overrides = {
        name: getattr(arguments, name)
        for name in Params.field_names()
        if getattr(arguments, name) is not None
    }
    return Params(**overrides)


def _setup(arguments):
    """The parameters and grid every subcommand starts from."""
    from .._model.grid import Grid

    return _params(arguments), Grid(arguments.n_lat)


def _floats(tree) -> dict:
    return {name: float(getattr(tree, name)) for name in type(tree).field_names()}


def _plot_path(arguments):
    return None if arguments.no_plot else arguments.plot


def _finish(report, result, params, arguments, plot, model=None) -> dict:
    """Draw the plot and write the netCDF file that were asked for.

    `plot` is a function of the path, or a string saying why there is none.
    """
    path = _plot_path(arguments)
    if path is not None and isinstance(plot, str):
        report["no_plot"] = plot
    elif path is not None:
        plot(path)
        report["plot"] = path
    if arguments.netcdf is not None:
        from .._edges.io import save

        save(result, arguments.netcdf, params, model=model)
        report["netcdf"] = arguments.netcdf
    return report


def _equilibrium(arguments) -> dict:
    import jax

    from .._model.model import EnergyBalanceModel
    from .._steady.equilibrium import equilibrium

    params, grid = _setup(arguments)
    model = EnergyBalanceModel(grid=grid)

    limits = _limits(arguments)

    def global_mean(params):
        return equilibrium(
            params, model=model, start=arguments.start, **limits
        ).global_mean

    state = equilibrium(params, model=model, start=arguments.start, **limits)
    gradient = jax.grad(global_mean)(params)
    report = {
        "n_lat": grid.n_lat,
        "start": arguments.start,
        "params": _floats(params),
        "global_mean_degC": float(state.global_mean),
        "ice_edge_degN": float(state.ice_edge),
        "stable": bool(state.stable),
        "leading_eigenvalue_W_m2_K": float(state.leading_eigenvalue),
        "residual_W_m2": float(state.residual),
        "iterations": int(state.num_steps),
        "d_global_mean_d": _floats(gradient),
    }
    if arguments.transport_plot is not None:
        from .._edges.plot import plot_heat_transport

        plot_heat_transport(state, params, model, arguments.transport_plot)
        report["transport_plot"] = arguments.transport_plot

    def plot(path):
        from .._edges.plot import plot_equilibrium

        plot_equilibrium(state, params, path)

    return _finish(report, state, params, arguments, plot, model)


def _print_equilibrium(report: dict) -> None:
    print(
        f"equilibrium from '{report['start']}' on {report['n_lat']} cells "
        f"({'stable' if report['stable'] else 'UNSTABLE'}, "
        f"{report['iterations']} iterations, residual {report['residual_W_m2']:.1e} "
        "W m-2)"
    )
    print(f"  global mean temperature  {report['global_mean_degC']:10.4f} degC")
    print(f"  ice edge                 {report['ice_edge_degN']:10.4f} degN")
    print("  d(global mean)/d(parameter), implicit differentiation:")
    for name, value in report["d_global_mean_d"].items():
        marker = "  <- diffusivity" if name == "D" else ""
        print(f"    d/d{name:<12s} {value: .8e}{marker}")


def _run(arguments) -> dict:
    import diffrax
    import jax
    import jax.numpy as jnp

    from .._stepping.integrate import integrate, integrate_fixed

    params, grid = _setup(arguments)
    progress = not (arguments.json or arguments.no_progress)
    years = arguments.years
    if arguments.saves < 2:
        raise ValueError(f"`--saves` must be at least 2, got {arguments.saves}.")
    if arguments.dt is None:
        saveat = diffrax.SaveAt(ts=jnp.linspace(0.0, arguments.years, arguments.saves))

        def run(params, **kwargs):
            return integrate(
                params,
                years=arguments.years,
                grid=grid,
                T0=arguments.start,
                adjoint=arguments.adjoint,
                **_limits(arguments),
                **kwargs,
            )

        trajectory = run(params, saveat=saveat, progress=progress)
        differentiate = jax.jacfwd if arguments.adjoint == "forward" else jax.grad
        how = f"adjoint {arguments.adjoint}"
    else:
        if arguments.max_steps is not None:
            raise ValueError(
                f"`--max-steps` {arguments.max_steps} limits an adaptive run; a "
                "fixed-step run (--dt) takes exactly --years / --dt steps."
            )
        if not arguments.dt > 0:
            raise ValueError(f"`--dt` must be > 0 years, got {arguments.dt}.")
        steps = round(arguments.years / arguments.dt)
        if steps < 1 or abs(steps * arguments.dt - arguments.years) > 1e-9 * max(
            arguments.years, 1.0
        ):
            raise ValueError(
                f"`--years` {arguments.years} must be a whole number (>= 1) of "
                f"`--dt` {arguments.dt} steps."
            )
        years = steps * arguments.dt

        def run(params):
            return integrate_fixed(
                params,
                dt=arguments.dt,
                steps=steps,
                grid=grid,
                T0=arguments.start,
                stepper=arguments.stepper,
                checkpoint=arguments.checkpoint,
            )

        trajectory = run(params)
        differentiate = jax.grad
        how = (
            f"{steps} fixed {arguments.stepper} steps, checkpoint "
            f"{arguments.checkpoint}"
        )
    gradient = differentiate(lambda p: run(p).global_mean)(params)
    report = {
        "n_lat": grid.n_lat,
        "years": years,
        "method": how,
        "params": _floats(params),
        "global_mean_degC": float(trajectory.global_mean),
        "ice_edge_degN": float(trajectory.ice_edge),
        "num_steps": int(trajectory.num_steps),
        "d_final_global_mean_d": _floats(gradient),
    }

    def plot(path):
        from .._edges.plot import plot_trajectory

        plot_trajectory(trajectory, params, path)

    return _finish(
        report,
        trajectory,
        params,
        arguments,
        plot
        if trajectory.Ts is not None
        else "fixed-step runs keep no history to plot (run without --dt)",
    )


def _fit(arguments) -> dict:
    import numpy as np
    import optax

    from .._analysis.fit import fit
    from .._model.params import Params
    from .._steady.equilibrium import equilibrium

    params, grid = _setup(arguments)
    if arguments.target is not None:
        from .._edges.io import load

        dataset = load(arguments.target)
        if "T" not in dataset or dataset["T"].dims != ("lat",):
            raise ValueError(
                f"`--target` {arguments.target} must hold a profile T(lat), as "
                "written by `ebm equilibrium --netcdf`."
            )
        target = dataset["T"].values
        if not np.all(np.isfinite(target)):
            raise ValueError(f"`--target` {arguments.target}: T has non-finite values.")
        grid = _target_grid(arguments.target, dataset)  # the file's, not --n-lat
    else:
        truth = {}
        for item in arguments.truth:
            name, _, value = item.partition("=")
            if name not in Params.field_names() or not value:
                raise ValueError(
                    f"`--truth` takes NAME=VALUE with NAME a parameter, got {item!r}."
                )
            truth[name] = float(value)
        target = equilibrium(Params(**{**_floats(params), **truth}), grid=grid).T
    result = fit(
        params,
        target,
        fit=tuple(arguments.fit),
        grid=grid,
        optimizer=optax.lbfgs(),
        steps=arguments.steps,
        progress=not (arguments.json or arguments.no_progress),
    )
    report = {
        "n_lat": grid.n_lat,
        "fitted": {name: float(getattr(result.params, name)) for name in result.fitted},
        "initial": {name: float(getattr(params, name)) for name in result.fitted},
        "loss_K2": float(result.loss_history[-1]),
        "converged": bool(result.converged),
        "num_steps": int(result.num_steps),
    }

    def plot(path):
        from .._edges.plot import plot_fit

        initial = equilibrium(params, grid=grid)
        fitted = equilibrium(result.params, grid=grid)
        plot_fit(result, target, initial, fitted, path)

    return _finish(report, result, result.params, arguments, plot)


def _target_grid(path, dataset):
    """The grid whose cell centres are the file's latitudes, or a ValueError."""
    import numpy as np

    from .._model.grid import Grid

    if "lat" not in dataset.coords:
        raise ValueError(
            f"`--target` {path}: T(lat) has no `lat` coordinate, so its grid is "
            "unknown; write it with `ebm equilibrium --netcdf`."
        )
    lat = np.asarray(dataset["lat"].values, dtype=float)
    n_lat = lat.size
    if n_lat < 2:
        raise ValueError(
            f"`--target` {path}: {n_lat} latitude(s); ebm's grids have at least 2."
        )
    expected = np.asarray(Grid(n_lat).lat)
    if not np.allclose(lat, expected, rtol=0.0, atol=1e-6):
        worst = int(np.argmax(np.abs(lat - expected)))
        raise ValueError(
            f"`--target` {path}: its {n_lat} latitudes ({lat[0]:g} to {lat[-1]:g} "
            "degN) are not the centres of a regular pole-to-pole grid of "
            f"{n_lat} cells ({expected[0]:g} to {expected[-1]:g} degN, "
            f"{180 / n_lat:g} degrees apart; latitude {worst} is {lat[worst]:g}, not "
            f"{expected[worst]:g}). ebm fits on such a grid only: give the whole "
            "pole-to-pole profile, e.g. as written by `ebm equilibrium --netcdf`."
        )
    return Grid(n_lat)


def _sensitivity(arguments) -> dict:
    from .._analysis.fit import sensitivity

    params, grid = _setup(arguments)
    result = sensitivity(
        params,
        arguments.output,
        names=arguments.names,
        grid=grid,
        start=arguments.start,
    )
    report = {
        "n_lat": grid.n_lat,
        "output": arguments.output,
        "params": _floats(params),
        "jacobian": {
            name: (
                [float(x) for x in result[name]]
                if arguments.output == "T"
                else float(result[name])
            )
            for name in result.names
        },
    }

    def plot(path):
        from .._edges.plot import plot_sensitivity

        plot_sensitivity(result, params, path)

    return _finish(
        report,
        result,
        params,
        arguments,
        plot if arguments.output == "T" else "only --output T has a profile to plot",
    )


def _hysteresis(arguments) -> dict:
    from .._steady.continuation import continuation

    params, grid = _setup(arguments)
    stop = arguments.stop
    if stop is None:
        if arguments.parameter != "S0":
            raise ValueError(
                f"`--stop` is needed to continue in {arguments.parameter!r} (only S0 "
                "has a default, 1000)."
            )
        stop = 1000.0
    branch = continuation(
        params,
        arguments.parameter,
        stop=stop,
        start=arguments.start,
        grid=grid,
        **_limits(arguments, "max_points"),
    )
    report = {
        "n_lat": grid.n_lat,
        "parameter": arguments.parameter,
        "from": float(getattr(params, arguments.parameter)),
        "stop": stop,
        "points": branch.num_points,
        "folds": [
            {
                "value": float(fold.value),
                "ice_edge_degN": float(fold.ice_edge),
                "global_mean_degC": float(fold.global_mean),
                "branches_exist": "above" if int(fold.side) > 0 else "below",
            }
            for fold in branch.folds
        ],
    }

    def plot(path):
        from .._edges.plot import plot_branch

        plot_branch(branch, path)

    return _finish(report, branch, params, arguments, plot)


def _seasonal(arguments) -> dict:
    from .._steady.seasonal import periodic_equilibrium

    params, grid = _setup(arguments)
    cycle = periodic_equilibrium(
        params,
        grid=grid,
        steps_per_year=arguments.steps_per_year,
        **_limits(arguments),
    )
    report = {
        "n_lat": grid.n_lat,
        "steps_per_year": arguments.steps_per_year,
        "params": _floats(params),
        "newton_steps": int(cycle.num_steps),
        "residual_K": float(cycle.residual),
        "annual_global_mean_degC": float(cycle.annual_global_mean),
        "annual_mean_ice_edge_degN": float(cycle.annual_mean_ice_edge),
        "ice_edge_range_degN": [
            float(cycle.ice_edge.min()),
            float(cycle.ice_edge.max()),
        ],
        "amplitude_K_north_pole": float(cycle.amplitude[-1]),
    }

    def plot(path):
        from .._edges.plot import plot_seasonal_cycle

        plot_seasonal_cycle(cycle, params, path)

    return _finish(report, cycle, params, arguments, plot)


def _memory(arguments) -> dict:
    from .._model.grid import Grid
    from .._model.model import EnergyBalanceModel
    from .._stepping.checkpoints import resolve_checkpoint
    from .._stepping.memory import memory_table

    params = _params(arguments)
    schedules = [_schedule(name) for name in arguments.schedules]
    for schedule in schedules:
        resolve_checkpoint(schedule)  # reject a bad one before any work
    rows = memory_table(
        arguments.steps,
        schedules,
        params=params,
        model=EnergyBalanceModel(grid=Grid(arguments.n_lat)),
        repeats=arguments.repeats,
        progress=(lambda *a: None) if arguments.json else print,
    )
    report = {"n_lat": arguments.n_lat, "rows": rows}
    if arguments.netcdf is not None:
        _memory_netcdf(rows, params, arguments.netcdf)
        report["netcdf"] = arguments.netcdf
    path = _plot_path(arguments)
    if path is not None:
        from .._edges.plot import plot_memory_scaling

        plot_memory_scaling(rows, path)
        report["plot"] = path
    return report


def _schedule(text: str):
    """`name` or `name:count` (e.g. `binomial:8`) as `integrate_fixed` takes it."""
    name, colon, count = text.partition(":")
    if not colon:
        return name
    if not count.isdigit() or int(count) < 1:
        raise ValueError(
            f"`--schedules` takes NAME or NAME:COUNT with COUNT a positive integer, "
            f"got {text!r}."
        )
    return (name, int(count))


def _memory_netcdf(rows, params, path) -> None:
    import numpy as np
    import xarray

    from .._edges.io import _global_attributes, save

    schedules = list(dict.fromkeys(row["schedule"] for row in rows))
    steps = sorted({row["steps"] for row in rows})
    shape = (len(schedules), len(steps))
    variables = {}
    for key, units, long_name in (
        ("temporary_megabytes", "MB", "XLA temporary memory of the gradient"),
        ("seconds", "s", "median time of the gradient"),
    ):
        values = np.full(shape, np.nan)
        for row in rows:
            value = row.get(key)
            if value is not None:
                index = (schedules.index(row["schedule"]), steps.index(row["steps"]))
                values[index] = float(value)
        variables[key] = (
            ("schedule", "steps"),
            values,
            {"units": units, "long_name": long_name},
        )
    # CF coordinates are numeric: the schedules are labels of an index.
    variables["schedule_name"] = (
        "schedule",
        np.asarray(schedules, dtype=str),
        {"long_name": "checkpoint schedule"},
    )
    dataset = xarray.Dataset(
        variables,
        coords={
            "steps": ("steps", np.asarray(steps), {"long_name": "time steps"}),
        },
        attrs=_global_attributes("memory table", params),
    )
    save(dataset, path)


def _print_report(report: dict, command: str) -> None:
    if command == "equilibrium":
        _print_equilibrium(report)
    else:
        for key, value in report.items():
            if key in ("rows", "plot", "transport_plot", "netcdf", "no_plot"):
                continue
            if isinstance(value, dict) and any(
                isinstance(item, list) for item in value.values()
            ):
                print(f"{key} (largest magnitude over latitude):")
                for name, item in value.items():
                    print(f"  {name:<14s} {max(item, key=abs): .6g}")
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                print(f"{key}:")
                for item in value:
                    print(
                        "  "
                        + ", ".join(
                            f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in item.items()
                        )
                    )
            elif isinstance(value, dict) and len(value) > 4:
                print(f"{key}:")
                for name, item in value.items():
                    print(f"  {name:<14s} {item}")
            else:
                print(f"{key}: {value}")
    for key in ("plot", "transport_plot", "netcdf"):
        if key in report:
            print(f"  wrote {report[key]}")
    if "no_plot" in report:
        print(f"  no plot: {report['no_plot']}")


COMMANDS = {
    "equilibrium": _equilibrium,
    "run": _run,
    "fit": _fit,
    "sensitivity": _sensitivity,
    "hysteresis": _hysteresis,
    "seasonal": _seasonal,
    "memory": _memory,
}


def _check_outputs(arguments) -> None:
    """Fail before any work when a file to write cannot be written there."""
    import os
    import pathlib
    import tempfile

    outputs = {
        "--netcdf": arguments.netcdf,
        "--plot": _plot_path(arguments),
        "--transport-plot": getattr(arguments, "transport_plot", None),
    }
    for option, path in outputs.items():
        if path is None:
            continue
        path = pathlib.Path(path)
        if path.is_dir():
            raise ValueError(f"`{option}` {path} is a directory, not a file name.")
        folder = path.resolve().parent
        if folder.exists() and not folder.is_dir():
            raise ValueError(
                f"`{option}` {path}: {path.parent} is a file, not a folder."
            )
        if not folder.is_dir():
            raise ValueError(f"`{option}` {path}: the folder {path.parent} is missing.")
        if path.exists() and not os.access(path, os.W_OK):
            raise ValueError(f"`{option}` {path}: the file exists and is read-only.")
        # The permission bits do not tell (root, read-only mounts): try, as the
        # writer will, to create a file in the folder.
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".ebm-check-"):
                pass
        except OSError as error:
            raise ValueError(
                f"`{option}` {path}: cannot write in the folder {path.parent} "
                f"({error.strerror}); choose a writable folder."
            ) from None


def main(argv=None) -> int:
    """Entry point of the `ebm` command; returns the exit status."""
    import equinox as eqx

    from .._results import error_message

    parser = _parser()
    arguments = parser.parse_args(argv)
    try:
        _check_outputs(arguments)
        with _CompileNotice(arguments.command):
            report = COMMANDS[arguments.command](arguments)
    except (ValueError, TypeError, KeyError, OSError, ImportError) as error:
        print(f"ebm: error: {error_message(error)}", file=sys.stderr)
        return 2
    except (eqx.EquinoxRuntimeError, RuntimeError) as error:
        print(f"ebm: the solve failed: {error_message(error)}", file=sys.stderr)
        return 1
    if arguments.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report, arguments.command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
