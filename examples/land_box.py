"""A model of your own, in one file: a land box beside the two-layer ocean.

Land (a fraction `f` of the globe, a field of the model) has a small heat capacity,
its own feedback and snow, whose albedo adds a feedback that switches on as the
land cools; it exchanges heat with the ocean mixed layer, which exchanges with the
deep ocean:

    f C_l     dT_l/dt = f (F - lambda_l T_l + s(T_l)) - k (T_l - T_o)
    (1 - f) C dT_o/dt = (1 - f) (F - lambda_o T_o) + k (T_l - T_o)
                        - (1 - f) gamma (T_o - T_d)
    C_d       dT_d/dt = gamma (T_o - T_d)

    s(T) = snow / 2 * (tanh((T - T_snow) / w) - tanh(-T_snow / w))

in K (anomalies), W m-2 and W yr m-2 K-1: `snow` is the sunlight that snow-covered
land reflects and bare land absorbs, `T_snow` the land temperature at which half of
it is snow-covered, `w` the width of that transition. The model is an
`ebm.AbstractModel`: it declares its state variables and its parameters (with
units and ranges), and gives its tendency, start, surface temperature (the
area-weighted mean of land and ocean), top-of-atmosphere imbalance and heat
content. Everything else comes from ebm, through the same entry points as its own
models: steady states and their folds, runs under any diffrax adjoint, ECS and TCR,
fits, sensitivities, posteriors, files and plots, all differentiable.

This script prints ECS, TCR and d(TCR)/d(every parameter), the land-ocean warming
contrast at CO2 doubling, checks the TCR's derivative in the land-ocean exchange
against central finite differences, then walks the steady states under a cooling
(CO2 halved, `F2x` growing) to the fold where the land snows over, fits the
land feedback to a run, samples its posterior, and writes a file and two figures.

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
        ebm.Parameter(
            "snow", 20.0, "W m-2", "sunlight reflected by snow on land", lower=0.0
        ),
        ebm.Parameter("T_snow", -8.0, "K", "land temperature of half snow cover"),
        _positive("snow_width", 1.5, "K", "width of the snow transition"),
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

    def snow_albedo(self, land, p):
        """`s(T_land)`, W m-2 of land: 0 at the start (`T_land = 0`)."""

        def cover(T):
            return jnp.tanh((T - p.T_snow) / p.snow_width)

        return p.snow / 2 * (cover(land) - cover(0.0))

    def __call__(self, t, y, p):
        F = self.forcing(t, p)
        f = self.land_fraction
        land, ocean, deep = y["T_land"], y["T_ocean"], y["T_deep"]
        exchange = p.exchange * (land - ocean)
        uptake = p.gamma * (ocean - deep)
        land_budget = F - p.feedback_land * land + self.snow_albedo(land, p)
        return {
            "T_land": (f * land_budget - exchange) / (f * p.C_land),
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
        land = y["T_land"]
        return (
            F
            - f * (p.feedback_land * land - self.snow_albedo(land, p))
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
    parser.add_argument("--fast", action="store_true", help="a shorter posterior")
    arguments = parser.parse_args()
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

    check(
        "d(TCR)/d(exchange)",
        "reverse mode",
        lambda p: ebm.tcr(p, model),
        params,
        "exchange",
        gradient.exchange,
        step=1e-4,
    )
    ebm.plot_run(run, path="land_box.png", title="land box and two-layer ocean")
    print("wrote land_box.png")
    snowball(params, fast=arguments.fast)


def check(label, method, fn, params, name, derivative, step) -> None:
    """Print `derivative` (of `fn` in the field `name`) beside its central
    difference with `step`, and their relative difference."""
    value = getattr(params, name)
    moved = [
        fn(eqx.tree_at(lambda p: getattr(p, name), params, value + s))
        for s in (step, -step)
    ]
    difference = float(moved[0] - moved[1]) / (2 * step)
    print(
        f"{label}: {float(derivative):.6e} by {method}, {difference:.6e} by "
        "central differences, relative difference "
        f"{abs(difference / float(derivative) - 1):.1e}"
    )


def snowball(params, fast: bool) -> None:
    """Every other entry point on the same model: CO2 halved, and `F2x`
    growing until the land snows over."""
    cold = LandOceanModel(forcing=ebm.AbruptCO2(0.5))
    steady = ebm.equilibrium(params, model=cold)
    dT_dsnow = jax.grad(lambda p: ebm.equilibrium(p, model=cold).global_mean)(params)
    print(
        f"steady state at CO2/2: {float(steady.global_mean):.3f} K, "
        f"d/d(snow) {float(dT_dsnow.snow):.4f} K per W m-2"
    )
    branch = ebm.continuation(params, "F2x", stop=15.0, model=cold)
    (fold, *_) = branch.folds
    print(
        f"fold at F2x = {float(fold.value):.4f} W m-2 ({float(fold.global_mean):.3f}"
        f" K): the land snows over; {branch.num_points} points walked"
    )

    def fold_value(p):
        return ebm.fold(p, "F2x", stop=15.0, model=cold).value

    dfold = jax.grad(fold_value)(params).snow
    check(
        "d(fold F2x)/d(snow)",
        "implicit differentiation",
        fold_value,
        params,
        "snow",
        dfold,
        step=1e-3,
    )
    ebm.plot_branch(branch, path="land_box_branch.png")
    ebm.save(branch, "land_box_branch.nc", model=cold, params=params)
    print("wrote land_box_branch.png and land_box_branch.nc")

    times = jnp.arange(10.0, 101.0, 10.0)
    run = ebm.integrate(
        params, model=cold, years=100.0, saveat=diffrax.SaveAt(ts=times)
    )
    observed = run.Ts
    start = eqx.tree_at(lambda p: p.feedback_land, params, 1.2)
    fitted = ebm.fit(
        start,
        observed,
        fit=("feedback_land",),
        through="trajectory",
        times=times,
        model=cold,
    )
    print(
        f"fitted feedback_land: {float(fitted.params.feedback_land):.6f} "
        f"({'converged' if fitted.converged else 'NOT converged'})"
    )
    sens = ebm.sensitivity(
        params,
        "global_mean",
        names=("snow", "feedback_land"),
        through="trajectory",
        years=100.0,
        model=cold,
    )
    print(f"d(T at year 100)/d(snow): {float(sens['snow']):.5f} K per W m-2")
    draws = ebm.posterior(
        params,
        observed,
        priors={"feedback_land": ebm.LogNormal(1.0, 0.5)},
        noise=0.05,
        through="trajectory",
        times=times,
        model=cold,
        num_chains=1,
        num_warmup=50 if fast else 300,
        num_samples=50 if fast else 500,
        derived=(),
    )
    low, high = (float(q) for q in draws.quantile("feedback_land", [0.05, 0.95]))
    print(f"feedback_land 5-95%: {low:.3f}-{high:.3f} W m-2 K-1")
    ebm.save(run, "land_box.nc", model=cold, params=params)
    print(f"wrote land_box.nc: {sorted(ebm.load('land_box.nc').data_vars)}")


if __name__ == "__main__":
    main()
