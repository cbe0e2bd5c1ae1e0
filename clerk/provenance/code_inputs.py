"""Code inputs of a workflow rule: the clerk modules its ``clerk VERB`` command imports.

A rule declares as inputs the source files its job runs, so that Snakemake reruns the job when
one of them changes and only then. Those files are the transitive import closure, read statically
from the source, of the verb's own module (the workflow looks it up in ``clerk.cli.VERBS``) and of
:mod:`clerk.command` (what every verb runs: ``--config``, errors, CPU numerics). Every ``import``
statement counts, also one inside a function or under ``TYPE_CHECKING``: the closure may hold a
module a job never reaches, never miss one it does. Importing a submodule runs its packages'
``__init__`` first, so those count too (with what they import). A module that scans packages
(calls ``pkgutil.iter_modules``, as the memory registry does to import every system) counts as
importing every module of each package it names in a string (``"clerk.memory"``). The ``clerk``
dispatcher itself is not an input: it only picks the verb's module, and a verb routed elsewhere
changes the inputs computed here.

What is not Python (the phrasing YAML files) the rules declare themselves; any other module
imported by a computed name would be invisible here.

The graph is read once per package directory and process (a workflow load) and cached.

    python -c "from clerk.provenance.code_inputs import module_code; print(module_code('clerk.train.cli'))"
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

#: The module every verb's command runs, whatever the verb (:mod:`clerk.command`).
SHARED = "clerk.command"


class ImportGraph:
    """The modules of one package directory and the package modules each imports.

    ``root`` is the package's directory (e.g. ``clerk``) as the workflow names its files; every
    path this class returns starts with it.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.package = self.root.resolve().name
        self.files: dict[str, Path] = {}
        for path in sorted(self.root.rglob("*.py")):
            parts = (self.package, *path.relative_to(self.root).with_suffix("").parts)
            self.files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        self.imports = {name: self._read(name, path) for name, path in self.files.items()}

    def _read(self, name: str, path: Path) -> set[str]:
        """The package's modules that ``name`` imports, anywhere in its source."""
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        named: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    stem = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*stem, *([node.module] if node.module else [])])
                named.add(base)
                # ``from a import b``: b is a submodule of a, or a name a defines
                named.update(f"{base}.{alias.name}" for alias in node.names)
        named |= self._scanned(tree)
        return {module for module in named if module in self.files and module != name}

    def _scanned(self, tree: ast.Module) -> set[str]:
        """Every module of the packages a package scan imports (none without a scan)."""
        nodes = list(ast.walk(tree))
        if not any(isinstance(n, ast.Call) and _call_name(n.func) == "iter_modules" for n in nodes):
            return set()
        packages = {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and n.value in self.files and self.files[n.value].name == "__init__.py"}
        return {module for module in self.files if module.rpartition(".")[0] in packages}

    def closure(self, *modules: str) -> set[str]:
        """``modules`` and every module they import, directly or not, with the packages above each.

        Raises:
            KeyError: a module of ``modules`` is not in the package (never ignored).
        """
        missing = [m for m in modules if m not in self.files]
        if missing:
            raise KeyError(f"no module {', '.join(missing)} under {self.root}/")
        seen: set[str] = set()
        todo = list(modules)
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            parts = module.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # the packages above it
            todo += sorted(self.imports[module])
        return seen

    def paths(self, modules: set[str]) -> list[str]:
        """The source files of ``modules``, sorted, as the workflow names them."""
        return sorted(str(self.files[m]) for m in modules)


def import_graph(root: str | Path = "clerk") -> ImportGraph:
    """The import graph of the package directory ``root``, read once per process (per directory
    it names from the working directory of the call)."""
    return _graph(str(root), str(Path(root).resolve()))


def _call_name(func: ast.expr) -> str | None:
    """``f`` of a call ``f(...)`` or ``x.f(...)``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


@functools.cache
def _graph(root: str, resolved: str) -> ImportGraph:
    return ImportGraph(root)


def module_code(*modules: str, root: str | Path = "clerk") -> list[str]:
    """Source files of ``modules`` and of every module they import (:meth:`ImportGraph.closure`),
    with the shared module of every verb (:data:`SHARED`)."""
    graph = import_graph(root)
    return graph.paths(graph.closure(*modules, SHARED))
