"""A model of your own, in one file: a land box beside the two-layer ocean.

Land (a fraction `f` of the globe, a field of the model) has a small heat capacity
and its own feedback; it exchanges heat with the ocean mixed layer, which exchanges
with the deep ocean:

    f C_l     dT_l/dt = f (F - lambda_l T_l) - k (T_l - T_o)
    (1 - f) C dT_o/dt = (1 - f) (F - lambda_o T_o) + k (T_l - T_o)
                        - (1 - f) gamma (T_o - T_d)
    C_d       dT_d/dt = gamma (T_o - T_d)

in K, W m-2 and W yr m-2 K-1. The model is an `ebm.AbstractModel`: it declares its
state variables and its parameters (with units and ranges), and gives its tendency,
start, surface temperature (the area-weighted mean of land and ocean), top-of-
atmosphere imbalance and heat content. Everything else comes from ebm: runs under
any diffrax adjoint, ECS and TCR with their gradients, files and plots.

This script prints ECS, TCR and d(TCR)/d(every parameter), the land-ocean warming
contrast at CO2 doubling, and checks the TCR's derivative in the land-ocean
exchange against central finite differences.

Run: python examples/land_box.py [--fast]
"""

import argparse

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

import ebm


def _positive(name, default, units, long_name):
    return ebm.Parameter(
        name, default, units, long_name, lower=0.0, lower_open=True, transform="log"
    )


LandParams = ebm.params_class(
    "LandParams",
    (
        _positive("C_land", 0.5, "W yr m-2 K-1", "heat capacity of land"),
        _positive("C", 8.0, "W yr m-2 K-1", "heat capacity of the ocean mixed layer"),
        _positive("C_deep", 100.0, "W yr m-2 K-1", "heat capacity of the deep ocean"),
        _positive("feedback_land", 0.8, "W m-2 K-1", "feedback parameter over land"),
        _positive("feedback_ocean", 1.3, "W m-2 K-1", "feedback parameter over ocean"),
        _positive("exchange", 4.0, "W m-2 K-1", "land-ocean heat exchange"),
        _positive("gamma", 0.7, "W m-2 K-1", "mixed layer-deep ocean exchange"),
        _positive("F2x", 3.45, "W m-2", "effective radiative forcing of doubled CO2"),
    ),
)


class LandOceanModel(ebm.AbstractModel):
    """The land box beside the two-layer ocean (see the module docstring).

    **Arguments:**

    - `land_fraction`: the fraction `f` of the globe that is land (geography, not
        a parameter to fit: a static field).
    - `forcing`: an `ebm.AbstractScenario`.
    """

    land_fraction: float = eqx.field(static=True, default=0.3)
    forcing: ebm.AbstractScenario = ebm.OnePercentCO2()

    @property
    def variables(self):
        return (
            ebm.Variable("T_land", "K", "land temperature anomaly"),
            ebm.Variable("T_ocean", "K", "ocean mixed-layer temperature anomaly"),
            ebm.Variable("T_deep", "K", "deep-ocean temperature anomaly"),
        )

    @property
    def Params(self):
        return LandParams

    def __call__(self, t, y, p):
        F = self.forcing(t, p)
        f = self.land_fraction
        land, ocean, deep = y["T_land"], y["T_ocean"], y["T_deep"]
        exchange = p.exchange * (land - ocean)
        uptake = p.gamma * (ocean - deep)
        return {
            "T_land": (f * (F - p.feedback_land * land) - exchange) / (f * p.C_land),
            "T_ocean": ((1 - f) * (F - p.feedback_ocean * ocean - uptake) + exchange)
            / ((1 - f) * p.C),
            "T_deep": uptake / p.C_deep,
        }

    def initial_state(self, p):
        return {name: jnp.zeros(()) for name in ("T_land", "T_ocean", "T_deep")}

    def surface_temperature(self, y):
        f = self.land_fraction
        return f * y["T_land"] + (1 - f) * y["T_ocean"]

    def toa_imbalance(self, t, y, p):
        f = self.land_fraction
        F = self.forcing(t, p)
        return (
            F
            - f * p.feedback_land * y["T_land"]
            - (1 - f) * p.feedback_ocean * y["T_ocean"]
        )

    def heat_content(self, y, p):
        f = self.land_fraction
        return (
            f * p.C_land * y["T_land"]
            + (1 - f) * p.C * y["T_ocean"]
            + (1 - f) * p.C_deep * y["T_deep"]
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="(the same: it is fast)")
    parser.parse_args()
    model = LandOceanModel()
    params = model.Params()

    ecs = ebm.ecs(params, model)
    tcr, gradient = jax.value_and_grad(lambda p: ebm.tcr(p, model))(params)
    print(f"ECS {float(ecs):.3f} K, TCR {float(tcr):.3f} K, TCR/ECS {tcr / ecs:.2f}")
    print("d(TCR)/d(parameter):")
    for name in model.Params.field_names():
        print(f"  {name:<15s} {float(getattr(gradient, name)): .5f}")

    run = ebm.integrate(
        params, model=model, years=70.0, saveat=diffrax.SaveAt(ts=jnp.arange(71.0))
    )
    ratio = run.state["T_land"] / run.state["T_ocean"]
    print(f"land/ocean warming at CO2 doubling (year 70): {float(ratio):.2f}")

    step = 1e-4
    moved = [
        ebm.tcr(eqx.tree_at(lambda p: p.exchange, params, params.exchange + s), model)
        for s in (step, -step)
    ]
    difference = float(moved[0] - moved[1]) / (2 * step)
    print(
        f"d(TCR)/d(exchange): {float(gradient.exchange):.6f} by reverse mode, "
        f"{difference:.6f} by central differences"
    )
    ebm.plot_run(run, path="land_box.png", title="land box and two-layer ocean")
    print("wrote land_box.png")


if __name__ == "__main__":
    main()
