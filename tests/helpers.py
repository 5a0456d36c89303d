import contextlib
import subprocess

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import ebm


# The event JAX records after each XLA compilation (jax._src.dispatch).
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def tree_allclose(x, y, *, rtol=1e-7, atol=0.0) -> bool:
    """Whether two pytrees have the same structure and allclose leaves."""
    x_leaves, x_def = jax.tree.flatten(x)
    y_leaves, y_def = jax.tree.flatten(y)
    if x_def != y_def:
        return False
    return all(
        np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
        for a, b in zip(x_leaves, y_leaves)
    )


def replace(params: ebm.Params, name: str, value) -> ebm.Params:
    return eqx.tree_at(lambda p: getattr(p, name), params, jnp.asarray(value, float))


def finite_difference(fn, params: ebm.Params, name: str, *, relative_step=1e-6):
    """Fourth-order central difference of scalar `fn(params)` in the field `name`.

    The step is relative to the parameter's size (absolute for a zero parameter).
    Fourth order (two step sizes) keeps truncation below 1e-8 relative at steps
    large enough that the solves' own tolerances do not show.
    """
    value = float(getattr(params, name))
    step = relative_step * (abs(value) if value != 0 else 1.0)

    def at(offset):
        return float(fn(replace(params, name, value + offset)))

    forward = at(step)
    # Every evaluation after the first is a call with new parameter values: one
    # that compiles again would make each fit or sweep pay the compile.
    with compilations() as compiled:
        backward, forward_2, backward_2 = at(-step), at(2 * step), at(-2 * step)
    assert not compiled, f"{fn} compiled again for new values of {name}: {compiled}"
    return (8 * (forward - backward) - (forward_2 - backward_2)) / (12 * step)


def assert_compiles_once(fn, *calls):
    """`fn(calls[0])` compiles what it needs; `fn(call)` for every later entry of
    `calls` (new parameter values, same shapes and settings) compiles nothing."""
    jax.block_until_ready(fn(calls[0]))
    for call in calls[1:]:
        with compilations() as compiled:
            jax.block_until_ready(fn(call))
        assert not compiled, f"a call with new values compiled {compiled}"


def assert_gradient_matches_fd(
    fn, params, gradient, names, *, rtol=1e-6, atol=0.0, relative_step=1e-6
):
    """Each named component of `gradient` equals the finite difference of `fn`."""
    for name in names:
        expected = finite_difference(fn, params, name, relative_step=relative_step)
        actual = float(getattr(gradient, name))
        assert np.isclose(actual, expected, rtol=rtol, atol=atol), (
            f"d/d{name}: autodiff {actual!r} vs finite differences {expected!r}"
        )


def abrupt_exact(model, params, t, factor=4.0):
    """The exact solution of a global layer model's abrupt-`factor` x CO2 run at
    `t` years, from rest: `A^-1 (e^{At} - I) b F`."""
    matrix, b = model.system(params)
    forcing = params.F2x * jnp.log2(factor)
    propagator = jax.scipy.linalg.expm(matrix * t)
    eye = jnp.eye(matrix.shape[0])
    return jnp.linalg.solve(matrix, (propagator - eye) @ b) * forcing


# Long enough for a 2-core machine kept busy by another process (the multi-process
# tests' slowest worker takes minutes there); a hang still ends.
SUBPROCESS_TIMEOUT = 3600


def run_processes(commands, *, cwd=None, timeout=SUBPROCESS_TIMEOUT):
    """Run `commands` at once, wait for every one, and return their
    `subprocess.CompletedProcess`es (text stdout and stderr).

    Whatever happens while waiting (a timeout, a failed assertion in a caller's
    `with`, an interrupt), every process is killed if still running, waited for,
    and its pipes are closed: none outlives the test.
    """
    processes = []
    try:
        for command in commands:
            processes.append(
                subprocess.Popen(
                    command,
                    cwd=cwd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        results = []
        for command, process in zip(commands, processes):
            stdout, stderr = process.communicate(timeout=timeout)
            results.append(
                subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
            )
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()


@contextlib.contextmanager
def compilations():
    """Collect the name of every XLA program compiled inside the `with` block.

    Counts JAX's backend-compile events (`jax.monitoring`), so a program found in
    any of JAX's caches is not counted, and eager operations are (each compiles a
    small program the first time it meets a shape).
    """
    names = []

    def listener(event, duration, **kwargs):
        del duration
        if event == BACKEND_COMPILE_EVENT:
            names.append(kwargs.get("fun_name", "?"))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield names
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
