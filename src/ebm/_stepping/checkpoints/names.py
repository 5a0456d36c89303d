"""The checkpoint schedules by name, built from the classes' own facts.

`integrate_fixed(checkpoint=...)`, the seasonal entry points, `ebm.memory_table`
and the `ebm` command all read `CHECKPOINTS`: a schedule `name` alone (its default
size), `(name, size)`, the text `"name-size"` (or `"name:size"`, `"name-default"`),
an alias such as `"sqrt"`, or an `ebm.AbstractCheckpoint` instance.
"""

from typing import Any

from .base import AbstractCheckpoint
from .binomial import BinomialCheckpoint
from .nested import NestedCheckpoint
from .plain import NoCheckpoint
from .recursive import RecursiveCheckpoint
from .step import StepCheckpoint


CHECKPOINTS: dict[str, type[AbstractCheckpoint]] = {
    schedule.name: schedule
    for schedule in (
        NoCheckpoint,
        StepCheckpoint,
        NestedCheckpoint,
        BinomialCheckpoint,
        RecursiveCheckpoint,
    )
}
"""The schedules `checkpoint=` takes by name, in the order messages list them."""

ALIASES: dict[str, tuple[type[AbstractCheckpoint], int]] = {
    alias: (schedule, size)
    for schedule in CHECKPOINTS.values()
    for alias, size in schedule.aliases
}
"""Other names for one size of a schedule: `"sqrt"` is `NestedCheckpoint(2)`."""


def _spelling(schedule: type[AbstractCheckpoint], size) -> str | tuple[str, int]:
    """The shortest spelling of `schedule` at `size` (`None`: its default)."""
    if size is None:
        return schedule.name
    for alias, aliased in schedule.aliases:
        if aliased == size:
            return alias
    return (schedule.name, size)


def spellings(*, text: bool = False, forward_mode: bool = False) -> str:
    """Every spelling of a schedule by name, for messages and help.

    **Arguments:**

    - `text`: as the command line writes them (`binomial[-CHECKPOINTS]`), not as
        Python values (`'binomial', ('binomial', checkpoints)`).
    - `forward_mode`: only the schedules that forward mode goes through.

    **Returns:**

    A comma-separated list, e.g. `"'none', 'step', 'nested', ('nested', levels),
    'sqrt', ..."`.
    """
    quote = (lambda word: word) if text else repr
    words = []
    for name, schedule in CHECKPOINTS.items():
        if forward_mode and not schedule.supports_forward_mode:
            continue
        if schedule.size_field is None:
            words.append(quote(name))
        elif text:
            words.append(f"{name}[-{schedule.size_field.upper()}]")
        else:
            words.extend((repr(name), f"({name!r}, {schedule.size_field})"))
        words.extend(quote(alias) for alias, _ in schedule.aliases)
    return ", ".join(words)


def parse_checkpoint(text: str, option: str = "checkpoint") -> str | tuple[str, int]:
    """The spelling that `resolve_checkpoint` takes, from a schedule's text.

    `"binomial-8"` and `"binomial:8"` are `("binomial", 8)`; `"recursive-default"`
    is `"recursive"` (its default size, as `schedule_name` labels it); text without a
    size is returned as it is. Whether the name is a schedule's is left to
    `resolve_checkpoint`.

    **Arguments:**

    - `text`: the text.
    - `option`: what the text was given as, for the error message (`"--schedules"`).

    **Raises:**

    - `ValueError`: when a size is given but is not a positive integer or `default`.
    """
    name, separator, size = text.replace(":", "-", 1).partition("-")
    if not separator:
        return text
    if size == "default":
        return name
    if not (size.isascii() and size.isdecimal()) or int(size) < 1:
        raise ValueError(
            f"`{option}` takes NAME or NAME-SIZE (or NAME:SIZE) with SIZE a positive "
            f"integer or 'default', got {text!r}."
        )
    return (name, int(size))


def _is_sized(spelling) -> bool:
    """Whether `spelling` is `(name, size)` for a schedule that takes a size."""
    if not (isinstance(spelling, tuple) and len(spelling) == 2):
        return False
    name, size = spelling
    schedule = CHECKPOINTS.get(name) if isinstance(name, str) else None
    return (
        schedule is not None
        and schedule.size_field is not None
        and isinstance(size, int)
        and not isinstance(size, bool)
    )


def resolve_checkpoint(checkpoint: Any) -> AbstractCheckpoint:
    """A schedule from its name or an instance.

    **Arguments:**

    - `checkpoint`: a name in `CHECKPOINTS` (the schedule at its default size) or
        in `ALIASES`, `(name, size)` for a schedule with a size, the same as text
        (`"binomial-8"`, see `parse_checkpoint`), or an `ebm.AbstractCheckpoint`.

    **Returns:**

    The `ebm.AbstractCheckpoint`.

    **Raises:**

    - `ValueError`: for anything else, naming every accepted spelling; or the
        schedule's own error for a bad size.
    """
    if isinstance(checkpoint, AbstractCheckpoint):
        return checkpoint
    if isinstance(checkpoint, str):
        spelling = parse_checkpoint(checkpoint)
    else:
        spelling = checkpoint
    if isinstance(spelling, str) and spelling in CHECKPOINTS:
        return CHECKPOINTS[spelling]()
    if isinstance(spelling, str) and spelling in ALIASES:
        schedule, size = ALIASES[spelling]
        return schedule(**{schedule.size_field: size})
    if _is_sized(spelling):
        name, size = spelling
        schedule = CHECKPOINTS[name]
        return schedule(**{schedule.size_field: size})
    raise ValueError(
        f"`checkpoint` must be {spellings()} (a name alone is the schedule's "
        "default size), the same as text ('binomial-8' or 'binomial:8'), or an "
        f"ebm.AbstractCheckpoint instance, got {checkpoint!r}."
    )


def default_schedules() -> tuple[str | tuple[str, int], ...]:
    """Each schedule at the sizes it asks `ebm.memory_table` to measure."""
    return tuple(
        _spelling(schedule, size)
        for schedule in CHECKPOINTS.values()
        for size in schedule.memory_table_sizes
    )


def schedule_name(checkpoint) -> str:
    """A short label, which `resolve_checkpoint` reads back: `"sqrt"`, `"binomial-8"`,
    `"recursive-default"` (diffrax's default number), ...

    A schedule with settings a label cannot carry (a `policy`, `offload`), or of a
    class not in `CHECKPOINTS`, is labelled by its `repr`.

    **Raises:**

    - `ValueError`: as `resolve_checkpoint`, for what is not a schedule.
    """
    schedule = resolve_checkpoint(checkpoint)
    kind = type(schedule)
    if CHECKPOINTS.get(kind.name) is not kind:
        return str(schedule)
    if kind.size_field is None:
        label, plain = kind.name, kind()
    else:
        size = getattr(schedule, kind.size_field)
        spelling = _spelling(kind, size)
        if isinstance(spelling, tuple):
            label = f"{kind.name}-{size}"
        elif size is None:
            label = f"{kind.name}-default"
        else:
            label = spelling
        plain = kind(**{kind.size_field: size})
    return label if schedule == plain else str(schedule)
