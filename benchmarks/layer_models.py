"""The ocean-layer models: first and second call, TCR with its gradient per second,
and members per second in ensembles, beside FaIR 2.x and openscm-twolayermodel on
the same runs.

- `first_call_s`, `second_call_s`: `ebm.tcr` and `jax.grad` of it, for the
    two-layer and the three-layer model, in this process (the first compiles).
- `members_per_s`: `jax.jit(jax.vmap(value_and_grad(tcr)))` over members that
    sweep `gamma` (the median of `--repeats` calls after the first), at each of
    `--members`.
- `fair_runs_per_s`, `openscm_runs_per_s`: 80 years of 1pctCO2 forcing by FaIR's
    `EnergyBalanceModel` (three layers) and openscm-twolayermodel's
    `TwoLayerModel`, one run at a time (neither differentiates; the `compare`
    extra installs them; absent packages are recorded as such).

Writes benchmarks/results/layer_models.json and .png.

Run: python benchmarks/layer_models.py [--members 100 1000 10000 100000]
    [--repeats 3]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time


RESULTS = pathlib.Path(__file__).parent / "results"


def _timed(fn, repeats):
    fn()  # compiles
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _theirs(repeats: int) -> dict:
    import numpy as np

    forcing = 3.45 * np.arange(81) * np.log2(1.01)
    record = {}
    try:
        from fair.energy_balance_model import EnergyBalanceModel
    except ImportError:
        record["fair_runs_per_s"] = "not installed"
    else:

        def fair():
            model = EnergyBalanceModel(
                ocean_heat_capacity=[7.3, 30.0, 100.0],
                ocean_heat_transfer=[1.13, 1.5, 0.7],
                deep_ocean_efficacy=1.0,
                forcing_4co2=6.9,
                n_timesteps=forcing.size,
            )
            model.add_forcing(forcing, 1)
            model.run()

        record["fair_runs_per_s"] = 1.0 / _timed(fair, repeats)
    try:
        import openscm_twolayermodel
        from openscm_units import unit_registry as ur
    except ImportError:
        record["openscm_runs_per_s"] = "not installed"
    else:

        def openscm():
            model = openscm_twolayermodel.TwoLayerModel()
            model.set_drivers(forcing * ur("W/m^2"))
            model.reset()
            model.run()

        record["openscm_runs_per_s"] = 1.0 / _timed(openscm, repeats)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--members", type=int, nargs="+", default=[100, 1000, 10_000, 100_000]
    )
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import jax
    import jax.numpy as jnp
    from _machine import machine

    import ebm

    rows = []
    for label, model in (
        ("two-layer", ebm.TwoLayerModel()),
        ("three-layer", ebm.NLayerModel(3)),
    ):
        params = model.Params()
        start = time.perf_counter()
        jax.block_until_ready(jax.grad(lambda p: ebm.tcr(p, model))(params))
        first = time.perf_counter() - start
        start = time.perf_counter()
        jax.block_until_ready(jax.grad(lambda p: ebm.tcr(p, model))(params))
        second = time.perf_counter() - start
        gamma = "gamma" if label == "two-layer" else "kappa2"

        @jax.jit
        @jax.vmap
        def members(value, model=model, params=params, gamma=gamma):
            moved = params.__class__(
                **{
                    **{n: getattr(params, n) for n in params.field_names()},
                    gamma: value,
                }
            )
            return jax.value_and_grad(lambda p: ebm.tcr(p, model))(moved)

        throughput = {}
        for count in arguments.members:
            values = jnp.linspace(0.5, 1.5, count)
            seconds = _timed(
                lambda: jax.block_until_ready(members(values)), arguments.repeats
            )
            throughput[str(count)] = count / seconds
            print(
                f"{label}: {count} members, {count / seconds:,.0f} members/s",
                flush=True,
            )
        rows.append(
            dict(
                model=label,
                first_call_s=first,
                second_call_s=second,
                members_per_s=throughput,
            )
        )
        print(f"{label}: first call {first:.2f} s, second {second:.4f} s", flush=True)
    record = dict(
        machine=machine(),
        command="python benchmarks/layer_models.py " + " ".join(sys.argv[1:]),
        rows=rows,
        **_theirs(arguments.repeats),
    )
    print(json.dumps({k: v for k, v in record.items() if k.endswith("_per_s")}))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "layer_models.json"
    path.write_text(json.dumps(record, indent=2))
    plot(record, RESULTS / "layer_models.png")
    print(f"wrote {path}")


def plot(record: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for row in record["rows"]:
        counts = [int(c) for c in row["members_per_s"]]
        ax.loglog(
            counts,
            list(row["members_per_s"].values()),
            "o-",
            label=f"ebm {row['model']}",
        )
    for key, label in (
        ("fair_runs_per_s", "FaIR (3 layers)"),
        ("openscm_runs_per_s", "openscm (2 layers)"),
    ):
        if isinstance(record.get(key), float):
            ax.axhline(
                record[key],
                ls="--",
                color="0.4" if "fair" in key else "0.7",
                label=f"{label}, one run at a time, no gradient",
            )
    ax.set_xlabel("members in one call")
    ax.set_ylabel("members per second (TCR + gradient for ebm)")
    ax.legend(fontsize=8)
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
