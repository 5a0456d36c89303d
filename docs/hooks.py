"""mkdocs hooks: tables made from ebm's own declarations, so the docs cannot drift.

`<!-- ebm:parameters -->` in a page becomes the table of every parameter that one
of ebm's terms declares (every final term under `ebm._physics`): its name, default,
units, allowed range, fit transform, meaning, the terms that declare it, and
whether `ebm.Params` holds it (the others come with `model.Params` for a model
with that term).
"""

import ebm
from ebm._physics.catalogue import term_classes


def _terms() -> list[type]:
    """ebm's terms that declare parameters (see `ebm._physics.catalogue`)."""
    return [term for term in term_classes() if term.parameters]


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
        declared_by = ", ".join(f"`{term.__name__}`" for term in owners)
        rows.append(
            f"| `{name}` | {parameter.default:g} | {parameter.units} | "
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
