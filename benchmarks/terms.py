"""What each of ebm's optional terms costs: an equilibrium and its gradient.

For the default model and for a model with each term swapped in, at 90 and 10,000
cells: the time of `ebm.equilibrium` and of `jax.value_and_grad` of its global mean
with respect to every parameter (one implicit linear solve), each the median of
`--repeats` calls after the first (which compiles), whose time is recorded too.
Every model here declares a tridiagonal Jacobian, so its Newton steps and its
gradient's solve are O(n) (the solver probes the Jacobian with three evaluations
and factors it; `tridiagonal` in the JSON says the model declares it). The ratio to the
default model at the same resolution is the figure of merit: on a shared machine
absolute times move, ratios much less.

Configurations:

- `default`: `ebm.Params()`.
- `grey-body`: `ebm.GreyBodyLongwave` with emissivity 0.68 (a present-day-like
    climate).
- `co2`: `ebm.CO2Forcing` at 560 ppm.
- `D(lat)`: `ebm.LatitudeDiffusiveTransport` with D = 0.3 + 0.5 cos^2(lat) on every
    bound (its gradient has one entry per bound).
- `moist`: `ebm.MoistDiffusiveTransport` (nonlinear in T), when this ebm has it.

Writes benchmarks/results/terms.json and .png.

Run: python benchmarks/terms.py [--sizes 90 10000] [--repeats 5]
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib


matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import ebm  # noqa: E402
from ebm._zonal.model import has_tridiagonal_jacobian  # noqa: E402


sys.path.insert(0, str(pathlib.Path(__file__).parent))
from _machine import machine  # noqa: E402


RESULTS = pathlib.Path(__file__).parent / "results"


def configurations(grid: ebm.Grid) -> dict:
    """`name -> (model, params)`."""
    models = {
        "default": (ebm.EnergyBalanceModel(grid=grid), {}),
        "grey-body": (
            ebm.EnergyBalanceModel(grid=grid, longwave=ebm.GreyBodyLongwave()),
            dict(emissivity=0.68),
        ),
        "co2": (
            ebm.EnergyBalanceModel(grid=grid, forcing=ebm.CO2Forcing()),
            dict(CO2=560.0),
        ),
        "D(lat)": (
            ebm.EnergyBalanceModel(
                grid=grid, transport=ebm.LatitudeDiffusiveTransport()
            ),
            dict(D_bounds=0.3 + 0.5 * jnp.cos(grid.lat_bounds_radians) ** 2),
        ),
    }
    if hasattr(ebm, "MoistDiffusiveTransport"):
        models["moist"] = (
            ebm.EnergyBalanceModel(grid=grid, transport=ebm.MoistDiffusiveTransport()),
            {},
        )
    return {
        name: (model, model.Params(**values))
        for name, (model, values) in models.items()
    }


def _timed(function, params, repeats: int) -> tuple[float, float, object]:
    start = time.perf_counter()
    output = jax.block_until_ready(function(params))
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        output = jax.block_until_ready(function(params))
        times.append(time.perf_counter() - start)
    return first, statistics.median(times), output


def measure(name: str, model, params, repeats: int) -> dict:
    solve = eqx.filter_jit(lambda p: ebm.equilibrium(p, model=model))
    gradient = eqx.filter_jit(
        jax.value_and_grad(lambda p: ebm.equilibrium(p, model=model).global_mean)
    )
    first, seconds, state = _timed(solve, params, repeats)
    gradient_first, gradient_seconds, _ = _timed(gradient, params, repeats)
    return dict(
        term=name,
        n_lat=model.grid.n_lat,
        tridiagonal=has_tridiagonal_jacobian(model),
        equilibrium_seconds=seconds,
        equilibrium_first_call_seconds=first,
        gradient_seconds=gradient_seconds,
        gradient_first_call_seconds=gradient_first,
        num_steps=int(state.num_steps),
        converged=bool(state.converged),
        global_mean=float(state.global_mean),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[90, 10_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default="terms")
    arguments = parser.parse_args()
    rows = []
    for n_lat in arguments.sizes:
        for name, (model, params) in configurations(ebm.Grid(n_lat)).items():
            row = measure(name, model, params, arguments.repeats)
            rows.append(row)
            print(
                f"{name:10s} n_lat {n_lat:6d}  equilibrium "
                f"{row['equilibrium_seconds']:.4f} s ({row['num_steps']} steps)  with "
                f"gradient {row['gradient_seconds']:.4f} s  tridiagonal "
                f"{row['tridiagonal']}",
                flush=True,
            )
    for row in rows:
        default = next(
            r for r in rows if r["term"] == "default" and r["n_lat"] == row["n_lat"]
        )
        row["equilibrium_ratio_to_default"] = (
            row["equilibrium_seconds"] / default["equilibrium_seconds"]
        )
        row["gradient_ratio_to_default"] = (
            row["gradient_seconds"] / default["gradient_seconds"]
        )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{arguments.output}.json"
    path.write_text(
        json.dumps(
            dict(
                machine=machine(),
                command=" ".join(["python", "benchmarks/terms.py", *sys.argv[1:]]),
                rows=rows,
            ),
            indent=2,
        )
    )
    plot(rows, RESULTS / f"{arguments.output}.png")
    print(f"wrote {path}")


def plot(rows, path) -> None:
    """Bars of each term's equilibrium time, with and without the gradient, by size."""
    sizes = list(dict.fromkeys(row["n_lat"] for row in rows))
    figure, axes = plt.subplots(
        1, len(sizes), figsize=(4 * len(sizes), 3.5), squeeze=False
    )
    for axis, n_lat in zip(axes[0], sizes):
        mine = [r for r in rows if r["n_lat"] == n_lat]
        names = [r["term"] for r in mine]
        x = range(len(names))
        axis.bar(
            [i - 0.2 for i in x],
            [r["equilibrium_seconds"] * 1e3 for r in mine],
            width=0.4,
            label="equilibrium",
        )
        axis.bar(
            [i + 0.2 for i in x],
            [r["gradient_seconds"] * 1e3 for r in mine],
            width=0.4,
            label="with gradient",
        )
        axis.set_xticks(list(x), names, rotation=30)
        axis.set_ylabel("ms (median after compilation)")
        axis.set_title(f"{n_lat} cells")
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
