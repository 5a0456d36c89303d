"""What every subcommand shares: the common flags, the flags that choose the model's
terms and set their parameters, the model and parameters they give, the plot and
netCDF file a subcommand writes, the check that those files can be written, and the
printing of a report.

The terms are ebm's own, found by `ebm._zonal.catalogue`: one flag per kind of
term (`--longwave NAME`, `--albedo NAME`, ...; `--forcing-term NAME`, since `--forcing`
is the uniform forcing's parameter), whose choices are the terms of that kind that a
name alone can build, and one flag per parameter any of them declares (`--D X`). A
parameter flag for a term the model does not have is an error, not ignored.
"""

import argparse


FIXED_ALBEDO = "fixed"
"""`--albedo fixed`: the albedo of this model's equilibrium with the default albedo,
at the given parameters, held fixed (`ebm.PrescribedAlbedo`): no ice-albedo
feedback."""


def number_text(x) -> str:
    """A number as `%g`, or a profile as its numbers, comma-separated."""
    import numpy as np

    if np.ndim(x) == 0:
        return f"{float(x):g}"
    return ",".join(f"{float(v):g}" for v in np.ravel(x))


def declarations() -> dict:
    """Every parameter of ebm's terms and the terms that declare it (see
    `ebm._zonal.catalogue.parameters_by_name`)."""
    from .._zonal.catalogue import parameters_by_name

    return parameters_by_name()


def kind_flag(kind: str) -> str:
    """The flag that chooses the term of `kind`: `--KIND` (`--heat-capacity`), or
    `--KIND-term` where a parameter already has the name `--KIND`."""
    flag = f"--{kind.replace('_', '-')}"
    return f"{flag}-term" if kind in declarations() else flag


def default_terms(**defaults) -> dict:
    """The term class of each kind that `EnergyBalanceModel` has by default, or as
    `defaults` gives it (`insolation=DailyInsolation`)."""
    from .._zonal.catalogue import KINDS
    from .._zonal.model import EnergyBalanceModel

    fields = EnergyBalanceModel.__dataclass_fields__
    return {kind: defaults.get(kind, type(fields[kind].default)) for kind in KINDS}


def selection_flags(terms) -> list[str]:
    """The flags that select each of `terms` on the command line
    (`"--longwave grey-body"`), leaving out those a name alone cannot build."""
    from .._zonal.catalogue import cli_name, kind_of, selectable

    return [
        f"{kind_flag(kind_of(term))} {cli_name(term)}"
        for term in terms
        if selectable(kind_of(term)).get(cli_name(term)) is term
    ]


def how_to_select(terms) -> str:
    """How to select one of `terms` on the command line, or why it cannot be."""
    ways = selection_flags(terms)
    if not ways:
        return "a term that the command line cannot build (it takes arguments)"
    return " or ".join(ways)


def count(minimum: int):
    """The `type=` of a flag that counts something: an integer >= `minimum`
    (argparse then names the flag in its error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum}, got {text!r}"
            )
        return value

    parse.__name__ = "count"
    return parse


def _parse_value(parameter):
    """The `type=` of a parameter's flag: a number, or, for a parameter whose value
    is a profile (`ndim` > 0), a number (the same everywhere) or a comma-separated
    list."""
    ndim = getattr(parameter, "ndim", 0)

    def parse(text: str):
        try:
            values = [float(item) for item in text.split(",")]
        except ValueError:
            values = []
        if not values or (ndim == 0 and len(values) > 1):
            expected = "a number" if ndim == 0 else "a number or numbers a,b,..."
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        if len(values) == 1:
            return values[0]
        import numpy as np

        return np.asarray(values)

    parse.__name__ = parameter.name
    return parse


def add_common(parser: argparse.ArgumentParser, plot: str | None, **terms) -> None:
    """The flags every subcommand takes.

    `--n-lat`, `--json`, `--plot FILE` and `--no-plot` (when `plot` names a default
    file), `--netcdf FILE`; one flag per kind of term, defaulting to
    `EnergyBalanceModel`'s or to `terms` (`insolation=DailyInsolation`); and one flag
    per parameter that ebm's terms declare (`--D X`, `--ice-width X`), with its long
    name, default, units and range, and, for a parameter of none of the default
    terms, the flag that selects its term.
    """
    from .._zonal.catalogue import KINDS, cli_name, selectable

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
    defaults = default_terms(**terms)
    group = parser.add_argument_group("terms of the model (ebm's; defaults: climlab's)")
    for kind, base in KINDS.items():
        choices = list(selectable(kind))
        described = [
            f"{name} ({term.__name__})" for name, term in selectable(kind).items()
        ]
        if kind == "albedo":
            choices.append(FIXED_ALBEDO)
            described.append(
                f"{FIXED_ALBEDO} (this model's equilibrium's albedo with "
                f"{cli_name(defaults[kind])}, held fixed: no ice-albedo feedback)"
            )
        summary = base.__doc__.strip().splitlines()[0].rstrip(".").split(", ")[0]
        group.add_argument(
            kind_flag(kind),
            dest=f"{kind}_term",
            default=cli_name(defaults[kind]),
            choices=choices,
            metavar="NAME",
            help=f"{summary}: {', '.join(described)}; default "
            f"{cli_name(defaults[kind])}".replace("%", "%%"),
        )
    groups = {
        True: parser.add_argument_group(
            "parameters of those terms (defaults: climlab's; ice_width, forcing and "
            "today's orbit are ebm's)"
        ),
        False: parser.add_argument_group(
            "parameters of other terms (each needs its term selected)"
        ),
    }
    for name, (parameter, owners) in declarations().items():
        # `--ice-width`; `main` reads `--ice_width` (a parameter's own name) as it.
        spellings = [f"--{name.replace('_', '-')}"]
        units = "" if parameter.units == "1" else f", {parameter.units}"
        by_default = any(term in defaults.values() for term in owners)
        needs = "" if by_default else f"; needs {how_to_select(owners)}"
        groups[by_default].add_argument(
            *spellings,
            dest=name,
            type=_parse_value(parameter),
            default=None,
            metavar="X",
            help=f"{parameter.long_name} ({number_text(parameter.default)}{units}; "
            f"{parameter.allowed}{needs})".replace("%", "%%"),
        )


def add_outputs(parser: argparse.ArgumentParser, plot: str, what: str) -> None:
    """`--json`, `--plot FILE` (default `plot`), `--no-plot` and `--netcdf FILE`
    (writing `what`), for a subcommand of a model other than the zonal one."""
    parser.add_argument("--json", action="store_true", help="print JSON, not text")
    parser.add_argument("--plot", default=plot, metavar="FILE", help=f"({plot})")
    parser.add_argument("--no-plot", action="store_true", help="do not plot")
    parser.add_argument(
        "--netcdf", metavar="FILE", default=None, help=f"write the {what} as netCDF"
    )


def add_declared_parameters(group, declared) -> None:
    """One float flag per parameter, `{name: (ebm.Parameter, owners)}`: its long
    name, default, units, allowed range and (if any) the models that have it."""
    for name, (parameter, owners) in declared.items():
        units = "" if parameter.units == "1" else f", {parameter.units}"
        models = f"; {', '.join(owners)}" if owners else ""
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            type=float,
            default=None,
            metavar="X",
            help=f"{parameter.long_name} ({number_text(parameter.default)}"
            f"{units}; {parameter.allowed}{models})".replace("%", "%%"),
        )


def add_progress(parser: argparse.ArgumentParser, what: str) -> None:
    """`--progress` / `--no-progress`: a bar on stderr counting `what` (stdout keeps
    the report alone); by default shown, except under `--json`."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"a progress bar on stderr ({what}); default: shown, except with --json",
    )


def progress(arguments) -> bool:
    """Whether to show the progress bar: as `--progress`/`--no-progress` say, else
    unless `--json`."""
    if arguments.progress is None:
        return not arguments.json
    return arguments.progress


def add_max_steps(parser: argparse.ArgumentParser, limit: str) -> None:
    """`--max-steps N`, whose help says what it limits (`limit`)."""
    parser.add_argument(
        "--max-steps", type=int, default=None, metavar="N", help=f"{limit}"
    )


def limits(arguments, name: str = "max_steps") -> dict:
    """`{name: --max-steps}` if it was given, else nothing (the API's default)."""
    value = getattr(arguments, name, None)
    return {} if value is None else {name: value}


def term_names(arguments) -> dict:
    """The command-line name of each kind's term that was chosen, by kind."""
    from .._zonal.catalogue import KINDS

    return {kind: getattr(arguments, f"{kind}_term") for kind in KINDS}


def _term_classes(arguments) -> dict:
    """The term class of each kind that was chosen (`--albedo fixed`: the default
    albedo, whose equilibrium's albedo is held)."""
    from .._zonal.catalogue import selectable

    classes = {}
    for kind, name in term_names(arguments).items():
        if kind == "albedo" and name == FIXED_ALBEDO:
            classes[kind] = default_terms()[kind]
        else:
            classes[kind] = selectable(kind)[name]
    return classes


def check_parameter_flags(arguments, terms) -> None:
    """Refuse a parameter flag that none of the term classes `terms` declares.

    **Raises:**

    - `ValueError`: naming the flag, the terms that declare it and how to select
        one.
    """
    declared = {parameter.name for term in terms for parameter in term.parameters}
    for name, (_, owners) in declarations().items():
        if getattr(arguments, name, None) is None or name in declared:
            continue
        raise ValueError(
            f"`--{name}` needs {how_to_select(owners)}: it is a parameter of "
            f"{' or '.join(term.__name__ for term in owners)}, which this model does "
            "not have."
        )


def make_params(arguments, container):
    """The parameters `container` (a model's `Params`) with the parameter flags that
    were given, the rest defaults. A number given for a profile (a parameter with
    `ndim` > 0) is the same at every point of it."""
    import numpy as np

    defaults = container()
    overrides = {}
    for name in container.field_names():
        value = getattr(arguments, name, None)
        if value is None:
            continue
        shape = np.shape(getattr(defaults, name))
        if np.ndim(value) == 0 and shape != ():
            value = np.broadcast_to(value, shape)
        overrides[name] = value
    return container(**overrides)


def setup(arguments, grid=None, start=None):
    """The model the term flags choose, on `grid` (default: `--n-lat` cells), and
    its parameters from the parameter flags.

    `--albedo fixed` holds the albedo of the equilibrium from `start` (default the
    subcommand's `--start`, else `"present"`) of the model with the default albedo.

    **Raises:**

    - `ValueError`: for a parameter flag whose term the model does not have, or a
        parameter out of its range.
    """
    from .._zonal.grid import Grid
    from .._zonal.model import EnergyBalanceModel

    grid = Grid(arguments.n_lat) if grid is None else grid
    classes = _term_classes(arguments)
    check_parameter_flags(arguments, classes.values())
    model = EnergyBalanceModel(
        grid=grid, **{kind: term() for kind, term in classes.items()}
    )
    params = make_params(arguments, model.Params)
    if term_names(arguments)["albedo"] == FIXED_ALBEDO:
        start = getattr(arguments, "start", "present") if start is None else start
        model, params = _fixed_albedo(model, params, start)
    return model, params


def _fixed_albedo(model, params, start):
    """`model` with its albedo held at that of its equilibrium from `start`, and
    `params` in the new model's container."""
    from .._steady.equilibrium import equilibrium
    from .._zonal.albedo.prescribed import PrescribedAlbedo
    from .._zonal.catalogue import KINDS
    from .._zonal.model import EnergyBalanceModel

    try:
        reference = equilibrium(params, model=model, start=start)
    except ValueError as error:
        raise ValueError(
            f"`--albedo {FIXED_ALBEDO}` holds the albedo of an equilibrium: {error}"
        ) from None
    albedo = PrescribedAlbedo(model.albedo(reference.T, params, model.grid))
    terms = {kind: getattr(model, kind) for kind in KINDS}
    fixed = EnergyBalanceModel(grid=model.grid, **{**terms, "albedo": albedo})
    values = {name: getattr(params, name) for name in type(params).field_names()}
    return fixed, fixed.Params(**values)


def floats(tree) -> dict:
    """`{name: value}` for every field of a `Params` (or its gradient): a float, or
    a list for a profile."""
    import numpy as np

    values = {}
    for name in type(tree).field_names():
        value = np.asarray(getattr(tree, name))
        values[name] = float(value) if value.ndim == 0 else value.tolist()
    return values


def add_derivatives(report: dict, key: str, gradient, output_units: str) -> None:
    """`report[key]`: `{name: d output / d name}` for every field of `gradient`, and
    `report[key + "_units"]`: the units of each, as the files write them
    (`"(K) (W m-2)-1"`: the output's over the parameter's, differences of degC in
    K)."""
    from .._edges.analysis_variables import derivative_attributes

    container = type(gradient)
    report[key] = floats(gradient)
    report[f"{key}_units"] = {
        name: derivative_attributes("", output_units, name, container)["units"]
        for name in container.field_names()
    }


def print_derivatives(report: dict, key: str, heading: str) -> None:
    """`report[key]` (from `add_derivatives`), one parameter a line with its units."""
    print(f"  {heading}:")
    units = report.get(f"{key}_units", {})
    for name, value in report[key].items():
        value = max(value, key=abs) if isinstance(value, list) else value
        print(f"    d/d{name:<14s} {value: .8e} {units.get(name, '')}")


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
    if getattr(arguments, "netcdf", None) is not None:
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
        "--netcdf": getattr(arguments, "netcdf", None),
        "--plot": plot_path(arguments),
        "--transport-plot": getattr(arguments, "transport_plot", None),
        "--table": getattr(arguments, "table", None),
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
        if key.endswith("_units") and key[: -len("_units")] in report:
            continue  # printed beside its values
        if key.startswith("d_") and f"{key}_units" in report:
            print_derivatives(report, key, key)
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
                print(f"  {name:<14s} {_text(item)}")
        else:
            print(f"{key}: {_text(value)}")


def _text(value) -> str:
    """A report's value as text: numbers to 6 significant figures (a profile's
    ends and length), a small table as `name value, ...`, anything else as it is."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return ", ".join(f"{name} {_text(item)}" for name, item in value.items())
    if isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        if len(value) <= 4:
            return ", ".join(f"{v:.6g}" for v in value)
        return f"{value[0]:.6g}, {value[1]:.6g}, ..., {value[-1]:.6g} ({len(value)})"
    return str(value)


def print_report(report: dict, summary=print_fields) -> None:
    """`summary(report)` (the subcommand's own, or `print_fields`), then the files
    the subcommand wrote."""
    summary(report)
    for key in ("plot", "transport_plot", "netcdf"):
        if key in report:
            print(f"  wrote {report[key]}")
    if "no_plot" in report:
        print(f"  no plot: {report['no_plot']}")
