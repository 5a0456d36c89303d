"""The `ebm` command: one subcommand per main job.

- `ebm equilibrium`: the equilibrium from a start, its global mean, ice edge and the
    gradient of the global mean with respect to every parameter; plots T(lat).
- `ebm run`: a time integration under a chosen adjoint (or fixed steps with a
    checkpoint schedule), with the gradient of the final global mean; plots the
    latitude-time (Hovmoller) diagram.
- `ebm fit`: fits parameters to a target profile (a netCDF file with `T`, or the
    equilibrium at `--truth` values); plots the fit.
- `ebm sensitivity`: the forward-mode Jacobian of an output; plots the profiles.
- `ebm hysteresis`: the branch of equilibria in a parameter, with its folds.
- `ebm seasonal`: the seasonal cycle (periodic steady state) of the zonal model,
    or (`--model zonal-deep-ocean`) of the zonal model over a deep ocean; Hovmoller
    plot.
- `ebm transient`: an ocean-layer model (`--model two-layer`/`three-layer`/
    `zonal-deep-ocean`) under a CMIP experiment (`--scenario 1pctCO2`); its ECS,
    TCR, effective sensitivity and the gradient of TCR (and the zonal model's polar
    amplification); plots each variable against time.
- `ebm calibrate`: the two-layer model calibrated against the observed warming by
    NUTS; ECS and TCR beside AR6's ranges; plots the posterior predictive warming.
- `ebm seaice`: Wagner & Eisenman's (2015) sea-ice model's seasonal cycle: its ice
    edge, polar ice and the gradient of the summer ice edge; plots temperature, ice
    thickness and ice edge through the year.
- `ebm memory`: memory and time of reverse mode under each checkpoint schedule.
- `ebm cache`: where the compiled programs are kept; `--clear` removes them.

Every subcommand takes `--json` (print JSON instead of text), `--plot FILE` /
`--no-plot`, `--netcdf FILE` (the result as CF netCDF, see `ebm.save`); those of
the zonal model also its `--n-lat`, its terms (`--longwave grey-body`, one flag per
kind; see `common.py`) and the parameters of any term (`--D 0.3 ...`; one of a term
the model does not have is an error). Bad arguments or parameters print one line
on stderr and exit with status 2; a solve that fails prints one line (after the
compile notice, if there was one) and exits with status 1. The long jobs (`run`,
`fit`, `hysteresis`, `seasonal`) show a progress bar on stderr, so that stdout keeps
the report alone, unless `--json` (then `--progress` asks for it) or `--no-progress`.
JAX compiles each program the first time it meets a grid and settings; the
command keeps what it compiles in JAX's persistent compilation cache (see
`ebm.enable_compilation_cache`; `EBM_COMPILATION_CACHE=off` turns it off), so that
the next call, in a new process, reads it instead. A subcommand that compiles for
more than a second without a break says so on stderr.

Each subcommand is one module of this package (`equilibrium.py`, `run.py`, ...), listed
once in `COMMANDS`; `common.py` holds what they share. The names their options take
(starts, steppers, adjoints, checkpoint schedules, outputs, terms) are read from the
library's tables and from the terms it finds (`ebm._zonal.catalogue`), never typed
again here.
"""

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Sequence

from . import (
    cache,
    calibrate,
    emulate,
    equilibrium,
    fit,
    hysteresis,
    memory,
    project,
    run,
    seaice,
    seasonal,
    sensitivity,
    transient,
)
from .common import check_outputs, print_fields, print_report


COMMANDS = {
    command.NAME: command
    for command in (
        equilibrium,
        run,
        fit,
        sensitivity,
        hysteresis,
        seasonal,
        transient,
        calibrate,
        emulate,
        project,
        seaice,
        memory,
        cache,
    )
}
"""The subcommands by name, in the order `ebm --help` lists them. A subcommand is a
module with `NAME`, `add_parser(subparsers)` and `run(arguments) -> dict` (the
report), and optionally `print_summary(report)` for its text output; adding one is
writing the module and adding it here."""


_COMPILING = frozenset(
    ("_infer_params", "lower_sharding_computation", "compile_or_get_cached")
)


def _is_compiling(frame) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name in _COMPILING and "jax" in code.co_filename:
            return True
        frame = frame.f_back
    return False


class _CompileNotice:
    """Writes one line to stderr once JAX has been compiling on this thread for
    `delay` seconds without a break (checked every `interval` seconds by a daemon
    thread that reads the thread's stack); nothing for a quick compile, and
    nothing after the first line."""

    def __init__(self, command: str, delay: float = 1.0, interval: float = 0.05):
        self.command = command
        self.delay = delay
        self.interval = interval
        self.said = False
        self._thread_id = threading.get_ident()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self):
        self._watcher.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._watcher.join()

    def _watch(self) -> None:
        since = None
        while not self._stop.wait(self.interval):
            frame = sys._current_frames().get(self._thread_id)
            if not _is_compiling(frame):
                since = None
                continue
            now = time.monotonic()
            since = now if since is None else since
            if now - since >= self.delay:
                sys.stderr.write(
                    f"ebm {self.command}: compiling (JAX compiles each program once "
                    "for a grid and settings, and the compilation cache keeps it for "
                    "the next call)...\n"
                )
                sys.stderr.flush()
                self.said = True
                return


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (and exit status 2, as argparse's),
    and which reads only whole option names: an abbreviation (`--ice` for
    `--ice-width`) would change meaning when an option is added."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _hyphenated(argv: Sequence[str]) -> list[str]:
    """Options spelled with underscores (`--ice_width`, `--n_lat`) as the hyphens
    that every option is declared with (`--ice-width`, `--n-lat`); values as given."""
    spelled = []
    for argument in argv:
        if argument.startswith("--") and len(argument) > 2:
            option, equals, value = argument.partition("=")
            argument = option.replace("_", "-") + equals + value
        spelled.append(argument)
    return spelled


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="ebm", description="Differentiable energy-balance climate model."
    )
    parser.add_argument("--version", action="version", version=f"ebm {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser
    )
    for command in COMMANDS.values():
        command.add_parser(subparsers)
    return parser


def _use_compilation_cache() -> None:
    """The persistent compilation cache and the faster compiler flag, in this
    process that the command owns, before JAX starts its backend; neither where
    `EBM_COMPILATION_CACHE=off`."""
    import os

    from .._edges.cache import (
        ENVIRONMENT_VARIABLE,
        enable_compilation_cache,
        faster_compilation_flags,
    )

    if os.environ.get(ENVIRONMENT_VARIABLE, "").lower() == "off":
        return
    faster_compilation_flags()
    # A cache that cannot be used warns once (`ebm.CompilationCacheWarning`), and
    # the command compiles as usual.
    enable_compilation_cache()


def main(argv=None) -> int:
    """Entry point of the `ebm` command; returns the exit status."""
    import equinox as eqx

    from .._results import error_message

    parser = _parser()
    arguments = parser.parse_args(_hyphenated(sys.argv[1:] if argv is None else argv))
    command = COMMANDS[arguments.command]
    _use_compilation_cache()
    # The command writes its figures to files, no window: Agg, set for matplotlib
    # to read when (and only if) a figure is drawn.
    os.environ["MPLBACKEND"] = "Agg"
    try:
        check_outputs(arguments)
        with _CompileNotice(arguments.command):
            report = command.run(arguments)
    except (ValueError, TypeError, KeyError, OSError, ImportError) as error:
        print(f"ebm: error: {error_message(error)}", file=sys.stderr)
        return 2
    except (eqx.EquinoxRuntimeError, RuntimeError) as error:
        print(f"ebm: the solve failed: {error_message(error)}", file=sys.stderr)
        return 1
    if arguments.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report, getattr(command, "print_summary", print_fields))
    return 0


if __name__ == "__main__":
    sys.exit(main())
