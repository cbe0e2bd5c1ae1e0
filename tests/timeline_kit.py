"""A hand-scripted timeline builder for the memory and evaluation tests.

Builds timelines in the SPEC "Data formats" shape from a short script of events and questions,
with gold programs, ledgers and question-time ``uses`` bookkeeping computed by the real reducer,
so tests can state exactly what each view must contain without depending on the generator.
"""

from __future__ import annotations

from clerk import ledger as L
from clerk.prompts import NEGATED_ANSWER, UNKNOWN_ANSWER

POOL = ("nurse", "chef", "pilot", "Oslo", "Lima", "Rome", "cat", "dog", "Volvo", "Fiat", "chess", "golf")


def _answer(ledger: list, name: str, qtype: str, pred: str) -> tuple[str, str | None]:
    """(gold answer, stale value or None) for a question on the gold ledger."""
    idx = L.find(ledger, name, pred)
    if qtype == "unknown":
        assert idx is None
        return UNKNOWN_ANSWER, None
    slot = ledger[idx]
    if qtype == "negated":
        assert slot["v"] == 0
        return NEGATED_ANSWER, slot["o"]
    if qtype == "temporal":
        return (slot["prev"] if slot["v"] == 1 else slot["o"]), None
    assert slot["v"] == 1
    return slot["o"], slot["prev"]


def build_timeline(name: str, script: list[dict], budget: int = 3, split: str = "train", seed: int = 1) -> dict:
    """A timeline from ``script``: per session ``{"events": [(kind, pred, value)], "questions": [(type, pred)]}``.

    Gold ops follow the SPEC: ADD into a full ledger evicts the least salient slot first.
    """
    gold = L.empty_ledger(budget)
    sessions = []
    for index, step in enumerate(script):
        questions = []
        for qtype, pred in step.get("questions", []):
            answer, stale = _answer(gold, name, qtype, pred)
            distractors = [v for v in POOL if v not in (answer, stale)]
            options = [answer] + ([stale] if stale else []) + [UNKNOWN_ANSWER, NEGATED_ANSWER] + distractors
            options = list(dict.fromkeys(options))[:10]
            # a fixed rotation instead of a shuffle: the correct index varies with the question
            shift = (index + len(questions)) % 10
            options = options[shift:] + options[:shift]
            questions.append({"question": f"What is {name}'s {pred}?", "type": qtype, "pred": pred,
                              "answer": answer, "options": options, "correct": options.index(answer)})
            gold = L.record_use(gold, name, pred)
        before = gold
        ops, turns, events = [], [], []
        for kind, pred, value in step.get("events", []):
            events.append({"kind": kind, "pred": pred, "value": value, "text": f"My {pred} is {value}."})
            turns += [{"role": "user", "content": f"My {pred} is now {value}." if value else f"I no longer have a {pred}."},
                      {"role": "assistant", "content": "Noted."}]
            if kind == "ADD":
                if all(not L.is_free(s) for s in gold):
                    op = {"op": "EVICT", "i": L.least_salient(gold)}
                    ops.append(op)
                    gold, _ = L.reduce(gold, [op], index)
                op = {"op": "ADD", "s": name, "p": pred, "o": value}
            elif kind == "UPDATE":
                op = {"op": "UPDATE", "i": L.find(gold, name, pred), "s": name, "p": pred, "o": value}
            else:
                op = {"op": "TOMBSTONE", "i": L.find(gold, name, pred)}
            ops.append(op)
            gold, _ = L.reduce(gold, [op], index)
        turns += [{"role": "user", "content": "Nice weather today."}, {"role": "assistant", "content": "Indeed."}]
        after, _ = L.reduce(before, ops, index)  # strict: gold programs must apply cleanly
        assert after == gold
        sessions.append({"index": index, "turns": turns, "events": events, "questions": questions,
                         "gold_ops": ops, "ledger_before": before, "ledger_after": after})
    return {"name": name, "split": split, "seed": seed, "budget": budget, "sessions": sessions}


#: Two personas, 5 sessions, every question type, an eviction (budget 3) and supersessions.
SCRIPT_A = [
    {"events": [("ADD", "job", "nurse"), ("ADD", "city", "Oslo")]},
    {"events": [("UPDATE", "job", "chef"), ("ADD", "pet", "cat")], "questions": [("current", "city"), ("unknown", "car")]},
    {"events": [("TOMBSTONE", "city", None)], "questions": [("superseded", "job"), ("current", "pet")]},
    {"events": [("ADD", "car", "Volvo")], "questions": [("negated", "city"), ("temporal", "job")]},
    {"events": [("UPDATE", "job", "pilot")], "questions": [("current", "car"), ("negated", "city")]},
]
SCRIPT_B = [
    {"events": [("ADD", "hobby", "chess")]},
    {"events": [("ADD", "pet", "dog")], "questions": [("current", "hobby")]},
    {"events": [("UPDATE", "hobby", "golf")], "questions": [("unknown", "car"), ("current", "pet")]},
    {"events": [("ADD", "city", "Lima")], "questions": [("superseded", "hobby")]},
    {"events": [("UPDATE", "city", "Rome")], "questions": [("temporal", "hobby")]},
]


def two_personas(split: str = "train") -> list[dict]:
    """The two scripted personas (Ari, Bo)."""
    return [build_timeline("Ari", SCRIPT_A, split=split), build_timeline("Bo", SCRIPT_B, split=split)]
