"""Does moisture make the poles warm more than the tropics?

Forces the model with a uniform 4 W m-2 twice, once with dry diffusion of
temperature (`ebm.DiffusiveTransport`, D = 0.555 W m-2 K-1) and once with diffusion
of moist static energy (`ebm.MoistDiffusiveTransport`, climlab's D = 0.24 W m-2 K-1
and relative humidity 0.8), both with the ice-albedo feedback off (each one's
albedo held at its unforced equilibrium's) and the linear OLR. Dry diffusion warms
every latitude by F / B: a uniform warming has no gradient to diffuse. Moist static
energy grows faster with temperature where it is warm, so in a warmer climate more
latent heat goes poleward and the poles warm more (Merlis and Henry 2018). Prints
the warming at the equator and the poles and plots it by latitude with the moist
heat transport split into its dry and latent parts (polar_amplification.png).

Run: python examples/polar_amplification.py [--fast] [--plot PATH]
"""

import argparse

import equinox as eqx
import jax.numpy as jnp
import numpy as np

import ebm


FORCING = 4.0  # W m-2
MOIST_D = 0.24  # W m-2 K-1, climlab's `MeridionalMoistDiffusion` default
POLAR_CAP = 60.0  # degrees


def warming(transport, params, grid):
    """The unforced and forced equilibria with the albedo held fixed, and the model."""
    model = ebm.EnergyBalanceModel(grid=grid, transport=transport)
    reference = ebm.equilibrium(params, model=model)
    held = ebm.PrescribedAlbedo(model.albedo(reference.T, params, grid))
    fixed = ebm.EnergyBalanceModel(grid=grid, transport=transport, albedo=held)
    forced_params = eqx.tree_at(lambda p: p.forcing, params, jnp.asarray(FORCING))
    forced = ebm.equilibrium(forced_params, model=fixed)
    return reference, forced, fixed, forced_params


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="polar_amplification.png")
    parser.add_argument("--fast", action="store_true", help="30 cells instead of 90")
    arguments = parser.parse_args()
    grid = ebm.Grid(30 if arguments.fast else 90)
    lat = np.asarray(grid.lat)
    cap = np.abs(lat) > POLAR_CAP

    moist_transport = ebm.MoistDiffusiveTransport()
    moist_params = ebm.EnergyBalanceModel(transport=moist_transport).Params(D=MOIST_D)
    cases = {
        "dry": warming(ebm.DiffusiveTransport(), ebm.Params(), grid),
        "moist": warming(moist_transport, moist_params, grid),
    }
    B = float(ebm.Params().B)
    print(
        f"uniform forcing {FORCING} W m-2, ice-albedo feedback off, {grid.n_lat} cells"
    )
    print(f"  F / B = {FORCING / B:.4f} K")
    print(
        f"{'transport':<10}{'global':>9}{'equator':>9}{'poles':>9}"
        f"{'>60 deg':>9}{'pole/equator':>14}  (warming, K)"
    )
    change = {}
    for name, (reference, forced, _, _) in cases.items():
        dT = np.asarray(forced.T - reference.T)
        change[name] = dT
        equator = float(np.interp(0.0, lat, dT))
        pole = 0.5 * float(dT[0] + dT[-1])
        polar = float(np.sum((dT * np.asarray(grid.area_weights))[cap])) / float(
            np.sum(np.asarray(grid.area_weights)[cap])
        )
        print(
            f"{name:<10}{float(grid.global_mean(jnp.asarray(dT))):>9.4f}"
            f"{equator:>9.4f}{pole:>9.4f}{polar:>9.4f}{pole / equator:>14.3f}"
        )

    reference, forced, model, forced_params = cases["moist"]
    transport = model.transport
    split = {}
    for label, state, params in (
        ("unforced", reference, moist_params),
        ("forced", forced, forced_params),
    ):
        split[label] = (
            np.asarray(transport.dry_flux(state.T, params, grid)),
            np.asarray(transport.latent_flux(state.T, params, grid)),
        )
    bounds = np.asarray(grid.lat_bounds)
    for label, (dry, latent) in split.items():
        peak = np.argmax(dry + latent)
        print(
            f"moist transport, {label}: peak {float((dry + latent)[peak]):.3f} PW at "
            f"{bounds[peak]:.0f} degN, latent {float(latent[peak]):.3f} PW of it"
        )

    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, (warming_ax, transport_ax) = plt.subplots(
        1, 2, figsize=(11, 4), layout="constrained"
    )
    for name, color in (("dry", "tab:orange"), ("moist", "tab:blue")):
        warming_ax.plot(lat, change[name], color=color, label=f"{name} diffusion")
    warming_ax.axhline(FORCING / B, color="0.6", lw=0.8, ls=":", label="F / B")
    warming_ax.set_xlabel("latitude (°N)")
    warming_ax.set_ylabel("warming (K)")
    warming_ax.set_title(f"warming for {FORCING:g} W m-2, albedo held fixed")
    warming_ax.legend()
    for label, style in (("unforced", "-"), ("forced", "--")):
        dry, latent = split[label]
        transport_ax.plot(bounds, dry + latent, "k", ls=style, label=f"total, {label}")
        transport_ax.plot(bounds, dry, "tab:orange", ls=style, label=f"dry, {label}")
        transport_ax.plot(
            bounds, latent, "tab:blue", ls=style, label=f"latent, {label}"
        )
    transport_ax.axhline(0.0, color="0.6", lw=0.8)
    transport_ax.set_xlabel("latitude (°N)")
    transport_ax.set_ylabel("northward heat transport (PW)")
    transport_ax.set_title("moist diffusion: dry and latent parts")
    transport_ax.legend(fontsize="small")
    for ax in (warming_ax, transport_ax):
        ax.set_xticks(np.arange(-90, 91, 30))
    fig.savefig(arguments.plot, dpi=120)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
