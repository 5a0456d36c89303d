"""JAX's persistent compilation cache, for ebm's programs: compile once per machine.

JAX compiles each program the first time a process meets it (seconds each for
ebm's solves on 2 cores), and keeps it for that process only. Its persistent
compilation cache keeps compiled programs on disk, keyed by the program, the
device and the compiler's version and flags, so that a new process (a CLI call, a
notebook restart, a test worker) reads them instead. Every compiled entry point of
ebm returns its result codes instead of raising inside the program (a check inside
compiles to a host callback, and JAX caches no program that holds one), so its
programs can be kept.

`enable_compilation_cache` switches it on for this process. `import ebm` does only
when the environment asks for it (`EBM_COMPILATION_CACHE` set to a directory, or to
`on` for the default one); the `ebm` command does unless
`EBM_COMPILATION_CACHE=off`. The cache lives in one directory per JAX and jaxlib
version (`default_cache_dir`), and is written in a way that a failure cannot spoil:
each entry is written to a temporary file and renamed into place, with its length
and checksum, so an entry cut short (a full disk, a killed process) is detected when
read, removed, and compiled again. A cache that cannot be written (read-only, full)
is read, and warns once (`CompilationCacheWarning`); nothing about it fails or slows
a run.

The cache is trusted: a program read from it is run. Keep it in a directory only
you can write (JAX's own warning applies: sharing a cache directory is allowing
whoever can write to it to run code on your machine).
"""

import os
import pathlib
import shutil
import subprocess
import sys
import threading
import warnings
import zlib


ENVIRONMENT_VARIABLE = "EBM_COMPILATION_CACHE"
"""A directory for the cache (instead of the user's cache directory), `on` (the
default directory), or `off` (none, for the `ebm` command too)."""

_MAGIC = b"ebm-jax-cache-1\n"
_LENGTH_BYTES = 8
_CHECKSUM_BYTES = 4
_ENTRY_SUFFIX = "-cache"

# The XLA flag that `faster_compilation_flags` adds, where jaxlib knows it: XLA:CPU's
# fusion emitters cost 10-30% of the first call's compile time of ebm's programs,
# with no measured cost at run time.
_XLA_FLAG = "--xla_cpu_use_fusion_emitters=false"


class CompilationCacheWarning(UserWarning):
    """The persistent compilation cache could not be used as asked (once per
    process); programs are compiled as usual."""


def _versions() -> str:
    import jax
    import jaxlib

    return f"jax-{jax.__version__}-jaxlib-{jaxlib.__version__}"


def _user_cache_root() -> pathlib.Path:
    if sys.platform == "darwin":
        return pathlib.Path.home() / "Library" / "Caches" / "ebm"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = pathlib.Path(local) if local else pathlib.Path.home() / "AppData/Local"
        return base / "ebm" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache") / "ebm"


def default_cache_dir() -> pathlib.Path:
    """Where `enable_compilation_cache` keeps programs by default: the directory in
    `EBM_COMPILATION_CACHE` if set, else the user's cache directory
    (`$XDG_CACHE_HOME/ebm`, `~/.cache/ebm`, `~/Library/Caches/ebm` on macOS), one
    subdirectory per JAX and jaxlib version (`jax-0.10.2-jaxlib-0.10.2`), which
    no other version reads."""
    chosen = os.environ.get(ENVIRONMENT_VARIABLE, "")
    if chosen and chosen.lower() not in ("off", "on", "1", "0"):
        root = pathlib.Path(chosen).expanduser()
    else:
        root = _user_cache_root()
    return root / _versions()


def _pack(value: bytes) -> bytes:
    header = len(value).to_bytes(_LENGTH_BYTES, "little")
    checksum = zlib.crc32(value).to_bytes(_CHECKSUM_BYTES, "little")
    return _MAGIC + header + checksum + value


def _unpack(data: bytes) -> bytes | None:
    """The entry's value, or `None` if it is cut short or damaged."""
    start = len(_MAGIC) + _LENGTH_BYTES + _CHECKSUM_BYTES
    if len(data) < start or not data.startswith(_MAGIC):
        return None
    length = int.from_bytes(data[len(_MAGIC) : len(_MAGIC) + _LENGTH_BYTES], "little")
    checksum = int.from_bytes(data[start - _CHECKSUM_BYTES : start], "little")
    value = data[start:]
    if len(value) != length or zlib.crc32(value) != checksum:
        return None
    return value


def _warn(message: str) -> None:
    warnings.warn(message, CompilationCacheWarning, stacklevel=2)


def _cache_class():
    # jax's interface for a persistent cache; not public API, so imported here, and
    # `enable_compilation_cache` falls back to jax's own cache without it.
    from jax._src.compilation_cache_interface import CacheInterface

    class _AtomicCache(CacheInterface):
        """A directory of entries, each written whole or not at all (a temporary
        file renamed into place), with its length and checksum; a damaged entry
        reads as missing, and is removed so that the next compile replaces it."""

        def __init__(self, path: pathlib.Path):
            self._path = path
            self.writable = True
            self._lock = threading.Lock()

        def _file(self, key: str) -> pathlib.Path:
            return self._path / f"{key}{_ENTRY_SUFFIX}"

        def get(self, key: str) -> bytes | None:
            file = self._file(key)
            try:
                data = file.read_bytes()
            except FileNotFoundError:
                return None
            except OSError:
                return None
            value = _unpack(data)
            if value is None:
                try:
                    file.unlink()
                except OSError:
                    pass
            return value

        def put(self, key: str, value: bytes) -> None:
            if not self.writable:
                return
            file = self._file(key)
            if file.exists():
                return
            temporary = self._path / f".{key}.{os.getpid()}.{threading.get_ident()}"
            try:
                with open(temporary, "wb") as handle:
                    handle.write(_pack(value))
                os.replace(temporary, file)
            except OSError as error:
                try:
                    temporary.unlink()
                except OSError:
                    pass
                with self._lock:
                    if self.writable:
                        self.writable = False
                        _warn(
                            f"ebm: the compilation cache {self._path} cannot be "
                            f"written ({error.strerror or error}); programs are "
                            "compiled as usual and not kept for other processes."
                        )

    return _AtomicCache


_enabled: pathlib.Path | None = None


def enable_compilation_cache(
    path=None, *, min_compile_time: float = 0.0
) -> pathlib.Path | None:
    """Keep this process's compiled programs on disk, and read those of earlier
    processes, through JAX's persistent compilation cache.

    Changes JAX's configuration for the whole process (`jax_compilation_cache_dir`
    and the settings below): call it once, at the start of a script or notebook,
    before the first solve. `import ebm` never calls it; the `ebm` command does.

    **Arguments:**

    - `path`: the cache directory (default `default_cache_dir()`: the user's cache
        directory, one subdirectory per JAX and jaxlib version).
    - `min_compile_time`: programs that compile faster than this, seconds, are
        not kept (default 0: all; JAX's own default is 1 s, but ebm's entry points
        also compile small programs, tens of milliseconds each, that read back in
        a few).

    **Returns:**

    The directory in use, or `None` where it cannot be created (with one
    `ebm.CompilationCacheWarning`; programs are then compiled as usual).
    """
    global _enabled
    import jax

    directory = default_cache_dir() if path is None else pathlib.Path(path)
    directory = directory.expanduser().absolute()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        _warn(
            f"ebm: the compilation cache {directory} cannot be created "
            f"({error.strerror or error}); programs are compiled as usual."
        )
        return None
    writable = os.access(directory, os.W_OK)
    if not writable:
        _warn(
            f"ebm: the compilation cache {directory} is not writable: its programs "
            "are read, and new ones are compiled as usual and not kept."
        )
    jax.config.update("jax_compilation_cache_dir", os.fspath(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_time)
    # By default jax puts a path inside the cache directory into every program's
    # key (for a GPU autotuning cache), so that a cache copied elsewhere misses.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    _install(directory, writable)
    _enabled = directory
    return directory


def _install(directory: pathlib.Path, writable: bool) -> None:
    """jax's cache for `directory` replaced by `_AtomicCache`, where jax's internals
    are as expected (else jax's own cache, set up by the configuration, stays)."""
    try:
        from jax._src import compilation_cache as jax_cache

        cache = _cache_class()(directory)
        cache.writable = writable
        jax_cache.reset_cache()
        with jax_cache._cache_initialized_mutex:
            jax_cache._cache = cache
            jax_cache._cache_initialized = True
    except (ImportError, AttributeError, TypeError):
        pass


def enable_from_environment() -> None:
    """`enable_compilation_cache()` where `EBM_COMPILATION_CACHE` names a directory
    or is `on` (`import ebm` calls this; nothing happens where it is unset)."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "")
    if value and value.lower() not in ("off", "0"):
        enable_compilation_cache()


def compilation_cache_dir() -> pathlib.Path | None:
    """The directory `enable_compilation_cache` set up in this process, or `None`."""
    return _enabled


def cache_entries(path=None) -> tuple[int, int]:
    """How many programs a cache directory holds, and their bytes."""
    directory = default_cache_dir() if path is None else pathlib.Path(path)
    count = size = 0
    if directory.is_dir():
        for entry in directory.glob(f"*{_ENTRY_SUFFIX}"):
            count += 1
            size += entry.stat().st_size
    return count, size


def clear_compilation_cache(path=None) -> int:
    """Remove a cache directory and what it holds (default `default_cache_dir()`;
    other versions' directories beside it are left). Returns how many programs it
    held."""
    directory = default_cache_dir() if path is None else pathlib.Path(path)
    count, _ = cache_entries(directory)
    if directory.is_dir():
        shutil.rmtree(directory)
    return count


def faster_compilation_flags() -> None:
    """Add `--xla_cpu_use_fusion_emitters=false` to `XLA_FLAGS` where jaxlib knows
    the flag (XLA aborts on one it does not): for processes that ebm owns (the
    command line, the test run), before JAX starts its backend.

    Whether jaxlib knows it is asked once of a child process per jaxlib version,
    and the answer kept beside the cache.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    name = _XLA_FLAG.split("=")[0]
    if name in flags or os.environ.get(ENVIRONMENT_VARIABLE, "").lower() == "off":
        return
    marker = default_cache_dir() / "xla-flags"
    try:
        known = marker.read_text().strip()
    except OSError:
        known = ""
    if known not in ("ok", "unknown"):
        probe = subprocess.run(
            [sys.executable, "-c", "import jax; jax.devices('cpu')"],
            env={**os.environ, "XLA_FLAGS": f"{flags} {_XLA_FLAG}".strip()},
            capture_output=True,
            timeout=120,
        )
        known = "ok" if probe.returncode == 0 else "unknown"
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(known)
        except OSError:
            pass
    if known == "ok":
        os.environ["XLA_FLAGS"] = f"{flags} {_XLA_FLAG}".strip()
