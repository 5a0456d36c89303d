"""`ebm cache`: where the compiled programs are kept, how many, and how to remove
them (see `ebm.enable_compilation_cache`)."""

NAME = "cache"


def add_parser(subparsers) -> None:
    """`ebm cache` and its flags, on `subparsers`."""
    parser = subparsers.add_parser(
        NAME,
        help="the compilation cache: where, how big; --clear removes it",
        description=(
            "Every ebm command keeps the programs JAX compiles for it on disk, so "
            "that the next call reads them instead of compiling again (set "
            "EBM_COMPILATION_CACHE=off to turn this off, or to a directory to "
            "move it). Print where they are and how many; --clear removes them."
        ),
    )
    parser.add_argument(
        "--clear", action="store_true", help="remove this version's cached programs"
    )
    parser.add_argument("--json", action="store_true", help="print JSON, not text")
    parser.set_defaults(netcdf=None, no_plot=True)


def run(arguments) -> dict:
    """The cache's directory and contents (after clearing it, with `--clear`)."""
    import os

    from .._edges.cache import (
        ENVIRONMENT_VARIABLE,
        cache_entries,
        clear_compilation_cache,
        default_cache_dir,
    )

    directory = default_cache_dir()
    report = {"directory": os.fspath(directory)}
    if arguments.clear:
        report["removed_programs"] = clear_compilation_cache(directory)
    count, size = cache_entries(directory)
    report["programs"] = count
    report["megabytes"] = round(size / 1e6, 3)
    report["enabled"] = os.environ.get(ENVIRONMENT_VARIABLE, "").lower() != "off"
    return report
