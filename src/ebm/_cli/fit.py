"""`ebm fit`: fits parameters to a target profile (a netCDF file with `T`, or the
equilibrium at `--truth` values); plots the fit."""

from . import common


NAME = "fit"


def add_parser(subparsers) -> None:
    """`ebm fit` and its flags, on `subparsers`."""
    parser = subparsers.add_parser(
        NAME,
        help="fit parameters to a profile",
        description=(
            "Fit --fit parameters to the profile T in --target (a netCDF file, e.g. "
            "from `ebm equilibrium --netcdf`) or to the equilibrium at --truth "
            "NAME=VALUE, starting from the given parameters, with L-BFGS."
        ),
    )
    parser.add_argument(
        "--fit", nargs="+", default=["D"], metavar="NAME", help="parameters (D)"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--target", metavar="FILE", help="netCDF file with T(lat); sets the grid"
    )
    source.add_argument(
        "--truth",
        nargs="+",
        metavar="NAME=VALUE",
        help="fit the equilibrium at these parameter values",
    )
    parser.add_argument("--steps", type=int, default=100, help="most steps (100)")
    common.add_progress(parser, "optimiser steps, with the loss")
    common.add_common(parser, "fit.png")


def run(arguments) -> dict:
    """The fit, its loss and convergence, and its plot."""
    import numpy as np
    import optax

    from .._analysis.fit import fit
    from .._steady.equilibrium import equilibrium

    grid = None
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
    model, params = common.setup(arguments, grid)
    if arguments.target is None:
        truth = {}
        for item in arguments.truth:
            name, _, value = item.partition("=")
            if name not in model.Params.field_names() or not value:
                raise ValueError(
                    f"`--truth` takes NAME=VALUE with NAME a parameter of the model "
                    f"({', '.join(model.Params.field_names())}), got {item!r}."
                )
            truth[name] = float(value)
        true_params = model.Params(**{**common.floats(params), **truth})
        target = equilibrium(true_params, model=model).T
    result = fit(
        params,
        target,
        fit=tuple(arguments.fit),
        model=model,
        optimizer=optax.lbfgs(),
        steps=arguments.steps,
        progress=common.progress(arguments),
    )
    report = {
        "n_lat": model.grid.n_lat,
        "terms": common.term_names(arguments),
        "fitted": {name: float(getattr(result.params, name)) for name in result.fitted},
        "initial": {name: float(getattr(params, name)) for name in result.fitted},
        "loss_K2": float(result.loss_history[-1]),
        "converged": bool(result.converged),
        "num_steps": int(result.num_steps),
    }

    def plot(path):
        from .._edges.plot import plot_fit

        initial = equilibrium(params, model=model)
        fitted = equilibrium(result.params, model=model)
        plot_fit(result, target, initial, fitted, path=path)

    return common.finish(report, result, result.params, arguments, plot)


def _target_grid(path, dataset):
    """The grid whose cell centres are the file's latitudes, or a ValueError."""
    import numpy as np

    from .._zonal.grid import Grid

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
