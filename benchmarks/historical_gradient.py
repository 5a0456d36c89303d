"""The gradient of the misfit to observed warming through the historical run
(1750.5-2019.5, saved at the 170 observed years), exact against adaptive.

For the two-layer model under `ebm.HistoricalForcing`, the seconds per call of
`jax.jit(jax.value_and_grad(misfit))`, where misfit is the summed squared
difference of the saved warming from `ebm.observed_warming`: with
`solver="exact"` (mode by mode between the knots) and with the model's
default diffrax solver (Tsit5, steps ending on the forcing's yearly kinks,
tolerances 1e-9, recursive checkpointing). The first call (with compilation) and
the median of `--repeats` calls after it, in this process; and the largest
difference between the two gradients, relative to the largest component.

Writes benchmarks/results/historical_gradient.json.

Run: python benchmarks/historical_gradient.py [--repeats 20]
"""

import argparse
import json
import pathlib
import statistics
import time


RESULTS = pathlib.Path(__file__).parent / "results"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    import diffrax
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import ebm

    model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    params = model.Params(F2x=3.93)
    times, warming = ebm.observed_warming(1850, 2019)
    saveat = diffrax.SaveAt(ts=jnp.asarray(times))
    years = float(times[-1]) - model.forcing.start

    rows, gradients = [], {}
    for solver in ("exact", None):

        def misfit(p, solver=solver):
            run = ebm.integrate(
                p, model=model, years=years, saveat=saveat, solver=solver
            )
            return jnp.sum((run.Ts - warming) ** 2)

        call = jax.jit(jax.value_and_grad(misfit))
        start = time.perf_counter()
        jax.block_until_ready(call(params))
        first = time.perf_counter() - start
        seconds = []
        for k in range(args.repeats):
            p = jax.tree.map(lambda x: x * (1 + 1e-3 * (k + 1)), params)
            start = time.perf_counter()
            jax.block_until_ready(call(p))
            seconds.append(time.perf_counter() - start)
        gradients[solver] = np.array(jax.tree.leaves(call(params)[1]))
        rows.append(
            dict(
                solver=solver or "diffrax default (Tsit5)",
                first_call_s=first,
                per_call_s=statistics.median(seconds),
            )
        )
        print(
            f"{rows[-1]['solver']:>26}: first {first:6.2f} s, then "
            f"{rows[-1]['per_call_s'] * 1e3:8.2f} ms per gradient"
        )
    exact, adaptive = gradients["exact"], gradients[None]
    difference = float(np.max(np.abs(exact - adaptive)) / np.max(np.abs(exact)))
    ratio = rows[1]["per_call_s"] / rows[0]["per_call_s"]
    print(f"exact is {ratio:.1f}x faster; gradients differ by {difference:.1e}")
    RESULTS.mkdir(exist_ok=True)
    out = dict(
        machine=dict(cpu_count=__import__("os").cpu_count(), jax=jax.__version__),
        repeats=args.repeats,
        rows=rows,
        speedup=ratio,
        gradient_relative_difference=difference,
    )
    (RESULTS / "historical_gradient.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
