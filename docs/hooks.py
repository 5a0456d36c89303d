"""mkdocs hooks: tables made from ebm's own declarations, so the docs cannot drift.

`<!-- ebm:parameters -->` in a page becomes the table of every parameter that one
of ebm's terms declares (every final term under `ebm._physics`): its name, default,
units, allowed range, fit transform, meaning, the terms that declare it (with the
`ebm` flag that selects each), and whether `ebm.Params` holds it (the others come
with `model.Params` for a model with that term).

The tutorials' pages (mkdocs-jupyter's HTML) lose nbconvert's Mermaid loader, which
would import Mermaid from cdnjs.cloudflare.com on a page with a diagram: the site
works offline, and the notebooks draw none.
"""

import re

import ebm
from ebm._cli.common import number_text, selection_flags
from ebm._physics.catalogue import parameters_by_name


def _selection(term) -> str:
    """How the `ebm` command selects `term`, or that it cannot."""
    flags = selection_flags([term])
    return f"`{flags[0]}`" if flags else "not by name"


def _parameter_table() -> str:
    in_params = set(ebm.Params.field_names())
    rows = []
    for name, (parameter, owners) in parameters_by_name().items():
        declared_by = ", ".join(
            f"`{term.__name__}` ({_selection(term)})" for term in owners
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


# nbconvert's `mermaid_js` macro: one module script that imports Mermaid from a CDN.
_MERMAID_LOADER = re.compile(
    r'<script type="module">\s*document\.addEventListener\("DOMContentLoaded", '
    r"async \(\) => \{\s*const diagrams = document\.querySelectorAll\(\"\.jp-Mermaid"
    r".*?</script>",
    re.DOTALL,
)


def on_post_page(output, page, config):
    del config
    if page.file.src_uri.startswith("tutorials/"):
        output, count = _MERMAID_LOADER.subn("", output)
        if count != 1:
            raise ValueError(
                f"{page.file.src_uri}: expected nbconvert's Mermaid loader once, "
                f"found it {count} times"
            )
    return output
