"""mkdocs hooks: tables made from ebm's own declarations, so the docs cannot drift.

`<!-- ebm:parameters -->` in a page becomes the table of every parameter that one
of ebm's terms declares (every final term under `ebm._physics`): its name, default,
units, allowed range, fit transform, meaning, the terms that declare it (with the
`ebm` flag that selects each), and whether `ebm.Params` holds it (the others come
with `model.Params` for a model with that term).
"""

import ebm
from ebm._cli.common import kind_flag, number_text
from ebm._physics.catalogue import cli_name, kind_of, selectable, term_classes


def _terms() -> list[type]:
    """ebm's terms that declare parameters (see `ebm._physics.catalogue`)."""
    return [term for term in term_classes() if term.parameters]


def _selection(term) -> str:
    """How the `ebm` command selects `term`, or that it cannot."""
    if term not in selectable(kind_of(term)).values():
        return "not by name"
    return f"{kind_flag(kind_of(term))} {cli_name(term)}"


def _parameter_table() -> str:
    terms = _terms()
    parameters = {}
    for term in terms:
        for parameter in term.parameters:
            parameters.setdefault(parameter.name, (parameter, []))[1].append(term)
    in_params = set(ebm.Params.field_names())
    order = [*ebm.Params.field_names(), *sorted(set(parameters) - in_params)]
    rows = []
    for name in order:
        parameter, owners = parameters[name]
        declared_by = ", ".join(
            f"`{term.__name__}` (`{_selection(term)}`)" for term in owners
        )
        rows.append(
            f"| `{name}` | {number_text(parameter.default)} | {parameter.units} | "
            f"{parameter.allowed} | {parameter.transform} | {parameter.long_name} | "
            f"{declared_by} | {'yes' if name in in_params else 'with the term'} |"
        )
    return "\n".join(
        [
            "| name | default | units | allowed | fit transform | meaning | "
            "declared by | in `ebm.Params` |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )


def on_page_markdown(markdown, page, config, files):
    del page, config, files
    return markdown.replace("<!-- ebm:parameters -->", _parameter_table())
