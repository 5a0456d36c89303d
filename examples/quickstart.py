"""Quick start: an equilibrium, its gradient with respect to every parameter, a plot.

Run: python examples/quickstart.py   (writes quickstart.png)
"""

import jax

import ebm


params = ebm.Params()  # climlab's EBM defaults
state = ebm.equilibrium(params)  # stable state reached from the present-day profile
print(f"global mean {float(state.global_mean):.4f} degC")
print(f"ice edge    {float(state.ice_edge):.4f} degN")
print(
    f"stable: {bool(state.stable)} (leading eigenvalue "
    f"{float(state.leading_eigenvalue):.4f} W m-2 K-1)"
)

# One linear solve at the equilibrium gives the derivative with respect to every
# parameter (implicit differentiation), however long the spin-up would have been.
gradient = jax.grad(lambda p: ebm.equilibrium(p).global_mean)(params)
print("d(global mean)/d(parameter):")
for name in ebm.Params.field_names():
    print(f"  {name:12s} {float(getattr(gradient, name)): .6e}")

# matplotlib is imported only when a plot is asked for.
from ebm._edges.plot import plot_equilibrium  # noqa: E402


plot_equilibrium(state, params=params, path="quickstart.png")
print("wrote quickstart.png")
