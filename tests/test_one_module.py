"""A memory system's name is written in one module of the library: its own.

The registry (``clerk.memory.registry``) is the one list of systems; every table, figure, view,
probe and config enum asks it. So a registered name may appear as a string literal (an exact
``ast.Constant``, found by parsing, not by grepping: a docstring or comment that mentions a name is
not a literal of it) only in the module that registers it. Names that are also ordinary words
(``full``, ``null``) or the package's own name (``clerk``) have a few uses that are not the
system; each is listed in :data:`NOT_THE_SYSTEM` with its reason, and an entry that no longer
matches anything fails the test, so the list cannot outlive its reasons. Doctest examples inside
docstrings are not parsed (they fail on their own when a name changes); tests and config YAML
files are outside ``clerk/``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from clerk.memory import MEMORY_REGISTRY

ROOT = Path(__file__).resolve().parent.parent
CLERK = ROOT / "clerk"

#: (module, literal) -> why that literal there is not the memory system of that name.
NOT_THE_SYSTEM: dict[tuple[str, str], str] = {
    # "evidence" is also LoCoMo's field of a question's supporting dialogue ids.
    ("clerk/locomo/evaluation.py", "evidence"): "the question record's field of its annotated dialogue ids",
    ("clerk/locomo/locomo10.py", "evidence"): "locomo10.json's field of a question's supporting dialogue ids",
    ("clerk/locomo/percena.py", "evidence"): "the Percena line's field of a question's supporting dialogue ids",
    # "clerk" is also the package, the distribution and the program.
    ("clerk/cli.py", "clerk"): "the program name of the command line (argparse prog)",
    ("clerk/models/materialize.py", "clerk"): "the distribution whose version a model folder records",
    ("clerk/provenance/manifest.py", "clerk"): "the package directory hashed as code, and the package's version key",
    ("clerk/evaluate/runner.py", "clerk"): "the package's version key beside the systems' versions in metrics.json",
    ("clerk/evaluate/erasure.py", "clerk"): "the package's version key beside the systems' versions in metrics.json",
    ("clerk/locomo/cli.py", "clerk"): "the package's version key beside the systems' versions in metrics.json",
    ("clerk/report/paper.py", "clerk"): "the package's version (row label and key) in the paper's code table",
    ("clerk/provenance/code_inputs.py", "clerk"): "the package directory whose imports are read",
    ("clerk/report/figures.py", "clerk"): "the SVG hash salt and the PDF creator/producer (the program)",
    # Ordinary words.
    ("clerk/train/config.py", "full"): "a loss head (the full vocabulary logits), not the full-transcript system",
    ("clerk/inputs.py", "null"): "the JSON type name of None in input-check messages",
    ("clerk/settings.py", "null"): "the JSON-schema type name of None in a setting's derived schema",
}


def literal_sites(names: set[str], package: Path = CLERK) -> dict[str, set[str]]:
    """name -> the modules of ``package`` (paths relative to its parent) holding it as a string literal."""
    sites: dict[str, set[str]] = {name: set() for name in names}
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=module)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in sites:
                sites[node.value].add(module)
    return sites


def own_module(name: str) -> str:
    """The module that registers ``name`` (where its class is defined), relative to the repository."""
    return Path(sys.modules[MEMORY_REGISTRY.get(name).__module__].__file__).resolve().relative_to(ROOT).as_posix()


def test_each_name_is_written_in_its_own_module_only():
    names = set(MEMORY_REGISTRY.names())
    sites = literal_sites(names)
    stray = {name: sorted(m for m in modules if m != own_module(name) and (m, name) not in NOT_THE_SYSTEM)
             for name, modules in sorted(sites.items())}
    stray = {name: modules for name, modules in stray.items() if modules}
    assert not stray, ("memory-system names written outside their own module (ask clerk.memory.registry instead, "
                       f"or list a use that is not the system in NOT_THE_SYSTEM with its reason): {stray}")
    for name in names:
        assert own_module(name) in sites[name], f"{name!r} is not written in {own_module(name)}"


def test_every_exception_is_still_needed():
    """Each entry of NOT_THE_SYSTEM names a literal that is there and is a registered name."""
    names = set(MEMORY_REGISTRY.names())
    sites = literal_sites(names)
    stale = [(module, literal) for module, literal in NOT_THE_SYSTEM
             if literal not in names or module not in sites[literal]]
    assert not stale, f"NOT_THE_SYSTEM entries that match nothing any more: {stale}"


def test_the_scan_sees_literals_not_mentions(tmp_path):
    """Exact string literals count, wherever they are (a tuple, a dict key, an f-string's text);
    prose, comments, longer strings and doctest examples do not."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text('"""Mentions full and window in prose.\n\n>>> f("rag")\n"""\n'
                                  'ORDER = ("window", "full history")\n'
                                  'x = {"rag": 1}  # full\n')
    (package / "b.py").write_text('y = f"{1}window"\nz = "full"\n')
    assert literal_sites({"window", "full", "rag", "null"}, package) == {
        "window": {"pkg/a.py", "pkg/b.py"}, "full": {"pkg/b.py"}, "rag": {"pkg/a.py"}, "null": set()}
