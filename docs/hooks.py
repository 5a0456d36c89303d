"""mkdocs hooks: tables made from ebm's own declarations, so the docs cannot drift.

`<!-- ebm:parameters -->` in a page becomes the table of every parameter that one
of ebm's terms declares (every final term under `ebm._physics`): its name, default,
units, allowed range, fit transform, meaning, the terms that declare it (with the
`ebm` flag that selects each), and whether `ebm.Params` holds it (the others come
with `model.Params` for a model with that term).

`<!-- ebm:figure NAME -->` becomes the figure `NAME` of `docs/figures/make_figures.py`,
its caption and the command that makes it. Every build draws those figures (once a
process: `mkdocs serve` redraws them only when restarted) into a temporary folder and
adds them to the site as `figures/NAME.png`; none is committed.
"""

import importlib.util
import pathlib
import re
import tempfile
import time

from mkdocs.structure.files import File

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
    markdown = markdown.replace("<!-- ebm:parameters -->", _parameter_table())
    # Names are lower case (the drawing functions'), so `NAME` in prose stays.
    return re.sub(r"<!-- ebm:figure ([a-z][a-z0-9_]*) -->", _figure_markdown, markdown)
