"""Memory and time of a gradient through a long run, under every checkpoint schedule.

For N = 1,000 ... 1,000,000 five-day IMEX steps of the default 60-cell model: the
forward pass and `jax.grad` of the final global mean under each schedule of
`ebm.integrate_fixed` (plain, per-step, two-level sqrt, nested 3 and 4 levels,
offline binomial with 8 and 32 checkpoints, diffrax's RecursiveCheckpointAdjoint with
its default and with 8 checkpoints): XLA's temporary memory (MB), the median wall time
over `--repeats` runs, and both as ratios to the forward pass. Gradients needing more
than `--max-gb` of temporary memory are compiled but not run, and one whose first
run takes over `--max-seconds` is timed by that run alone (both said in the output).
Writes benchmarks/results/memory.json and memory.png.

Run: python benchmarks/memory.py [--steps 1000 ...] [--schedules none sqrt ...]
         [--repeats 5] [--max-gb 4] [--max-seconds 60] [--update]
         [--albedo subgrid|cell-centred] [--output FILE]
(`--update` re-measures the given rows and keeps the rest of the JSON; each row
records when it was measured.)
"""

import argparse
import datetime
import json
import pathlib

from _machine import machine

import ebm
from ebm._stepping.memory import DEFAULT_SCHEDULES, schedule_name


RESULTS = pathlib.Path(__file__).parent / "results"
STEPS = (1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000)
ALBEDOS = {"subgrid": ebm.SubgridIceAlbedo(), "cell-centred": ebm.SmoothIceAlbedo()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=STEPS)
    parser.add_argument(
        "--schedules",
        nargs="+",
        default=[schedule_name(s) for s in DEFAULT_SCHEDULES],
        help="names as in the table, e.g. none sqrt nested-3 binomial-8",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-gb", type=float, default=4.0)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument(
        "--update",
        action="store_true",
        help="replace these rows in an existing --output, keeping the others",
    )
    parser.add_argument("--output", type=pathlib.Path, default=RESULTS / "memory.json")
    parser.add_argument(
        "--albedo",
        choices=sorted(ALBEDOS),
        default="subgrid",
        help="the model's albedo: the sub-grid default, or the cell-centred blend "
        "that was the default when memory.json was first measured",
    )
    arguments = parser.parse_args()
    command = (
        "python benchmarks/memory.py --steps "
        + " ".join(map(str, arguments.steps))
        + " --schedules "
        + " ".join(arguments.schedules)
        + f" --repeats {arguments.repeats} --max-gb {arguments.max_gb}"
        + f" --max-seconds {arguments.max_seconds} --albedo {arguments.albedo}"
    )
    measured = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rows = ebm.memory_table(
        arguments.steps,
        arguments.schedules,  # the labels are spellings integrate_fixed reads
        model=ebm.EnergyBalanceModel(albedo=ALBEDOS[arguments.albedo]),
        repeats=arguments.repeats,
        max_timed_bytes=int(arguments.max_gb * 1e9),
        max_seconds=arguments.max_seconds,
    )
    for row in rows:
        row["measured"] = measured
        row["albedo"] = arguments.albedo
    commands = [command]
    if arguments.update and arguments.output.exists():
        previous = json.loads(arguments.output.read_text())
        fresh = {(row["steps"], row["schedule"], row["albedo"]) for row in rows}
        kept = [
            row
            for row in previous["rows"]
            if (row["steps"], row["schedule"], row.get("albedo")) not in fresh
        ]
        rows = sorted(kept + rows, key=lambda row: row["steps"])
        commands = previous.get("commands", [previous.get("command")]) + commands
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    record = dict(
        benchmark="memory",
        commands=commands,
        model="60-cell EBM, IMEXEuler, dt = 5 days; each row's albedo is in the row",
        machine=machine(),
        repeats=arguments.repeats,
        rows=rows,
    )
    arguments.output.write_text(json.dumps(record, indent=2) + "\n")
    ebm.plot_memory_scaling(rows, path=arguments.output.with_suffix(".png"))
    print(f"wrote {arguments.output} and {arguments.output.with_suffix('.png')}")


if __name__ == "__main__":
    main()
