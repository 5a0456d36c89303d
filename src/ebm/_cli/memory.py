"""`ebm memory`: memory and time of reverse mode under each checkpoint schedule."""

from . import common


NAME = "memory"


def add_parser(subparsers) -> None:
    """`ebm memory` and its flags, on `subparsers`."""
    from .._stepping.checkpoints import spellings

    parser = subparsers.add_parser(
        NAME,
        help="memory of reverse mode under each checkpoint schedule",
        description=(
            "Compile and time the gradient of a fixed-step run under each schedule; "
            "print XLA's temporary memory and the time against the number of steps."
        ),
    )
    parser.add_argument(
        "--steps",
        type=int,
        nargs="+",
        default=[1000, 4000],
        metavar="N",
        help="run lengths (1000 4000)",
    )
    parser.add_argument(
        "--schedules",
        nargs="+",
        default=["none", "step", "sqrt"],
        metavar="NAME",
        help=f"{spellings(text=True)}; NAME:SIZE is NAME-SIZE (none step sqrt)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (3)")
    common.add_common(parser, "memory.png")


def run(arguments) -> dict:
    """The memory table of `--schedules` at each `--steps`, and its plot."""
    from .._stepping.checkpoints import parse_checkpoint, resolve_checkpoint
    from .._stepping.memory import memory_table

    model, params = common.setup(arguments)
    schedules = [parse_checkpoint(name, "--schedules") for name in arguments.schedules]
    for schedule in schedules:
        resolve_checkpoint(schedule)  # reject a bad one before any work
    rows = memory_table(
        arguments.steps,
        schedules,
        params=params,
        model=model,
        repeats=arguments.repeats,
        progress=(lambda *a: None) if arguments.json else print,
    )
    report = {
        "n_lat": arguments.n_lat,
        "terms": common.term_names(arguments),
        "rows": rows,
    }
    if arguments.netcdf is not None:
        _memory_netcdf(rows, params, arguments.netcdf)
        report["netcdf"] = arguments.netcdf
    path = common.plot_path(arguments)
    if path is not None:
        from .._edges.plot import plot_memory_scaling

        plot_memory_scaling(rows, path=path)
        report["plot"] = path
    return report


def _memory_netcdf(rows, params, path) -> None:
    """The table as CF netCDF: temporary memory and time by (schedule, steps), the
    schedules' labels as a variable of the schedule index."""
    import numpy as np
    import xarray

    from .._edges.io import save
    from .._edges.variables import global_attributes

    schedules = list(dict.fromkeys(row["schedule"] for row in rows))
    steps = sorted({row["steps"] for row in rows})
    shape = (len(schedules), len(steps))
    variables = {}
    # UDUNITS-2 knows the byte by name only: "MB" would read as a megabel (B, the
    # bel), a logarithmic unit, and the CF checker refuses it.
    for key, units, long_name in (
        ("temporary_megabytes", "megabyte", "XLA temporary memory of the gradient"),
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
        attrs=global_attributes("memory table", params),
    )
    save(dataset, path)
