"""Bad input to every verb that reads a file, driven as a user would.

Each file argument gets a missing path, an empty file, a truncated one, one of the wrong shape
("mistyped"), bytes that are not UTF-8 and a folder. The verb must answer with exit status 2 and
exactly one stderr line that names the argument: no traceback. Also the other findings of the
issue that a user meets on the command line: a forget aimed at a store or subject that does not
exist, names that are not UTF-8, outputs left partial or stale by a failed rerun, output paths of
the wrong kind, and checks that pass with nothing checked.

    python -m pytest tests/test_bad_input.py -q
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_kit import run

from clerk.cli import main as clerk_main
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.store import open_store

KINDS = ("missing", "empty", "truncated", "mistyped", "non_utf8", "directory")




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


# ---- the other findings, as a user meets them -------------------------------------------

def _store_with_ari(path: Path) -> str:
    url = f"sqlite:///{path}"
    with open_store(url) as store:
        with store.consolidation("Ari") as c:
            c.publish([{"op": "ADD", "s": "Ari", "p": "city", "o": "Oslo"}], [{"role": "user", "content": "Oslo."}])
    return url


class TestForgetTarget:
    def test_a_store_that_does_not_exist_is_an_error_and_is_not_created(self, tmp_path):
        code, err = run(["forget", "--store", f"sqlite:///{tmp_path}/typo.db", "--subject", "Ari", "--predicate", "city"])
        assert_one_line(code, err, "forget", "typo.db")
        assert not (tmp_path / "typo.db").exists()

    @pytest.mark.parametrize("content", [b"", b"not a database at all" * 100, b"\xff\xfe" * 4096])
    def test_a_file_that_is_not_a_store_is_an_error(self, tmp_path, content):
        (tmp_path / "x.db").write_bytes(content)
        code, err = run(["forget", "--store", f"sqlite:///{tmp_path}/x.db", "--subject", "Ari"])
        assert_one_line(code, err, "forget", "x.db")
        assert (tmp_path / "x.db").read_bytes() == content

    def test_an_unknown_subject_is_an_error_and_adds_nothing(self, tmp_path):
        url = _store_with_ari(tmp_path / "m.db")
        code, err = run(["forget", "--store", url, "--subject", "Bo", "--predicate", "city"])
        assert_one_line(code, err, "forget", "'Bo'")
        with open_store(url) as store:
            assert store.subjects() == ["Ari"]

    @pytest.mark.parametrize("argv", [["--vacuum", "--vacuum-wait=-1"], ["--vacuum", "--vacuum-wait=nan"],
                                      ["--vacuum", "--vacuum-wait=inf"], ["--vacuum-wait=5"]])
    def test_vacuum_wait_must_be_seconds_with_vacuum(self, tmp_path, argv):
        url = _store_with_ari(tmp_path / "m.db")
        before = (tmp_path / "m.db").read_bytes()
        code, err = run(["forget", "--store", url, "--subject", "Ari", "--predicate", "city", *argv])
        assert_one_line(code, err, "forget", "--vacuum-wait")
        assert (tmp_path / "m.db").read_bytes() == before

    @pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
    def test_a_subject_that_is_not_utf8_is_one_line(self, backend, tmp_path, request):
        """The real argv bytes, through a subprocess: no UnicodeEncodeError traceback."""
        if backend == "sqlite":
            url = _store_with_ari(tmp_path / "m.db")
        else:
            import pg_kit  # noqa: F401

            url = request.getfixturevalue("pg_server").new_store_url()
            with open_store(url) as store:
                with store.consolidation("Ari") as c:
                    c.publish([], [])
        proc = subprocess.run([sys.executable, "-m", "clerk.cli", "forget", "--store", url, "--subject", b"Ari\xff"],
                              capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in lines[0], lines
        assert "subject must be valid UTF-8 text" in lines[0]


@pytest.fixture(scope="module")
def pg_server():
    import pg_kit

    yield from pg_kit.serve()


class TestOutputs:
    def test_a_failed_rerun_leaves_no_stale_completion_marker(self, ok, tmp_path):
        """A first run completes (metrics.json); a rerun into the same folder with a bad timeline
        fails, and the old metrics.json does not stay behind to vouch for the folder."""
        out = tmp_path / "ev"
        out.mkdir()
        (out / "metrics.json").write_text('{"old": true}')
        (out / "predictions.jsonl").write_text('{"old": true}\n')
        bad = tmp_path / "bad.jsonl"
        bad.write_bytes(b'{"name": "Ari", "sessions": [{"index": 0, "turns": 5}]}\n')
        code, err = run(["evaluate", "--timelines", bad, "--model", ok["model"], "--systems", "oracle", "--reader",
                         "rule", "--out", out, "--quiet"])
        assert_one_line(code, err, "evaluate", "--timelines")
        assert not (out / "metrics.json").exists()
        assert (out / "predictions.jsonl").read_text() == '{"old": true}\n'  # untouched, never half-written

    def test_an_interrupted_write_leaves_the_old_file(self, tmp_path, monkeypatch):
        """The fault test of the atomic write: a failure mid-write keeps the previous file whole;
        with a plain open(..., "w") (the old writer) the file would be truncated."""
        from clerk.evaluate import schemas

        path = tmp_path / "predictions.jsonl"
        path.write_text('{"old": true}\n')

        def boom(kind, row, schemas_=None):
            raise RuntimeError("disk full")

        monkeypatch.setattr(schemas, "validate_record", boom)
        with pytest.raises(RuntimeError):
            schemas.write_jsonl(path, "predictions", [{"x": 1}])
        assert path.read_text() == '{"old": true}\n'
        assert [p.name for p in tmp_path.iterdir()] == ["predictions.jsonl"]  # no temporary left

    def test_generate_out_naming_a_folder(self, tmp_path):
        code, err = run(["generate", "--seed", "1", "--split", "test", "--personas", "1", "--out", tmp_path])
        assert_one_line(code, err, "generate", "--out")

    def test_evaluate_out_naming_a_file_fails_before_the_run(self, ok, tmp_path):
        (tmp_path / "f").write_text("x")
        code, err = run(["evaluate", "--timelines", ok["t.jsonl"], "--model", ok["model"], "--systems", "oracle",
                         "--reader", "rule", "--out", tmp_path / "f", "--quiet"])
        assert_one_line(code, err, "evaluate", "--out")
        assert (tmp_path / "f").read_text() == "x"

    @pytest.mark.parametrize("model", ["missing", "file", "empty-folder"])
    def test_evaluate_with_a_bad_model(self, ok, tmp_path, model):
        path = tmp_path / model
        if model == "file":
            path.write_text("x")
        elif model == "empty-folder":
            path.mkdir()
        code, err = run(["evaluate", "--timelines", ok["t.jsonl"], "--model", path, "--systems", "oracle",
                         "--reader", "rule", "--out", tmp_path / "ev", "--quiet"])
        assert_one_line(code, err, "evaluate", "--model")


class TestNothingChecked:
    @pytest.mark.parametrize("seconds", ["nan", "inf", "-inf", "1e300"])
    def test_stress_seconds_must_be_finite(self, tmp_path, seconds):
        code, err = run(["stress-forget", "--store", f"sqlite:///{tmp_path}/m.db", f"--seconds={seconds}"])
        assert_one_line(code, err, "stress-forget", "seconds")

    @pytest.mark.parametrize("which", ["files", "numbers"])
    def test_verify_with_nothing_listed_fails(self, ok, tmp_path, which):
        empty = tmp_path / "empty.json"
        empty.write_text(json.dumps({which: {}}))
        manifest = empty if which == "files" else ok["manifest.json"]
        numbers = empty if which == "numbers" else ok["numbers.json"]
        code, err = run(["verify", "--manifest", manifest, "--numbers", numbers, "--paper", "none", "--lock", "none",
                         "--workdir", ok["root"]])
        assert_one_line(code, err, "verify", "--manifest" if which == "files" else "--numbers")
        assert "nothing to verify" in err

    @pytest.mark.parametrize("size", [-1, float("nan"), float("inf"), 1.5, "6", True])
    def test_verify_refuses_a_size_that_is_not_one(self, ok, tmp_path, size):
        """A manifest entry's ``bytes`` is a whole number >= 0 or null, nothing else (NaN included)."""
        manifest = json.loads(ok["manifest.json"].read_text())
        manifest["files"]["a.txt"]["bytes"] = size
        bad = tmp_path / "manifest.json"
        bad.write_text(json.dumps(manifest))  # writes NaN and Infinity as JSON's extensions do
        code, err = run(["verify", "--manifest", bad, "--numbers", ok["numbers.json"], "--paper", "none",
                         "--lock", "none", "--workdir", ok["root"]])
        assert_one_line(code, err, "verify", "--manifest")
        assert err.strip().endswith(f"files['a.txt'] field 'bytes' must be a whole number >= 0 (the size in bytes) "
                                    f"or null, got {size!r}"), err

    @pytest.mark.parametrize("field,value,allowed", [
        ("budget", "6", "a whole number >= 1 (the ledger's slots)"), ("budget", 0, "a whole number >= 1 (the ledger's slots)"),
        ("budget", 6.0, "a whole number >= 1 (the ledger's slots)"), ("seed", "3", "a whole number"),
        ("name", "", "a non-empty string"), ("split", None, "a string")])
    def test_evaluate_names_a_bad_persona_field_with_file_and_line(self, ok, tmp_path, field, value, allowed):
        """A persona whose ``budget`` is the string "6" (or any field of the wrong kind) is refused at
        load, naming the file, the line, the field and the value: no ValueError from deep inside."""
        personas = ok["t.jsonl"].read_text().splitlines()
        persona = json.loads(personas[0])
        persona[field] = value
        bad = tmp_path / "t.jsonl"
        bad.write_text(personas[0] + "\n" + json.dumps(persona) + "\n")
        code, err = run(["evaluate", "--timelines", bad, "--model", ok["model"], "--systems", "oracle", "--reader",
                         "rule", "--out", tmp_path / "ev", "--quiet"])
        assert_one_line(code, err, "evaluate", "--timelines")
        assert err.strip() == (f"clerk evaluate: error: --timelines {str(bad)!r}: line 2: field {field!r} must be "
                               f"{allowed}, got {value!r}")

    @pytest.mark.parametrize("edit", ["no-sessions", "no-questions", "turns-5"])
    def test_evaluate_refuses_timelines_with_nothing_to_evaluate(self, ok, tmp_path, edit):
        persona = json.loads(ok["t.jsonl"].read_text().splitlines()[0])
        if edit == "no-sessions":
            persona["sessions"] = []
        elif edit == "no-questions":
            del persona["sessions"][1]["questions"]
        else:
            persona["sessions"][1]["turns"] = 5
        bad = tmp_path / "t.jsonl"
        bad.write_text(json.dumps(persona) + "\n")
        code, err = run(["evaluate", "--timelines", bad, "--model", ok["model"], "--systems", "oracle", "--reader",
                         "rule", "--out", tmp_path / "ev", "--quiet"])
        assert_one_line(code, err, "evaluate", "--timelines")


class TestGenerateValues:
    """Values `clerk generate` refused with a traceback, or accepted although the config schema
    refuses them."""

    @pytest.mark.parametrize("argv", [["--questions", "abc"], ["--config", '{"questions": "abc"}'],
                                      ["--evict-adds", "3-x"]])
    def test_a_range_that_is_not_numbers_is_one_line(self, tmp_path, argv):
        out = tmp_path / "t.jsonl"
        code, err = run(["generate", "--seed", "1", "--split", "test", "--personas", "1", *argv, "--out", str(out)])
        assert code == 2
        assert err.startswith("clerk generate: error: --") and "expected N or LOW-HIGH" in err
        assert not out.exists()

    def test_a_budget_below_the_initial_facts_is_refused(self, tmp_path):
        """The config schema's cross check (budget >= init_facts) holds on the command line too."""
        out = tmp_path / "t.jsonl"
        code, err = run(["generate", "--seed", "1", "--split", "test", "--personas", "1", "--sessions", "2",
                         "--budget", "3", "--init-facts", "5", "--out", str(out)])
        assert code == 2
        assert err == ("clerk generate: error: budget: 3 is less than init_facts 5 (session 0 states init_facts "
                       "facts into an empty ledger of budget slots: budget >= init_facts)\n")
        assert not out.exists()
