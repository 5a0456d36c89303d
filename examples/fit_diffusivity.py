"""Which diffusivity D makes the model's equilibrium match an observed profile?

Makes a synthetic "observed" profile from known parameters (D = 0.3 W m-2 K-1, with
optional measurement noise), fits D with L-BFGS through the equilibrium (each
gradient is one implicit linear solve), prints the fit, and plots target, initial
and fitted profiles and the loss curve (fit_diffusivity.png).

Run: python examples/fit_diffusivity.py [--noise 0.5] [--adam]
"""

import argparse

import jax
import numpy as np
import optax

import ebm


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--true-D", type=float, default=0.3)
    parser.add_argument("--noise", type=float, default=0.0, help="K, per cell")
    parser.add_argument("--adam", action="store_true", help="Adam instead of L-BFGS")
    parser.add_argument("--plot", default="fit_diffusivity.png")
    arguments = parser.parse_args()

    start = ebm.Params()
    truth = ebm.Params(D=arguments.true_D)
    target = np.asarray(ebm.equilibrium(truth).T)
    if arguments.noise > 0:
        noise = jax.random.normal(jax.random.key(0), target.shape) * arguments.noise
        target = target + np.asarray(noise)

    optimizer = optax.adam(0.05) if arguments.adam else optax.lbfgs()
    result = ebm.fit(
        start, target, fit=("D",), optimizer=optimizer, steps=300, progress=True
    )
    fitted_D = float(result.params.D)
    print(f"true D    {arguments.true_D:.10f} W m-2 K-1")
    print(f"initial D {float(start.D):.10f}")
    print(
        f"fitted D  {fitted_D:.10f}  (relative error "
        f"{abs(fitted_D / arguments.true_D - 1):.1e}, "
        f"{'converged' if result.converged else 'NOT converged'} in "
        f"{result.num_steps} steps, final loss {result.loss_history[-1]:.2e} K^2)"
    )
    ebm.plot_fit(
        result,
        target,
        ebm.equilibrium(start),
        ebm.equilibrium(result.params),
        path=arguments.plot,
    )
    print(f"wrote {arguments.plot}")


if __name__ == "__main__":
    main()
