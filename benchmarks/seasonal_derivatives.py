"""Why the shooting map steps with ROS2: the cost of one year's forward derivative.

On the default seasonal model (60 cells, present-day orbit, the cycle's 1 January
state), times one year of the flow map and one year of its Jacobian-vector product
(`jax.jvp`, the product GMRES asks for in each Newton-Krylov iteration), after
compilation, median of 5:

- `ebm.Rosenbrock2`, 365 equal steps (what `ebm.periodic_equilibrium` uses);
- diffrax's `Kvaerno5`, 146 equal steps, stages solved by Newton on the probed
  tridiagonal Jacobian (optimistix differentiates each stage's root-find with a dense
  Jacobian).

Also the largest eigenvalues (in modulus) of the year's Jacobian dPhi/dT0, which
decide how many products GMRES needs.

Writes benchmarks/results/seasonal_derivatives.json.

Run: python benchmarks/seasonal_derivatives.py
"""

import json
import pathlib
import statistics
import time

import diffrax
import jax
import numpy as np
import optimistix as optx
from _machine import machine

import ebm
from ebm._numerics.tridiagonal import ProbedTridiagonal
from ebm._steady.seasonal import _Year, seasonal_model
from ebm._stepping.checkpoints import NoCheckpoint
from ebm._stepping.steppers import Rosenbrock2


RESULTS = pathlib.Path(__file__).parent / "results"


def _median_seconds(fn, *args):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(5):
        started = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main():
    params = ebm.Params()
    model = seasonal_model(ebm.Grid(60))
    T0 = ebm.periodic_equilibrium(params, model=model).T0
    year = _Year(model, Rosenbrock2(), NoCheckpoint(), 365)
    root_finder = optx.Newton(rtol=1e-11, atol=1e-11, linear_solver=ProbedTridiagonal())

    def kvaerno(T):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(model),
            diffrax.Kvaerno5(root_finder=root_finder),
            t0=0.0,
            t1=1.0,
            dt0=1.0 / 146,
            y0=T,
            args=params,
            stepsize_controller=diffrax.ConstantStepSize(),
            adjoint=diffrax.ForwardMode(),
            max_steps=146,
        ).ys[-1]

    rows = {}
    for name, flow in (
        ("ROS2, 365 steps", lambda T: year.flow(T, params)),
        ("Kvaerno5, 146 steps", kvaerno),
    ):
        primal = _median_seconds(jax.jit(flow), T0)
        tangent = _median_seconds(
            jax.jit(lambda T, v: jax.jvp(flow, (T,), (v,))[1]), T0, T0
        )
        rows[name] = dict(
            flow_seconds=primal, jvp_seconds=tangent, ratio=tangent / primal
        )
        print(
            f"{name}: year {primal * 1e3:.1f} ms, jvp {tangent * 1e3:.1f} ms "
            f"({tangent / primal:.1f}x)"
        )
    jacobian = np.asarray(jax.jit(jax.jacfwd(lambda T: year.flow(T, params)))(T0))
    moduli = np.sort(np.abs(np.linalg.eigvals(jacobian)))[::-1][:8]
    print("largest |eigenvalues| of dPhi/dT0:", " ".join(f"{m:.2g}" for m in moduli))
    saved = dict(
        machine=machine(),
        command="python benchmarks/seasonal_derivatives.py",
        steppers=rows,
        leading_eigenvalue_moduli=moduli.tolist(),
    )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "seasonal_derivatives.json"
    path.write_text(json.dumps(saved, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
