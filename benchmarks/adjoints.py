"""What does the gradient through a long run cost under each adjoint?

For runs of 10, 100, 1,000 and 10,000 years from the present-day profile, at 90 and
1,000 cells, this takes the gradient of the final global-mean temperature with
respect to every parameter under

- `recursive`: `RecursiveCheckpointAdjoint` with ebm's default `4 log2(max_steps)`
  checkpoints;
- `recursive-8`: the same with 8 checkpoints (less memory, more recomputation);
- `direct`: `DirectAdjoint`;
- `backsolve`: `BacksolveAdjoint` (refused beyond its horizon, 20 diffusive time
  scales: days here, so every length is refused and recorded as such);
- `interpolating`: `ebm.InterpolatingAdjoint` (the continuous adjoint against a
  checkpointed forward state),

and records the XLA temporary memory of the compiled gradient (`memory_analysis`),
its compile time, its run time after compilation, and its largest relative
difference from the recursive adjoint's gradient. Each configuration runs in its
own process under a time limit; one whose time, extrapolated linearly in years from
the adjoint's shorter run, would pass the limit is not run and says so.

Writes benchmarks/results/adjoints.json and adjoints.png.
Run: python benchmarks/adjoints.py [--limit S] [--cells N ...] [--adjoints NAME ...]
     python benchmarks/adjoints.py --plot-only
"""

import argparse
import json
import pathlib
import subprocess
import sys
import time


RESULTS = pathlib.Path(__file__).parent / "results"
ADJOINTS = ("recursive", "recursive-8", "direct", "backsolve", "interpolating")
YEARS = (10.0, 100.0, 1000.0, 10000.0)
CELLS = (90, 1000)


def measure(cells: int, years: float, name: str) -> dict:
    """One configuration, in this process."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import ebm

    adjoint = ("recursive", 8) if name == "recursive-8" else name
    grid = ebm.Grid(cells)
    params = ebm.Params()

    def final_mean(params):
        return ebm.integrate(
            params, years=years, grid=grid, adjoint=adjoint
        ).global_mean

    gradient = jax.jit(jax.grad(final_mean))
    start = time.perf_counter()
    compiled = gradient.lower(params).compile()
    compile_seconds = time.perf_counter() - start
    memory = compiled.memory_analysis()
    start = time.perf_counter()
    value = jax.block_until_ready(compiled(params))
    seconds = time.perf_counter() - start
    if seconds < 20:
        start = time.perf_counter()
        value = jax.block_until_ready(compiled(params))
        seconds = time.perf_counter() - start
    return dict(
        cells=cells,
        years=years,
        adjoint=name,
        status="ok",
        compile_seconds=compile_seconds,
        seconds=seconds,
        temporary_megabytes=memory.temp_size_in_bytes / 1e6,
        gradient={
            field: float(jnp.ravel(getattr(value, field))[0])
            for field in type(params).field_names()
        },
    )


def run_one(cells, years, name, limit) -> dict:
    """One configuration in a fresh process, killed after `limit` seconds."""
    command = [sys.executable, __file__, "--one", str(cells), str(years), name]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=limit, check=False
        )
    except subprocess.TimeoutExpired:
        return dict(
            cells=cells,
            years=years,
            adjoint=name,
            status=f"not finished within {limit:g} s",
        )
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "Error" in line]
        message = lines[-1] if lines else "(no message)"
        if "adjoint='backsolve' integrates the model backwards" in done.stderr:
            message = "refused by ebm.integrate: longer than backsolve's horizon"
        return dict(cells=cells, years=years, adjoint=name, status=f"failed: {message}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def relative_difference(gradient, reference) -> float:
    scale = max(abs(value) for value in reference.values())
    return max(abs(gradient[k] - reference[k]) for k in reference) / scale


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, len(CELLS), figsize=(10, 7), sharex=True)
    for column, cells in enumerate(CELLS):
        for colour, name in enumerate(ADJOINTS):
            style = dict(color=f"C{colour}", marker="o", label=name)
            done = [
                r
                for r in rows
                if r["cells"] == cells and r["adjoint"] == name and r["status"] == "ok"
            ]
            if not done:
                continue
            years = [r["years"] for r in done]
            axes[0, column].loglog(years, [r["seconds"] for r in done], **style)
            axes[1, column].loglog(
                years, [r["temporary_megabytes"] for r in done], **style
            )
        axes[0, column].set_title(f"{cells} cells")
        axes[0, column].set_ylabel("gradient time after compilation, s")
        axes[1, column].set_ylabel("XLA temporary memory, MB")
        axes[1, column].set_xlabel("run length, years")
        axes[0, column].legend()
    figure.suptitle(
        "Gradient of the final global mean through a run "
        "(python benchmarks/adjoints.py)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=3, metavar=("CELLS", "YEARS", "ADJOINT"))
    parser.add_argument("--limit", type=float, default=600.0)
    parser.add_argument(
        "--plot-only", action="store_true", help="redraw the figure from the JSON"
    )
    parser.add_argument("--cells", type=int, nargs="+", default=list(CELLS))
    parser.add_argument(
        "--adjoints",
        nargs="+",
        default=list(ADJOINTS),
        help="measure these again; the others' rows are kept from the JSON",
    )
    arguments = parser.parse_args()
    if arguments.one:
        cells, years, name = arguments.one
        print(json.dumps(measure(int(cells), float(years), name)))
        return
    if arguments.plot_only:
        rows = json.loads((RESULTS / "adjoints.json").read_text())["rows"]
        plot(rows, RESULTS / "adjoints.png")
        return
    from _machine import machine

    path = RESULTS / "adjoints.json"
    kept = json.loads(path.read_text())["rows"] if path.exists() else []
    rows = [
        row
        for row in kept
        if row["adjoint"] not in arguments.adjoints
        or row["cells"] not in arguments.cells
    ]
    for cells in arguments.cells:
        for name in arguments.adjoints:
            previous = None
            for years in YEARS:
                if name == "backsolve":
                    # ebm.integrate refuses it beyond 20 diffusive time scales.
                    row = run_one(cells, years, name, arguments.limit)
                elif previous is not None and (
                    previous["status"] != "ok"
                    or previous["compile_seconds"]
                    + previous["seconds"] * years / previous["years"]
                    > arguments.limit
                ):
                    row = dict(
                        cells=cells,
                        years=years,
                        adjoint=name,
                        status=(
                            "not run: the shorter run "
                            + (
                                f"took {previous['seconds']:.3g} s, so about "
                                f"{previous['seconds'] * years / previous['years']:.3g}"
                                " s"
                                if previous["status"] == "ok"
                                else "did not finish"
                            )
                        ),
                    )
                else:
                    row = run_one(cells, years, name, arguments.limit)
                previous = row
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "gradient"}))
    for row in rows:
        reference = next(
            (
                r
                for r in rows
                if r["cells"] == row["cells"]
                and r["years"] == row["years"]
                and r["adjoint"] == "recursive"
                and r["status"] == "ok"
            ),
            None,
        )
        if row["status"] == "ok" and reference is not None:
            row["difference_from_recursive"] = relative_difference(
                row["gradient"], reference["gradient"]
            )
    RESULTS.mkdir(exist_ok=True)
    rows.sort(key=lambda r: (r["cells"], ADJOINTS.index(r["adjoint"]), r["years"]))
    path.write_text(
        json.dumps(
            dict(
                command="python benchmarks/adjoints.py",
                machine=machine(),
                limit_seconds=arguments.limit,
                note=(
                    "Each gradient is compiled under jax.jit with the parameters "
                    "traced, so ebm.integrate's step budget is its 2**22 bound: "
                    "the recursive adjoint keeps 4 log2(2**22) = 88 checkpoints, "
                    "the interpolating one 2,048 segments of 2,048 steps."
                ),
                rows=rows,
            ),
            indent=2,
        )
    )
    plot(rows, RESULTS / "adjoints.png")


if __name__ == "__main__":
    main()
