"""Result codes of every ebm solve, extending diffrax's (which extend optimistix's)."""

import diffrax


class RESULTS(diffrax.RESULTS):  # pyright: ignore[reportGeneralTypeIssues]
    nonfinite_state = (
        "The temperature became non-finite during a fixed-step run: the step is too "
        "large for the stepper (try IMEXEuler, or a smaller dt)."
    )
    step_too_small = (
        "The continuation step fell below `min_step`: the corrector did not converge "
        "even for tiny steps (a corner sharper than the grid resolves, or a "
        "non-smooth model term). Try a smaller `max_turn` or a finer grid."
    )
    no_fold = (
        "The branch left `bounds` (or used up `max_points`) without passing a fold."
    )


def error_message(error: BaseException) -> str:
    """An error's message on one line: equinox wraps a runtime error's message in
    the stack and advice."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    marker = "EquinoxRuntimeError: "
    for line in lines:
        if marker in line:
            return line.split(marker, 1)[1]
    return lines[0] if lines else type(error).__name__
