"""The package's layout: each folder is one layer and imports only the layers below it;
no import cycle; no module much over 400 lines; every error raised on purpose is a
ClinigymError."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import clinigym
from clinigym.core.errors import ClinigymError

PACKAGE = Path(clinigym.__file__).parent
# What each layer may import (besides itself and the standard library / third parties).
BELOW = {
    "core": set(),
    "spec": {"core"},
    "runtime": {"core", "spec"},
    "recording": {"core"},
    "envs": {"core", "spec", "runtime", "recording"},
    "agents": {"core", "spec"},
    "eval": {"core", "spec", "runtime", "recording", "envs"},
    "run": {"core", "spec", "runtime", "recording", "envs", "agents", "eval"},
    "bench": {"core", "spec", "runtime", "recording", "envs", "agents", "eval", "run"},
    "collect": {"core", "spec", "runtime", "recording", "envs", "agents", "eval", "run"},
    "testing": {"core", "agents"},
    "cli": {"core", "spec", "runtime", "recording", "envs", "agents", "eval", "run", "bench", "collect"},
}
FREE = {"_version"}           # the version string: importable from anywhere
MAX_LINES = 430               # "about 400"


def modules() -> dict[str, Path]:
    return {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py") if "_data" not in p.parts}


def _type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports(path: Path) -> set[str]:
    """clinigym modules a file imports at run time (top level or inside functions; not
    under `if TYPE_CHECKING:`)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("clinigym"))
            elif isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("clinigym"):
                found.add(child.module)
                found.update(f"{child.module}.{a.name}" for a in child.names)
            visit(child)
    visit(ast.parse(path.read_text()))
    known = modules()
    return {m for m in found if m in known}


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_each_layer_imports_only_the_layers_below():
    wrong = []
    for module, path in modules().items():
        own = layer(module)
        if own is None or own in FREE:
            continue
        for target in imports(path):
            other = layer(target)
            if other not in (None, own, *FREE) and other not in BELOW[own]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []
    assert set(BELOW) == {layer(m) for m in modules()} - {None, *FREE}


def test_no_import_cycle():
    graph = {m: {t for t in imports(p) if t != m} for m, p in modules().items()}
    # a package's __init__ re-exports its modules: an edge into a package is an edge into it
    seen: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m: str) -> None:
        seen[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if seen.get(t) == 1 and not m.startswith(t + "."):   # a module importing its own package is fine
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in seen:
                visit(t)
        stack.pop()
        seen[m] = 2
    for m in sorted(graph):
        if m not in seen:
            visit(m)
    assert cycles == []


def test_modules_stay_small():
    long = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_error_class_is_a_clinigym_error():
    classes = []
    for info in pkgutil.walk_packages(clinigym.__path__, "clinigym."):
        if info.name.endswith("__main__") or info.name.startswith(
                ("clinigym._data", "clinigym.agents.guiactor", "clinigym.runtime.backends.supervisor")):
            continue   # guiactor needs torch (an extra); the supervisor runs in the container, standard library only
        module = importlib.import_module(info.name)
        classes += [c for _, c in inspect.getmembers(module, inspect.isclass)
                    if issubclass(c, Exception) and c.__module__ == info.name]
    assert classes and [c.__qualname__ for c in classes if not issubclass(c, ClinigymError)] == []


@pytest.mark.parametrize("dead", ["start_vnc", "dom_visible_text", "_wps"])
def test_dead_code_is_gone(dead):
    assert not [m for m, p in modules().items() if f"def {dead}(" in p.read_text()]
