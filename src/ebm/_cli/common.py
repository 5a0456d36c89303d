"""What every subcommand of the `ebm` command shares: the common flags and the
model's parameter flags, the parameters and grid they give, the plot and netCDF
file a subcommand writes, the check that those files can be written, and the
printing of a report."""

import argparse

import numpy as np


def add_common(parser: argparse.ArgumentParser, plot: str | None) -> None:
    """The flags every subcommand takes: `--n-lat`, `--json`, `--plot FILE` and
    `--no-plot` (when `plot` names a default file), `--netcdf FILE`, and one flag per
    parameter the model's terms declare (`--D X`; `--ice_width` also as
    `--ice-width`), with its long name, default, units and range."""
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


def add_max_steps(parser: argparse.ArgumentParser, limit: str) -> None:
    """`--max-steps N`, whose help says what it limits (`limit`)."""
    parser.add_argument(
        "--max-steps", type=int, default=None, metavar="N", help=f"{limit}"
    )


def limits(arguments, name: str = "max_steps") -> dict:
    """`{name: --max-steps}` if it was given, else nothing (the API's default)."""
    value = getattr(arguments, name, None)
    return {} if value is None else {name: value}


def make_params(arguments):
    """`ebm.Params` with the parameter flags that were given, the rest defaults."""
    from .._model.params import Params

    overrides = {
        name: getattr(arguments, name)
        for name in Params.field_names()
        if getattr(arguments, name) is not None
    }
    return Params(**overrides)


def setup(arguments):
    """The parameters and grid every subcommand starts from."""
    from .._model.grid import Grid

    return make_params(arguments), Grid(arguments.n_lat)


def floats(tree) -> dict:
    """`{name: float}` for every field of a `Params` (or its gradient); a
    profile's value is a list of floats."""
    return {
        name: np.asarray(getattr(tree, name), dtype=float).tolist()
        for name in type(tree).field_names()
    }


def plot_path(arguments):
    """The plot file asked for, or `None` under `--no-plot`."""
    return None if arguments.no_plot else arguments.plot


def finish(report, result, params, arguments, plot, model=None) -> dict:
    """Draw the plot and write the netCDF file that were asked for.

    `plot` is a function of the path, or a string saying why there is none.
    """
    path = plot_path(arguments)
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


def check_outputs(arguments) -> None:
    """Fail before any work when a file to write cannot be written there."""
    import os
    import pathlib
    import tempfile

    outputs = {
        "--netcdf": arguments.netcdf,
        "--plot": plot_path(arguments),
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


def print_fields(report: dict) -> None:
    """A report as text: one line per field, tables indented under their name."""
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


def print_report(report: dict, summary=print_fields) -> None:
    """`summary(report)` (the subcommand's own, or `print_fields`), then the files
    the subcommand wrote."""
    summary(report)
    for key in ("plot", "transport_plot", "netcdf"):
        if key in report:
            print(f"  wrote {report[key]}")
    if "no_plot" in report:
        print(f"  no plot: {report['no_plot']}")
