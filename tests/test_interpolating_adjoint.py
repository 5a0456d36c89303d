"""`ebm.InterpolatingAdjoint`: the continuous adjoint against a checkpointed forward
state, through runs far beyond backsolve's horizon."""

import json

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._zonal.run import BACKSOLVE_HORIZON, time_scales
from helpers import assert_gradient_matches_fd


GRID = ebm.Grid(18)
NAMES = ebm.Params.field_names()
# A millennium: 2,700 times backsolve's horizon on this grid (0.36 years).
YEARS = 1000.0
# The continuous gradient approximates the exact derivative to the solvers'
# tolerances (rtol = atol = 1e-8 forward and backward); the recursive adjoint's is
# the exact derivative of the discrete run. They must agree to 1e-6 of the largest.
AGREEMENT = 1e-6


def _final_mean(adjoint, years=YEARS):
    def fn(params):
        return ebm.integrate(
            params, years=years, grid=GRID, adjoint=adjoint
        ).global_mean

    return fn


@pytest.fixture(scope="module")
def gradients():
    params = ebm.Params()
    return {
        adjoint: jax.grad(_final_mean(adjoint))(params)
        for adjoint in ("interpolating", "recursive")
    }


def _largest_difference(a, b):
    a = np.array([float(getattr(a, name)) for name in NAMES])
    b = np.array([float(getattr(b, name)) for name in NAMES])
    return np.max(np.abs(a - b)) / np.max(np.abs(b)), a, b


def test_a_millennium_is_far_beyond_backsolve():
    model = ebm.EnergyBalanceModel(grid=GRID)
    scales = time_scales(ebm.Params(), model, ebm.present_day_profile(GRID))
    horizon = BACKSOLVE_HORIZON * float(scales.diffusion)
    assert YEARS > 1e3 * horizon


def test_gradient_through_a_millennium_matches_the_recursive_adjoint(gradients):
    difference, interpolating, recursive = _largest_difference(
        gradients["interpolating"], gradients["recursive"]
    )
    assert difference < AGREEMENT, (interpolating, recursive)
    # Not a comparison of zeros: the final mean depends on the parameters.
    assert np.count_nonzero(np.abs(recursive) > 1e-3) >= 8


def test_gradient_through_a_millennium_matches_finite_differences(gradients):
    assert_gradient_matches_fd(
        _final_mean("recursive"),
        ebm.Params(),
        gradients["interpolating"],
        ("A", "B", "D", "S0", "a0", "ai"),
        rtol=1e-6,
        atol=1e-9,
    )


def test_saved_snapshots_and_the_initial_profile_get_their_gradients():
    """A loss of several saved states (as `ebm.fit` through a trajectory takes),
    from a start far from equilibrium: jumps of the adjoint at saved times, some
    inside a segment, two at once, one at `t0`; and the gradient with respect to
    `T0`, the adjoint at the start."""
    params = ebm.Params()
    T0 = ebm.present_day_profile(GRID)
    weights = jnp.linspace(1.0, 2.0, GRID.n_lat)
    saveat = diffrax.SaveAt(t0=True, ts=jnp.array([0.3, 1.0, 1.0, 2.5]))

    def loss(params, T0, adjoint):
        run = ebm.integrate(
            params, years=3.0, grid=GRID, T0=T0, adjoint=adjoint, saveat=saveat
        )
        return jnp.sum(run.Ts * weights[None, :]) + run.global_mean

    gradient = jax.grad(loss, argnums=(0, 1))
    interpolating = gradient(params, T0, ebm.InterpolatingAdjoint(segment_steps=8))
    recursive = gradient(params, T0, "recursive")
    difference, a, b = _largest_difference(interpolating[0], recursive[0])
    assert difference < AGREEMENT, (a, b)
    initial, expected = np.asarray(interpolating[1]), np.asarray(recursive[1])
    assert np.max(np.abs(initial - expected)) < AGREEMENT * np.max(np.abs(expected))
    # Not zeros: saved at t0, the start's weight enters directly.
    assert np.min(np.abs(expected)) > 0.5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(segment_steps=1), "`segment_steps` must be an integer >= 2"),
        (dict(segment_steps=2.5), "`segment_steps` must be an integer >= 2"),
        (dict(rtol=0.0), "`rtol` must be in \\(0, 1\\)"),
        (dict(atol=2.0), "`atol` must be in \\(0, 1\\)"),
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ebm.InterpolatingAdjoint(**kwargs)


def test_forward_mode_names_the_adjoint_to_use():
    with pytest.raises(ValueError, match="adjoint='forward'"):
        jax.jvp(_final_mean("interpolating", 1.0), (ebm.Params(),), (ebm.Params(),))


def test_saving_every_step_is_refused():
    with pytest.raises(NotImplementedError, match="steps=True"):
        jax.grad(
            lambda p: (
                ebm.integrate(
                    p,
                    years=1.0,
                    grid=GRID,
                    adjoint="interpolating",
                    saveat=diffrax.SaveAt(steps=True),
                ).global_mean
            )
        )(ebm.Params())


def test_the_command_line_takes_it_by_name(capsys):
    from ebm._cli.main import main

    def gradient(adjoint):
        argv = ["run", "--n-lat", "12", "--years", "5", "--saves", "3"]
        assert main([*argv, "--adjoint", adjoint, "--no-plot", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["method"] == f"adjoint {adjoint}"
        return report["d_final_global_mean_d"]

    interpolating, recursive = gradient("interpolating"), gradient("recursive")
    largest = max(abs(value) for value in recursive.values())
    for name, value in recursive.items():
        assert interpolating[name] == pytest.approx(value, abs=AGREEMENT * largest)


def test_the_private_diffrax_pieces_it_needs_are_there():
    # ebm.InterpolatingAdjoint is built from diffrax's own backsolve machinery,
    # which diffrax does not export; pyproject.toml pins diffrax's minor version.
    # A diffrax that removes them fails at `import ebm` (interpolating.py imports
    # them by name); one that changes how they are called fails here, by name,
    # rather than deep inside a gradient.
    import inspect

    from diffrax import _adjoint

    for name, parameters in (
        ("_inner_loop", ("kind",)),
        ("_outer_loop", ("kind",)),
        ("_only_transpose_ys", ()),
    ):
        function = getattr(_adjoint, name, None)
        assert callable(function), f"diffrax._adjoint.{name} is gone"
        signature = inspect.signature(function)
        for parameter in parameters:
            assert parameter in signature.parameters, (name, signature)
