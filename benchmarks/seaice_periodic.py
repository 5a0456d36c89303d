"""`ebm.SeaIceModel`'s periodic state and its derivatives: cost and accuracy.

1. One periodic state (`ebm.periodic_equilibrium`, 1,000 steps a year) and its
   gradient (of the annual hemispheric mean temperature, with respect to every
   parameter) at n = 100 and 400: seconds for the first call (with compilation)
   and the median of `--repeats` calls at new parameter values.
2. Sensitivities at n = 100 (`--sensitivity-steps` a year): the summer (most
   poleward) ice edge's gradient with respect to every parameter against central
   differences (relative step 1e-5), and the forcing at which the summer ice
   vanishes (`ebm.ice_free_forcing`) with its gradient against central differences
   for `--forcing-parameters`.

Writes benchmarks/results/seaice_periodic.json.

Run: python benchmarks/seaice_periodic.py [--repeats 3]
"""

import argparse
import json
import pathlib
import statistics
import time


RESULTS = pathlib.Path(__file__).parent / "results"


def timed(call, *args):
    import jax

    start = time.perf_counter()
    jax.block_until_ready(call(*args))
    return time.perf_counter() - start


def cost(n, repeats):
    import jax

    import ebm

    model = ebm.SeaIceModel(n)

    def mean(params):
        cycle = ebm.periodic_equilibrium(params, model=model, steps_per_year=1000)
        return cycle.annual_global_mean

    gradient = jax.grad(mean)
    row = {"n": n}
    for name, call in (("periodic_state", mean), ("gradient", gradient)):
        row[f"{name}_first_seconds"] = timed(call, model.Params())
        seconds = [timed(call, model.Params(F=0.1 * (k + 1))) for k in range(repeats)]
        row[f"{name}_seconds"] = statistics.median(seconds)
    return row


def sensitivities(steps, forcing_parameters):
    import equinox as eqx
    import jax

    import ebm

    model = ebm.SeaIceModel(100)
    params = model.Params()

    def summer_edge(p):
        cycle = ebm.periodic_equilibrium(p, model=model, steps_per_year=steps)
        return ebm.summer_ice_edge(cycle, model)

    def shifted(p, name, step):
        return eqx.tree_at(lambda q: getattr(q, name), p, getattr(p, name) + step)

    def central(fn, name, relative):
        value = float(getattr(params, name))
        step = relative * max(abs(value), 1.0)
        return (
            float(fn(shifted(params, name, step)))
            - float(fn(shifted(params, name, -step)))
        ) / (2 * step)

    start = time.perf_counter()
    gradient = jax.grad(summer_edge)(params)
    edge_seconds = time.perf_counter() - start
    edge_rows = []
    for name in params.field_names():
        expected = central(summer_edge, name, 1e-5)
        got = float(getattr(gradient, name))
        edge_rows.append(
            {"parameter": name, "gradient": got, "finite_difference": expected}
        )

    bracket = (0.0, 6.0)

    def forcing(p):
        return ebm.ice_free_forcing(
            p, model=model, bracket=bracket, steps_per_year=steps
        )

    start = time.perf_counter()
    F_star = float(forcing(params))
    forcing_seconds = time.perf_counter() - start
    forcing_gradient = jax.grad(forcing)(params)
    forcing_rows = []
    for name in forcing_parameters:
        forcing_rows.append(
            {
                "parameter": name,
                "gradient": float(getattr(forcing_gradient, name)),
                "finite_difference": central(forcing, name, 1e-4),
            }
        )
    return {
        "n": 100,
        "steps_per_year": steps,
        "summer_ice_edge": float(summer_edge(params)),
        "summer_ice_edge_gradient_seconds": edge_seconds,
        "summer_ice_edge_gradient": edge_rows,
        "ice_free_forcing": F_star,
        "ice_free_forcing_seconds": forcing_seconds,
        "ice_free_forcing_gradient": forcing_rows,
        "largest_relative_difference": {
            key: max(
                abs(r["gradient"] - r["finite_difference"])
                / max(abs(r["finite_difference"]), 1e-12)
                for r in rows
                if abs(r["finite_difference"]) > 1e-9
            )
            for key, rows in (("edge", edge_rows), ("forcing", forcing_rows))
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sensitivity-steps", type=int, default=365)
    parser.add_argument("--forcing-parameters", nargs="*", default=["D", "S1", "ai"])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 400])
    args = parser.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    rows = [cost(n, args.repeats) for n in args.sizes]
    for row in rows:
        print(json.dumps(row), flush=True)
    result = sensitivities(args.sensitivity_steps, args.forcing_parameters)
    print(json.dumps(result["largest_relative_difference"]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    payload = {"machine": machine(), "cost": rows, "sensitivities": result}
    (RESULTS / "seaice_periodic.json").write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
