"""The error table (clerk/report/errors.py): first errors per session, by op and by the line's wording.

Programs are made from the gold timelines themselves (the reducer's real ledgers), then broken on
purpose, so each count has a known answer.

    python -m pytest tests/test_errors.py -q
"""

from __future__ import annotations

import copy

import pytest

from clerk import ledger as L
from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.evaluate.programs import write_programs
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.report.errors import error_table, event_rows, gold_written, session_errors, table_errors, wording


def _rows(timeline, ops_of=lambda s: s["gold_ops"]) -> list[dict]:
    """Closed-loop programs records of one persona that write ``ops_of(session)`` and keep the gold
    ledger after each session (as a writer that never drifts would)."""
    return [{"system": "clerk", "persona": timeline["name"], "session": s["index"], "teacher_forced": False,
             "text": "", "ops": ops_of(s), "verdicts": ["applied"] * len(ops_of(s)),
             "ledger": L.serialize(s["ledger_after"])} for s in timeline["sessions"]]


@pytest.fixture(scope="module")
def timelines():
    return generate(3, "test", personas=4, sessions=5, budget=6)


class TestWording:
    @pytest.mark.parametrize(("event", "phrase", "old", "expected"), [
        ({"kind": "ADD", "value": "cat", "text": "Cat people unite: my cat is called Mo."}, "pet", None,
         {"predicate word": "absent", "value first": "yes"}),
        ({"kind": "ADD", "value": "cat", "text": "My pet is a cat."}, "pet", None,
         {"predicate word": "present", "value first": "no"}),
        ({"kind": "UPDATE", "value": "chef", "text": "Chef now, no longer a nurse."}, "job", "nurse",
         {"predicate word": "absent", "value first": "yes", "new before old": "new first"}),
        ({"kind": "UPDATE", "value": "chef", "text": "I retrained as a chef."}, "job", "nurse",
         {"predicate word": "absent", "value first": "no", "new before old": "old not stated"}),
        ({"kind": "TOMBSTONE", "value": "chef", "text": "The kitchen and I parted ways."}, "job", "chef",
         {"predicate word": "absent", "negation word": "no"}),
        ({"kind": "TOMBSTONE", "value": "chef", "text": "I haven't got a job."}, "job", "chef",
         {"predicate word": "present", "negation word": "yes"}),
    ])
    def test_features(self, event, phrase, old, expected):
        assert wording(event, phrase, old) == expected


class TestSessions:
    def test_gold_programs_make_no_error(self, timelines):
        """Programs equal to gold: every event reproduced, no first error anywhere."""
        for tl in timelines:
            for s in tl["sessions"]:
                per_event, first = session_errors(s, s["gold_ops"])
                assert not any(miss for _, miss in per_event) and first is None

    def test_a_dropped_op_is_the_first_error_of_its_session(self, timelines):
        """Dropping a session's second event's op makes that event missed and the first error; an
        extra invalid op alone is an `invalid` first error."""
        tl = timelines[0]
        s = next(s for s in tl["sessions"] if len(s["events"]) >= 2)
        target = s["events"][1]
        from clerk.metrics import canonical_ops

        touched = [canonical_ops(s["ledger_before"], [op], s["index"])[0][2] for op in s["gold_ops"]]
        ops = [op for op, pred in zip(s["gold_ops"], touched) if pred != target["pred"] or op["op"] == "EVICT"]
        per_event, first = session_errors(s, ops)
        assert per_event[1][1] and not per_event[0][1] and first == per_event[1][0]
        bogus = [*s["gold_ops"], {"op": "EVICT", "i": 99}]
        per_event, first = session_errors(s, bogus)
        assert not any(miss for _, miss in per_event) and first == "invalid EVICT"


class TestWrittenFromGold:
    def test_teacher_forced_rewrite_wins_and_drifted_sessions_without_one_are_left_out(self, timelines):
        """A drifted closed-loop ledger is not gold: that session counts only through its
        teacher-forced rewrite (the guard: without it, the drifted write would be scored)."""
        tl = timelines[1]
        rows = _rows(tl)
        assert sorted(gold_written(rows, tl)) == [s["index"] for s in tl["sessions"]]
        drifted = copy.deepcopy(rows)
        drifted[1]["ledger"] = L.serialize(L.empty_ledger(tl["budget"]))  # after session 1 the ledger departs
        written = gold_written(drifted, tl)
        assert 2 not in written and 1 in written
        assert 2 in gold_written([*drifted, {**drifted[2], "teacher_forced": True, "ledger": None}], tl)


class TestTable:
    def test_counts_add_up(self, timelines):
        """Missing every UPDATE: every event whose gold op is an UPDATE is missed; other ops never."""
        programs = [row for tl in timelines for row in _rows(
            tl, lambda s: [op for op in s["gold_ops"] if op["op"] != "UPDATE"])]
        phrases = {p: p.replace("_", " ") for p in {e["pred"] for tl in timelines for s in tl["sessions"]
                                                     for e in s["events"]}}
        rows, counts = event_rows(timelines, programs, phrases, "clerk", "test", 3)
        assert counts == {"sessions": sum(len(tl["sessions"]) for tl in timelines)}
        updates = [r for r in rows if r["op"] == "UPDATE"]
        assert updates and all(r["missed"] for r in updates)
        assert not any(r["missed"] for r in rows if r["op"] in ("ADD", "TOMBSTONE"))
        table = error_table(rows, {"test": counts["sessions"]})
        (all_updates,) = [t for t in table if t["op"] == "UPDATE" and t["feature"] == "all"]
        assert all_updates["events"] == len(updates) and all_updates["missed_rate"] == 1.0
        assert all_updates["first_errors"] == sum(r["first"] for r in updates)
        by_value = [t for t in table if t["op"] == "UPDATE" and t["feature"] == "new before old"]
        assert sum(t["events"] for t in by_value) == len(updates)

    def test_verb_writes_csv_and_markdown(self, timelines, tmp_path):
        """`clerk table-errors` over <seed>/<split> files; a programs file without its timelines is refused."""
        (tmp_path / "data" / "3").mkdir(parents=True)
        (tmp_path / "eval" / "3" / "test").mkdir(parents=True)
        write_timelines(tmp_path / "data" / "3" / "test.jsonl", timelines)
        write_programs(tmp_path / "eval" / "3" / "test" / "programs.jsonl.gz", [r for tl in timelines for r in _rows(tl)])
        clerk_main(["table-errors", "--timelines", str(tmp_path / "data" / "3" / "test.jsonl"), "--programs",
                    str(tmp_path / "eval" / "3" / "test" / "programs.jsonl.gz"), "--out", str(tmp_path / "t.csv"),
                    "--markdown", str(tmp_path / "t.md")])
        text = (tmp_path / "t.md").read_text(encoding="utf-8")
        assert text.startswith("| split | op / wording |") and "test | ADD |" in text
        assert (tmp_path / "t.csv").read_text(encoding="utf-8").startswith("split,op,feature,value,events")
        with pytest.raises(UserError, match="has no timelines file of seed 3, split test"):
            table_errors([], [str(tmp_path / "eval" / "3" / "test" / "programs.jsonl.gz")], "clerk")
        # the validation split is read too; a split the table has no row for is refused, not skipped
        for split in ("val_ood", "long"):
            (tmp_path / "eval" / "3" / split).mkdir(parents=True)
            write_timelines(tmp_path / "data" / "3" / f"{split}.jsonl", timelines)
            write_programs(tmp_path / "eval" / "3" / split / "programs.jsonl.gz", [r for tl in timelines for r in _rows(tl)])
        table, _ = table_errors([str(tmp_path / "data" / "3" / "val_ood.jsonl")],
                                [str(tmp_path / "eval" / "3" / "val_ood" / "programs.jsonl.gz")], "clerk")
        assert {row["split"] for row in table} == {"val_ood"}
        with pytest.raises(UserError, match="is of split 'long'; the table reads test, test_ood, val_ood"):
            table_errors([str(tmp_path / "data" / "3" / "long.jsonl")],
                         [str(tmp_path / "eval" / "3" / "long" / "programs.jsonl.gz")], "clerk")
