"""Tracked text stands on its own: no file outside results/ cites the project tracker's issue
numbers (the reason goes in words: a reader of the repository has no tracker) or an absolute
path of the machine it was written on (a reader's machine has other folders).

An external project's issue keeps its full reference, ``owner/repo#N`` (or ``owner/repo issues
#N and #M``): that number is the way to find it. ``/tmp/...`` in an example command is any
machine's scratch folder, not a machine path.

    python -m pytest tests/test_tracked_text.py -q
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Generated: results/ and the rendered paper are rewritten by a run (their generators are held to
#: the same rule through their sources and inputs, which are checked here).
GENERATED = ("results/", "paper/paper.md")
#: ``owner/repo#N`` and ``owner/repo issue(s) #N and #M``: an external project's issues.
EXTERNAL = re.compile(r"[\w.-]+/[\w.-]+(?:#\d+|\s+issues?\s+#\d+(?:(?:,|\s+and)\s+#\d+)*)")
#: ``issue 51``, ``Issues 12 and 13``, ``issue #4``, ``#51`` (not ``&#45;``, a Markdown anchor
#: ``(#17-...)`` or ``#0`` of a message's item counter).
TRACKER = re.compile(r"\bissues?\s+#?\d+|(?<![\w&#(/])#[1-9]\d*(?![\w-])", re.IGNORECASE)
#: Folders that exist only on the machine that wrote the text (a home, a work or mount root).
MACHINE_PATH = re.compile(r"(?<![\w.~$-])/(?:work|home|root|Users|mnt|scratch|srv)/")


def _tracked_text() -> dict[str, str]:
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    out = {}
    for name in names.decode().split("\0"):
        path = ROOT / name
        if not name or name.startswith(GENERATED) or not path.is_file() or path == Path(__file__).resolve():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (weights, images)
        out[name] = data.decode("utf-8", errors="replace")
    return out


def _findings(texts: dict[str, str]) -> list[str]:
    """``path:line: text`` of every tracker number and machine path in ``texts``."""
    found = []
    for name, text in sorted(texts.items()):
        for number, line in enumerate(text.splitlines(), 1):
            bare = EXTERNAL.sub("", line)
            for pattern in (TRACKER, MACHINE_PATH):
                found += [f"{name}:{number}: {m.group()!r} in {line.strip()[:100]!r}" for m in pattern.finditer(bare)]
    return found


def test_no_tracker_numbers_or_machine_paths():
    assert _findings(_tracked_text()) == []


def test_findings_are_found():
    """What counts, and what does not."""
    texts = {
        "a.md": "The pin went (issue 45). Issues 12 and 13's figures. See #51. Data in /work/shared/x.json.",
        "b.py": "x = 1  # (snakemake/snakemake#3895); snap-research/locomo issues #6 and #29\n"
                "<!-- 1&#45;&gt;0 --> [§1](#1-ledger) foreach #0: --out /tmp/a.json ~/home/x $HOME/x",
        "c.txt": "cd /home/ana/clerk && ls /Users/bo",
    }
    got = [line.split(": ", 1)[1].split(" in ")[0] for line in _findings(texts)]
    assert got == ["'issue 45'", "'Issues 12'", "'#51'", "'/work/'", "'/home/'", "'/Users/'"]
