"""The installed package's version, `ebm.__version__`, written into every file's
attributes."""

import importlib.metadata


try:
    __version__ = importlib.metadata.version("ebm-jax")
except importlib.metadata.PackageNotFoundError:
    # A source checkout on `PYTHONPATH` with no installed metadata: no version is
    # known (pyproject's may have moved on since the last install), so say so.
    __version__ = "0+unknown"
