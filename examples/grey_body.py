"""What changes when the outgoing longwave radiation is a grey body, not a line?

    OLR = tau emissivity sigma (T + 273.15)^4      (ebm.GreyBodyLongwave)

Finds the equilibrium of the model with the grey-body OLR at emissivity 0.69 (an ice
edge near today's, 69 degN; 0.68 is already ice-free), compares its longwave
feedback dOLR/dT = 4 tau emissivity sigma (T + 273.15)^3, cell by cell, with the
linear OLR's B, and with it the response to a uniform forcing of both models.
Differentiates the global mean with respect to the emissivity through the implicit
function theorem and checks that derivative against central finite differences
(the script exits non-zero if they disagree). Plots both models' temperature and
feedback by latitude (grey_body.png).

Run: python examples/grey_body.py [--fast]
"""

import argparse

import equinox as eqx
import jax
import numpy as np

import ebm


EMISSIVITY = 0.69


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", default="grey_body.png")
    parser.add_argument("--fast", action="store_true", help="30 cells, not 90")
    arguments = parser.parse_args()
    grid = ebm.Grid(30 if arguments.fast else 90)
    grey = ebm.EnergyBalanceModel(grid=grid, longwave=ebm.GreyBodyLongwave())
    linear = ebm.EnergyBalanceModel(grid=grid)
    params = grey.Params(emissivity=EMISSIVITY)  # and ebm's defaults

    models = {"grey body": (grey, params), "linear": (linear, linear.Params())}
    print(
        f"equilibria on {grid.n_lat} cells\n"
        f"  {'OLR':<10}{'global mean':>12}{'ice edge':>10}"
        f"{'dOLR/dT: min':>14}{'max':>6}{'mean':>7}{'d mean/dF':>11}\n"
        f"  {'':<10}{'degC':>12}{'degN':>10}{'W m-2 K-1':>27}{'K/(W m-2)':>11}"
    )
    states, feedbacks = {}, {}
    for name, (model, model_params) in models.items():
        states[name] = state = ebm.equilibrium(model_params, model=model)
        # dOLR/dT of each cell: the OLR is local, so its Jacobian is diagonal, and
        # one forward-mode product with a vector of ones gives that diagonal.
        olr = lambda T: model.outgoing_longwave(T, model_params)  # noqa: E731
        feedbacks[name] = jax.jvp(olr, (state.T,), (np.ones(grid.n_lat),))[1]
        response = ebm.sensitivity(model_params, names=("forcing",), model=model)
        print(
            f"  {name:<10}{float(state.global_mean):>12.2f}"
            f"{float(state.ice_edge):>10.2f}{float(feedbacks[name].min()):>14.2f}"
            f"{float(feedbacks[name].max()):>6.2f}"
            f"{float(model.global_mean(feedbacks[name])):>7.2f}"
            f"{float(response['forcing']):>11.3f}"
        )

    def global_mean(p):
        return ebm.equilibrium(p, model=grey).global_mean

    gradient = jax.grad(global_mean)(params)
    step = 1e-6

    def at(emissivity):
        changed = eqx.tree_at(lambda p: p.emissivity, params, emissivity)
        return float(global_mean(changed))

    central = (at(EMISSIVITY + step) - at(EMISSIVITY - step)) / (2 * step)
    relative = abs(float(gradient.emissivity) - central) / abs(central)
    print(f"d(global mean)/d(emissivity)  implicit  {float(gradient.emissivity):.8e} K")
    print(f"                              central   {central:.8e} K")
    print(f"relative difference {relative:.1e}")
    if not relative < 1e-6:
        raise SystemExit(f"the gradient disagrees with finite differences: {relative}")

    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(6, 6), sharex=True, layout="constrained"
    )
    lat = np.asarray(grid.lat)
    for name, state in states.items():
        top.plot(lat, np.asarray(state.T), label=name)
        bottom.plot(lat, np.asarray(feedbacks[name]), label=name)
    top.axhline(float(params.Tf), color="0.6", lw=0.8, ls="--")
    top.set_ylabel("temperature (°C)")
    top.set_title(f"grey-body OLR (emissivity {EMISSIVITY}) and linear OLR")
    top.legend()
    bottom.set_ylabel("dOLR/dT (W m$^{-2}$ K$^{-1}$)")
    bottom.set_xlabel("latitude (°N)")
    bottom.set_xticks(np.arange(-90, 91, 30))
    fig.savefig(arguments.plot, dpi=120)
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
