"""Over what horizon does BacksolveAdjoint still give the right gradient?

BacksolveAdjoint rebuilds the state by integrating the model backwards in time: the
backward heat equation, where rounding errors in the fastest diffusive mode grow like
exp(t / tau), tau = C dlat^2 / (4 D). This script integrates the default model for a
range of horizons (in units of tau) at several resolutions, takes the gradient of the
final global-mean temperature with respect to every parameter under BacksolveAdjoint
and under RecursiveCheckpointAdjoint, and records their largest relative difference.
`ebm.integrate` refuses backsolve beyond `BACKSOLVE_HORIZON` tau (in
`ebm._stepping.integrate`), the longest horizon where the difference stayed below
1e-4 at every resolution.

Writes benchmarks/results/backsolve_horizon.json.
Run: python benchmarks/backsolve_horizon.py
"""

import json
import pathlib
import time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

import ebm
from ebm._stepping.options import default_solver, resolve_adjoint, time_scales


RESULTS = pathlib.Path(__file__).parent / "results"


def gradient(params, model, years, adjoint):
    def final_mean(params):
        solution = diffrax.diffeqsolve(
            diffrax.ODETerm(model),
            default_solver(),
            t0=0.0,
            t1=years,
            dt0=None,
            y0=ebm.present_day_profile(model.grid),
            args=params,
            stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-8),
            adjoint=adjoint,
            max_steps=16384,
            throw=False,
        )
        return model.grid.global_mean(solution.ys[-1])

    return eqx.filter_jit(jax.grad(final_mean))(params)


def relative_difference(a, b):
    a, b = jnp.stack(jax.tree.leaves(a)), jnp.stack(jax.tree.leaves(b))
    return float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))


def main():
    params = ebm.Params()
    multiples = [1, 2, 5, 10, 20, 50, 100, 200]
    rows = []
    for n_lat in (30, 60, 120):
        model = ebm.EnergyBalanceModel(grid=ebm.Grid(n_lat))
        T0 = ebm.present_day_profile(model.grid)
        tau = float(time_scales(params, model, T0).diffusion)
        for multiple in multiples:
            years = multiple * tau
            start = time.perf_counter()
            reference = gradient(
                params, model, years, diffrax.RecursiveCheckpointAdjoint()
            )
            backsolve = gradient(params, model, years, resolve_adjoint("backsolve"))
            error = relative_difference(backsolve, reference)
            rows.append(
                dict(
                    n_lat=n_lat,
                    tau_days=tau * 365.2422,
                    horizon_tau=multiple,
                    horizon_days=years * 365.2422,
                    relative_difference=error,
                )
            )
            print(
                f"n_lat={n_lat:4d} horizon={multiple:4d} tau "
                f"({years * 365.2422:8.2f} d) relative difference {error:.2e} "
                f"({time.perf_counter() - start:.1f} s)"
            )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "backsolve_horizon.json"
    path.write_text(json.dumps(rows, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
