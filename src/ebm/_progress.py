"""Progress of ebm's long loops, shown by diffrax's progress meters or a tqdm bar.

Every long entry point takes `progress=`: `False` (default, nothing shown), `True`
(a tqdm bar on stderr, so that stdout keeps only what the caller prints), or any
`diffrax.AbstractProgressMeter`, used as given. A meter is told the fraction of the
loop done, in [0, 1]:

- `integrate`: the fraction of `years` integrated (diffrax's own loop);
- `continuation`: the points walked, out of `max_points` (the walk usually ends on
    a bound well before: the bar then closes at 100%);
- `periodic_equilibrium`: Newton steps out of `max_steps` (it usually converges in
    a few); `seasonal_spinup`: years out of `years`;
- `fit`: optimiser steps out of `steps`; `ensemble`: blocks of members finished.

Inside a compiled loop the meter's state is carried by the loop (diffrax's meters
call back to the host). A Python loop (`fit`, `ensemble`) counts its steps in a tqdm
bar of its own (`fit` adds each step's loss), or drives a meter it is given
(`HostProgress`). Inside a compiled loop the meter is a static argument: a run with
progress and one without are two programs, each compiled once; a Python loop's bar
compiles nothing of the loop's. Neither changes the numbers.
"""

import sys

import diffrax
import equinox as eqx
import jax.numpy as jnp


def progress_meter(progress, refresh_steps: int = 20) -> diffrax.AbstractProgressMeter:
    """The diffrax progress meter that `progress` asks for: none for `False`, a tqdm
    bar (on stderr, refreshed every `refresh_steps` steps of the loop) for `True`,
    or the meter given.

    **Raises:**

    - `ValueError`: for anything else.
    """
    if isinstance(progress, diffrax.AbstractProgressMeter):
        return progress
    if progress is True:
        return diffrax.TqdmProgressMeter(refresh_steps=refresh_steps)
    if progress is False:
        return diffrax.NoProgressMeter()
    raise ValueError(
        "`progress` must be True, False or a diffrax.AbstractProgressMeter, got "
        f"{progress!r}."
    )


# A meter's own methods, compiled once per kind of meter (the meter is static).
@eqx.filter_jit
def _init(meter):
    return meter.init()


@eqx.filter_jit
def _step(meter, state, fraction):
    return meter.step(state, fraction)


@eqx.filter_jit
def _close(meter, state):
    meter.close(state)


class HostProgress:
    """Progress of a Python loop of `total` steps: `step(done, note)` after each,
    `close()` at the end (or use it as a context manager, which closes the bar when
    the loop raises).

    `progress=True` is a tqdm bar on stderr counting `unit`s, with `note` after it;
    a diffrax meter is told `done / total`; `False` does nothing at all.
    """

    def __init__(self, progress, total: int, unit: str):
        meter = progress_meter(progress)
        self.total = total
        self.bar = None
        self.meter = None
        if progress is True:
            import tqdm

            self.bar = tqdm.tqdm(total=total, unit=f" {unit}", file=sys.stderr)
        elif not isinstance(meter, diffrax.NoProgressMeter):
            self.meter = meter
            self.state = _init(meter)

    def step(self, done: int, note: str | None = None) -> None:
        if self.bar is not None:
            self.bar.n = done
            if note is not None:
                self.bar.set_postfix_str(note, refresh=False)
            self.bar.refresh()
        elif self.meter is not None:
            # An array, not a Python float (which would be a static argument of
            # the compiled step, and compile it again for every value).
            fraction = jnp.asarray(min(done / self.total, 1.0))
            self.state = _step(self.meter, self.state, fraction)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.meter is not None:
            _close(self.meter, self.state)
            self.meter = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
