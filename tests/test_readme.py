"""The README's promises that a test can hold: CI runs its test command, and the results it shows
are the committed run's tables.

    python -m pytest tests/test_readme.py -q
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _quick_start() -> str:
    return README.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def test_ci_runs_the_readme_test_command():
    """The quick start's test command is the last command .ci/run executes."""
    test_cmd = next(line.split("#")[0].strip() for line in _quick_start().splitlines() if line.startswith("make test"))
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert ci_lines[-1] == test_cmd == "make test"


def test_quick_start_commands_are_make_targets():
    """The two quick-start commands are Makefile targets that set up first: `make paper` runs the
    default-profile workflow, `make test` the test suite."""
    commands = [line.split("#")[0].strip() for line in _quick_start().split("```bash", 1)[1].split("```", 1)[0].splitlines()
                if line.strip()]
    assert commands == ["make paper", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^paper: setup\n\t.*snakemake --cores \$\(CORES\) --resources gpu=1$", makefile, re.M)
    assert re.search(r"^test: setup\n\t.*\$\(BIN\)/python -m pytest -q$", makefile, re.M)
    assert "-r requirements.lock" in makefile


@pytest.mark.parametrize("name", ["table1", "table1_cost"])
def test_readme_tables_are_the_committed_results(name):
    """A table the README shows between its markers is byte-for-byte the committed results file."""
    match = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", README, flags=re.S)
    assert match, f"README has no {name} block"
    path = ROOT / "results" / f"{name}.md"
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is not in this checkout (no shipped run)")
    assert match.group(1).strip() == path.read_text(encoding="utf-8").strip()
