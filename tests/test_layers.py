"""The house's shape: clerk/ imports in layers (no module imports, however indirectly, a module
that imports it), the pipeline's stages import only earlier stages, and no module grows past 450
lines.

Imports are read from the source (every ``import`` statement, also inside functions and under
``TYPE_CHECKING``), so neither a circle nor an import up the pipeline can hide behind a lazy import.

    python -m pytest tests/test_layers.py -q
"""

from __future__ import annotations

import ast
from pathlib import Path

CLERK = Path(__file__).resolve().parents[1] / "clerk"
MAX_LINES = 450

#: The stages of clerk/, earliest first. A module may import modules of its own stage and of
#: earlier ones only; a later stage's work reaches an earlier one through files (the rules'
#: outputs), never through an import. The order is the workflow's (workflow/Snakefile,
#: docs/ARCHITECTURE.md "Rule chain"): data -> base model -> reading instrument -> memory systems
#: -> SFT data -> training -> evaluation -> LoCoMo -> report, with two libraries that know no
#: stage below them and the store beside the pipeline:
#:
#: * foundation: the top-level modules every stage shares (the ledger, its form and text, the
#:   program language, the prompts, op metrics, scrubbing for forgets, files, errors);
#: * provenance: hashes, Snakemake's records, number keys, code and package versions. It reads
#:   files only and imports no stage, so every stage may record through it (train records its code
#:   version, the report fills the paper from numbers.json); its verbs run last;
#: * models before scoring: the prefix KV cache is model plumbing that decoding (writers) and
#:   scoring (the reader) share; memory systems use both, and the SFT stage builds the reader's
#:   training views with the memory systems' runtime, so memory comes before sft;
#: * store: the deployed memory store and its forget (SPEC §9), outside the workflow's chain;
#: * entry: what gathers every stage (the ``clerk`` command, config validation, the workflow's
#:   wiring, ``python -m`` entry points).
#:
#: A package is named by its prefix; a top-level module by its own name.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("clerk", "clerk.errors", "clerk.atomic", "clerk.inputs", "clerk.form", "clerk.slots",
                    "clerk.ledger_text", "clerk.ledger", "clerk.program", "clerk.prompts", "clerk.metrics",
                    "clerk.scrub", "clerk.fold", "clerk.settings", "clerk.eval_sections", "clerk.repair")),
    ("provenance", ("clerk.provenance",)),
    ("generator", ("clerk.generator",)),
    ("streams", ("clerk.streams",)),
    ("models", ("clerk.models",)),
    ("scoring", ("clerk.scoring",)),
    ("memory", ("clerk.memory",)),
    ("sft", ("clerk.sft",)),
    ("train", ("clerk.train",)),
    ("evaluate", ("clerk.evaluate",)),
    ("locomo", ("clerk.locomo",)),
    ("report", ("clerk.report",)),
    ("store", ("clerk.store",)),
    ("entry", ("clerk.cli", "clerk.command", "clerk.config", "clerk.wiring")),
)


def _stage(name: str, stages=STAGES) -> int | None:
    """The index of ``name``'s stage in ``stages`` (None: no stage claims it). A ``__main__`` module
    is an entry point (the last stage); ``clerk`` itself names the package's ``__init__`` only."""
    if name.endswith(".__main__"):
        return len(stages) - 1
    for k, (_, members) in enumerate(stages):
        if any(name == m or (m != "clerk" and name.startswith(m + ".")) for m in members):
            return k
    return None


def _upward(graph: dict[str, set[str]], stages=STAGES) -> list[str]:
    """Every import chain from a module to a module of a later stage (the shortest one to each), as
    ``a -> b -> c (stage x imports stage y)``. Checked at every depth: a chain that climbs has a
    first link that climbs, and the chain up to it is reported."""
    found = []
    for start in sorted(graph):
        home = _stage(start, stages)
        if home is None:  # test_every_module_has_a_stage names it
            continue
        seen, frontier = {start: [start]}, [start]
        while frontier:
            nxt = []
            for v in frontier:
                for w in sorted(graph.get(v, ())):
                    if w in seen:
                        continue
                    seen[w] = [*seen[v], w]
                    if (there := _stage(w, stages)) is not None and there > home:
                        found.append(f"{' -> '.join(seen[w])} ({stages[home][0]} imports {stages[there][0]})")
                    else:
                        nxt.append(w)
            frontier = nxt
    return found


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


def test_every_module_has_a_stage():
    assert [name for name in _modules() if _stage(name) is None] == []


def test_no_stage_imports_a_later_stage():
    """No module imports, at any depth and also lazily, a module of a later stage (:data:`STAGES`)."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert [line for line in _upward(graph) if line.count(" -> ") == 1] == []
    assert _upward(graph) == []


def test_upward_imports_are_found():
    """The checker sees a climb through a lazy import, and one behind an allowed first step."""
    stages = (("low", ("clerk.a",)), ("mid", ("clerk.b",)), ("high", ("clerk.c",)))
    graph = {"clerk.a.x": {"clerk.a.y"}, "clerk.a.y": {"clerk.c.z"}, "clerk.b.w": {"clerk.a.x"}, "clerk.c.z": set()}
    assert _upward(graph, stages) == [
        "clerk.a.x -> clerk.a.y -> clerk.c.z (low imports high)",
        "clerk.a.y -> clerk.c.z (low imports high)",
        "clerk.b.w -> clerk.a.x -> clerk.a.y -> clerk.c.z (mid imports high)",
    ]
    assert _upward({"clerk.c.z": {"clerk.a.x"}, "clerk.a.x": set()}, stages) == []
    assert _stage("clerk.generator.__main__") == len(STAGES) - 1 and _stage("clerk") == 0
    assert _stage("clerk.scrubbing") is None  # a top-level module is named, not matched by prefix


def test_circles_are_found():
    """The finder sees a circle through a lazy import."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_module_over_450_lines():
    long = {str(p.relative_to(CLERK.parent)): n for p in CLERK.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
