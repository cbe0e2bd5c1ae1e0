"""Bad input to every verb that reads a file, driven as a user would (issue 48).

Each file argument gets a missing path, an empty file, a truncated one, one of the wrong shape
("mistyped"), bytes that are not UTF-8 and a folder. The verb must answer with exit status 2 and
exactly one stderr line that names the argument: no traceback. Also the other findings of the
issue that a user meets on the command line: a forget aimed at a store or subject that does not
exist, names that are not UTF-8, outputs left partial or stale by a failed rerun, output paths of
the wrong kind, and checks that pass with nothing checked.

    python -m pytest tests/test_bad_input.py -q
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from clerk.cli import main as clerk_main
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.store import open_store

KINDS = ("missing", "empty", "truncated", "mistyped", "non_utf8", "directory")


def run(argv: list) -> tuple[int, str]:
    """``clerk ARGV`` in this process: (exit status, stderr). A traceback fails the test as itself."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            clerk_main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


def assert_one_line(code: int, stderr: str, verb: str, arg: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, (code, stderr)
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith(f"clerk {verb}: error: "), lines[0]
    assert arg in lines[0], (arg, lines[0])


# ---- the files a verb needs beside the bad one -------------------------------------------------

@pytest.fixture(scope="module")
def ok(tmp_path_factory) -> dict[str, Path]:
    """Valid inputs: a timeline file, a fake model folder, a manifest, numbers, a stream, a paper."""
    root = tmp_path_factory.mktemp("ok")
    write_timelines(root / "t.jsonl", generate(3, "test", personas=1, sessions=3))
    (root / "model").mkdir()
    (root / "model" / "config.json").write_text("{}")
    (root / "a.txt").write_text("hello\n")
    digest = hashlib.sha256(b"hello\n").hexdigest()
    (root / "manifest.json").write_text(json.dumps({"files": {"a.txt": {"sha256": digest, "inputs": {}, "rule": None}}}))
    (root / "numbers.json").write_text(json.dumps({"numbers": {"n": {
        "source": "a.csv", "sha256": digest, "key": "x", "format": "d", "text": "1", "value": 1}}}))
    clerk_main(["streams", "--seed", "0", "--length", "20", "--out", str(root / "stream.json")])
    return {name: root / name for name in ("t.jsonl", "model", "manifest.json", "numbers.json", "stream.json")} | {
        "root": root}


@dataclass
class Case:
    """One file argument of one verb: how to call it with ``bad`` in that argument."""

    verb: str
    arg: str
    good: bytes  # content of a sound file (its first half is the truncated file)
    mistyped: bytes  # parses, but the wrong shape
    argv: Callable[[dict, Path, Path], list]  # (ok files, bad path, scratch folder) -> argv
    kinds: tuple = KINDS


TIMELINE = b'{"name":"Ari","split":"test","seed":1,"budget":4,"sessions":[{"index":0,"turns":[],"events":[],' \
    b'"questions":[],"gold_ops":[],"ledger_before":[{"i":0}],"ledger_after":[{"i":0}]}]}\n'
METRICS = b'{"schema": "clerk.eval.metrics/v1", "systems": {"oracle": {"accuracy": 0.5}}}'
CSV = b"session,view,mean_read_tokens,n\n0,full,10.0,3\n1,full,20.0,3\n"

CASES = [
    Case("verify", "--manifest", b'{"files": {"a.txt": {"sha256": "00", "inputs": {}, "rule": null}}}',
         b'{"files": ["a.txt"]}',
         lambda ok, bad, tmp: ["verify", "--manifest", bad, "--numbers", ok["numbers.json"], "--paper", "none",
                               "--lock", "none", "--workdir", ok["root"]]),
    Case("verify", "--numbers", b'{"numbers": {"n": {"source": "a.csv", "key": "x"}}}', b'{"numbers": {"n": 5}}',
         lambda ok, bad, tmp: ["verify", "--manifest", ok["manifest.json"], "--numbers", bad, "--paper", "none",
                               "--lock", "none", "--workdir", ok["root"]]),
    Case("trace", "--manifest", b'{"files": {}}', b'{"files": 3}',
         lambda ok, bad, tmp: ["trace", "a.txt", "--manifest", bad, "--numbers", tmp / "absent.json"]),
    Case("numbers", "--spec", b'{"n": {"source": "a.csv", "key": "x"}}', b"- 1\n- 2\n",
         lambda ok, bad, tmp: ["numbers", "--spec", bad, "--out", tmp / "numbers.json"]),
    Case("evaluate", "--timelines", TIMELINE, b'{"name": "Ari", "sessions": []}\n',
         lambda ok, bad, tmp: ["evaluate", "--timelines", bad, "--model", ok["model"], "--systems", "oracle",
                               "--reader", "rule", "--out", tmp / "ev", "--quiet"]),
    Case("erasure", "--timelines", TIMELINE, b'{"name": "Ari", "sessions": [{"index": 0, "turns": 5}]}\n',
         lambda ok, bad, tmp: ["erasure", "--timelines", bad, "--model", ok["model"], "--systems", "oracle",
                               "--reader", "rule", "--out", tmp / "er", "--quiet"]),
    Case("build-sft", "--timelines", TIMELINE, b'[1, 2]\n',
         lambda ok, bad, tmp: ["build-sft", "--timelines", bad, "--out", tmp / "sft", "--seed", "0"]),
    Case("read-cost", "--timelines", TIMELINE, b'{"sessions": "none"}\n',
         lambda ok, bad, tmp: ["read-cost", "--timelines", bad, "--tokenizer", ok["model"], "--out", tmp / "rc.csv"]),
    Case("eviction-study", "--streams", b'{"seed": 0, "config": {"length": 20}, "events": [[1, "register"', b"[1, 2]",
         lambda ok, bad, tmp: ["eviction-study", "--streams", bad, "--out", tmp / "ev.csv"]),
    Case("table-systems", "--metrics", METRICS, b"[1, 2]",
         lambda ok, bad, tmp: ["table-systems", "--metrics", bad, "--out", tmp / "t1.csv"]),
    Case("table-erasure", "--metrics", METRICS, b"[1, 2]",
         lambda ok, bad, tmp: ["table-erasure", "--metrics", bad, "--out", tmp / "t5.csv"]),
    Case("table-locomo", "--metrics", METRICS, b"[1, 2]",
         lambda ok, bad, tmp: ["table-locomo", "--metrics", bad, "--out", tmp / "t2.csv"]),
    Case("table-read-cost", "--csv", CSV, b"a,b\n1,2\n",
         lambda ok, bad, tmp: ["table-read-cost", "--csv", bad, "--out", tmp / "rc.csv"]),
    Case("table-paired", "--predictions", b'{"system": "oracle", "correct": true}\n', b"[1, 2]\n",
         lambda ok, bad, tmp: ["table-paired", "--predictions", bad, "--out", tmp / "p.csv", "--markdown", tmp / "p.md"]),
    Case("render-paper", "--numbers", b'{"numbers": {"n": {"text": "1"', b"[1, 2]",
         lambda ok, bad, tmp: ["render-paper", "--template", ok["root"] / "a.txt", "--numbers", bad,
                               "--out", tmp / "paper.md"]),
    Case("locomo-inspect", "--data", b'[{"sample_id": "conv-1", "conversation": {', b'{"x": 1}',
         lambda ok, bad, tmp: ["locomo-inspect", "--data", bad]),
]


def _make(kind: str, case: Case, tmp: Path) -> Path:
    bad = tmp / ("bad" + (".jsonl" if "jsonl" in case.arg else ""))
    if kind == "missing":
        return tmp / "no-such-file"
    if kind == "directory":
        bad.mkdir()
        return bad
    content = {"empty": b"", "truncated": case.good[: len(case.good) // 2], "mistyped": case.mistyped,
               "non_utf8": b"\xff\xfe" + case.good[:8] + b"\xc3\x28"}[kind]
    bad.write_bytes(content)
    return bad


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.verb}{c.arg}")
def test_a_bad_input_file_is_one_line_naming_the_argument(case, kind, ok, tmp_path):
    if kind not in case.kinds:
        pytest.skip(f"{case.verb} {case.arg}: {kind} is not a bad input here")
    bad = _make(kind, case, tmp_path)
    code, stderr = run(case.argv(ok, bad, tmp_path))
    assert_one_line(code, stderr, case.verb, case.arg)
