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


def test_ci_runs_the_readme_test_command():
    """The quick start's test command is the last command .ci/run executes."""
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    test_cmd = next(line.split("#")[0].strip() for line in quick.splitlines() if "pytest" in line)
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert ci_lines[-1] == test_cmd


@pytest.mark.parametrize("name", ["table1", "table1_cost"])
def test_readme_tables_are_the_committed_results(name):
    """A table the README shows between its markers is byte-for-byte the committed results file."""
    match = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", README, flags=re.S)
    assert match, f"README has no {name} block"
    path = ROOT / "results" / f"{name}.md"
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is not in this checkout (no shipped run)")
    assert match.group(1).strip() == path.read_text(encoding="utf-8").strip()
