"""Each example runs as a script in its fast mode and writes its figures."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from helpers import SUBPROCESS_TIMEOUT, run_processes


ROOT = pathlib.Path(__file__).parents[1]


def _run_example(name, *args, cwd):
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    # Every example runs clean: no traceback (an error it catches and explains is
    # printed as one line of its own).
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def test_quickstart_example_runs(tmp_path):
    result = _run_example("quickstart.py", cwd=tmp_path)
    assert "d(global mean)/d(parameter)" in result.stdout
    assert (tmp_path / "quickstart.png").exists()


def test_memory_scaling_example_runs(tmp_path):
    result = _run_example("memory_scaling.py", "--fast", cwd=tmp_path)
    assert "What reverse mode stores" in result.stdout
    # The per-step schedule stores one state per step: 16 x 60 numbers at least.
    step_line = next(
        line for line in result.stdout.splitlines() if line.startswith("  step ")
    )
    assert "1 x f64[16,60]" in step_line
    assert "At 800 steps the least memory is binomial-8" in result.stdout
    assert (tmp_path / "memory_scaling.png").stat().st_size > 10_000


def test_fit_diffusivity_example_runs(tmp_path):
    result = _run_example("fit_diffusivity.py", cwd=tmp_path)
    fitted = next(line for line in result.stdout.splitlines() if "fitted D" in line)
    assert float(fitted.split()[2]) == pytest.approx(0.3, rel=1e-6)
    assert "converged" in fitted and "NOT" not in fitted
    assert (tmp_path / "fit_diffusivity.png").stat().st_size > 10_000


def test_sensitivities_example_runs(tmp_path):
    result = _run_example("sensitivities.py", cwd=tmp_path)
    assert "with ice-albedo feedback" in result.stdout
    assert "(= F / B = 1.8500 K" in result.stdout
    assert (tmp_path / "sensitivities.png").stat().st_size > 10_000


def test_snowball_hysteresis_example_runs(tmp_path):
    # --fast: the 1 K loop on 36 cells, which has the full run's four folds.
    result = _run_example("snowball_hysteresis.py", "--fast", cwd=tmp_path)
    assert result.stdout.count("4 folds") == 1
    assert "snowball fold from today's climate" in result.stdout
    assert (tmp_path / "hysteresis.png").stat().st_size > 10_000


def test_seasonal_cycle_example_runs(tmp_path):
    result = _run_example("seasonal_cycle.py", "--fast", cwd=tmp_path)
    assert "Newton steps" in result.stdout
    agreement = next(
        line for line in result.stdout.splitlines() if line.startswith("spin-up of")
    )
    # "... is within X K of the shooting solution"
    assert float(agreement.split("within ")[1].split()[0]) < 1e-8
    assert (tmp_path / "seasonal_cycle.png").stat().st_size > 10_000
    # Both hemispheres' edges; southern latitudes in degrees south, never "-80 N".
    assert "southern ice edge" in result.stdout
    assert not re.search(r"-\d+(\.\d+)? N\b", result.stdout), result.stdout


def test_orbital_sensitivity_example_runs(tmp_path):
    result = _run_example("orbital_sensitivity.py", "--fast", cwd=tmp_path)
    checks = [
        line for line in result.stdout.splitlines() if "finite difference" in line
    ]
    assert len(checks) == 4  # the heading and one line per orbital parameter
    for line in checks[1:]:
        assert float(line.rsplit("(", 1)[1].rstrip(")")) < 1e-5
    assert (tmp_path / "orbital_sensitivity.png").stat().st_size > 10_000


def test_choose_adjoint_example_runs(tmp_path):
    result = _run_example("choose_adjoint.py", "--fast", cwd=tmp_path)
    assert "backsolve  reverse  refused" in result.stdout
    assert "adjoint='recursive' for longer runs" in result.stdout
    assert (tmp_path / "choose_adjoint.png").stat().st_size > 10_000


def test_ensemble_example_runs_on_one_host_and_on_two(tmp_path):
    """The example's documented command lines: forced CPU devices in one process,
    and two processes joined by jax.distributed, with the same numbers."""
    import socket

    one = tmp_path / "one"
    one.mkdir()
    result = _run_example("ensemble.py", "--fast", "--host-devices", "4", cwd=one)
    assert "36 members (6 D x 6 S0) on 4 devices (1 processes)" in result.stdout
    assert (one / "ensemble.png").stat().st_size > 10_000
    assert (one / "ensemble.nc").exists()
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    two = tmp_path / "two"
    two.mkdir()
    command = [
        sys.executable, str(ROOT / "examples" / "ensemble.py"), "--fast",
        "--host-devices", "2", "--coordinator", f"localhost:{port}",
        "--num-processes", "2",
    ]  # fmt: skip
    finished = run_processes(
        [[*command, "--process-id", str(i)] for i in (0, 1)], cwd=two
    )
    for process in finished:
        assert process.returncode == 0, process.stderr[-3000:]
    outputs = [(process.stdout, process.stderr) for process in finished]
    first = outputs[0][0]
    assert "on 4 devices (2 processes)" in first
    # The same statistics as the single-process run, and only process 0 writes.
    statistics = lambda text: [  # noqa: E731
        line
        for line in text.splitlines()
        if "global mean over" in line or "dS0" in line
    ]
    assert statistics(first) == statistics(result.stdout)
    assert "members" not in outputs[1][0]  # (gloo prints its own lines)
    assert (two / "ensemble.nc").exists()


def test_custom_term_example_runs(tmp_path):
    # A term defined in the script, with its own parameter: the equilibrium's
    # implicit gradient with respect to it matches central finite differences (the
    # script exits non-zero otherwise), and its declared range is enforced.
    result = _run_example("custom_term.py", "--fast", cwd=tmp_path)
    assert "long_peri, c" in result.stdout
    difference = next(
        line for line in result.stdout.splitlines() if "relative difference" in line
    )
    assert float(difference.split()[-1]) < 1e-6
    assert "refused: `c` must be >= 0 W m-2 K-3, got -1.0." in result.stdout


def test_fit_diffusivity_profile_example_runs(tmp_path):
    # All 91 values of a D(lat) profile from one noise-free equilibrium at 90 cells
    # (the example's full size, 2,052 L-BFGS steps): to 1% (in fact about 1e-7)
    # poleward of 10 degrees. At the equator and the poles D does not enter, and
    # the fit leaves the start there.
    result = _run_example("fit_diffusivity_profile.py", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("90 cells, 91 values of D_bounds: converged in")
    error = next(line for line in lines if "poleward" in line)
    assert float(error.split()[-1]) < 1e-2
    equator = next(line for line in lines if "at the equator" in line)
    assert float(equator.split()[-1]) == pytest.approx(0.555, rel=1e-3)
    assert (tmp_path / "fit_diffusivity_profile.png").stat().st_size > 10_000


def test_grey_body_example_runs(tmp_path):
    # The script exits non-zero when the implicit gradient with respect to the
    # emissivity disagrees with central finite differences.
    result = _run_example("grey_body.py", "--fast", cwd=tmp_path)
    rows = {
        line.split()[0]: line.split()
        for line in result.stdout.splitlines()
        if line.startswith(("  grey", "  linear"))
    }
    # The grey body's feedback grows with temperature and is stronger than B = 2,
    # so it responds less to a forcing than the linear OLR.
    grey, linear = rows["grey"], rows["linear"]
    assert float(grey[5]) > float(grey[4]) > 2.0 == float(linear[5])
    assert float(grey[-1]) < float(linear[-1])
    difference = next(
        line for line in result.stdout.splitlines() if "relative difference" in line
    )
    assert float(difference.split()[-1]) < 1e-6
    assert (tmp_path / "grey_body.png").stat().st_size > 10_000


def test_co2_sensitivity_example_runs(tmp_path):
    # The script exits non-zero unless the sensitivity without the ice-albedo
    # feedback is 5.35 ln 2 / B.
    result = _run_example("co2_sensitivity.py", "--fast", cwd=tmp_path)
    lines = result.stdout.splitlines()
    held = next(line for line in lines if line.startswith("  albedo held fixed  "))
    derivative, warming = (float(word) for word in held.split()[3::2])
    # Printed to 1e-4 K; the script itself checks 5.35 ln 2 / B to 1e-9.
    assert derivative == warming
    assert derivative == pytest.approx(5.35 * 0.6931471805599453 / 2.0, abs=1e-4)
    amplification = next(line for line in lines if "amplification" in line)
    assert float(amplification.split()[-1]) > 1.0
    assert (tmp_path / "co2_sensitivity.png").stat().st_size > 10_000


def test_polar_amplification_example_runs(tmp_path):
    result = _run_example("polar_amplification.py", "--fast", cwd=tmp_path)
    rows = {
        line.split()[0]: [float(x) for x in line.split()[1:]]
        for line in result.stdout.splitlines()
        if line.split()[:1] in (["dry"], ["moist"]) and len(line.split()) == 6
    }
    # global, equator, poles, >60 deg, pole/equator: dry diffusion warms uniformly
    # by F / B, moist diffusion more at the poles, with the same global mean.
    assert rows["dry"] == [2.0, 2.0, 2.0, 2.0, 1.0]
    assert rows["moist"][0] == 2.0
    assert rows["moist"][4] > 1.5
    assert "latent" in result.stdout
    assert (tmp_path / "polar_amplification.png").stat().st_size > 10_000


def test_bayesian_calibration_example_runs(tmp_path):
    result = _run_example("bayesian_calibration.py", "--fast", cwd=tmp_path)
    assert "ECS " in result.stdout and "for 3.7 W m-2" in result.stdout
    lines = {line.split(":")[0]: line for line in result.stdout.splitlines()}
    for name in ("D", "A", "B"):
        assert "Laplace std" in lines[name]
    assert (tmp_path / "bayesian_calibration.png").stat().st_size > 10_000


def test_land_box_example_runs(tmp_path):
    # A model of the user's own, written in the script (not in the package),
    # through every entry point: its TCR's reverse-mode derivative and its fold's
    # implicit derivative match central finite differences; the walk finds the
    # fold where the land snows over, and the fit, sensitivity, posterior, files
    # and figures come out.
    result = _run_example("land_box.py", "--fast", cwd=tmp_path)
    lines = result.stdout.splitlines()

    def relative_difference(start):
        line = next(line for line in lines if line.startswith(start))
        return float(line.rsplit(maxsplit=1)[-1])

    assert relative_difference("d(TCR)/d(exchange)") < 1e-4
    assert relative_difference("d(fold F2x)/d(snow)") < 1e-6
    fold = next(line for line in lines if line.startswith("fold at F2x"))
    assert 3.45 < float(fold.split()[4]) < 15.0
    fitted = next(line for line in lines if line.startswith("fitted feedback_land"))
    assert float(fitted.split()[2]) == pytest.approx(0.8, rel=1e-5)
    assert "NOT" not in fitted
    quantiles = next(line for line in lines if line.startswith("feedback_land 5-95%"))
    low, high = (float(v) for v in quantiles.split()[2].split("-"))
    assert low < 0.8 < high
    for name in ("land_box.png", "land_box_branch.png", "land_box_branch.nc"):
        assert (tmp_path / name).stat().st_size > 1_000, name
    assert "T_land" in next(line for line in lines if "land_box.nc" in line)


def test_historical_calibration_example_runs(tmp_path):
    result = _run_example("historical_calibration.py", "--fast", cwd=tmp_path)
    rows = {
        line.split()[0]: [float(x) for x in line.split()[2:7]]
        for line in result.stdout.splitlines()
        if line.strip().startswith(("ECS (K)", "TCR (K)"))
    }
    for name, quantiles in rows.items():
        assert np.all(np.isfinite(quantiles)) and quantiles == sorted(quantiles), name
    assert set(rows) == {"ECS", "TCR"}
    assert "lag-1 autocorrelation of the residuals" in result.stdout
    assert (tmp_path / "historical_calibration.png").stat().st_size > 10_000


def test_prior_ensemble_example_runs(tmp_path):
    result = _run_example("prior_ensemble.py", "--fast", cwd=tmp_path)
    assert "10,000 members in" in result.stdout
    rows = {
        tuple(line.split()[:3]): [float(x) for x in line.split()[3:8]]
        for line in result.stdout.splitlines()
        if line.startswith(("ECS (K)", "TCR (K)"))
    }
    for name in ("ECS", "TCR"):
        prior, weighted = rows[(name, "(K)", "prior")], rows[(name, "(K)", "weighted")]
        assert weighted == sorted(weighted) and prior == sorted(prior)
        # The observed warming narrows both.
        assert weighted[4] - weighted[0] < prior[4] - prior[0]
    assert (tmp_path / "prior_ensemble.png").stat().st_size > 10_000
