"""`ebm transient`: an ocean-layer model (global, or the zonal model over a deep
ocean) under a CMIP experiment, the historical forcing or a forcing of the user's
file; ECS, TCR, the effective sensitivity and the gradient of TCR, and for the zonal
model the polar amplification."""

from . import common


NAME = "transient"

MODELS = ("two-layer", "three-layer", "zonal-deep-ocean")
SCENARIOS = ("1pctCO2", "abrupt-4xCO2", "abrupt-2xCO2", "historical")


def _containers() -> dict:
    """Each model's parameter container, without building a model (a zonal one
    holds arrays, and would start JAX's backend while the parser is made)."""
    from .._deep_ocean.model import params_of
    from .._layers.n_layer import NLayerModel
    from .._layers.two_layer import TwoLayerModel
    from .._zonal.params import Params

    return {
        "two-layer": TwoLayerModel().Params,
        "three-layer": NLayerModel(3).Params,
        "zonal-deep-ocean": params_of(Params),
    }


def _model(name: str, n_lat: int):
    from .._deep_ocean.model import DeepOceanModel
    from .._layers.n_layer import NLayerModel
    from .._layers.two_layer import TwoLayerModel
    from .._zonal.grid import Grid
    from .._zonal.model import EnergyBalanceModel

    if name == "two-layer":
        return TwoLayerModel()
    if name == "three-layer":
        return NLayerModel(3)
    return DeepOceanModel(surface=EnergyBalanceModel(grid=Grid(n_lat)))


def add_parser(subparsers) -> None:
    """`ebm transient` and its flags, on `subparsers`."""
    parser = subparsers.add_parser(
        NAME,
        help="an ocean-layer model under a CMIP experiment; ECS and TCR",
        description=(
            "Run a global two- or three-layer ocean model, or the zonal model over a "
            "deep ocean, under 1pctCO2, an abrupt CO2 experiment, the AR6 historical "
            "forcing (1750-2019) or a forcing series of your own (--forcing-file "
            "FILE.csv); print its ECS, "
            "TCR, effective sensitivity (Gregory regression of abrupt-4xCO2, years "
            "1-150), ocean heat uptake efficiency and d(TCR)/d(parameter) for every "
            "parameter, and for the zonal model its polar amplification (warming "
            "poleward of 60 degrees over the global mean's, years 61-80 of "
            "1pctCO2); plot the run."
        ),
    )
    parser.add_argument(
        "--model", choices=MODELS, default="two-layer", help="(two-layer)"
    )
    parser.add_argument(
        "--n-lat",
        type=int,
        default=None,
        help="latitude cells of the zonal model (30)",
    )
    parser.add_argument(
        "--scenario", choices=SCENARIOS, default="1pctCO2", help="(1pctCO2)"
    )
    parser.add_argument(
        "--forcing-file",
        metavar="FILE.csv",
        default=None,
        help="a forcing series instead of --scenario: two comma-separated columns, "
        "the year and the effective radiative forcing in W m-2 (a header line is "
        "skipped), linearly interpolated; the run starts at its first year",
    )
    parser.add_argument(
        "--years",
        type=float,
        default=None,
        help="length of the run, years (150; a series' whole span)",
    )
    parser.add_argument(
        "--no-gradient",
        action="store_true",
        help="skip d(TCR)/d(parameter) (its reverse-mode pass through the run)",
    )
    common.add_outputs(parser, "transient.png", "run")
    group = parser.add_argument_group("parameters (each model's own)")
    seen = {}
    for label, container in _containers().items():
        for parameter in container.declarations:
            seen.setdefault(parameter.name, (parameter, []))[1].append(label)
    common.add_declared_parameters(group, seen)


def run(arguments) -> dict:
    """The run, the model's metrics, and the plot."""
    import diffrax
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from .._layers.metrics import (
        ecs,
        gregory,
        heat_uptake_efficiency,
        polar_amplification,
        tcr,
    )
    from .._scenarios.base import run_start
    from .._stepping.integrate import integrate

    zonal = arguments.model == "zonal-deep-ocean"
    if arguments.n_lat is not None and not zonal:
        raise ValueError(
            f"--n-lat is the zonal model's (--model zonal-deep-ocean); --model "
            f"{arguments.model} is global."
        )
    n_lat = 30 if arguments.n_lat is None else arguments.n_lat
    model = _model(arguments.model, n_lat)
    known = set(model.Params.field_names())
    for label, other in _containers().items():
        for name in other.field_names():
            if name not in known and getattr(arguments, name, None) is not None:
                raise ValueError(
                    f"--{name.replace('_', '-')} is a parameter of the {label} model, "
                    f"not of --model {arguments.model} (its parameters: "
                    f"{', '.join(sorted(known))})."
                )
    scenario, name = _scenario(arguments)
    model = eqx.tree_at(lambda m: m.forcing, model, scenario)
    params = common.make_params(arguments, model.Params)
    start = run_start(model)
    span = scenario.span
    years = arguments.years
    if years is None:
        years = 150.0 if span is None else span[1] - span[0]
    if not 0 < years < float("inf"):
        raise ValueError(f"--years must be a positive number, got {years}.")
    saved = start + jnp.linspace(0.0, years, int(min(years, 1000)) + 1)
    trajectory = integrate(
        params, model=model, years=years, saveat=diffrax.SaveAt(ts=saved)
    )
    if arguments.no_gradient:
        value, gradient = tcr(params, model), None
    else:
        value, gradient = jax.value_and_grad(lambda p: tcr(p, model))(params)
    sensitivity = ecs(params, model)
    regression = gregory(params, model)
    report = {
        "model": arguments.model,
        "scenario": name,
        "start_year": float(start),
        "years": years,
        "params": common.floats(params),
        "final_warming_K": float(
            trajectory.global_mean - model.global_mean(model.initial_state(params))
        ),
        "final_toa_imbalance_W_m2": float(trajectory.N),
        "final_forcing_W_m2": float(trajectory.F),
        "ecs_K": float(sensitivity),
        "tcr_K": float(value),
        "tcr_over_ecs": float(value / sensitivity),
        "effective_sensitivity_K": float(regression.effective_sensitivity),
        "gregory_forcing_W_m2": float(regression.forcing),
        "gregory_feedback_W_m2_K": float(regression.feedback),
        "heat_uptake_efficiency_W_m2_K": float(heat_uptake_efficiency(params, model)),
    }
    if gradient is not None:
        common.add_derivatives(report, "d_tcr_d", gradient, "K")
    if zonal:
        report["n_lat"] = n_lat
        report["polar_amplification"] = float(polar_amplification(params, model))

    def plot(path):
        import matplotlib.pyplot as plt

        from .._edges.plot_run import plot_gregory, plot_run, run_panels

        panels = run_panels(trajectory)
        fig, axes = plt.subplots(
            1, panels + 1, figsize=(6.5 * (panels + 1), 4.5), layout="constrained"
        )
        axes = list(axes)
        plot_run(trajectory, ax=axes[:panels] if panels > 1 else axes[0])
        plot_gregory(regression, ax=axes[-1])
        fig.suptitle(
            f"{arguments.model} under {name}: TCR {float(value):.2f} K, ECS "
            f"{float(sensitivity):.2f} K"
        )
        fig.savefig(path, dpi=120)
        plt.close(fig)

    return common.finish(report, trajectory, params, arguments, plot)


def _scenario(arguments):
    """The forcing scenario the flags ask for, and its name.

    **Raises:**

    - `ValueError`: for a forcing file that cannot be read as two columns of
        numbers, naming the file.
    """
    import warnings

    import numpy as np

    from .._scenarios.base import AbruptCO2, ForcingSeries, OnePercentCO2
    from .._scenarios.historical import HistoricalForcing

    if arguments.forcing_file is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numpy's own word on an empty file
                table = np.genfromtxt(
                    arguments.forcing_file, delimiter=",", dtype=float
                )
        except OSError as error:
            raise ValueError(
                f"--forcing-file: cannot read {arguments.forcing_file}: {error}"
            )
        table = np.atleast_2d(table)
        if np.isnan(table[0]).all():
            table = table[1:]  # a header
        if table.ndim != 2 or table.shape[1] != 2 or len(table) < 2:
            raise ValueError(
                f"--forcing-file {arguments.forcing_file} must hold two "
                "comma-separated columns, the year and the forcing in W m-2, over two "
                "rows or more; "
                f"got a table of shape {table.shape}."
            )
        try:
            series = ForcingSeries(table[:, 0], table[:, 1])
        except ValueError as error:
            raise ValueError(
                f"--forcing-file {arguments.forcing_file}: {error}"
            ) from error
        return series, f"the forcing of {arguments.forcing_file}"
    if arguments.scenario == "historical":
        return HistoricalForcing(), "the AR6 historical forcing"
    if arguments.scenario == "1pctCO2":
        return OnePercentCO2(), "1pctCO2"
    factor = 4.0 if arguments.scenario == "abrupt-4xCO2" else 2.0
    return AbruptCO2(factor), arguments.scenario
