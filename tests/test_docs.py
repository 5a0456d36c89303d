"""The docs' coverage of ebm's public API, checked from the sources (no docs build)."""

import ast
import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def public_names() -> set[str]:
    """The names `ebm/__init__.py` re-exports (`from ... import X as X`)."""
    tree = ast.parse((ROOT / "src" / "ebm" / "__init__.py").read_text())
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level
        for alias in node.names
        if alias.asname == alias.name
    }


def test_api_reference_lists_every_public_name():
    api = (ROOT / "docs" / "api.md").read_text()
    entries = set(re.findall(r"^::: ebm\.(\w+)\s*$", api, flags=re.MULTILINE))
    names = public_names()
    assert len(names) > 50  # the parse found the re-exports
    assert sorted(names - entries) == [], "public names missing from docs/api.md"
    assert sorted(entries - names) == [], "docs/api.md entries that are not public"
