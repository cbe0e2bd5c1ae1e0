"""Code inputs (clerk.provenance.code_inputs) and the lazy ``clerk`` dispatch (clerk.cli).

The import closure is read from the source: every import statement counts, also one inside a
function; a submodule brings its packages' ``__init__`` and what they import; an unknown module
or verb is an error. ``clerk --help`` lists every verb without importing a verb's module, and a
verb imports its own module only; a verb table that disagrees with the modules fails loudly.
What Snakemake plans after an edit: tests/test_rerun_plans.py.

    python -m pytest tests/test_code_inputs.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clerk import cli
from clerk.provenance.code_inputs import SHARED, ImportGraph, import_graph, module_code

ROOT = Path(__file__).resolve().parent.parent


def _verb_code(verb: str) -> list[str]:
    """The code inputs of a job of ``clerk VERB`` (as workflow/rules/common.smk's code())."""
    return module_code(cli.VERBS[verb][0], root=ROOT / "clerk")


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def package(tmp_path, monkeypatch) -> ImportGraph:
    """A small package ``pkg`` in tmp_path (the working directory)."""
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": "import os\n\ndef run():\n    from pkg.sub import leaf\n    return leaf\n",
        "pkg/sub/__init__.py": "from pkg import shared  # every submodule of pkg.sub brings it\n",
        "pkg/sub/leaf.py": "from . import sibling\nfrom ..other import thing\n",
        "pkg/sub/sibling.py": "",
        "pkg/other.py": "thing = 1\n",
        "pkg/shared.py": "",
        "pkg/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.other\n",
        "pkg/lonely.py": "import pkg.top\n",
        "pkg/plugins/__init__.py": "",
        "pkg/plugins/one.py": "",
        "pkg/plugins/two.py": "",
        "pkg/scan.py": ("import importlib, pkgutil\n\ndef load():\n    for m in pkgutil.iter_modules(['x']):\n"
                        "        importlib.import_module('pkg.plugins.' + m.name)\n\nPACKAGE = 'pkg.plugins'\n"),
        "pkg/names.py": "PACKAGE = 'pkg.plugins'  # a string alone is no scan\n",
    })
    monkeypatch.chdir(tmp_path)
    return ImportGraph("pkg")


def test_closure_follows_imports_inside_functions_relative_imports_and_packages(package):
    assert package.closure("pkg.top") == {
        "pkg", "pkg.top", "pkg.sub", "pkg.sub.leaf", "pkg.sub.sibling", "pkg.other", "pkg.shared"}
    assert package.closure("pkg.typed") == {"pkg", "pkg.typed", "pkg.other"}
    # Nothing imports pkg.lonely: no closure but its own holds it.
    assert not any("pkg.lonely" in package.closure(m) for m in package.files if m != "pkg.lonely")


def test_a_package_scan_imports_every_module_of_the_package_it_names(package):
    assert package.closure("pkg.scan") == {"pkg", "pkg.scan", "pkg.plugins", "pkg.plugins.one", "pkg.plugins.two"}
    assert package.closure("pkg.names") == {"pkg", "pkg.names"}


def test_every_memory_system_comes_with_the_registry():
    """The memory registry imports every module of clerk/memory/ (a package scan): each is a code
    input of every verb that asks it."""
    systems = {str(p) for p in (ROOT / "clerk/memory").glob("*.py")}
    assert systems <= set(_verb_code("evaluate"))
    assert not systems & set(_verb_code("generate"))


def test_paths_are_named_as_the_workflow_names_them(package):
    assert package.paths(package.closure("pkg.sub.leaf")) == [
        "pkg/__init__.py", "pkg/other.py", "pkg/shared.py", "pkg/sub/__init__.py", "pkg/sub/leaf.py",
        "pkg/sub/sibling.py"]


def test_an_unknown_module_is_an_error(package):
    with pytest.raises(KeyError, match="pkg.nowhere"):
        package.closure("pkg.top", "pkg.nowhere")


def test_the_graph_is_read_once_per_directory(package, tmp_path):
    assert import_graph("pkg") is import_graph("pkg")
    assert import_graph("pkg") is not import_graph(tmp_path / "pkg")


def test_every_verb_runs_the_shared_module_and_its_own():
    graph = import_graph(ROOT / "clerk")
    shared = graph.paths(graph.closure(SHARED))
    for verb, (module, _) in cli.VERBS.items():
        files = _verb_code(verb)
        assert set(shared) <= set(files), verb
        assert str(graph.files[module]) in files, verb
        assert str(ROOT / "clerk/cli.py") not in files, verb  # the dispatcher is no code input
    # A stage's code holds no other stage's verbs.
    assert not [f for f in _verb_code("train") if "/report/" in f or "/evaluate/" in f]


def test_the_verb_table_matches_the_modules():
    """Every verb of the table is registered by its module, with the help line the table gives
    it (so ``clerk --help`` tells the same as the verb's module), and no module registers more."""
    parser = cli.make_parser()
    sub = next(a for a in parser._actions if a.dest == "verb")
    assert set(sub.choices) == set(cli.VERBS)
    assert [a.dest for a in sub._choices_actions] == list(cli.VERBS)  # listed in the table's order
    assert {a.dest: a.help for a in sub._choices_actions} == {verb: line for verb, (_, line) in cli.VERBS.items()}


def _loaded(*argv: str) -> tuple[str, list[str]]:
    """stdout of ``clerk ARGV`` in a fresh interpreter and the clerk modules it loaded."""
    code = ("import json, sys\nfrom clerk.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('clerk'))))")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    *text, modules = proc.stdout.strip().splitlines()
    return "\n".join(text), json.loads(modules)


def test_help_lists_every_verb_and_imports_no_verb_module():
    text, modules = _loaded("--help")
    for verb, (_, line) in cli.VERBS.items():
        assert verb in text and " ".join(line.split()[:3]) in " ".join(text.split()), verb
    assert not {module for module, _ in cli.VERBS.values()} & set(modules), modules


def test_a_verb_imports_its_own_module_only():
    text, modules = _loaded("train", "--help")
    assert "--max-steps" in text
    own = import_graph(ROOT / "clerk").closure(cli.VERBS["train"][0], SHARED)
    assert set(modules) - own == {"clerk.cli"}, sorted(set(modules) - own)


def test_a_missing_verb_module_fails_loudly(monkeypatch):
    monkeypatch.setitem(cli.VERBS, "ghost", ("clerk.no_such_module", "a verb whose module is gone"))
    with pytest.raises(ModuleNotFoundError, match="clerk.no_such_module"):
        cli.main(["ghost", "--help"])


def test_a_verb_table_that_disagrees_with_its_module_fails_loudly(monkeypatch):
    monkeypatch.delitem(cli.VERBS, "bench-train")
    with pytest.raises(RuntimeError, match=r"clerk.train.cli registers the verbs \['bench-train', 'train'\]"):
        cli.main(["train", "--help"])
