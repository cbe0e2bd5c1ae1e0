"""Code inputs of a workflow rule: the clerk modules its ``clerk VERB`` command imports.

A rule declares as inputs the source files its job runs, so that Snakemake reruns the job when
one of them changes and only then. Those files are the transitive import closure, read statically
from the source, of the verb's own module (:data:`clerk.cli.VERBS`) and of :mod:`clerk.command`
(what every verb runs: ``--config``, errors, CPU numerics). Every ``import`` statement counts,
also one inside a function or under ``TYPE_CHECKING``: the closure may hold a module a job never
reaches, never miss one it does. Importing a submodule runs its packages' ``__init__`` first, so
those count too (with what they import). :mod:`clerk.cli` itself is not an input: it only picks
the verb's module, and a verb routed elsewhere changes the inputs computed here.

What is not Python (the phrasing YAML files) the rules declare themselves; a module imported by
a computed name is invisible here (the dispatch of :mod:`clerk.cli` is the only one, by design).

The graph is read once per package directory and process (a workflow load) and cached.

    python -c "from clerk.provenance.code_inputs import verb_code; print(verb_code('train'))"
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
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
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
        return {module for module in named if module in self.files and module != name}

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


@functools.cache
def _graph(root: str, resolved: str) -> ImportGraph:
    return ImportGraph(root)


def module_code(*modules: str, root: str | Path = "clerk") -> list[str]:
    """Source files of ``modules`` and of every module they import (:meth:`ImportGraph.closure`),
    with the shared module of every verb (:data:`SHARED`)."""
    graph = import_graph(root)
    return graph.paths(graph.closure(*modules, SHARED))


def verb_code(verb: str, root: str | Path = "clerk") -> list[str]:
    """Source files a job of ``clerk VERB`` runs: the closure of the verb's own module and of
    :data:`SHARED`, read from the package directory ``root`` (relative to the working directory,
    the way rules name their inputs).

    Raises:
        KeyError: ``verb`` is not a verb of :data:`clerk.cli.VERBS`.
    """
    from clerk.cli import VERBS

    if verb not in VERBS:
        raise KeyError(f"unknown clerk verb {verb!r}; known: {', '.join(VERBS)}")
    return module_code(VERBS[verb][0], root=root)
