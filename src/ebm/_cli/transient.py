"""`ebm transient`: an ocean-layer model (global, or the zonal model over a deep
ocean) under a CMIP experiment; ECS, TCR, the effective sensitivity and their
gradients, and for the zonal model the polar amplification."""

from . import common


NAME = "transient"

MODELS = ("two-layer", "three-layer", "zonal-deep-ocean")
SCENARIOS = ("1pctCO2", "abrupt-4xCO2", "abrupt-2xCO2")


def _containers() -> dict:
    """Each model's parameter container, without building a model (a zonal one
    holds arrays, and would start JAX's backend while the parser is made)."""
    from .._layers.deep_ocean import params_of
    from .._layers.n_layer import NLayerModel
    from .._layers.two_layer import TwoLayerModel
    from .._model.params import Params

    return {
        "two-layer": TwoLayerModel().Params,
        "three-layer": NLayerModel(3).Params,
        "zonal-deep-ocean": params_of(Params),
    }


def _model(name: str, n_lat: int):
    from .._layers.deep_ocean import DeepOceanModel
    from .._layers.n_layer import NLayerModel
    from .._layers.two_layer import TwoLayerModel
    from .._model.grid import Grid
    from .._model.model import EnergyBalanceModel

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
            "deep ocean, under 1pctCO2 or an abrupt CO2 experiment; print its ECS, "
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
        "--years", type=float, default=150.0, help="length of the run, years (150)"
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
    from .._layers.scenarios import AbruptCO2, OnePercentCO2
    from .._stepping.integrate import integrate

    zonal = arguments.model == "zonal-deep-ocean"
    if arguments.n_lat is not None and not zonal:
        raise ValueError(
            f"--n-lat is the zonal model's (--model zonal-deep-ocean); --model "
            f"{arguments.model} is global."
        )
    n_lat = 30 if arguments.n_lat is None else arguments.n_lat
    model = _model(arguments.model, n_lat)
    container = model.Params
    known = set(container.field_names())
    for label, other in _containers().items():
        for name in other.field_names():
            if name not in known and getattr(arguments, name, None) is not None:
                raise ValueError(
                    f"--{name.replace('_', '-')} is a parameter of the {label} model, "
                    f"not of --model {arguments.model} (its parameters: "
                    f"{', '.join(sorted(known))})."
                )
    params = common.make_params(arguments, container)
    scenario = (
        OnePercentCO2()
        if arguments.scenario == "1pctCO2"
        else AbruptCO2(4.0 if arguments.scenario == "abrupt-4xCO2" else 2.0)
    )
    model = eqx.tree_at(lambda m: m.forcing, model, scenario)
    years = arguments.years
    if not 0 < years < float("inf"):
        raise ValueError(f"--years must be a positive number, got {years}.")
    saved = jnp.linspace(0.0, years, int(min(years, 1000)) + 1)
    trajectory = integrate(
        params, model=model, years=years, saveat=diffrax.SaveAt(ts=saved)
    )
    value, gradient = jax.value_and_grad(lambda p: tcr(p, model))(params)
    sensitivity = ecs(params, model)
    regression = gregory(params, model)
    report = {
        "model": arguments.model,
        "scenario": arguments.scenario,
        "years": years,
        "params": common.floats(params),
        "final_warming_K": float(
            trajectory.global_mean - model.global_mean(model.initial_state(params))
        ),
        "ecs_K": float(sensitivity),
        "tcr_K": float(value),
        "tcr_over_ecs": float(value / sensitivity),
        "effective_sensitivity_K": float(regression.effective_sensitivity),
        "heat_uptake_efficiency_W_m2_K": float(heat_uptake_efficiency(params, model)),
        "d_tcr_d": common.floats(gradient),
    }
    if zonal:
        report["n_lat"] = n_lat
        report["polar_amplification"] = float(polar_amplification(params, model))

    def plot(path):
        from .._edges.plot_run import plot_run

        plot_run(
            trajectory,
            path=path,
            title=f"{arguments.model}, {arguments.scenario}: TCR {float(value):.2f} "
            f"K, ECS {float(sensitivity):.2f} K",
        )

    return common.finish(report, trajectory, params, arguments, plot)
