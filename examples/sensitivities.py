"""How does the climate respond to each parameter, and how much does ice amplify it?

Prints d(global mean)/d(theta) and d(ice edge)/d(theta) for every parameter, in
forward mode through the implicit equilibrium solve, with the change for a 1%
perturbation; then the equilibrium climate sensitivity (warming for 3.7 W m-2 of
forcing) with the ice-albedo feedback and without it (albedo held at the reference
state's), and plots the sensitivity profiles dT(lat)/d(theta) (sensitivities.png).

Run: python examples/sensitivities.py
"""

import argparse

import ebm
from ebm._edges.plot import perturbation


DOUBLED_CO2 = 3.7  # W m-2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="sensitivities.png")
    arguments = parser.parse_args()
    params = ebm.Params()

    mean = ebm.sensitivity(params, "global_mean")
    edge = ebm.sensitivity(params, "ice_edge")
    print(
        f"reference: global mean {float(mean.value):.4f} degC, "
        f"ice edge {float(edge.value):.3f} degN\n"
    )
    print(
        f"{'parameter':<12}{'d mean/d theta':>16}{'d edge/d theta':>16}"
        f"{'1% change':>12}{'-> mean (K)':>13}{'-> edge (deg)':>15}"
    )
    for name in mean.names:
        step = perturbation(params, name)
        print(
            f"{name:<12}{float(mean[name]):>16.5g}{float(edge[name]):>16.5g}"
            f"{step:>12.4g}{float(mean[name]) * step:>13.4f}"
            f"{float(edge[name]) * step:>15.4f}"
        )

    reference = ebm.equilibrium(params)
    forced = ebm.Params(forcing=DOUBLED_CO2)
    with_ice = ebm.equilibrium(forced)
    model = ebm.EnergyBalanceModel()
    held = ebm.PrescribedAlbedo(model.albedo(reference.T, params, model.grid))
    without_ice = ebm.equilibrium(forced, model=ebm.EnergyBalanceModel(albedo=held))
    ecs = float(with_ice.global_mean - reference.global_mean)
    ecs_no_ice = float(without_ice.global_mean - reference.global_mean)
    print(f"\nequilibrium climate sensitivity ({DOUBLED_CO2} W m-2):")
    print(
        f"  with ice-albedo feedback     {ecs:.4f} K "
        f"(ice edge {float(reference.ice_edge):.2f} -> "
        f"{float(with_ice.ice_edge):.2f} degN)"
    )
    print(
        f"  without (albedo held fixed)  {ecs_no_ice:.4f} K "
        f"(= F / B = {DOUBLED_CO2 / float(params.B):.4f} K: diffusion conserves energy)"
    )
    print(f"  amplification by ice         {ecs / ecs_no_ice:.3f}")
    # Linear response from the sensitivity: d(mean)/d(forcing) * F.
    print(
        f"  linear estimate d(mean)/dF x F = "
        f"{float(mean['forcing']) * DOUBLED_CO2:.4f} K"
    )

    profiles = ebm.sensitivity(params, "T")
    ebm.plot_sensitivity(profiles, params, path=arguments.plot)
    print(f"\nwrote {arguments.plot}")


if __name__ == "__main__":
    main()
