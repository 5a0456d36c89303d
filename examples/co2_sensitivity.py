r"""How much warmer is the equilibrium for doubled CO2, and how much of that is ice?

With the CO2 forcing $F = 5.35 \ln(\mathrm{CO_2}/\mathrm{CO_{2,ref}})$
(`ebm.CO2Forcing`), the climate sensitivity per doubling of CO2 is one derivative of
the equilibrium, $\ln 2\;\mathrm{CO_2}\;\partial\bar T/\partial\mathrm{CO_2}$, by
the implicit function theorem: no second equilibrium at doubled CO2 is needed. This
script takes it with the ice-albedo feedback (ebm's default albedo) and without it
(the albedo of the same equilibrium held fixed, `ebm.PrescribedAlbedo`); the second
is $5.35 \ln 2 / B$ exactly, since transport conserves energy and nothing else
responds (the script exits non-zero if it is not). It compares both with the
warming between two equilibria, at 280 and 560 ppm: without the feedback they are
equal (the model is then linear in $\ln\mathrm{CO_2}$); with it they differ, since
the derivative is the response to a small change at 280 ppm and the ice edge does
not respond linearly over a whole doubling. Plots the warming per doubling by
latitude (co2_sensitivity.png): the ice-albedo feedback amplifies it most near the
ice edge.

Run: python examples/co2_sensitivity.py [--fast]
"""

import argparse
import math

import equinox as eqx
import jax
import numpy as np

import ebm


PRE_INDUSTRIAL = 280.0  # ppm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="co2_sensitivity.png")
    parser.add_argument("--fast", action="store_true", help="30 cells, not 90")
    arguments = parser.parse_args()
    grid = ebm.Grid(30 if arguments.fast else 90)

    with_ice = ebm.EnergyBalanceModel(grid=grid, forcing=ebm.CO2Forcing())
    params = with_ice.Params(CO2=PRE_INDUSTRIAL)
    reference = ebm.equilibrium(params, model=with_ice)
    held = ebm.PrescribedAlbedo(with_ice.albedo(reference.T, params, grid))
    without_ice = eqx.tree_at(lambda model: model.albedo, with_ice, held)
    models = {"with ice-albedo feedback": with_ice, "albedo held fixed": without_ice}

    B = float(params.B)
    no_feedback = 5.35 * math.log(2.0) / B
    print(
        f"reference at {PRE_INDUSTRIAL:g} ppm on {grid.n_lat} cells: global mean "
        f"{float(reference.global_mean):.3f} degC, ice edge "
        f"{float(reference.ice_edge):.2f} degN"
    )
    print(f"  {'':<26}{'ln2 CO2 dT/dCO2':>17}{'T(560) - T(280)':>17}")
    per_doubling, profiles = {}, {}
    for name, model in models.items():
        model_params = model.Params(CO2=PRE_INDUSTRIAL)

        def global_mean(p, model=model):
            return ebm.equilibrium(p, model=model).global_mean

        gradient = jax.grad(global_mean)(model_params)
        per_doubling[name] = math.log(2.0) * PRE_INDUSTRIAL * float(gradient.CO2)
        doubled = model.Params(CO2=2 * PRE_INDUSTRIAL)
        warming = float(global_mean(doubled) - global_mean(model_params))
        print(f"  {name:<26}{per_doubling[name]:>15.4f} K{warming:>15.4f} K")
        profile = ebm.sensitivity(model_params, "T", names=("CO2",), model=model)
        profiles[name] = math.log(2.0) * PRE_INDUSTRIAL * np.asarray(profile["CO2"])
    held_fixed = per_doubling["albedo held fixed"]
    relative = abs(held_fixed - no_feedback) / no_feedback
    print(
        f"  albedo held fixed: 5.35 ln 2 / B = {no_feedback:.4f} K "
        f"(relative difference {relative:.1e})"
    )
    print(
        "  amplification by the ice-albedo feedback "
        f"{per_doubling['with ice-albedo feedback'] / held_fixed:.3f}"
    )
    if not relative < 1e-9:
        raise SystemExit("the sensitivity without the feedback is not 5.35 ln 2 / B")

    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    lat = np.asarray(grid.lat)
    for name, profile in profiles.items():
        ax.plot(lat, profile, label=name)
    ax.axvline(float(reference.ice_edge), color="0.6", lw=0.8, ls="--")
    ax.set_xlabel("latitude (°N)")
    ax.set_ylabel("warming per doubling of CO2 (K)")
    ax.set_xticks(np.arange(-90, 91, 30))
    ax.set_title("climate sensitivity per doubling, by latitude")
    ax.legend()
    fig.savefig(arguments.plot, dpi=120)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
