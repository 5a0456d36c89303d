"""Result codes of every ebm solve, extending diffrax's (which extend optimistix's)."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class RESULTS(diffrax.RESULTS):  # pyright: ignore[reportGeneralTypeIssues]
    nonfinite_state = (
        "The temperature became non-finite during a fixed-step run: the step is too "
        "large for the stepper (try IMEXEuler, or a smaller dt)."
    )
    unstable_step = (
        "The fixed time step is above the stepper's stability limit at the start of "
        "the run (IMEXEuler: 2 C / B and the ice-albedo feedback's slope, from its "
        "explicit radiation; ExplicitEuler: the diffusive limit; Rosenbrock2 and "
        "LinearlyImplicitEuler: the ice-albedo feedback's growth rate): take a "
        "smaller `dt` (more `steps_per_year`), or another stepper (`stepper=`)."
    )
    inaccurate_step = (
        "The fixed-step run's estimated time-stepping error (its steps' local error "
        "estimates, accumulated over about a year) exceeded `error_tolerance` (in "
        "the state's units): take more steps per year (`steps_per_year`) or a "
        "smaller `dt`, use another stepper (for the zonal model, stepper='imex' at "
        "a sharp ice edge, where the linearly implicit steppers go wrong), or widen "
        "the model's switches (`model.switch_widths` names them)."
    )
    unsolved_step = (
        "A step of the fixed-step run did not solve its own implicit equations (for "
        "ebm.SeaIceEuler, the surface temperature), so that its error estimate is "
        "infinite: take more steps per year (`steps_per_year`) or a smaller `dt`, or "
        "widen the model's switches (`model.switch_widths` names them); no finite "
        "`error_tolerance` admits it (inf turns the check off)."
    )
    step_too_small = (
        "The continuation step fell below `min_step`: the corrector did not converge "
        "even for tiny steps (a corner sharper than the grid resolves, or a "
        "non-smooth model term). Try a smaller `max_turn` or a finer grid."
    )
    no_fold = (
        "The branch left `bounds` (or used up `max_points`) without passing a fold."
    )
    unstable_equilibrium = (
        "The root-finder converged to an unstable equilibrium (a saddle: the "
        "Jacobian has a positive eigenvalue), which no time integration reaches. "
        "Use the default solver, ebm.PseudoTransientContinuation(), which accepts "
        "only stable roots, or another `start`."
    )
    invalid_run_length = (
        "The run's length `years` must be positive and finite, and its start `t0` "
        "finite (the values were traced, so they were checked in the run)."
    )
    saved_times_outside_run = (
        "The saved times (`saveat=diffrax.SaveAt(ts=...)`) must be increasing and "
        "within the run, from `t0` to `t0 + years` (the times were traced, so they "
        "were checked in the run)."
    )
    no_root_in_bracket = (
        "The bracket does not hold a root: the function has the same sign at both "
        "of its ends, or is not finite there (`bracket`)."
    )


def nan_unless_successful(result: RESULTS, outputs, inputs):
    """`outputs`, or NaN where `result` is a failure, with NaN derivatives too.

    A failed solve's last iterate is not what the entry point promises, and its
    derivatives (by the implicit function theorem or through the unfinished run)
    are finite and wrong. Multiplying the outputs by NaN would carry NaN into the
    solver's own backward pass (lineax refuses non-finite input), so the solver's
    path is cut instead, and the NaN reaches every float leaf of `inputs` by a
    separate term, `NaN * 0 * sum(inputs)`, whose value is zero on success.
    """
    ok = result == RESULTS.successful
    leaves = jax.tree.leaves(eqx.filter(inputs, eqx.is_inexact_array))
    dependence = sum((0.0 * jnp.sum(leaf) for leaf in leaves), jnp.array(0.0))
    poison = jnp.where(ok, 0.0, jnp.nan) * dependence

    def mask(x):
        if not eqx.is_inexact_array(x):
            return x
        return jnp.where(ok, x, jax.lax.stop_gradient(x)) + poison.astype(x.dtype)

    return jax.tree.map(mask, outputs)


def failure_message(result: RESULTS) -> str | None:
    """The message of the first failure among the (concrete) codes `result`, or
    `None` when every one is `RESULTS.successful`."""
    codes = np.asarray(result._value).ravel()
    failed = np.flatnonzero(codes != int(RESULTS.successful._value))
    if failed.size == 0:
        return None
    message = RESULTS._index_to_message[int(codes[failed[0]])]
    if codes.size > 1:
        message = f"{failed.size} of {codes.size} solves failed; the first: {message}"
    return message


def raise_if_failed(outputs, result: RESULTS, message: str | None = None):
    """`outputs`, once `result` says the solve succeeded; else an
    `eqx.EquinoxRuntimeError` with the failure's message (or `message`).

    A compiled entry point returns its result code rather than raising inside the
    program (as optimistix does with `throw=False`): `eqx.error_if` compiles to a
    host callback, and JAX's persistent compilation cache keeps no program that
    holds one. So, where the code is known when the call returns (a call with
    concrete arguments, and under eager `jax.grad`/`jax.jacfwd`), it is checked
    here, on the host. Where it is traced (under the caller's own `jit` or
    `vmap`) the check is threaded onto every array of `outputs` by
    `eqx.error_if`, in the caller's program, as before: no output escapes it.
    """
    if result.is_traced():
        dynamic, static = eqx.partition(outputs, eqx.is_inexact_array)
        if not jax.tree.leaves(dynamic):
            dynamic, static = eqx.partition(outputs, eqx.is_array)
        if message is None:
            dynamic = result.error_if(dynamic, result != RESULTS.successful)
        else:
            dynamic = eqx.error_if(dynamic, result != RESULTS.successful, message)
        return eqx.combine(dynamic, static)
    failed = failure_message(result)
    if failed is not None:
        raise eqx.EquinoxRuntimeError(failed if message is None else message)
    return outputs


def error_message(error: BaseException) -> str:
    """An error's message on one line: equinox wraps a runtime error's message in
    the stack and advice."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    marker = "EquinoxRuntimeError: "
    for line in lines:
        if marker in line:
            return line.split(marker, 1)[1]
    return lines[0] if lines else type(error).__name__


# A batch of more codes than this prints how many of each, not every one.
LISTED_CODES = 8


class _Named:
    """Stands in for a result code in a printout: its name (`RESULTS.successful`),
    where equinox would print its message (empty for success: `RESULTS<>`)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def result_name(result: RESULTS) -> str:
    """`RESULTS.successful` (the code's name), `RESULTS[successful, ...]` for a
    batch of at most `LISTED_CODES` codes, `RESULTS[1000: 998 successful, 2 ...]`
    (how many of each) for a larger one, or `RESULTS<traced>` inside `jit`."""
    if result.is_traced():
        return "RESULTS<traced>"
    names = {int(item._value): name for name, item in RESULTS._name_to_item.items()}
    codes = np.asarray(result._value)
    if codes.ndim == 0:
        return f"RESULTS.{names[int(codes)]}"
    codes = codes.ravel()
    if codes.size <= LISTED_CODES:
        return f"RESULTS[{', '.join(names[int(code)] for code in codes)}]"
    values, counts = np.unique(codes, return_counts=True)
    tally = ", ".join(
        f"{count} {names[int(value)]}" for value, count in zip(values, counts)
    )
    return f"RESULTS[{codes.size}: {tally}]"


def with_result_names(module: eqx.Module) -> str:
    """`module` printed as equinox prints it, every result code in it (nested ones
    too) by name: the `__repr__` of the Modules that carry one."""
    is_result = lambda x: isinstance(x, RESULTS)  # noqa: E731
    named = jax.tree.map(
        lambda x: _Named(result_name(x)) if is_result(x) else x,
        module,
        is_leaf=is_result,
    )
    return eqx.tree_pformat(named)
