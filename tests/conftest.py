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
