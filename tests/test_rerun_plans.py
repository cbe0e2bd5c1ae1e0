"""Rules depend on the code they run, and on nothing else: what Snakemake plans after a code edit.

On a copy of the finished smoke run (conftest.py's ``smoke_run``; the edits go on in this
module's own copy, beside the other readers of the run, see :func:`AFTER_SMOKE_RUN`) each
scenario edits sources the way a developer does (a comment appended to a module, a new module),
asks Snakemake for a dry run with its default rerun triggers (Snakemake 9:
mtime, params, input, software-env, code), then puts every byte and mtime back. Which modules
to edit is read from the tree (every module of a package), never listed here.

``test_every_module_a_verb_loads_is_a_code_input`` needs no run: every clerk module that
``clerk VERB`` loads is a code input of each job that runs VERB (the import closure read from the
source holds these and the modules imported inside functions besides).

    python -m pytest tests/test_rerun_plans.py -q
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_kit import ROOT, SMOKE, run_snakemake

#: The jobs that run a model (and take minutes to hours at the default scale).
MODEL_JOBS = {"train", "train_reader", "evaluate", "erasure", "learning_curve", "locomo", "locomo_shared"}


def _planned(workdir: Path, *args: str) -> dict[str, int]:
    """Jobs per rule that ``snakemake -n`` plans in ``workdir`` (the smoke profile), but ``all``."""
    proc = run_snakemake(workdir, "-n", "--cores", "1", *SMOKE, *args, timeout=600)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake -n {' '.join(args)} failed (exit {proc.returncode}):\n{out[-3000:]}")
    if "Job stats:" not in out:
        return {}
    table = out.split("Job stats:")[1].split("total")[0]
    jobs = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    jobs.pop("all", None)
    return jobs


def _append_comment(paths: list[Path]) -> None:
    for path in paths:
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n# an edit\n")


def _files(repo: Path) -> list[Path]:
    return [p for p in (repo / "clerk").rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def _scenario(repo: Path, edit) -> dict[str, int]:
    """The plan after ``edit(repo)``; every file of clerk/ gets its bytes and mtime back after."""
    saved = {p: (p.read_bytes(), p.stat()) for p in _files(repo)}
    try:
        edit(repo)
        return _planned(repo)
    finally:
        for path in _files(repo):
            if path not in saved:
                path.unlink()
        for path, (data, stat) in saved.items():
            if path.read_bytes() != data:
                path.write_bytes(data)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _package(repo: Path, name: str) -> list[Path]:
    """Every module of ``clerk/<name>/`` (found in the tree)."""
    paths = sorted((repo / "clerk" / name).glob("*.py"))
    assert paths, f"no modules under clerk/{name}/"
    return paths


def _new_module(package: str):
    """An edit adding a module under clerk/<package>/ that nothing imports: a copy of one of the
    package's modules' text, written now (a fresh mtime)."""

    def edit(repo: Path) -> None:
        model = next(p for p in _package(repo, package) if p.name != "__init__.py")
        (repo / "clerk" / package / "zz_new_module.py").write_text(model.read_text(encoding="utf-8"), encoding="utf-8")

    return edit


SCENARIOS = {
    "unchanged": lambda repo: None,
    "report": lambda repo: _append_comment(_package(repo, "report")),
    "train": lambda repo: _append_comment(_package(repo, "train")),
    "new_evaluate_module": _new_module("evaluate"),
    "new_memory_module": _new_module("memory"),
    "entry_point": lambda repo: _append_comment([repo / "clerk/cli.py"]),
}


def AFTER_SMOKE_RUN(repo: Path) -> dict[str, dict[str, int] | str]:  # noqa: N802 (the name conftest.py looks for)
    """Each scenario's plan in this module's copy of the finished run (an error as its text), and
    the reference plan of train's descendants: ``--forcerun train train_reader``."""
    plans: dict[str, dict[str, int] | str] = {}
    for name, edit in SCENARIOS.items():
        try:
            plans[name] = _scenario(repo, edit)
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as err:
            plans[name] = str(err)
    try:
        plans["train_descendants"] = _planned(repo, "--forcerun", "train", "train_reader")
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        plans["train_descendants"] = str(err)
    return plans


@pytest.fixture(scope="module")
def plans(after_smoke_run) -> dict[str, dict[str, int]]:
    found = after_smoke_run(__name__)
    errors = {name: plan for name, plan in found.items() if isinstance(plan, str)}
    assert not errors, errors
    assert found["unchanged"] == {}, f"the finished smoke run is not up to date: {found['unchanged']}"
    return found


def test_editing_report_code_plans_no_model_job(plans):
    """A report module edited: its tables and figures rerun, no training or evaluation."""
    planned = plans["report"]
    assert planned, "editing clerk/report/ planned nothing: the report rules do not depend on it"
    assert not set(planned) & MODEL_JOBS, planned


def test_editing_train_code_plans_train_and_its_descendants_only(plans):
    """A module of clerk/train/ edited: the training jobs and what depends on them, not data,
    SFT sets or streams."""
    planned, descendants = plans["train"], plans["train_descendants"]
    assert {"train", "train_reader"} <= set(planned), planned
    assert set(planned) <= set(descendants), sorted(set(planned) - set(descendants))
    assert not set(planned) & {"generate", "generate_open", "generate_forget", "build_sft", "build_sft_reader",
                               "streams", "eviction_study", "base_model"}, planned


def test_a_new_module_nothing_imports_plans_nothing(plans):
    """A new module under clerk/evaluate/ that no module imports yet is code no job runs."""
    assert plans["new_evaluate_module"] == {}, plans["new_evaluate_module"]


def test_a_new_memory_system_reruns_what_asks_the_registry_only(plans):
    """The memory registry imports every module of clerk/memory/ before it answers: a new one
    is code every job that asks the registry runs (the SFT sets' views, evaluate) and what
    depends on those, and no other job's (data, streams, the base model)."""
    planned = plans["new_memory_module"]
    assert {"build_sft", "evaluate"} <= set(planned), planned
    assert not set(planned) & {"generate", "generate_open", "generate_forget", "streams", "eviction_study",
                               "base_model"}, planned


def test_editing_the_entry_point_plans_nothing(plans):
    """clerk/cli.py only routes a verb to its module: no job's results depend on its text."""
    assert plans["entry_point"] == {}, plans["entry_point"]


_LOADED = """
import json, sys
from pathlib import Path
import clerk
from clerk.cli import main
try:
    main([sys.argv[1], "--help"])
except SystemExit:
    pass
base = Path(clerk.__file__).resolve().parent.parent
print(json.dumps(sorted(str(Path(m.__file__).resolve().relative_to(base)) for name, m in list(sys.modules.items())
                        if (name == "clerk" or name.startswith("clerk.")) and getattr(m, "__file__", None))))
"""


def test_every_module_a_verb_loads_is_a_code_input():
    """For every job of the smoke profile: each clerk module that its ``clerk VERB`` command loads
    (module-level imports, seen by running ``clerk VERB --help``) is among the job's inputs, but
    the dispatcher clerk/cli.py."""
    proc = run_snakemake(ROOT, "-n", "--forceall", "-p", "--cores", "1", *SMOKE, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    inputs: dict[str, set[str]] = {}  # verb -> the inputs every job running it has
    for block in out.split("\n\n"):
        rule = re.search(r"^rule (\w+):", block, re.M)
        verb = re.search(r"^Shell command: (?:\S+=\S+ )*clerk ([a-z-]+)", block, re.M)
        if not (rule and verb):
            continue
        listed = re.search(r"^\s+input: (.*)$", block, re.M)
        files = set(listed.group(1).split(", ")) if listed else set()
        inputs[verb.group(1)] = inputs.get(verb.group(1), files) & files
    assert {"generate", "train", "evaluate", "table-systems", "render-paper"} <= set(inputs), sorted(inputs)
    missing = {}
    for verb, files in sorted(inputs.items()):
        loaded = subprocess.run([sys.executable, "-c", _LOADED, verb], capture_output=True, text=True, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert loaded.returncode == 0, loaded.stderr[-2000:]
        modules = set(json.loads(loaded.stdout.strip().splitlines()[-1])) - {"clerk/cli.py"}
        if modules - files:
            missing[verb] = sorted(modules - files)
    assert missing == {}, missing
