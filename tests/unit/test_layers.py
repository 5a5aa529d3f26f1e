"""STYLE.md's import direction, checked on the source: each layer imports only lower ones."""

import ast
import pathlib

import pytest

import inspector

PACKAGE = pathlib.Path(inspector.__file__).parent

#: Layer of each module prefix (the longest prefix wins); higher may import lower only.
LAYERS = {
    "inspector.cmd": 5,
    "inspector.api": 4,
    "inspector.worker": 4,
    "inspector.periodic": 4,
    "inspector.notifications": 4,
    "inspector.firewall": 4,
    "inspector.statechart": 4,
    "inspector.commit": 3,
    "inspector.processing": 3,
    "inspector.migration": 3,
    "inspector.services": 3,
    "inspector.broker": 2,
    "inspector.store": 2,
    "inspector.coordination": 2,
    "inspector.ironic": 2,
    "inspector.firewall.drivers": 2,
    "inspector.firewall.commands": 1,
    "inspector.firewall.ruleset": 1,
    "inspector.machine": 1,
    "inspector.effects": 0,
    "inspector.conf": 1,
    "inspector.lifecycle": 1,
    "inspector.deadlines": 1,
    "inspector.errors": 0,
    "inspector.macs": 0,
    "inspector": 0,
}

#: Third-party libraries that only these places may import.
OWNERS = {
    "flask": ("inspector.api",),
    "werkzeug": ("inspector.api",),
    "cheroot": ("inspector.api",),
    "automaton": ("inspector.machine",),
    "kombu": ("inspector.broker",),
    "oslo_messaging": ("inspector.broker",),
    "tooz": ("inspector.coordination",),
    # The importer reads ironic-inspector's database (read-only) with SQLAlchemy too.
    "sqlalchemy": ("inspector.store", "inspector.migration"),
    "alembic": ("inspector.store",),
}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _component(module: str) -> str:
    return max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            for alias in node.names:
                yield f"{node.module}.{alias.name}"


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer():
    for path in SOURCES:
        assert _component(_module_name(path)) in LAYERS


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down(path):
    module = _module_name(path)
    mine = _component(module)
    for imported in _imports(path):
        if imported.startswith("inspector."):
            theirs = _component(imported)
            if theirs == "inspector" or theirs == mine:
                continue
            assert LAYERS[theirs] < LAYERS[mine], f"{module} imports {imported}"
        top = imported.split(".")[0]
        if top in OWNERS:
            owners = OWNERS[top]
            assert any(module == owner or module.startswith(owner + ".") for owner in owners), (
                f"{module} imports {top}, which only {' and '.join(owners)} may import"
            )


def test_checker_catches_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from inspector.api import app\nimport flask\n")
    assert list(_imports(bad)) == ["inspector.api", "inspector.api.app", "flask"]
    assert LAYERS[_component("inspector.api.app")] > LAYERS[_component("inspector.store")]


#: Lines a module of the package may have: small modules, each owning one thing.
MAX_LINES = 350


def test_no_module_is_over_the_size_limit():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in SOURCES}
    over = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split them by what they own): {over}"


def test_every_module_says_what_it_owns():
    for path in SOURCES:
        if path.name == "__init__.py" and not path.read_text().strip():
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring, f"{path.relative_to(PACKAGE)} does not open with what it owns"
