"""The house's shape: clerk/ imports in layers (no module imports, however indirectly, a module
that imports it) and no module grows past 450 lines.

Imports are read from the source (every ``import`` statement, also inside functions and under
``TYPE_CHECKING``), so a circle cannot hide behind a lazy import.

    python -m pytest tests/test_layers.py -q
"""

from __future__ import annotations

import ast
from pathlib import Path

CLERK = Path(__file__).resolve().parents[1] / "clerk"
MAX_LINES = 450
#: The evaluate CLI's circle (cli -> runner -> cli) is being taken apart on its own branch; once
#: that lands this allowance goes and every circle fails the test.
def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(CLERK.rglob("*.py")):
        parts = path.relative_to(CLERK.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The clerk modules that ``name`` imports (a package's ``__init__`` counts as a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in modules else base)
    return {m for m in out if m in modules and m != name}


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph["clerk.generator.timelines"] >= {"clerk.generator.questions", "clerk.generator.truth"}
    circles = [sorted(c) for c in _circles(graph)]
    assert circles == []


def test_circles_are_found():
    """The finder sees a circle through a lazy import."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_module_over_450_lines():
    long = {str(p.relative_to(CLERK.parent)): n for p in CLERK.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
