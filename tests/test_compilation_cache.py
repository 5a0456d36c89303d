"""The persistent compilation cache: a second process reads what the first compiled.

Each check runs fresh Python processes against a cache directory of its own, and
counts JAX's cache events (`/jax/compilation_cache/...`) and the names of the
programs it read or wrote, from JAX's compiler log: never by timing.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest


# Run in a child process: enables the cache in $CACHE, runs the entry points named
# in $WHAT, and prints what JAX's compiler did as JSON on the last line.
_CHILD = r"""
import json, logging, os, sys, warnings
if "FILE_LIMIT" in os.environ:
    # A write past this size fails (EFBIG) part-way through a file, as one on a
    # full disk does (ENOSPC), instead of killing the process.
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(os.environ["FILE_LIMIT"])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
import jax
hits, written, callbacks, events = [], [], [], {}

class Log(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        # Each program by its key (its name, a hyphen and a hash), as the cache
        # directory names its entry.
        if message.startswith("Persistent compilation cache hit for"):
            hits.append(message.split("'")[3])
        elif message.startswith("Writing ") and "compilation cache" in message:
            written.append(message.split("'")[1])
        elif "because it uses host callbacks" in message:
            callbacks.append(message.split("'")[1])

logger = logging.getLogger("jax._src.compiler")
logger.addHandler(Log()); logger.setLevel(logging.DEBUG)
logger = logging.getLogger("jax._src.compilation_cache")
logger.addHandler(Log()); logger.setLevel(logging.DEBUG)
jax.monitoring.register_event_listener(
    lambda event, **kw: events.__setitem__(event, events.get(event, 0) + 1)
)
import ebm
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    directory = ebm.enable_compilation_cache(os.environ["CACHE"], min_compile_time=0.0)
    grid = ebm.Grid(18)
    params = ebm.Params()
    for what in filter(None, os.environ["WHAT"].split(",")):
        if what == "equilibrium":
            out = ebm.equilibrium(params, grid=grid).T
        elif what == "gradient":
            out = jax.grad(lambda p: ebm.equilibrium(p, grid=grid).global_mean)(params)
        elif what == "periodic":
            out = ebm.periodic_equilibrium(params, grid=grid, steps_per_year=73).T
        elif what == "periodic_gradient":
            out = jax.grad(
                lambda p: ebm.periodic_equilibrium(
                    p, grid=grid, steps_per_year=73
                ).annual_global_mean
            )(params)
        elif what == "integrate":
            out = ebm.integrate(params, years=0.5, grid=grid).T
        elif what == "integrate_fixed":
            out = ebm.integrate_fixed(params, dt=0.05, steps=4, grid=grid).T
        elif what == "spinup":
            out = ebm.seasonal_spinup(params, years=1, grid=grid, steps_per_year=73).T
        elif what == "fold":
            out = ebm.fold(params, stop=1200.0, grid=grid).value
        elif what == "fold_gradient":
            out = jax.grad(lambda p: ebm.fold(p, stop=1200.0, grid=grid).value)(params)
        elif what == "sensitivity":
            out = ebm.sensitivity(params, grid=grid, names=("D", "B")).value
        jax.block_until_ready(out)
print(json.dumps(dict(
    directory=None if directory is None else str(directory), hits=hits,
    written=written, callbacks=callbacks, events=events,
    warnings=[f"{w.category.__name__}: {w.message}" for w in caught],
)))
"""


def _run(cache, what, *, env=None) -> dict:
    environment = {**os.environ, "CACHE": os.fspath(cache), "WHAT": ",".join(what)}
    environment.pop("EBM_COMPILATION_CACHE", None)
    environment.update(env or {})
    process = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.strip().splitlines()[-1])


def _names(keys) -> set[str]:
    return {key.rsplit("-", 1)[0] for key in keys}


_MAIN_PROGRAMS = {
    "equilibrium": "jit__equilibrium",
    "periodic": "jit__periodic_equilibrium",
}


_PREPARED = ["equilibrium", "gradient", "periodic", "periodic_gradient"]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A cache written by one process running `_PREPARED`, and what it did; tests
    that change a cache work on a copy."""
    directory = tmp_path_factory.mktemp("prepared")
    return directory, _run(directory, _PREPARED)


def _copy(prepared, path: pathlib.Path) -> dict:
    shutil.copytree(prepared[0], path)
    return prepared[1]


def test_a_second_process_reads_equilibrium_its_gradient_and_the_seasonal_cycle(
    prepared,
):
    directory, first = prepared
    assert first["directory"] == os.fspath(directory)
    # No program of these entry points holds a host callback (which JAX would not
    # write): each is written.
    assert first["callbacks"] == []
    for program in _MAIN_PROGRAMS.values():
        assert program in _names(first["written"])
    # (A process can meet one program twice, by two paths: the second time it
    # reads what it wrote the first.)
    assert set(first["hits"]) <= set(first["written"])
    assert sorted(p.name for p in directory.glob("*-cache")) == sorted(
        f"{key}-cache" for key in first["written"]
    )
    assert first["warnings"] == []
    second = _run(directory, _PREPARED)
    # Everything the first process compiled, the second reads: no program is
    # compiled (and so written) again.
    assert second["written"] == []
    assert set(second["hits"]) == set(first["written"])
    hits = second["events"].get("/jax/compilation_cache/cache_hits", 0)
    assert hits == len(second["hits"]) >= len(first["written"])
    assert second["warnings"] == []


def test_no_entry_point_compiles_a_host_callback(tmp_path):
    what = [
        "integrate",
        "integrate_fixed",
        "spinup",
        "fold",
        "fold_gradient",
        "sensitivity",
    ]
    first = _run(tmp_path, what)
    assert first["callbacks"] == []
    assert {"jit__integrate", "jit__integrate_fixed", "jit__fold"} <= _names(
        first["written"]
    )


def test_a_cache_copied_elsewhere_is_read(prepared, tmp_path):
    # (The prepared cache was written in another directory.)
    first = _copy(prepared, tmp_path / "there")
    second = _run(tmp_path / "there", ["equilibrium"])
    assert second["written"] == []
    assert "jit__equilibrium" in _names(second["hits"])
    assert set(second["hits"]) <= set(first["written"])


def test_a_truncated_or_damaged_entry_is_compiled_again_and_replaced(
    prepared, tmp_path
):
    first = _copy(prepared, tmp_path / "cache")
    cache = tmp_path / "cache"
    # The two largest programs of `equilibrium` (its solve, and one of the
    # gradient's, which `equilibrium` does not read, is not among them).
    read = set(_run(cache, ["equilibrium"])["hits"])
    entries = sorted(
        (p for p in cache.glob("*-cache") if p.name.removesuffix("-cache") in read),
        key=lambda p: p.stat().st_size,
    )
    cut, damaged = entries[-1], entries[-2]
    spoiled = {entry.name.removesuffix("-cache") for entry in (cut, damaged)}
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    data = bytearray(damaged.read_bytes())
    data[-10] ^= 0xFF
    damaged.write_bytes(bytes(data))
    second = _run(cache, ["equilibrium"])
    # The two spoiled entries are compiled and written again, without a warning;
    # the rest are read.
    assert set(second["written"]) == spoiled
    assert set(second["hits"]) == read - spoiled
    assert second["warnings"] == []
    third = _run(cache, ["equilibrium"])
    assert third["written"] == []
    assert set(third["hits"]) == read
    assert len(list(cache.glob("*-cache"))) == len(first["written"])


def test_a_full_disk_warns_once_and_leaves_nothing_behind(tmp_path):
    full = _run(tmp_path, ["equilibrium", "gradient"], env={"FILE_LIMIT": "16"})
    assert full["hits"] == [] and full["written"] != []
    warnings = [w for w in full["warnings"] if "CompilationCacheWarning" in w]
    assert len(warnings) == 1, full["warnings"]
    assert "cannot be written" in warnings[0]
    # Nothing cut short is left behind (the entries are written whole or not at
    # all): the directory is as a new one.
    assert list(tmp_path.iterdir()) == []


def _read_only(path: pathlib.Path):
    """Make `path` read-only, even to the superuser (CI runs as root, whom
    permissions do not stop: the immutable attribute does); returns the undo."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        return lambda: path.chmod(0o755)
    subprocess.run(["chattr", "+i", os.fspath(path)], check=True)
    return lambda: subprocess.run(["chattr", "-i", os.fspath(path)], check=True)


def test_a_read_only_cache_is_read_and_warns_once(prepared, tmp_path):
    first = _copy(prepared, tmp_path / "cache")
    cache = tmp_path / "cache"
    undo = _read_only(cache)
    try:
        second = _run(cache, ["equilibrium", "integrate_fixed"])
    finally:
        undo()
    warnings = [w for w in second["warnings"] if "CompilationCacheWarning" in w]
    assert len(warnings) == 1 and "not writable" in warnings[0], second["warnings"]
    assert "jit__equilibrium" in _names(second["hits"])
    assert set(second["hits"]) <= set(first["written"])
    # The fixed-step run's programs were compiled and not kept.
    assert "jit__integrate_fixed" not in _names(p.name for p in cache.iterdir())
    assert len(list(cache.glob("*-cache"))) == len(first["written"])


def test_a_cache_that_cannot_be_created_warns_once(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = _run(blocker / "cache", [])
    assert result["directory"] is None
    assert len(result["warnings"]) == 1
    assert "cannot be created" in result["warnings"][0]


def test_the_command_keeps_its_programs_and_clears_them(tmp_path):
    env = {
        **os.environ,
        "EBM_COMPILATION_CACHE": os.fspath(tmp_path),
        "JAX_DEBUG_LOG_MODULES": "jax._src.compiler",
        # (jax prints its debug log only above its own logger's default level.)
        "JAX_LOGGING_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "ebm", "equilibrium", "--n-lat", "18", "--no-plot"]
    first = subprocess.run(command, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    version = next(tmp_path.iterdir())
    written = len(list(version.glob("*-cache")))
    assert written > 0
    second = subprocess.run(command, env=env, capture_output=True, text=True)
    assert second.returncode == 0
    assert "Persistent compilation cache hit for 'jit__equilibrium'" in second.stderr
    assert "Writing jit__equilibrium" not in second.stderr
    assert second.stdout == first.stdout
    info = subprocess.run(
        [sys.executable, "-m", "ebm", "cache", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    report = json.loads(info.stdout)
    assert report["programs"] == len(list(version.glob("*-cache")))
    assert pathlib.Path(report["directory"]) == version
    cleared = subprocess.run(
        [sys.executable, "-m", "ebm", "cache", "--clear", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert json.loads(cleared.stdout)["programs"] == 0
    assert not version.exists()


def test_the_command_can_be_told_not_to_cache(tmp_path):
    env = {**os.environ, "EBM_COMPILATION_CACHE": "Off"}
    env.update(HOME=os.fspath(tmp_path), XDG_CACHE_HOME=os.fspath(tmp_path / "xdg"))
    command = [sys.executable, "-m", "ebm", "equilibrium", "--n-lat", "18", "--no-plot"]
    run = subprocess.run(command, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert not (tmp_path / "xdg").exists()
    assert not (tmp_path / ".cache").exists()


def test_import_starts_no_backend():
    # The command line and the test run set XLA's flags after `import ebm`, for the
    # backend to read when it starts: a module-level array (a default model built
    # with its class) would start it at import, and the flags would be ignored.
    script = (
        "import jax._src.xla_bridge as xla_bridge\n"
        "import ebm\n"
        "print(bool(xla_bridge._backends))"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.stdout.split() == ["False"], run.stderr[-2000:]


def test_import_changes_no_jax_configuration_unless_asked(tmp_path):
    script = (
        "import jax; before = jax.config.jax_compilation_cache_dir\n"
        "import ebm; after = jax.config.jax_compilation_cache_dir\n"
        "print(before, after)"
    )
    unset = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JAX_COMPILATION_CACHE_DIR", "EBM_COMPILATION_CACHE")
    }
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=unset
    )
    assert run.stdout.split() == ["None", "None"], run.stderr[-2000:]
    asked = {**unset, "EBM_COMPILATION_CACHE": os.fspath(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=asked
    )
    before, after = run.stdout.split()
    assert before == "None"
    assert pathlib.Path(after).parent == tmp_path
