"""The package's layout, read from its source: each model family one folder that
the entry points know only through the protocol, no circle of imports between
folders or between files, no file over 650 lines."""

import ast
import pathlib

import ebm


SOURCE = pathlib.Path(ebm.__file__).parent

# Each concrete model class and the folders that may name it: its family's, and
# that of a family built on it (the zonal model over a deep ocean checks that its
# surface is a zonal model).
FAMILIES = {
    "EnergyBalanceModel": {"_zonal", "_deep_ocean"},
    "TwoLayerModel": {"_layers"},
    "NLayerModel": {"_layers"},
    "DeepOceanModel": {"_deep_ocean"},
    "SeaIceModel": {"_seaice"},
}


def _modules():
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE)
        yield relative, ast.parse(path.read_text())


def _folder(relative: pathlib.Path) -> str:
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _named_classes(node) -> list[str]:
    """The class names an `isinstance` call's second argument names."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple):
        return [name for element in node.elts for name in _named_classes(element)]
    if isinstance(node, ast.BinOp):  # `A | B`
        return _named_classes(node.left) + _named_classes(node.right)
    return []


def test_no_entry_point_asks_which_model_it_was_given():
    # What differs between models is a method of the model: an `isinstance` on a
    # model class stands only in that model's own folder (its own checks).
    found = []
    for relative, tree in _modules():
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                continue
            for name in _named_classes(node.args[1]):
                if _folder(relative) not in FAMILIES.get(name, {_folder(relative)}):
                    found.append(f"{relative}:{node.lineno} isinstance(..., {name})")
    assert found == []


def _folder_imports() -> dict[str, set[str]]:
    imports: dict[str, set[str]] = {}
    for relative, tree in _modules():
        folder = _folder(relative)
        package = ["ebm", *relative.parts[:-1]]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package[: len(package) - (node.level - 1)]
                target = [*base, *(node.module or "").split(".")]
                if len(target) > 1 and target[1] and target[1] != folder:
                    imports.setdefault(folder, set()).add(target[1])
    return imports


def test_no_circle_of_imports_between_folders():
    imports = _folder_imports()

    def reached(start):
        seen, stack = set(), [start]
        while stack:
            for folder in imports.get(stack.pop(), ()):
                if folder not in seen:
                    seen.add(folder)
                    stack.append(folder)
        return seen

    circles = sorted(folder for folder in imports if folder in reached(folder))
    assert circles == []
    # The model protocol and the zonal family import nothing that runs models.
    assert not reached("_model") & {"_stepping", "_steady", "_analysis", "_zonal"}
    assert not reached("_zonal") & {"_stepping", "_steady", "_analysis", "_edges"}


def _file_imports() -> dict[str, set[str]]:
    imports: dict[str, set[str]] = {}
    for relative, tree in _modules():
        package = list(relative.parts[:-1])
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package[: len(package) - (node.level - 1)]
                targets = (
                    [[*base, *node.module.split(".")]]
                    if node.module
                    else [[*base, alias.name] for alias in node.names]
                )
                for target in map(lambda parts: SOURCE.joinpath(*parts), targets):
                    for path in (target.with_suffix(".py"), target / "__init__.py"):
                        path = path.relative_to(SOURCE)
                        if (SOURCE / path).is_file() and path != relative:
                            imports.setdefault(str(relative), set()).add(str(path))
                            break
    return imports


def test_no_circle_of_imports_between_files():
    imports = _file_imports()
    circles = []
    for start in imports:
        seen, stack = set(), [start]
        while stack:
            for path in imports.get(stack.pop(), ()):
                if path == start:
                    circles.append(start)
                if path not in seen:
                    seen.add(path)
                    stack.append(path)
    assert sorted(set(circles)) == []


def test_no_file_over_650_lines():
    long = {
        str(path.relative_to(SOURCE)): n
        for path in SOURCE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 650
    }
    assert long == {}
