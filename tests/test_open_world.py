"""The open world's generator (SPEC §2.9): composed keys, two subjects, dated facts, exact gold.

    python -m pytest tests/test_open_world.py -q
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from clerk import ledger as L
from clerk.errors import UserError
from clerk.form import is_key, timeline_form
from clerk.generator.config import GeneratorConfig
from clerk.generator.files import load_timelines, timeline_problem, write_timelines
from clerk.generator.keyspace import OPEN_WORLD_FILE, load_keyspace
from clerk.generator.open_world import generate_open, time_phrase
from clerk.memory.reader import rule_choice
from clerk.metrics import op_scores

SPACE = load_keyspace()


def _open(split: str = "test", seed: int = 137, personas: int = 6, **kw) -> list[dict]:
    return generate_open(GeneratorConfig(seed=seed, split=split, personas=personas, world="open", budget=16, **kw))


@pytest.fixture(scope="module")
def splits() -> dict[str, list[dict]]:
    return {split: _open(split, evict_personas=1) for split in ("train", "test", "val_ood", "test_ood")}


def _keys(timelines: list[dict]) -> set[str]:
    return {e["pred"] for tl in timelines for s in tl["sessions"] for e in s["events"]}


def test_key_space_is_composed_and_in_normal_form():
    keys = [k.key for k in SPACE.keys]
    assert len(keys) >= 150 and len(set(keys)) == len(keys)
    assert all(is_key(k) and k == f"{spec.head}_{spec.object}" for k, spec in zip(keys, SPACE.keys))
    held = {split: {k.key for k in SPACE.keys if k.split == split} for split in ("val_ood", "test_ood")}
    assert held["val_ood"] and held["test_ood"] and not held["val_ood"] & held["test_ood"]
    assert any(k.dated for k in SPACE.keys if k.split == "train")


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_timelines(a, _open(personas=3))
    write_timelines(b, _open(personas=3))
    assert a.read_bytes() == b.read_bytes()
    write_timelines(b, _open(personas=3, seed=991))
    assert a.read_bytes() != b.read_bytes()
    assert [tl["name"] for tl in load_timelines(a)] == [tl["name"] for tl in _open(personas=3)]


def test_format_two_with_two_subjects(splits):
    for timelines in splits.values():
        for tl in timelines:
            assert timeline_problem(tl) is None
            form = timeline_form(tl)
            assert tl["format"] == 2 and len(form.subjects) == 2 and form.keys is None
            for session in tl["sessions"]:
                speakers = {t["role"] for t in session["turns"][1:]}
                assert session["turns"][0]["role"] == "date" and speakers == set(form.subjects)
                assert {e["subject"] for e in session["events"]} <= set(form.subjects)


def test_gold_programs_replay_strictly_under_the_form(splits):
    for timelines in splits.values():
        for tl in timelines:
            form, ledger = timeline_form(tl), L.empty_ledger(tl["budget"])
            for session in tl["sessions"]:
                assert session["ledger_before"] == _with_uses(ledger, session)
                after, report = L.reduce(session["ledger_before"], session["gold_ops"], session["index"],
                                         strict=True, form=form)
                assert after == session["ledger_after"] and not report.invalid
                ledger = after
    kinds = {op["op"] for tls in splits.values() for tl in tls for s in tl["sessions"] for op in s["gold_ops"]}
    assert kinds == {"ADD", "UPDATE", "TOMBSTONE", "EVICT"}


def _with_uses(ledger: list, session: dict) -> list:
    for question in session["questions"]:
        ledger = L.record_use(ledger, question["subject"], question["pred"])
    return ledger


def test_held_out_heads_only_in_their_split(splits):
    held = {split: {k.key for k in SPACE.keys if k.split == split} for split in ("val_ood", "test_ood")}
    for split in ("train", "test"):
        assert not _keys(splits[split]) & (held["val_ood"] | held["test_ood"])
    assert _keys(splits["val_ood"]) & held["val_ood"] and not _keys(splits["val_ood"]) & held["test_ood"]
    assert _keys(splits["test_ood"]) & held["test_ood"] and not _keys(splits["test_ood"]) & held["val_ood"]


def test_dated_facts_carry_the_date_their_line_says(splits):
    seen = 0
    for tl in splits["test"]:
        for session in tl["sessions"]:
            today = dt.date.fromisoformat(session["date"])
            for event in session["events"]:
                dated = SPACE.key(event["pred"]).dated
                assert ("when" in event) == (dated and event["kind"] != "TOMBSTONE")
                if "when" in event:
                    seen += 1
                    assert event["when"] <= today.isoformat()[:len(event["when"])]
            for op in session["gold_ops"]:
                if op["op"] in ("ADD", "UPDATE"):
                    assert ("w" in op) == SPACE.key(op["p"]).dated
            assert not any(SPACE.key(e["pred"]).dated for e in session["events"] if e["kind"] == "TOMBSTONE")
    assert seen >= 10


@pytest.mark.parametrize(("seed", "phrase", "when"), [
    (3, "yesterday", "2023-05-07"),
])
def test_time_phrase_resolves_against_the_session_date(seed, phrase, when):
    import random

    assert time_phrase(random.Random(seed), dt.date(2023, 5, 8)) == (phrase, when)


def test_every_time_phrase_kind_resolves():
    import random

    rng, today, got = random.Random(0), dt.date(2023, 1, 15), {}
    for _ in range(400):
        phrase, when = time_phrase(rng, today)
        got[re.sub(r"\d+|January|February|March|April|May|June|July|August|September|October|November|December",
                   "#", phrase)] = when
        assert when <= today.isoformat()[:len(when)]
    assert got["last month"] == "2022-12" and got["last year"] == "2022" and got["yesterday"] == "2023-01-14"
    assert {"today", "on # #", "in #"} <= set(got)
    assert len(got["in #"]) == 7 and got["in #"] < "2022-12"


def test_questions_are_answered_by_the_rule_reader_from_the_ledger_before(splits):
    types = set()
    for timelines in splits.values():
        for tl in timelines:
            form = timeline_form(tl)
            for session in tl["sessions"]:
                for q in session["questions"]:
                    types.add(q["type"])
                    assert q["subject"] in form.subjects and q["subject"] in q["question"]
                    assert len(set(q["options"])) == 10 and q["options"][q["correct"]] == q["answer"]
                    assert rule_choice(session["ledger_before"], tl["name"], q) == q["correct"]
                touched = {(e["subject"], e["pred"]) for e in session["events"]}
                assert not touched & {(q["subject"], q["pred"]) for q in session["questions"]}
    assert types == {"unknown", "current", "superseded", "negated", "temporal", "when"}


def test_eviction_slice_asks_nothing(splits):
    tl = splits["test"][-1]
    assert tl["slice"] == "evict" and not any(s["questions"] for s in tl["sessions"])


def test_op_scores_judge_dated_ops_under_the_form(splits):
    tl = splits["test"][0]
    form = timeline_form(tl)
    session = next(s for s in tl["sessions"] if any("w" in op for op in s["gold_ops"]))
    gold, before = session["gold_ops"], session["ledger_before"]
    scores = op_scores(before, gold, gold, session["index"], form=form)
    assert scores["f1"] == 1.0 and scores["n_invalid"] == 0
    # Without the form a dated op is invalid: the form is what admits it.
    assert op_scores(before, gold, gold, session["index"])["n_invalid"] > 0
    # A wrong date is a wrong op.
    k = next(k for k, op in enumerate(gold) if "w" in op)
    wrong = [*gold[:k], {**gold[k], "w": "1999"}, *gold[k + 1:]]
    assert op_scores(before, wrong, gold, session["index"], form=form)["fp"] == 1


def test_cli_writes_open_timelines_and_refuses_phrasings(tmp_path):
    import subprocess

    out = tmp_path / "open.jsonl"
    cmd = ["clerk", "generate", "--seed", "5", "--split", "test", "--personas", "2",
           "--world", "open", "--budget", "16", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    assert [tl["name"] for tl in load_timelines(out)] == [tl["name"] for tl in _open(seed=5, personas=2)]
    bad = subprocess.run([*cmd, "--phrasings", "x.yaml"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--phrasings is for --world closed" in bad.stderr


def test_bad_options_fail_in_one_line():
    from clerk.generator.timelines import generate_from_config

    with pytest.raises(UserError, match="the open world is generated by"):
        generate_from_config(GeneratorConfig(seed=1, split="test", world="open"))
    with pytest.raises(UserError, match="world must be one of closed, open, got 'flat'"):
        GeneratorConfig(seed=1, split="test", world="flat")
    with pytest.raises(UserError, match="compose is not available with world 'open'"):
        _open(compose=0.3)
    with pytest.raises(UserError, match="forgets is not available with world 'open'"):
        _open(forgets=1)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["heads"]["went_to"].update(tombstone=["I never went to {value}."]), "has no 'tombstone' templates"),
    (lambda d: d["heads"]["went_to"].update(add=["I went to {value}."]), r"must say when"),
    (lambda d: d["heads"]["teaching"].update(add=d["heads"]["learning"]["add"]), "is used by heads 'learning' and 'teaching'"),
    (lambda d: d["heads"]["learning"].update(split="test"), "'split' must be one of train, val_ood, test_ood"),
    (lambda d: d["heads"]["learning"].update(objects=["spaceship"]), "'objects' must list objects of the file"),
    (lambda d: d["objects"]["food"].update(values=["a", "b"]), "'values' must hold at least 8 distinct strings"),
    (lambda d: d["heads"]["learning"].update(ask=["Which {noun} is learned?"]), r"must use \{name\}"),
])
def test_bad_key_space_file_names_the_head_and_the_rule(tmp_path, change, message):
    import yaml

    data = yaml.safe_load(OPEN_WORLD_FILE.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "space.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UserError, match=message):
        load_keyspace(path)


def test_sft_rows_of_open_timelines_teach_the_open_language(splits):
    """CONSOLIDATE targets are the open program language (subject on every line, dates), they
    compile back to the gold ops under the form; the writer reads both speakers and the date;
    ANSWER rows over the ledger show each fact's subject and date."""
    from clerk.program import compile_program
    from clerk.sft.examples import SFTDataConfig, build_rows

    timelines = splits["train"]
    rows, _ = build_rows(timelines, SFTDataConfig(seed=3, answer_ratio=1.0, val_fraction=0.0))
    by_key = {(tl["name"], s["index"]): (tl, s) for tl in timelines for s in tl["sessions"]}
    consolidate = [r for r in rows["train"] if r["task"] == "consolidate"]
    assert len(consolidate) == sum(len(tl["sessions"]) for tl in timelines)
    dated = 0
    for row in consolidate:
        tl, session = by_key[(row["persona"], row["session"])]
        form = timeline_form(tl)
        user, program = row["messages"][0]["content"], row["messages"][1]["content"]
        assert user.split("\n---\n", 1)[1].startswith("date: ")
        assert all(f"{name}: " in user for name in form.subjects)
        compiled = compile_program(program, session["ledger_before"], form, session["index"])
        assert compiled.program == session["gold_ops"]
        dated += program.count(" @")
        assert all(line.split(" ")[1].lstrip("@").split(" ")[0] in form.subjects or line.split(" ")[1].startswith("@")
                   for line in program.splitlines())
    assert dated > 0
    answers = [r for r in rows["train"] if r["task"] == "answer"]
    assert answers and any(" / " in r["messages"][0]["content"] and "(on " in r["messages"][0]["content"] for r in answers)


def test_build_sft_mixes_closed_and_open_timeline_files(tmp_path):
    """`clerk build-sft --timelines CLOSED OPEN`: one dataset with both kinds of CONSOLIDATE rows;
    a persona name repeated across the files is refused (the validation split is by persona)."""
    import subprocess

    from datasets import load_from_disk

    from clerk.generator.timelines import generate_from_config

    closed, opened = tmp_path / "closed.jsonl", tmp_path / "open.jsonl"
    write_timelines(closed, generate_from_config(GeneratorConfig(seed=3, split="train", personas=4)))
    write_timelines(opened, _open("train", seed=3, personas=3))
    out = tmp_path / "sft"
    cmd = ["clerk", "build-sft", "--seed", "1", "--tasks", "consolidate", "--val-fraction", "0.25"]
    subprocess.run([*cmd, "--timelines", str(closed), str(opened), "--out", str(out)], check=True, capture_output=True)
    rows = [row for split in ("train", "validation") for row in load_from_disk(str(out / split)).to_list()]
    assert len(rows) == (4 + 3) * 8
    open_rows = [r for r in rows if "+" in r["persona"]]
    assert {r["persona"] for r in open_rows} == {tl["name"] for tl in load_timelines(opened)}
    assert all(r["messages"][0]["content"].split("\n---\n", 1)[1].startswith("date: ") for r in open_rows)
    stats = json.loads((out / "sft_stats.json").read_text())
    assert isinstance(stats["timelines_sha256"], list) and len(stats["timelines_sha256"]) == 2
    bad = subprocess.run([*cmd, "--timelines", str(closed), str(closed), "--out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "name repeated" in bad.stderr
