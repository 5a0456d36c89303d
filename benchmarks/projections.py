"""Throughput of warming projections: members per second of a 1750-2100 projection
with its gradient, a million members through five SSPs, and FaIR 2.x's ensemble
on the same forcing.

- `with_gradient`: members per second of `ebm.ensemble` over members that sweep
    the two-layer model's parameters (feedback, gamma, C, C_deep, efficacy,
    aerosol_scale), each projecting ssp245 from 1750 to 2100 (exact solution) and
    differentiating its 2081-2100 mean warming with respect to every parameter,
    at each of `--members` (the median of `--repeats` calls after the first,
    which compiles).
- `million_five_ssps_s`: wall time of `ebm.project` of `--million` members
    through ssp119, ssp126, ssp245, ssp370 and ssp585, keeping each member's
    period means only (`keep_runs=False`), without gradients.
- `fair`: FaIR 2.x's own ensemble path on the same members and ssp245 forcing
    (the `compare` extra installs it): `multi_ebm` for the members' two-layer
    configurations, then `step_temperature` year by year over all of them at
    once, without gradients (it cannot differentiate); at each of
    `--fair-members`.

Writes benchmarks/results/projections.json and .png.

Run: python benchmarks/projections.py [--members 10000 100000 1000000]
    [--million 1000000] [--fair-members 1000 10000] [--repeats 2]
"""

import argparse
import json
import pathlib
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import ebm
from ebm._analysis.project import projection_task


RESULTS = pathlib.Path(__file__).parent / "results"


def members(count: int, seed: int = 0):
    """`count` two-layer members around the defaults (AR6's F2x), spread by
    log-normal factors of 20 %."""
    model = ebm.TwoLayerModel(forcing=ebm.SSPForcing("ssp245", end=2100))
    rng = np.random.default_rng(seed)
    base = model.Params(F2x=3.93)
    spread = {
        name: float(getattr(base, name)) * np.exp(0.2 * rng.standard_normal(count))
        for name in ("feedback", "gamma", "C", "C_deep", "efficacy", "aerosol_scale")
    }
    return ebm.sweep(base, **spread), model


def late_warming(result):
    """The 2081-2100 mean warming of a member's projection: one function for every
    call (a fresh `lambda` would be a new program each time)."""
    return result["period_means"][0]


def with_gradient(count: int, repeats: int) -> dict:
    params, model = members(count)
    times = jnp.asarray(np.arange(1850, 2101) + 0.5)
    periods = jnp.asarray([(times >= 2081) & (times < 2101)], float)

    def call():
        run = ebm.ensemble(
            params,
            projection_task,
            model=model,
            times=times,
            periods=periods,
            gradient=late_warming,
            block_size=min(count, 8192),
            on_failure="raise",
        )
        jax.block_until_ready(run.gradient)
        return run

    call()
    seconds = statistics.median(_time(call) for _ in range(repeats))
    return {"members": count, "seconds": seconds, "members_per_s": count / seconds}


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def million_five_ssps(count: int) -> dict:
    params, _ = members(count)
    start = time.perf_counter()
    projection = ebm.project(
        params,
        ("ssp119", "ssp126", "ssp245", "ssp370", "ssp585"),
        keep_runs=False,
        block_size=8192,
    )
    seconds = time.perf_counter() - start
    table = projection.table()
    return {
        "members": count,
        "seconds": seconds,
        "failed": int(np.sum(~np.asarray(projection.ok))),
        "median_2081_2100_K": {row["scenario"]: row["2081-2100"][1] for row in table},
    }


def fair(count: int) -> dict:
    try:
        from fair.energy_balance_model import multi_ebm, step_temperature
    except ImportError:
        return {"members": count, "members_per_s": "not installed"}
    params, model = members(count)
    scenario = model.forcing
    times = np.asarray(scenario.rest.times)
    rest = np.asarray(scenario.rest.values)
    aerosol = np.asarray(scenario.aerosol.values)
    scale = np.asarray(params.aerosol_scale)
    # The same two-layer members, as FaIR's configurations.
    capacities = np.stack([np.asarray(params.C), np.asarray(params.C_deep)], axis=1)
    transfers = np.stack(
        [np.asarray(params.feedback), np.asarray(params.gamma)], axis=1
    )

    def run():
        ebms = multi_ebm(
            list(range(count)),
            ocean_heat_capacity=capacities,
            ocean_heat_transfer=transfers,
            deep_ocean_efficacy=np.asarray(params.efficacy),
            stochastic_run=np.zeros(count, bool),
            sigma_eta=np.full(count, 0.5),
            sigma_xi=np.full(count, 0.5),
            gamma_autocorrelation=np.full(count, 2.0),
            seed=np.zeros(count, int),
            use_seed=np.zeros(count, bool),
            forcing_4co2=np.full(count, 8.0),
            timestep=1.0,
            timebounds=np.append(times - 0.5, times[-1] + 0.5),
        )
        matrix = ebms["eb_matrix_d"].values[None]
        vector = ebms["forcing_vector_d"].values[None]
        stochastic = np.zeros((1, count, 3))
        state = np.zeros((1, count, 3))
        for k in range(times.size):
            forcing = (rest[k] + scale * aerosol[k])[None, :, None]
            state = step_temperature(state, matrix, vector, stochastic, forcing)[None]
        return state

    seconds = _time(run)
    return {"members": count, "seconds": seconds, "members_per_s": count / seconds}


def plot(record: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2), layout="constrained")
    rows = record["with_gradient"]
    ax.loglog(
        [r["members"] for r in rows],
        [r["members_per_s"] for r in rows],
        "o-",
        label="ebm.ensemble, projection with its gradient",
    )
    rows = [r for r in record["fair"] if isinstance(r["members_per_s"], float)]
    if rows:
        ax.loglog(
            [r["members"] for r in rows],
            [r["members_per_s"] for r in rows],
            "s--",
            label="FaIR 2.x multi_ebm + step_temperature, no gradient",
        )
    ax.set_xlabel("members")
    ax.set_ylabel("members per second")
    ax.set_title("1750-2100 projections (ssp245), this machine", fontsize=10)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--members", type=int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--million", type=int, default=1_000_000)
    parser.add_argument("--fair-members", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--repeats", type=int, default=2)
    arguments = parser.parse_args()
    from _machine import machine

    record = {"machine": machine(), "with_gradient": [], "fair": []}
    for count in arguments.members:
        row = with_gradient(count, arguments.repeats)
        print(f"ebm, with gradient: {row}")
        record["with_gradient"].append(row)
    for count in arguments.fair_members:
        row = fair(count)
        print(f"FaIR: {row}")
        record["fair"].append(row)
    row = million_five_ssps(arguments.million)
    print(f"five SSPs: {row}")
    record["million_five_ssps"] = row
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "projections.json"
    path.write_text(json.dumps(record, indent=2))
    plot(record, RESULTS / "projections.png")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
