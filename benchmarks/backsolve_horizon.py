"""Over what horizon does BacksolveAdjoint still give the right gradient?

BacksolveAdjoint rebuilds the state by integrating the model backwards in time: the
backward heat equation, where rounding errors in the fastest diffusive mode grow like
exp(t / tau), tau = C dlat^2 / (4 D). This script integrates the default model for a
range of horizons (in units of tau) at several resolutions, takes the gradient of the
final global-mean temperature with respect to every parameter under BacksolveAdjoint
and under RecursiveCheckpointAdjoint, and records their largest relative difference.
`ebm.integrate` refuses backsolve beyond `BACKSOLVE_HORIZON` tau (in
`ebm._zonal.run`), the longest horizon where the difference stayed below
1e-4 at every resolution.

The other models of the protocol (the two- and three-layer models under 1pctCO2,
the zonal model over a deep ocean) are measured the same way in units of their own
fastest relaxation time, bounded from their Jacobian by Gershgorin's theorem
(`ebm._stepping.run.gershgorin_time`, what `ebm.integrate` refuses beyond), against
the exact solution (layer models) or the recursive adjoint.

Writes benchmarks/results/backsolve_horizon.json (the zonal model) and
backsolve_horizon_models.json (the others).
Run: python benchmarks/backsolve_horizon.py [--models zonal protocol]
"""

import argparse
import json
import pathlib
import time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

import ebm
from ebm._stepping.options import resolve_adjoint
from ebm._zonal.run import default_solver, time_scales


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


def protocol_rows():
    """Backsolve's gradient error on the models of the protocol, in units of each
    one's Gershgorin time at its start."""
    from ebm._stepping.run import gershgorin_time

    models = {
        "two-layer, 1pctCO2": ebm.TwoLayerModel(forcing=ebm.OnePercentCO2()),
        "three-layer, 1pctCO2": ebm.NLayerModel(3, forcing=ebm.OnePercentCO2()),
        "zonal over a deep ocean, 18 cells": ebm.DeepOceanModel(
            surface=ebm.EnergyBalanceModel(grid=ebm.Grid(18))
        ),
    }
    rows = []
    for name, model in models.items():
        params = model.Params()
        start = model.initial_state(params)
        tau = float(gershgorin_time(model, 0.0, start, params))
        exact = isinstance(model, ebm.AbstractLayerModel)
        for multiple in (2, 5, 10, 20, 40):
            years = multiple * tau
            began = time.perf_counter()

            def final(params, adjoint, solver=None):
                run = ebm.integrate(
                    params, model=model, years=years, adjoint=adjoint, solver=solver
                )
                return run.global_mean

            reference = jax.grad(final)(params, "recursive", "exact" if exact else None)
            # Past the horizon `integrate` refuses; the adjoint itself is called.
            backsolve = jax.grad(lambda p: _backsolve_final(model, p, years))(params)
            error = relative_difference(backsolve, reference)
            rows.append(
                dict(
                    model=name,
                    tau_years=tau,
                    horizon_tau=multiple,
                    years=years,
                    relative_difference=error,
                )
            )
            print(
                f"{name:36s} horizon={multiple:3d} tau ({years:8.3f} yr) relative "
                f"difference {error:.2e} ({time.perf_counter() - began:.1f} s)"
            )
    return rows


def _backsolve_final(model, params, years):
    """The final global mean of `model` under `BacksolveAdjoint`, through diffrax
    directly (as `ebm.integrate` would, without its refusal)."""
    from ebm._scenarios.base import run_start

    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(model),
        model.default_solver(),
        t0=run_start(model),
        t1=run_start(model) + years,
        dt0=None,
        y0=model.initial_state(params),
        args=params,
        stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-9),
        adjoint=resolve_adjoint("backsolve"),
        max_steps=2**16,
    )
    return model.global_mean(jax.tree.map(lambda y: y[-1], solution.ys))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="+",
        choices=("zonal", "protocol"),
        default=["zonal", "protocol"],
    )
    arguments = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if "protocol" in arguments.models:
        path = RESULTS / "backsolve_horizon_models.json"
        path.write_text(json.dumps(protocol_rows(), indent=2))
        print(f"wrote {path}")
    if "zonal" in arguments.models:
        zonal_rows()


def zonal_rows():
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
