"""mkdocs hooks: tables made from ebm's own declarations, so the docs cannot drift.

`<!-- ebm:parameters -->` in a page becomes the table of `ebm.Params`: every
parameter's name, default, units, allowed range, fit transform, meaning and the
terms that declare it, read from the `ebm.Parameter` declarations.
"""

import ebm
from ebm._model.params import BUILTIN_TERMS


def _parameter_table() -> str:
    rows = []
    for parameter in ebm.Params.declarations:
        owners = ", ".join(
            f"`{term.__name__}`"
            for term in BUILTIN_TERMS
            if parameter in term.parameters
        )
        rows.append(
            f"| `{parameter.name}` | {parameter.default:g} | {parameter.units} | "
            f"{parameter.allowed} | {parameter.transform} | {parameter.long_name} | "
            f"{owners} |"
        )
    return "\n".join(
        [
            "| name | default | units | allowed | fit transform | meaning | "
            "declared by |",
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )


def on_page_markdown(markdown, page, config, files):
    del page, config, files
    return markdown.replace("<!-- ebm:parameters -->", _parameter_table())
