"""ebm's own terms, found by walking this package, and the names the `ebm` command
selects them by.

Every final subclass of `ebm.AbstractTerm` defined in a module under `ebm._zonal`
is one of ebm's terms: a new term file is found without being listed anywhere. Its
kind is the model's field it fills (`longwave`, `transport`, ...), from the abstract
base it derives from, and its command-line name is its class name without the
kind's word, in lower case with hyphens between words: `GreyBodyLongwave` is
`grey-body`, `CO2Forcing` `co2`, `SubgridIceAlbedo` `subgrid-ice`. A name derived by
that rule needs nothing declared, so it cannot disagree with the class.

A term whose constructor needs arguments (`ebm.PrescribedAlbedo(albedo)`,
`ebm.LandOceanHeatCapacity(land_fraction)`) is found, but is not `selectable`: a
name alone cannot build it.
"""

import dataclasses
import functools
import importlib
import inspect
import pkgutil
import re

from .base import (
    AbstractAlbedo,
    AbstractForcing,
    AbstractHeatCapacity,
    AbstractInsolation,
    AbstractLongwave,
    AbstractTerm,
    AbstractTransport,
)


KINDS: dict[str, type[AbstractTerm]] = {
    "insolation": AbstractInsolation,
    "albedo": AbstractAlbedo,
    "longwave": AbstractLongwave,
    "transport": AbstractTransport,
    "heat_capacity": AbstractHeatCapacity,
    "forcing": AbstractForcing,
}
"""Each kind of term, by the `ebm.EnergyBalanceModel` field it fills, and its base."""


@functools.cache
def term_classes() -> tuple[type[AbstractTerm], ...]:
    """Every final term class defined under `ebm._zonal`, sorted by name.

    Terms defined elsewhere (a user's, an example's) are not ebm's, and not listed.
    """
    package = importlib.import_module(__package__)
    for module in pkgutil.walk_packages(package.__path__, f"{__package__}."):
        importlib.import_module(module.name)
    found, pending = set(), list(AbstractTerm.__subclasses__())
    while pending:
        term = pending.pop()
        pending.extend(term.__subclasses__())
        if term.__module__.startswith(f"{__package__}.") and not inspect.isabstract(
            term
        ):
            found.add(term)
    return tuple(sorted(found, key=lambda term: term.__name__))


def kind_of(term: type[AbstractTerm]) -> str:
    """The model field (`"longwave"`, ...) that the term class `term` fills.

    **Raises:**

    - `ValueError`: for a class that derives from none of the kinds' bases.
    """
    for kind, base in KINDS.items():
        if issubclass(term, base):
            return kind
    raise ValueError(
        f"{term.__name__} derives from none of {', '.join(KINDS)}'s bases "
        f"({', '.join(base.__name__ for base in KINDS.values())})."
    )


def cli_name(term: type[AbstractTerm]) -> str:
    """The command-line name of the term class `term`: its class name without its
    kind's word, in lower case, hyphens between words (`"grey-body"`)."""
    # The kind's word is its base's name without "Abstract" ("Longwave").
    word = KINDS[kind_of(term)].__name__.removeprefix("Abstract")
    name = term.__name__.removesuffix(word) or term.__name__
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


@functools.cache
def parameters_by_name() -> dict:
    """`{name: (Parameter, term classes that declare it)}` for every parameter of
    ebm's terms: those of `ebm.Params` first, in its order, then the others by
    name."""
    from .params import Params

    found: dict = {}
    for term in term_classes():
        for parameter in term.parameters:
            found.setdefault(parameter.name, (parameter, []))[1].append(term)
    known = Params.field_names()
    order = [*known, *sorted(name for name in found if name not in known)]
    return {name: (found[name][0], tuple(found[name][1])) for name in order}


def needs_arguments(term: type[AbstractTerm]) -> tuple[str, ...]:
    """The constructor arguments the term class `term` has no default for."""
    return tuple(
        field.name
        for field in dataclasses.fields(term)
        if field.init
        and field.default is dataclasses.MISSING
        and field.default_factory is dataclasses.MISSING
    )


@functools.cache
def selectable(kind: str) -> dict[str, type[AbstractTerm]]:
    """The term classes of `kind` that can be built without arguments, by
    command-line name.

    **Raises:**

    - `ValueError`: when two of them have the same name.
    """
    terms: dict[str, type[AbstractTerm]] = {}
    for term in term_classes():
        if kind_of(term) != kind or needs_arguments(term):
            continue
        name = cli_name(term)
        if name in terms:
            raise ValueError(
                f"{terms[name].__name__} and {term.__name__} both have the "
                f"command-line name {name!r}: rename one of the classes."
            )
        terms[name] = term
    return terms
