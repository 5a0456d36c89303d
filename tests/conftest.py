import os
import pathlib

import jax


jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


import gc  # noqa: E402

import pytest  # noqa: E402

from ebm._edges import cache  # noqa: E402


# JAX's persistent compilation cache, shared by the workers of a run and by the
# processes its tests start (the command line, the examples), and kept between runs
# in pytest's cache folder (`python -m pytest --cache-clear` empties it). Set
# EBM_COMPILATION_CACHE=off to compile everything afresh.
COMPILATION_CACHE = (
    pathlib.Path(__file__).resolve().parent.parent
    / ".pytest_cache"
    / "d"
    / "ebm-compilation-cache"
)
os.environ.setdefault(cache.ENVIRONMENT_VARIABLE, os.fspath(COMPILATION_CACHE))
if os.environ[cache.ENVIRONMENT_VARIABLE].lower() != "off":
    # Before JAX starts its backend, which reads XLA_FLAGS once.
    cache.faster_compilation_flags()
    cache.enable_compilation_cache()


_MAPS = pathlib.Path("/proc/self/maps")


def _memory_maps() -> int:
    return len(_MAPS.read_text().splitlines()) if _MAPS.exists() else 0


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Free JAX's compiled programs before the process runs out of memory maps.

    Each compiled XLA CPU program holds a few hundred memory mappings (measured: about
    400 for an equilibrium, 1,500 for a continuation walk), and they are kept for the
    life of the process. The suite compiles enough programs to reach Linux's default
    limit of 65,530 (`vm.max_map_count`), after which XLA's compiler segfaults (three
    full runs crashed at 65-85% of the suite, each while compiling). Past half the
    limit, the caches are cleared; later tests recompile what they need.
    """
    yield
    if _memory_maps() > 30_000:
        jax.clear_caches()
        gc.collect()


# With EBM_TEST_COMPILE_REPORT=FILE, each test process appends to FILE how long it
# spent tracing, lowering and compiling (XLA's backend compile, or the read from the
# persistent cache instead), how many programs it built and how many of them came
# from the cache: the suite's compile share in docs/benchmarks.md.
_COMPILE_REPORT = os.environ.get("EBM_TEST_COMPILE_REPORT")
_compile_totals = {
    "trace_seconds": 0.0,
    "lower_seconds": 0.0,
    "compile_seconds": 0.0,
    "programs": 0,
    "cache_hits": 0,
}

if _COMPILE_REPORT:

    def _on_duration(event, duration, **kwargs):
        if event == "/jax/core/compile/jaxpr_trace_duration":
            _compile_totals["trace_seconds"] += duration
        elif event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            _compile_totals["lower_seconds"] += duration
        elif event == "/jax/core/compile/backend_compile_duration":
            _compile_totals["compile_seconds"] += duration
            _compile_totals["programs"] += 1

    def _on_event(event, **kwargs):
        if event == "/jax/compilation_cache/cache_hits":
            _compile_totals["cache_hits"] += 1

    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    jax.monitoring.register_event_listener(_on_event)


def pytest_sessionfinish(session):
    if _COMPILE_REPORT and _compile_totals["programs"]:
        import json

        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(_COMPILE_REPORT, "a") as report:
            report.write(json.dumps({"worker": worker, **_compile_totals}) + "\n")
