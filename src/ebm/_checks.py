"""Checks of the discrete settings that every entry point takes (counts, limits)."""


def check_count(name: str, value, minimum: int) -> None:
    """`value` must be a Python integer of at least `minimum` (a count of something)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
