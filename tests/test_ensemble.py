"""Ensembles: batched, sharded, multi-host runs, and per-member failures."""

import pathlib
import socket
import sys
import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from helpers import assert_compiles_once, assert_gradient_matches_fd, run_processes


ROOT = pathlib.Path(__file__).parents[1]
WORKER = ROOT / "tests" / "ensemble_worker.py"


def _worker(output, *args):
    return [sys.executable, str(WORKER), str(output), *args]


def _runs(saved, devices):
    prefix = f"{devices}/"
    return {k[len(prefix) :]: saved[k] for k in saved.files if k.startswith(prefix)}


def test_sharded_and_multihost_equal_unsharded_exactly(tmp_path):
    """4 forced host devices in one process, and 2 processes x 2 devices joined by
    jax.distributed, give the one-device results bit for bit (values, gradients,
    failure flags, NaNs in the same places)."""
    with socket.socket() as probe:  # a free port for the coordinator
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    single = _worker(
        tmp_path / "single.npz", "--host-devices", "4", "--devices", "1", "4"
    )
    hosts = [
        _worker(
            tmp_path / "hosts.npz",
            "--host-devices", "2", "--devices", "4",
            "--coordinator", f"localhost:{port}",
            "--num-processes", "2", "--process-id", str(process),
        )
        for process in (0, 1)
    ]  # fmt: skip
    for finished in run_processes([single, *hosts]):
        assert finished.returncode == 0, finished.stderr[-3000:]
    saved = np.load(tmp_path / "single.npz")
    distributed = np.load(tmp_path / "hosts.npz")
    assert int(saved["device_count"]) == 4 and int(saved["process_count"]) == 1
    assert int(distributed["device_count"]) == 4
    assert int(distributed["process_count"]) == 2
    unsharded, sharded, multihost = (
        _runs(saved, 1), _runs(saved, 4), _runs(distributed, 4)
    )  # fmt: skip
    assert unsharded.keys() == sharded.keys() == multihost.keys()
    assert len(unsharded) > 30
    for key, value in unsharded.items():
        np.testing.assert_array_equal(sharded[key], value, err_msg=key)
        np.testing.assert_array_equal(multihost[key], value, err_msg=key)
    # The runs are not trivial: one member failed, the others converged.
    assert unsharded["equilibrium/ok"].tolist() == [False] + [True] * 9
    assert unsharded["integrate_fixed/ok"].all()
    assert np.isnan(unsharded["equilibrium[0].global_mean"][0])
    assert np.isfinite(unsharded["equilibrium[1].D"][1:]).all()


def test_ensemble_matches_single_runs_and_finite_differences():
    members = ebm.sweep(D=[0.3, 0.555, 0.9], A=[205.0, 210.0, 215.0])
    run = ebm.ensemble(members, gradient="global_mean", block_size=2)
    assert run.ok.all() and run.failures == {}
    assert run.varying == ("A", "D")
    for i in range(3):
        params = jax.tree.map(lambda x: x[i], members)
        state = ebm.equilibrium(params)
        np.testing.assert_allclose(run.result.T[i], state.T, rtol=0, atol=1e-10)
        gradient = jax.tree.map(lambda x: x[i], run.gradient)
        assert_gradient_matches_fd(
            lambda p: ebm.equilibrium(p).global_mean,
            params,
            gradient,
            ("A", "B", "D", "S0", "a0"),
            atol=1e-7,  # d/dD is 3e-4 in the ice-free member
        )
    mean, count = run.mean("global_mean")
    assert count == 3
    np.testing.assert_allclose(mean, np.mean(run.result.global_mean))


def test_ensemble_of_integrations_matches_single_runs_and_finite_differences():
    members = ebm.sweep(water_depth=[5.0, 20.0])
    run = ebm.ensemble(
        members, "integrate", gradient="global_mean", years=1.0, adjoint="recursive"
    )
    assert run.ok.all()

    def fn(params):
        return ebm.integrate(params, years=1.0).global_mean

    first = jax.tree.map(lambda x: x[0], members)
    gradient = jax.tree.map(lambda x: x[0], run.gradient)
    assert_gradient_matches_fd(fn, first, gradient, ("D", "water_depth"), rtol=1e-5)
    second = jax.tree.map(lambda x: x[1], members)
    single = jax.grad(fn)(second)
    # Two compiled programs (two adjoints, or a batch and a single run) round
    # differently, and where a step's error estimate sits at the controller's
    # threshold their adaptive steps differ: two discretisations, each to rtol 1e-8.
    for name in ebm.Params.field_names():
        np.testing.assert_allclose(
            getattr(run.gradient, name)[1], getattr(single, name), rtol=1e-7, atol=1e-12
        )


def test_failed_member_is_reported_and_does_not_touch_the_others():
    kwargs = dict(gradient="global_mean", block_size=4, max_steps=30)
    # The reference has the failing member swapped for one that converges, so that
    # every member has the same place in a block of the same size.
    good = ebm.sweep(S0=[1365.0, 1365.0, 1300.0, 1600.0])
    with_failure = ebm.sweep(S0=[1365.0, 1250.0, 1300.0, 1600.0])
    with pytest.warns(ebm.EnsembleFailureWarning, match="member 1: The maximum"):
        run = ebm.ensemble(with_failure, **kwargs)
    assert run.ok.tolist() == [True, False, True, True]
    assert list(run.failures) == [1]
    assert "maximum number of steps" in run.failures[1]
    # NaN where it failed, so no reduction over all members can include it quietly.
    assert np.isnan(run.result.global_mean[1]) and np.isnan(run.gradient.D[1])
    assert np.isnan(np.mean(run.result.global_mean))
    reference = ebm.ensemble(good, **kwargs)
    kept = np.array([0, 2, 3])
    np.testing.assert_array_equal(run.result.T[kept], reference.result.T[kept])
    np.testing.assert_array_equal(run.gradient.S0[kept], reference.gradient.S0[kept])
    mean, count = run.mean("d_global_mean_d_S0")
    assert count == 3
    np.testing.assert_allclose(mean, np.mean(reference.gradient.S0[kept]))
    with pytest.raises(RuntimeError, match="1 of 4 members failed"):
        ebm.ensemble(with_failure, on_failure="raise", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ebm.ensemble(with_failure, on_failure="ignore", **kwargs)


def test_a_gradient_that_raises_is_retried_without_the_failed_member():
    """A member whose state is NaN makes the implicit linear solve raise for its
    whole block; the block is recomputed with that member swapped out."""
    grid = ebm.Grid()
    present = ebm.present_day_profile(grid)

    def task(params):
        start = jnp.where(params.D > 0.7, jnp.nan, present)
        return ebm.equilibrium(params, start=start, throw=False, near_fold=None)

    members = ebm.sweep(D=[0.4, 0.8, 0.5])
    with pytest.warns(ebm.EnsembleFailureWarning, match="member 1"):
        run = ebm.ensemble(members, task, gradient="global_mean", block_size=3)
    assert run.ok.tolist() == [True, False, True]
    # The same program without the failure (member 1 swapped for member 0).
    reference = ebm.ensemble(
        ebm.sweep(D=[0.4, 0.4, 0.5]), task, gradient="global_mean", block_size=3
    )
    kept = np.array([0, 2])
    np.testing.assert_array_equal(run.result.T[kept], reference.result.T[kept])
    np.testing.assert_array_equal(run.gradient.D[kept], reference.gradient.D[kept])
    assert np.isnan(run.gradient.D[1])


def test_a_gradient_that_raises_again_fails_its_block_only():
    """When the gradient raises for members whose values converged, the retry cannot
    help: that block's members fail, with the error's message, and no other."""

    @jax.custom_vjp
    def checked(x, warm):
        return x

    def forward(x, warm):
        return x, warm

    def backward(warm, cotangent):  # raises in the gradient only
        return eqx.error_if(cotangent, warm, "boom"), None

    checked.defvjp(forward, backward)

    def output(result):
        return checked(result.global_mean, result.global_mean > 14.0)

    members = ebm.sweep(S0=[1300.0, 1400.0])
    with pytest.warns(
        ebm.EnsembleFailureWarning, match="member 1: the gradient raised"
    ):
        run = ebm.ensemble(members, gradient=output, block_size=1)
    assert run.ok.tolist() == [True, False]
    assert "boom" in run.failures[1]
    assert np.isfinite(run.gradient.S0[0]) and np.isnan(run.gradient.S0[1])


def test_failed_first_member_keeps_the_time_axis():
    members = ebm.sweep(water_depth=[0.3, 10.0])  # the shallow one needs more steps
    ts = np.array([0.25, 0.5, 1.0])
    with pytest.warns(ebm.EnsembleFailureWarning, match="member 0: The maximum"):
        run = ebm.ensemble(
            members,
            "integrate",
            years=1.0,
            max_steps=800,
            saveat=diffrax.SaveAt(ts=ts),
        )
    assert run.ok.tolist() == [False, True]
    dataset = ebm.to_dataset(run)
    np.testing.assert_allclose(dataset["time"].values, ts * 365)
    np.testing.assert_array_equal(dataset["lat"].values, ebm.Grid().lat)
    assert np.isnan(dataset["T_history"].values[0]).all()
    assert np.isfinite(dataset["T_history"].values[1]).all()


def test_ensemble_dataset_round_trip(tmp_path):
    members = ebm.sweep(S0=[1365.0, 1250.0, 1400.0])
    with pytest.warns(ebm.EnsembleFailureWarning):
        run = ebm.ensemble(members, gradient="ice_edge", max_steps=30)
    dataset = ebm.to_dataset(run)
    assert dataset["T"].dims == ("member", "lat")
    assert dataset["param_S0"].attrs["units"] == "W m-2"
    assert "param_S0" not in dataset.attrs and dataset.attrs["param_D"] == 0.555
    assert dataset["d_ice_edge_d_D"].attrs["units"] == "(degrees_north) (W m-2 K-1)-1"
    assert dataset["ok"].values.tolist() == [True, False, True]
    assert "maximum number of steps" in str(dataset["failure"].values[1])
    assert dataset["failure"].values[0] == ""
    # xarray's reductions skip the failed member's NaN.
    np.testing.assert_allclose(
        float(dataset["global_mean"].mean("member")), run.mean("global_mean")[0]
    )
    path = ebm.save(run, tmp_path / "ensemble.nc")
    loaded = ebm.load(path)
    for name in ("T", "global_mean", "d_ice_edge_d_S0", "param_S0"):
        np.testing.assert_array_equal(loaded[name].values, dataset[name].values)
    assert loaded["failure"].values.tolist() == dataset["failure"].values.tolist()


def test_sweep_and_ensemble_check_their_input():
    product = ebm.sweep(D=[0.3, 0.5], S0=[1300.0, 1350.0, 1400.0], product=True)
    assert product.D.tolist() == [0.3] * 3 + [0.5] * 3
    assert product.S0.tolist() == [1300.0, 1350.0, 1400.0] * 2
    assert product.A.shape == (6,)
    with pytest.raises(ValueError, match="`Dx` is not a parameter"):
        ebm.sweep(Dx=[1.0])
    with pytest.raises(ValueError, match="one length"):
        ebm.sweep(D=[0.3, 0.5], S0=[1300.0])
    with pytest.raises(ValueError, match="`D` must be >= 0"):
        ebm.sweep(D=[0.3, -0.5])
    with pytest.raises(ValueError, match="non-empty 1-d"):
        ebm.sweep(D=[[0.3]])
    members = ebm.sweep(D=[0.3, 0.5])
    with pytest.raises(ValueError, match="`devices` must be between 1 and"):
        ebm.ensemble(members, devices=0)
    with pytest.raises(ValueError, match="`on_failure` must be one of"):
        ebm.ensemble(members, on_failure="skip")
    with pytest.raises(ValueError, match="`throw` must be False"):
        ebm.ensemble(members, throw=True)
    with pytest.raises(ValueError, match="`block_size` must be an integer >= 1"):
        ebm.ensemble(members, block_size=0)
    with pytest.raises(ValueError, match="`task` must be one of"):
        ebm.ensemble(members, "spinup")
    with pytest.raises(ValueError, match="one value each or batches of one length"):
        ebm.ensemble(ebm.Params())
    with pytest.raises(ValueError, match="`params` must hold one value per field"):
        ebm.sweep(members, S0=[1300.0, 1400.0])
    with pytest.raises(ValueError, match="`D` must be numbers"):
        ebm.sweep(D=["a"])
    with pytest.raises(ValueError, match="at least one device"):
        ebm.ensemble(members, devices=[])
    with pytest.raises(ValueError, match="steps=True"):
        ebm.ensemble(members, "integrate", years=1.0, saveat=diffrax.SaveAt(steps=True))
    with pytest.raises(ValueError, match="scalar floating-point output.*global_mean"):
        ebm.ensemble(members, gradient="T")
    with pytest.raises(ValueError, match="not differentiated"):
        ebm.ensemble(members, gradient="condition_number")
    run = ebm.ensemble(members, gradient="global_mean", devices=np.int64(1))
    assert run.mean("d_global_mean_d_D")[1] == 2
    with pytest.raises(ValueError, match="nor d_global_mean_d_<parameter>"):
        run.mean("d_ice_edge_d_D")
    with pytest.raises(ValueError, match="pass model=None"):
        ebm.to_dataset(run, model=ebm.EnergyBalanceModel())


def test_failed_member_claims_no_stability(tmp_path):
    # A failed member's `stable` used to stay True, in the Ensemble and the file.
    members = ebm.sweep(S0=[1365.0, 1250.0])
    grid = ebm.Grid(6)
    with pytest.warns(ebm.EnsembleFailureWarning):
        run = ebm.ensemble(members, grid=grid, max_steps=2)
    failed = ~np.asarray(run.ok)
    assert failed.any()
    assert not np.asarray(run.result.stable)[failed].any()
    path = ebm.save(run, tmp_path / "ensemble.nc")
    stable = ebm.load(path)["stable"]
    assert not stable.values[failed].any()
    assert "failed" in stable.attrs["comment"]


def test_ensemble_compiles_once():
    """Another ensemble of the same size and settings, with new values, reuses the
    compiled blocks (values and gradients)."""
    batches = [
        ebm.sweep(D=[0.3, 0.555, 0.9], A=[205.0, 210.0, 215.0]),
        ebm.sweep(D=[0.4, 0.5, 0.6], A=[200.0, 212.0, 214.0]),
    ]
    assert_compiles_once(
        lambda members: (
            ebm.ensemble(members, gradient="global_mean", block_size=2).gradient
        ),
        *batches,
    )


def test_ensemble_progress_counts_blocks_on_stderr(capfd):
    members = ebm.sweep(D=[0.4, 0.5, 0.6])
    quiet = ebm.ensemble(members, block_size=1)
    output = capfd.readouterr()
    assert output.err == "" and output.out == ""
    shown = ebm.ensemble(members, block_size=1, progress=True)
    output = capfd.readouterr()
    assert "3/3" in output.err and "block" in output.err and output.out == ""
    np.testing.assert_array_equal(shown.result.T, quiet.result.T)
    # A meter of the user's own is told the fraction of blocks done.
    ebm.ensemble(members, block_size=1, progress=diffrax.TextProgressMeter())
    assert "100.00%" in capfd.readouterr().out


def test_blocks_are_dispatched_a_few_at_a_time_and_counted_as_they_finish(
    monkeypatch,
):
    # The meter steps as each block finishes, with at most two blocks in flight:
    # dispatched all at once, a long ensemble's bar stood at 0% until every block
    # had run (on CPU, dispatch runs the block), then jumped to 100%, and every
    # block's work was held at once.
    from ebm._analysis import ensemble, ensemble_layout

    events = []
    run_block = ensemble_layout._run_block

    def recorded(member, block):
        events.append("dispatch")
        return run_block(member, block)

    class Recorded(ensemble.HostProgress):
        def step(self, done, note=None):
            events.append("finished")
            super().step(done, note)

    monkeypatch.setattr(ensemble_layout, "_run_block", recorded)
    monkeypatch.setattr(ensemble, "HostProgress", Recorded)
    members = ebm.sweep(D=np.linspace(0.4, 0.6, 6))
    ebm.ensemble(members, block_size=1)
    assert events.count("dispatch") == events.count("finished") == 6
    in_flight = np.cumsum([1 if event == "dispatch" else -1 for event in events])
    assert in_flight.max() == 2
    assert events.index("finished") < len(events) - 1 - events[::-1].index("dispatch")


MANY_MEMBERS = """
import jax
import jax.numpy as jnp
import numpy as np
jax.config.update("jax_enable_x64", True)
import ebm
S0 = jnp.linspace(1100.0, 1500.0, 10_000)
members = jax.jit(
    jax.vmap(lambda s: ebm.equilibrium(ebm.Params(S0=s), throw=False))
)(S0)
print(int(jnp.sum(members.converged)), float(members.global_mean[0]),
      float(members.global_mean[-1]), float(members.T[7777, 30]))
"""


def test_ten_thousand_members_across_the_snowball_fold_finish(tmp_path):
    # jaxlib's batched CPU tridiagonal solve split its batch over XLA's threads
    # and, run twice at once inside a batched loop, waited for ever: 1,000 members
    # over this range hung with idle cores. Under a timeout, in its own process.
    (result,) = run_processes([[sys.executable, "-c", MANY_MEMBERS]], timeout=300)
    assert result.returncode == 0, result.stderr
    converged, coldest, warmest, member = result.stdout.split()
    assert int(converged) == 10_000
    # Both sides of the fold: a snowball at 1100 W m-2, ice-free at 1500.
    assert float(coldest) < -30 and float(warmest) > 20
    single = ebm.equilibrium(
        ebm.Params(S0=float(jnp.linspace(1100.0, 1500.0, 10_000)[7777]))
    )
    assert float(member) == pytest.approx(float(single.T[30]), abs=1e-9)
