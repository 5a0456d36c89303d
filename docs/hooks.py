"""Docs made from ebm's own declarations, so they cannot drift.

One generator, `parameter_table`, makes every parameter table in the docs from the
terms' `ebm.Parameter` declarations (`ebm._zonal.catalogue.parameters_by_name`):

- as an mkdocs hook, `<!-- ebm:parameters -->` in a page becomes the table of every
    parameter that one of ebm's terms declares (every final term under
    `ebm._zonal`): its name, default, units, allowed range, fit transform,
    meaning, the terms that declare it (with the `ebm` flag that selects each), and
    whether `ebm.Params` holds it (the others come with `model.Params` for a model
    with that term);
- as a griffe extension (`ParameterTables`, named in mkdocs.yml's mkdocstrings
    options), the API reference's entry for `ebm.Params` gets the table of its
    fields, and the entry for each of ebm's terms the table of the parameters it
    declares. griffe reads the source, not the imported classes, so it never sees
    the table that `ebm.Params`' runtime docstring (`help(ebm.Params)`) carries.

The tutorials' pages (mkdocs-jupyter's HTML) lose nbconvert's Mermaid loader, which
would import Mermaid from cdnjs.cloudflare.com on a page with a diagram: the site
works offline, and the notebooks draw none.

`<!-- ebm:figure NAME -->` becomes the figure `NAME` of `docs/figures/make_figures.py`,
its caption and the command that makes it. Every build draws those figures (once a
process: `mkdocs serve` redraws them only when restarted) into a temporary folder and
adds them to the site as `figures/NAME.png`; none is committed.
"""

import importlib
import importlib.util
import os
import pathlib
import re
import tempfile
import time

import griffe
from mkdocs.structure.files import File

import ebm
from ebm._cli.common import number_text, selection_flags
from ebm._edges import cache
from ebm._zonal.catalogue import parameters_by_name, term_classes


# The build is a process of ebm's own, as the command line is: JAX's persistent
# compilation cache (where EBM_COMPILATION_CACHE names, else the user's cache
# directory) and the faster compiler flag, set before JAX starts its backend. The
# tutorials' kernels inherit both through the environment, so a build after the
# tests (as CI's, which shares their cache) compiles little.
if os.environ.get(cache.ENVIRONMENT_VARIABLE, "").lower() not in ("off", "0"):
    os.environ.setdefault(cache.ENVIRONMENT_VARIABLE, "on")
    cache.faster_compilation_flags()
    cache.enable_compilation_cache()


def _selection(term) -> str:
    """How the `ebm` command selects `term`, or that it cannot."""
    flags = selection_flags([term])
    return f"`{flags[0]}`" if flags else "not by name"


def _default(parameter) -> str:
    """The default, with what a profile's default is the value of."""
    text = number_text(parameter.default)
    return f"{text} on every {parameter.point}" if parameter.point else text


_COLUMNS = {
    "name": lambda parameter, owners: f"`{parameter.name}`",
    "default": lambda parameter, owners: _default(parameter),
    "units": lambda parameter, owners: parameter.units,
    "allowed": lambda parameter, owners: parameter.allowed,
    "fit transform": lambda parameter, owners: parameter.transform,
    "meaning": lambda parameter, owners: parameter.long_name,
    "declared by": lambda parameter, owners: ", ".join(
        f"`{term.__name__}` ({_selection(term)})" for term in owners
    ),
    "in `ebm.Params`": lambda parameter, owners: (
        "yes" if parameter.name in ebm.Params.field_names() else "with the term"
    ),
}
"""Each column a table may have, and its cell for one parameter and its terms."""


def parameter_table(names=None, leave_out=()) -> str:
    """The Markdown table of the parameters `names` (default: every one of ebm's
    terms'), in the catalogue's order, with every column but `leave_out`."""
    declared = parameters_by_name()
    chosen = declared if names is None else [n for n in declared if n in names]
    columns = [column for column in _COLUMNS if column not in leave_out]
    rows = [
        "| " + " | ".join(_COLUMNS[c](*declared[name]) for c in columns) + " |"
        for name in chosen
    ]
    return "\n".join(
        [
            "| " + " | ".join(columns) + " |",
            "|" + "---|" * len(columns),
            *rows,
        ]
    )


def _figures_module():
    path = pathlib.Path(__file__).parent / "figures" / "make_figures.py"
    spec = importlib.util.spec_from_file_location("make_figures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_FIGURES = _figures_module()
# Drawn once a process, into a folder that lives as long as it does.
_DRAWN = tempfile.TemporaryDirectory(prefix="ebm-docs-figures-")


def _draw_figures() -> dict[str, pathlib.Path]:
    folder = pathlib.Path(_DRAWN.name)
    plt = _FIGURES._pyplot()
    drawn = {}
    for name, figure in _FIGURES.FIGURES.items():
        path = folder / f"{name}.png"
        if not path.exists():
            began = time.perf_counter()
            figure.draw(path)
            plt.close("all")
            print(f"docs figure {name}: {time.perf_counter() - began:.1f} s")
        drawn[name] = path
    return drawn


def on_files(files, config):
    for name, path in _draw_figures().items():
        files.append(File.generated(config, f"figures/{name}.png", abs_src_path=path))
    return files


def _figure_markdown(match) -> str:
    name = match.group(1)
    if name not in _FIGURES.FIGURES:
        raise KeyError(
            f"<!-- ebm:figure {name} -->: docs/figures/make_figures.py has no figure "
            f"{name}; it has {', '.join(_FIGURES.FIGURES)}."
        )
    figure = _FIGURES.FIGURES[name]
    made = f"`{_FIGURES.COMMAND} {name}` draws it"
    if figure.source:
        made = f"{figure.source}: {made}"
    return (
        f"![{figure.caption.replace('`', '')}](figures/{name}.png)\n\n"
        f"*{figure.caption}* ({made}; the docs build runs it.)"
    )


def on_page_markdown(markdown, page, config, files):
    del page, config, files
    markdown = markdown.replace("<!-- ebm:parameters -->", parameter_table())
    # Names are lower case (the drawing functions'), so `NAME` in prose stays.
    return re.sub(r"<!-- ebm:figure ([a-z][a-z0-9_]*) -->", _figure_markdown, markdown)


def _api_table(obj) -> str | None:
    """The parameter table for the API entry of the runtime class `obj`, or `None`
    for a class that is neither `ebm.Params` nor one of ebm's terms."""
    if obj is ebm.Params:
        return (
            "**Fields** (one per parameter of ebm's own terms; the terms of another "
            "model add theirs with `model.Params`):\n\n"
            + parameter_table(ebm.Params.field_names(), leave_out={"in `ebm.Params`"})
        )
    if obj in term_classes():
        names = [parameter.name for parameter in obj.parameters]
        if not names:
            return "Declares no parameters."
        return (
            "**Parameters it declares** (read as `params.NAME`):\n\n"
            + parameter_table(names, leave_out={"declared by"})
        )
    return None


class ParameterTables(griffe.Extension):
    """Appends its parameter table to the docstring of `ebm.Params` and of each of
    ebm's terms, as mkdocstrings loads them."""

    def on_class(self, *, cls, **kwargs):
        del kwargs
        try:
            obj = getattr(importlib.import_module(cls.module.path), cls.name)
        except (ImportError, AttributeError):
            return
        table = _api_table(obj)
        if table is None:
            return
        if cls.docstring is None:
            cls.docstring = griffe.Docstring(table, parent=cls)
        else:
            cls.docstring.value = f"{cls.docstring.value}\n\n{table}"


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
