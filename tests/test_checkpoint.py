"""Fixed-step integration and its checkpoint schedules.

Every schedule is exact: the same arithmetic in a different order of storage and
recomputation, so its gradient equals the plain scan's to rounding (1e-10 relative).
The binomial schedule is checked against exhaustive dynamic programming for
optimality, and its backward pass is counted step by step.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ebm
from ebm._stepping.checkpoints import (
    CHECKPOINTS,
    resolve_checkpoint,
    schedule_name,
)
from ebm._stepping.checkpoints.binomial import (
    binomial_recomputations,
    binomial_spine,
    split,
    static_split,
)
from ebm._stepping.checkpoints.nested import chunk_sizes
from ebm._stepping.memory import DEFAULT_SCHEDULES
from helpers import (
    assert_gradient_matches_fd,
    finite_difference,
    replace,
    tree_allclose,
)


NAMES = ebm.Params.field_names()
DT = 5.0 / 365.25
STEPS = 37  # not a perfect power: the nested schedules' padding is exercised
# Each kind of schedule in the default run (each is a gradient compiled on its own);
# its other settings and a saving policy in the full matrix (-m slow). The pytree
# test below runs every kind on a toy loop.
_slow = pytest.mark.slow
SCHEDULES = [
    "step",
    "sqrt",
    pytest.param(("nested", 3), marks=_slow),
    ("nested", 4),
    pytest.param(("binomial", 1), marks=_slow),
    ("binomial", 3),
    pytest.param(("binomial", 8), marks=_slow),
    pytest.param(("binomial", 64), marks=_slow),
    "recursive",
    pytest.param(("recursive", 4), marks=_slow),
    pytest.param(
        ebm.StepCheckpoint(
            jax.checkpoint_policies.save_only_these_names("ebm_tendency")
        ),
        marks=_slow,
    ),
    ebm.NestedCheckpoint(2, offload=True),
]


@pytest.fixture(scope="module")
def params():
    return ebm.Params()


def _final_mean(checkpoint, stepper="imex", steps=STEPS, dt=DT):
    def fn(params):
        return ebm.integrate_fixed(
            params, dt=dt, steps=steps, stepper=stepper, checkpoint=checkpoint
        ).global_mean

    return fn


@functools.cache
def _plain_gradient(stepper):
    return jax.grad(_final_mean("none", stepper))(ebm.Params())


@pytest.mark.parametrize("checkpoint", SCHEDULES, ids=str)
def test_every_schedule_gives_the_plain_gradient(params, checkpoint):
    gradient = jax.grad(_final_mean(checkpoint))(params)
    assert tree_allclose(gradient, _plain_gradient("imex"), rtol=1e-10)


@pytest.mark.parametrize("stepper", ["imex", "implicit"])
def test_plain_gradient_matches_finite_differences(params, stepper):
    fn = _final_mean("none", stepper)
    # A step of 1e-4 relative: at 1e-6 the rounding of the global mean (~15 degC),
    # eps |f| / h ~ 5e-9, is 1e-6 of the small d/d(ice_width) (~5e-3) by itself.
    # Fourth-order truncation at 1e-4 is far smaller.
    assert_gradient_matches_fd(
        fn,
        params,
        _plain_gradient(stepper),
        NAMES,
        rtol=1e-6,
        atol=1e-10,
        relative_step=1e-4,
    )


def test_explicit_stepper_below_its_limit_matches_finite_differences(params):
    fn = _final_mean(("binomial", 4), "explicit", steps=40, dt=0.5 / 365.25)
    gradient = jax.grad(fn)(params)
    # Steps of 1e-4 relative, as in the test above.
    assert_gradient_matches_fd(
        fn, params, gradient, NAMES, rtol=1e-6, atol=1e-10, relative_step=1e-4
    )


def test_explicit_stepper_above_its_limit_is_refused(params):
    with pytest.raises(ValueError, match="`dt` = .* ExplicitEuler's stability limit"):
        ebm.integrate_fixed(params, dt=DT, steps=3, stepper="explicit")


def test_unstable_step_message_gives_the_steppers_own_bound_and_remedy(params):
    with pytest.raises(ValueError) as info:
        ebm.integrate_fixed(params, dt=DT, steps=3, stepper="explicit")
    assert ebm.ExplicitEuler.stability_bound in str(info.value)
    assert ebm.ExplicitEuler.stability_alternative in str(info.value)

    class NeverStable(ebm.AbstractStepper):
        def init(self, model, params, T0, dt):
            return None

        def step(self, model, state, t, T, params, dt):
            return T, None

        def stability_limit(self, model, params, T0):
            return jnp.asarray(1e-9)

    # A stepper that states no facts of its own gets the base's.
    with pytest.raises(ValueError, match="its `stability_limit`.* another stepper"):
        ebm.integrate_fixed(params, dt=DT, steps=3, stepper=NeverStable())


def test_steppers_are_known_by_their_own_names_and_tolerances():
    from ebm._stepping.steppers import STEPPERS, resolve_stepper
    from ebm._stepping.steppers.checks import resolve_error_tolerance

    assert set(STEPPERS.values()) == {
        ebm.ExplicitEuler,
        ebm.IMEXEuler,
        ebm.LinearlyImplicitEuler,
        ebm.Rosenbrock2,
    }
    for name, stepper in STEPPERS.items():
        assert type(resolve_stepper(name)) is stepper
        tolerance = resolve_error_tolerance(None, stepper())
        assert tolerance == (10.0 if stepper is ebm.Rosenbrock2 else 1.0)


def test_steppers_converge_to_the_adaptive_solution(params):
    # First order: halving dt halves the error against the adaptive Kvaerno5 run.
    years = 1.0
    reference = ebm.integrate(params, years=years).T
    for stepper in ("imex", "implicit", "explicit"):
        errors = []
        for steps in (400, 800):
            run = ebm.integrate_fixed(
                params, dt=years / steps, steps=steps, stepper=stepper
            )
            errors.append(float(jnp.max(jnp.abs(run.T - reference))))
        assert errors[1] < 1e-2
        assert 1.8 < errors[0] / errors[1] < 2.2, (stepper, errors)


@pytest.mark.parametrize(
    "checkpoint",
    [
        pytest.param("none", marks=_slow),
        "sqrt",
        pytest.param(("nested", 3), marks=_slow),
        pytest.param("step", marks=_slow),
    ],
)
def test_scan_schedules_support_forward_mode_and_second_derivatives(params, checkpoint):
    fn = _final_mean(checkpoint)
    tangent = replace(jax.tree.map(jnp.zeros_like, params), "D", 1.0)
    _, directional = jax.jvp(fn, (params,), (tangent,))
    assert np.isclose(directional, _plain_gradient("imex").D, rtol=1e-10)

    def d_by_dd(params):
        return jax.grad(fn)(params).D

    second = jax.grad(d_by_dd)(params).D
    # Fourth order: the second derivative is small (2% of the first), so the
    # h^2 error of a plain central difference would dominate.
    expected = finite_difference(d_by_dd, params, "D", relative_step=1e-4)
    assert np.isclose(second, expected, rtol=1e-7)


@pytest.mark.parametrize("checkpoint", [("binomial", 4), "recursive"])
def test_reverse_only_schedules_refuse_forward_mode_with_a_hint(params, checkpoint):
    fn = _final_mean(checkpoint)
    with pytest.raises(ValueError, match="reverse mode"):
        jax.jvp(fn, (params,), (params,))


def test_offloading_moves_checkpoints_to_host_memory(params):
    fn = _final_mean(ebm.NestedCheckpoint(2, offload=True))
    jaxpr = str(jax.make_jaxpr(jax.grad(fn))(params))
    assert "<host>" in jaxpr
    plain = str(jax.make_jaxpr(jax.grad(_final_mean("sqrt")))(params))
    assert "<host>" not in plain


# --- The binomial schedule -------------------------------------------------------


@functools.cache
def _optimal_reversal_cost(steps, free):
    """Fewest forward steps to reverse `steps` from a stored state, `free` slots."""
    if steps == 1:
        return 0
    if free == 0:
        return steps * (steps - 1) // 2
    return min(
        middle
        + _optimal_reversal_cost(middle, free)
        + _optimal_reversal_cost(steps - middle, free - 1)
        for middle in range(1, steps)
    )


def test_split_rule_attains_the_optimum():
    for free in range(1, 6):
        for steps in range(2, 120):
            middle = static_split(steps, free)
            cost = (
                middle
                + _optimal_reversal_cost(middle, free)
                + _optimal_reversal_cost(steps - middle, free - 1)
            )
            assert cost == _optimal_reversal_cost(steps, free), (steps, free, middle)


def test_traced_split_equals_static_split():
    steps, free = np.meshgrid(np.arange(1, 300), np.arange(0, 7))
    traced = jax.jit(jax.vmap(split))(steps.ravel(), free.ravel())
    static = [static_split(int(n), int(f)) for n, f in zip(steps.ravel(), free.ravel())]
    np.testing.assert_array_equal(np.asarray(traced), static)


@pytest.mark.parametrize("steps,checkpoints", [(1, 3), (2, 1), (37, 1), (100, 3)])
def test_binomial_backward_pass_runs_the_optimal_schedule(params, steps, checkpoints):
    spine = binomial_spine(steps, checkpoints)
    # The forward pass already took the spine's first advances.
    saved = spine[-1][0]
    expected = _optimal_reversal_cost(steps, checkpoints - 1) - saved
    assert binomial_recomputations(steps, checkpoints) == expected

    calls = []

    def counted(index, x, args):
        jax.debug.callback(lambda: calls.append(1))
        return x * args

    def loop(x0, factor):
        return ebm.BinomialCheckpoint(checkpoints).loop(counted, x0, factor, steps)

    x0, factor = jnp.ones(3), jnp.asarray(1.01)
    gradient = jax.grad(lambda x, a: jnp.sum(loop(x, a)), argnums=(0, 1))(x0, factor)
    jax.effects_barrier()
    # forward sweep + recomputations + one evaluation inside each step's vjp
    assert len(calls) == steps + expected + steps
    assert np.allclose(gradient[0], factor**steps, rtol=1e-13)
    assert np.isclose(gradient[1], 3 * steps * factor ** (steps - 1), rtol=1e-13)


def test_binomial_memory_does_not_grow_with_steps(params):
    def gradient_memory(steps):
        fn = jax.grad(_final_mean(("binomial", 8), steps=steps))
        return ebm.compiled_memory(fn, params).temporary_bytes

    assert gradient_memory(20_000) == gradient_memory(200)


def test_nested_chunk_sizes_cover_the_steps_with_little_padding():
    for steps in (1, 2, 37, 1000, 4096, 4097, 16_000, 64_000, 65_537, 1_000_000):
        for levels in (1, 2, 3, 4):
            sizes = chunk_sizes(steps, levels)
            assert len(sizes) == levels and np.prod(sizes) >= steps
            if steps >= 2**levels:
                assert min(sizes) >= 2, (steps, levels, sizes)
            if steps >= 1000:
                assert np.prod(sizes) <= 1.1 * steps, (steps, levels, sizes)


@pytest.mark.parametrize(
    "schedule",
    [
        ebm.NoCheckpoint(),
        ebm.StepCheckpoint(),
        ebm.NestedCheckpoint(1),
        ebm.NestedCheckpoint(3),
        ebm.BinomialCheckpoint(1),
        ebm.BinomialCheckpoint(3),
        ebm.BinomialCheckpoint(50),
        ebm.RecursiveCheckpoint(3),
    ],
    ids=repr,
)
def test_schedules_take_pytree_states_and_mixed_arguments(schedule):
    def step(index, state, args):
        position, velocity = state
        rate, label = args
        del label
        return position + 0.1 * velocity, velocity - 0.1 * rate * jnp.sin(position)

    def final(x0, rate, checkpoint):
        state = checkpoint.loop(step, x0, (rate, jnp.asarray(3)), 23)
        return jnp.sum(state[0] ** 2) + jnp.sum(state[1])

    x0 = (jnp.linspace(0.1, 1.0, 4), jnp.zeros(4))
    expected = jax.grad(final, argnums=(0, 1))(x0, 2.0, ebm.NoCheckpoint())
    actual = jax.grad(final, argnums=(0, 1))(x0, 2.0, schedule)
    assert tree_allclose(actual, expected, rtol=1e-12)


# --- The schedules by name ----------------------------------------------------


def _every_spelling():
    """Each name, alias and sized spelling (as a tuple and as both texts) of every
    schedule in the table, with the class and size it stands for."""
    for name, schedule in CHECKPOINTS.items():
        yield name, schedule, None
        for alias, size in schedule.aliases:
            yield alias, schedule, size
        if schedule.size_field is not None:
            for spelling in ((name, 3), f"{name}-3", f"{name}:3"):
                yield spelling, schedule, 3


@pytest.mark.parametrize("spelling, schedule, size", list(_every_spelling()), ids=str)
def test_every_spelling_resolves_and_its_label_reads_back(spelling, schedule, size):
    resolved = resolve_checkpoint(spelling)
    assert type(resolved) is schedule
    if size is not None:
        assert getattr(resolved, schedule.size_field) == size
    assert resolve_checkpoint(schedule_name(spelling)) == resolved


def test_unknown_schedule_names_every_spelling():
    with pytest.raises(ValueError, match="`checkpoint` must be") as info:
        resolve_checkpoint("revolve")
    for spelling, schedule, _ in _every_spelling():
        if isinstance(spelling, str) and "-" not in spelling and ":" not in spelling:
            assert repr(spelling) in str(info.value)
        if schedule.size_field is not None:
            assert f"({schedule.name!r}, {schedule.size_field})" in str(info.value)


def test_default_schedules_cover_every_schedule_and_keep_their_labels():
    kinds = {type(resolve_checkpoint(spelling)) for spelling in DEFAULT_SCHEDULES}
    assert kinds == set(CHECKPOINTS.values())
    labels = [schedule_name(spelling) for spelling in DEFAULT_SCHEDULES]
    assert labels[:3] == ["none", "step", "sqrt"]
    assert "binomial-8" in labels and "recursive-default" in labels
    assert len(set(labels)) == len(labels)


@pytest.mark.parametrize("schedule", list(CHECKPOINTS.values()), ids=repr)
def test_supports_forward_mode_says_whether_jvp_goes_through(schedule):
    def final(rate):
        def step(index, x, args):
            del index
            return x - 0.1 * args * x

        return jnp.sum(schedule().loop(step, jnp.ones(3), rate, 5))

    if schedule.supports_forward_mode:
        _, tangent = jax.jvp(final, (2.0,), (1.0,))
        assert np.isclose(tangent, jax.grad(final)(2.0), rtol=1e-12)
    else:
        with pytest.raises(TypeError, match="jvp|forward-mode"):
            jax.jvp(final, (2.0,), (1.0,))


# --- Input checking --------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(steps=0), "`steps` must be an integer >= 1, got 0"),
        (dict(steps=2.5), "`steps` must be an integer >= 1, got 2.5"),
        (dict(dt=-1.0), "`dt` must be positive and finite"),
        (dict(checkpoint="revolve"), "`checkpoint` must be"),
        (dict(checkpoint=("nested", 0)), "`levels` must be an integer >= 1, got 0"),
        (dict(checkpoint=("binomial", 0)), "`checkpoints` must be an integer >= 1"),
        (dict(checkpoint=("binomial", True)), "`checkpoint` must be"),
        (dict(checkpoint=("recursive", 0)), "`checkpoints` must be None or an integer"),
        (dict(checkpoint="binomial-x"), "`checkpoint` takes NAME or NAME-SIZE"),
        (dict(checkpoint="binomial-0"), "`checkpoint` takes NAME or NAME-SIZE"),
        (dict(checkpoint="sqrt-3"), "`checkpoint` must be"),
        (dict(checkpoint="none-2"), "`checkpoint` must be"),
        (dict(dt=True), "`dt` must be positive and finite"),
        (dict(dt=np.float32(-0.01)), "`dt` must be positive and finite"),
        (dict(dt=jnp.asarray(-0.01)), "`dt` must be positive and finite"),
        (dict(stepper="rk4"), "`stepper` must be one of"),
    ],
)
def test_bad_arguments_are_named(params, kwargs, match):
    arguments = dict(dt=DT, steps=3) | kwargs
    with pytest.raises(ValueError, match=match):
        ebm.integrate_fixed(params, **arguments)


def test_compiled_memory_reports_the_plain_gradient_growing_with_steps(params):
    small = ebm.compiled_memory(jax.grad(_final_mean("none", steps=100)), params)
    large = ebm.compiled_memory(jax.grad(_final_mean("none", steps=1000)), params)
    assert large.temporary_bytes > 5 * small.temporary_bytes
    assert small.argument_bytes == large.argument_bytes > 0
