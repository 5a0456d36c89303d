"""A physical term of your own: outgoing longwave radiation with a cubic term.

    OLR = A + B T + c T^3      (W m-2, T in degC)

The term declares its new coefficient `c` once, as an `ebm.Parameter`, next to the
equation that uses it. The model collects it into its parameter container
(`model.Params`), so that `jax.grad` reaches it like any of ebm's own parameters, and
range checks, `ebm.fit`, `ebm.sweep` and the netCDF attributes know its units.
Nothing in ebm is edited.

This script finds the equilibrium, differentiates the global mean with respect to
`c` through the implicit function theorem, and checks that derivative against central
finite differences of the equilibrium.

Run: python examples/custom_term.py [--fast]
"""

import argparse

import equinox as eqx
import jax

import ebm


CUBIC = ebm.Parameter(
    "c",
    default=2e-5,
    units="W m-2 K-3",
    long_name="cubic coefficient of the outgoing longwave radiation",
    lower=0.0,
)


class CubicLongwave(ebm.AbstractLongwave):
    """`A + B T + c T^3`: ebm's linear OLR (its `A` and `B`) plus a cubic term."""

    parameters = (*ebm.LinearLongwave.parameters, CUBIC)
    # Local in latitude: the Jacobian stays tridiagonal, and ebm's solvers use that.
    tridiagonal = True

    def __call__(self, T, params, grid):
        del grid
        return params.A + params.B * T + params.c * T**3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="a coarser grid")
    arguments = parser.parse_args()
    grid = ebm.Grid(30 if arguments.fast else 90)
    model = ebm.EnergyBalanceModel(grid=grid, longwave=CubicLongwave())
    params = model.Params(c=4e-5)  # ebm's defaults, and the new coefficient

    def global_mean(c):
        changed = eqx.tree_at(lambda p: p.c, params, c)
        return float(ebm.equilibrium(changed, model=model).global_mean)

    state = ebm.equilibrium(params, model=model)
    print(f"parameters: {', '.join(model.Params.field_names())}")
    print(f"global mean {float(state.global_mean):.4f} degC")
    print(f"ice edge    {float(state.ice_edge):.4f} degN")

    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=model).global_mean)(params)
    step = 1e-7
    c = float(params.c)
    central = (global_mean(c + step) - global_mean(c - step)) / (2 * step)
    relative = abs(float(gradient.c) - central) / abs(central)
    print(f"d(global mean)/dc  implicit  {float(gradient.c): .8e} K / (W m-2 K-3)")
    print(f"                   central   {central: .8e}")
    print(f"relative difference {relative:.1e}")
    if not relative < 1e-6:
        raise SystemExit(f"the gradient disagrees with finite differences: {relative}")

    # The declaration's range is checked like ebm's own.
    try:
        model.Params(c=-1.0)
    except ValueError as error:
        print(f"refused: {error}")


if __name__ == "__main__":
    main()
