"""Each tutorial (docs/tutorials/*.py, jupytext percent scripts) runs as a plain
script: the notebooks assert their claims, so a claim that stops holding fails here
as well as in the docs build, which executes them."""

import os
import pathlib
import subprocess
import sys

import pytest

from helpers import SUBPROCESS_TIMEOUT


ROOT = pathlib.Path(__file__).parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.py"))


def test_there_are_tutorials():
    assert len(TUTORIALS) >= 3


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda path: path.stem)
def test_tutorial_runs(path, tmp_path):
    # Agg: plt.show() returns at once; the cwd is the repository root, as in the
    # docs build, and the scripts write no files.
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-5000:]
