"""Where the policy fails: its first error per session, by op and by what the wording did (SPEC §6.3).

The evaluation keeps every program a model writer wrote (``programs.jsonl.gz``,
:mod:`clerk.evaluate.programs`). This table reads them against the gold timelines of the same job
and asks, for every gold event of every session (a fact stated, changed or retracted in one user
line), whether the writer's program for that session reproduced its op. Only programs written
from the gold ledger count: the teacher-forced rewrite where the writer's own ledger had drifted,
else the closed-loop write when its ledger still held the gold facts (so an error here is the writer's
own, not the echo of an earlier one). Sessions whose ledger had drifted and that were not
rewritten teacher-forced are left out and counted.

Per session the **first error** is the first gold event, in transcript order, whose op the program
missed; when every event's op is there, a missed EVICT, else the first extra op (an invalid one,
or a valid op gold does not have). Each event is described by what its line did:

* ``predicate word``: a word of the predicate's catalogue phrase (three letters or more) is in the
  line, or not (``My top group is Static Bloom.`` states ``favourite_band`` without it);
* ``value first``: the line opens with the value (``Dr Ibekwe looks after my health now``);
* ``new before old`` (UPDATE): both values are in the line and the new one comes first, the old
  one comes first, or the old value is not stated;
* ``negation word`` (TOMBSTONE): the retraction has a negation word (no, not, never, ...) or not.

The table has one row per (split, op, feature, value): events, events whose op was missed (and
the rate), and sessions whose first error it was; summed over seeds. Teacher-forced op-F1 says
how often the policy fails; this table says where.

    clerk table-errors --timelines results/data/*/test.jsonl results/data/*/test_ood.jsonl \\
        --programs results/eval/*/test/programs.jsonl.gz results/eval/*/test_ood/programs.jsonl.gz \\
        --out results/table_errors.csv --markdown results/table_errors.md
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk.errors import UserError

#: Words that make a retraction a negation (lower-cased word match; ``n't`` as a suffix).
NEGATION_WORDS = frozenset({"no", "not", "never", "none", "nothing", "nor", "neither", "without", "anymore",
                            "nobody", "nowhere", "cannot"})
#: The features of an event's line, in table order; the ops each applies to.
FEATURES = (("predicate word", ("ADD", "UPDATE", "TOMBSTONE")), ("value first", ("ADD", "UPDATE")),
            ("new before old", ("UPDATE",)), ("negation word", ("TOMBSTONE",)))
#: Splits the table reads, in order: the paper's two, and the validation wording recipes are judged on.
SPLITS = ("test", "test_ood", "val_ood")
#: Rows of the CSV: one per (split, op, feature, value).
COLUMNS = ("split", "op", "feature", "value", "events", "missed", "missed_rate", "first_errors", "sessions",
           "seeds")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _contains(text: str, phrase: str) -> int:
    """Character position of ``phrase`` in ``text`` as whole words (case ignored), -1 if absent.

    >>> _contains("I left Lisbon for Oslo", "oslo"), _contains("Oslovia", "Oslo")
    (18, -1)
    """
    match = re.search(rf"(?<!\w){re.escape(phrase.lower())}(?!\w)", text.lower())
    return match.start() if match else -1


def wording(event: dict[str, Any], phrase: str, old: str | None) -> dict[str, str]:
    """What an event's line did, feature -> value (only the features of its op).

    >>> wording({"kind": "UPDATE", "value": "pho", "text": "Forget tacos, the dish I love most is pho."},
    ...         "favourite food", "tacos")
    {'predicate word': 'absent', 'value first': 'no', 'new before old': 'old first'}
    >>> wording({"kind": "TOMBSTONE", "value": "chef", "text": "I don't cook for a living anymore."}, "job", "chef")
    {'predicate word': 'absent', 'negation word': 'yes'}
    """
    text, kind = event["text"], event["kind"]
    words = set(_words(text))
    out: dict[str, str] = {}
    content = [w for w in _words(phrase) if len(w) >= 3]
    out["predicate word"] = "present" if any(w in words for w in content) else "absent"
    value = str(event.get("value") or "")
    if kind in ("ADD", "UPDATE"):
        out["value first"] = "yes" if value and _contains(text, value) == 0 else "no"
    if kind == "UPDATE":
        new_at, old_at = _contains(text, value), _contains(text, old) if old else -1
        out["new before old"] = "old not stated" if old_at < 0 else "new first" if new_at < old_at else "old first"
    if kind == "TOMBSTONE":
        negated = words & NEGATION_WORDS or any(w.endswith("n't") for w in words)
        out["negation word"] = "yes" if negated else "no"
    return out


def session_errors(session: dict[str, Any], ops: list) -> tuple[list[tuple[str | None, bool]], str | None]:
    """For one session written from its gold ledger: per event, its gold op's kind and whether the
    program missed that op (an event's gold op is the one that touches its predicate: an UPDATE of a
    fact evicted earlier is an ADD; the retraction of a fact the ledger no longer holds has none,
    None); and the kind of the session's first error (an event's op,
    ``EVICT``, ``extra <OP>``, ``invalid <OP>``) or None.

    >>> s = {"index": 1, "ledger_before": L.empty_ledger(2), "events": [
    ...     {"kind": "ADD", "pred": "job", "value": "chef", "text": "I'm a chef."}],
    ...     "gold_ops": [{"op": "ADD", "s": "Ari", "p": "job", "o": "chef"}]}
    >>> session_errors(s, [{"op": "ADD", "s": "Ari", "p": "job", "o": "chef"}])
    ([('ADD', False)], None)
    >>> session_errors(s, [{"op": "ADD", "s": "Ari", "p": "job", "o": "cook"}])
    ([('ADD', True)], 'ADD')
    """
    from clerk.metrics import canonical_ops

    before, now = session["ledger_before"], session["index"]
    gold_ops = canonical_ops(before, session["gold_ops"], now)
    mine = Counter(canonical_ops(before, ops, now))
    missed_ops, extra = Counter(gold_ops) - mine, list((mine - Counter(gold_ops)).elements())
    unused = [op for op in gold_ops if op[0] != "EVICT"]
    out = []
    for event in session["events"]:
        op = next((op for op in unused if op[2] == event["pred"]), None)
        if op is None:  # nothing to write: e.g. the retraction of a fact the ledger no longer holds
            out.append((None, False))
            continue
        unused.remove(op)
        out.append((op[0], missed_ops[op] > 0))
        if missed_ops[op] > 0:
            missed_ops[op] -= 1
    first = next((kind for kind, miss in out if miss), None)
    if first is None and any(op[0] == "EVICT" and n > 0 for op, n in missed_ops.items()):
        first = "EVICT"
    if first is None and extra:
        first = f"invalid {extra[0][1] or 'op'}" if extra[0][0] == "INVALID" else f"extra {extra[0][0]}"
    return out, first


def facts(ledger: L.Ledger) -> list[tuple]:
    """The facts of a ledger, slot by slot: (slot, subject, predicate, value, validity, previous
    value) of each occupied slot; what the reads of a session change (uses, time stamps) is left out.

    >>> facts([{"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": None, "v": 1, "born": 0, "t": 2, "uses": 5}, {"i": 1}])
    [(0, 'Ari', 'job', 'chef', 1, None)]
    """
    return sorted((slot["i"], slot["s"], slot["p"], slot["o"], slot["v"], slot["prev"]) for slot in L.occupied(ledger))


def gold_written(rows: list[dict[str, Any]], timeline: dict[str, Any]) -> dict[int, list]:
    """Session index -> the ops the writer wrote from the gold ledger before it: the teacher-forced
    rewrite where there is one (the evaluation rewrites exactly the sessions whose ledger had
    drifted), else the closed-loop write when the ledger it was written against (the previous
    write's) holds the gold ledger's facts; drifted sessions without a rewrite are absent."""
    closed = {r["session"]: r for r in rows if not r["teacher_forced"]}
    forced = {r["session"]: r for r in rows if r["teacher_forced"]}
    out: dict[int, list] = {}
    for session in timeline["sessions"]:
        index = session["index"]
        if index in forced:
            out[index] = forced[index]["ops"]
            continue
        previous = closed.get(index - 1, {}).get("ledger")
        before = L.deserialize(previous) if index and previous is not None else \
            L.empty_ledger(timeline["budget"]) if not index else None
        if index in closed and before is not None and facts(before) == facts(session["ledger_before"]):
            out[index] = closed[index]["ops"]
    return out


def event_rows(timelines: list[dict[str, Any]], programs: list[dict[str, Any]], phrases: dict[str, str],
               system: str, split: str, seed: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One row per gold event of every session written from gold (its features, missed, whether it
    was its session's first error), plus per-session first-error rows for errors that are no event
    (``EVICT``, extra and invalid ops), and counts of the sessions used and left out."""
    mine: dict[str, list[dict]] = {}
    for row in programs:
        if row["system"] == system:
            mine.setdefault(row["persona"], []).append(row)
    out, counts = [], Counter()
    for tl in timelines:
        written = gold_written(mine.get(tl["name"], []), tl)
        for session in tl["sessions"]:
            if session["index"] not in written:
                counts["sessions drifted, not rewritten"] += 1
                continue
            counts["sessions"] += 1
            per_event, first = session_errors(session, written[session["index"]])
            first_at = next((k for k, (_, miss) in enumerate(per_event) if miss), None)
            for k, (event, (op, miss)) in enumerate(zip(session["events"], per_event)):
                if op is None:
                    continue
                i = L.find(session["ledger_before"], tl["name"], event["pred"])
                old = session["ledger_before"][i]["o"] if i is not None else None
                out.append({"split": split, "seed": seed, "op": op, "missed": miss, "first": k == first_at,
                            **wording({**event, "kind": op}, phrases[event["pred"]], old)})
            if first is not None and first_at is None:
                out.append({"split": split, "seed": seed, "op": first, "missed": True, "first": True})
    return out, dict(counts)


def error_table(rows: list[dict[str, Any]], sessions: dict[str, int]) -> list[dict[str, Any]]:
    """The table's rows (:data:`COLUMNS`): per (split, op, feature, value) and one ``all`` row per
    (split, op); errors that are no event (EVICT, extra and invalid ops) get their ``all`` row only."""
    out = []
    for split in SPLITS:
        here = [r for r in rows if r["split"] == split]
        seeds = ";".join(str(s) for s in sorted({r["seed"] for r in here}))
        ops = sorted({r["op"] for r in here}, key=lambda op: (op not in ("ADD", "UPDATE", "TOMBSTONE"), op))
        for op in ops:
            mine = [r for r in here if r["op"] == op]
            groups = [("all", "", mine)]
            for feature, applies in FEATURES:
                if op in applies:
                    values = sorted({r[feature] for r in mine if feature in r})
                    groups += [(feature, v, [r for r in mine if r.get(feature) == v]) for v in values]
            for feature, value, group in groups:
                events = sum(1 for r in group if "predicate word" in r)
                missed = sum(r["missed"] for r in group if "predicate word" in r)
                out.append({"split": split, "op": op, "feature": feature, "value": value, "events": events,
                            "missed": missed, "missed_rate": missed / events if events else float("nan"),
                            "first_errors": sum(r["first"] for r in group), "sessions": sessions.get(split, 0),
                            "seeds": seeds})
    return out


def error_markdown(rows: list[dict[str, Any]], left_out: dict[str, int]) -> str:
    """The paper's rendering: per split, each op's events, missed rate and first errors, and each
    wording feature's rows under it."""
    from clerk.report.tabular import markdown_table

    body = []
    for r in rows:
        what = f"{r['op']}" if r["feature"] == "all" else f"  {r['feature']}: {r['value']}"
        rate = "–" if not r["events"] else f"{r['missed_rate']:.3f}"
        body.append([r["split"], what, str(r["events"]) if r["events"] else "–", rate, str(r["first_errors"])])
    sessions = {r["split"]: r["sessions"] for r in rows}
    note = ("\nSessions written from the gold ledger (teacher-forced where the writer's own ledger had drifted): "
            + ", ".join(f"{split} {n}" for split, n in sessions.items())
            + (f"; left out (drifted, not rewritten): {', '.join(f'{s} {n}' for s, n in left_out.items())}"
               if any(left_out.values()) else "")
            + ". Events: gold facts stated, changed or retracted in one user line; missed: the program lacks the "
            "event's op; first errors: sessions whose first error (in transcript order) it is.")
    return markdown_table(["split", "op / wording", "events", "missed", "first errors"], body,
                          [":---", ":---", "---:", "---:", "---:"]) + note


def table_errors(timeline_files: Sequence[str], program_files: Sequence[str], system: str):
    """(table rows, Markdown) of ``system``'s first errors over the matching timeline and programs
    files: a programs file is ``.../<seed>/<split>/programs.jsonl.gz``, its timelines
    ``.../<seed>/<split>.jsonl``.

    Raises:
        UserError: a programs file without its timelines file, or no programs file of a split.
    """
    from clerk.evaluate.programs import read_programs
    from clerk.generator.catalogue import load_catalogue
    from clerk.generator.files import load_timelines

    timelines = {(Path(f).parent.name, Path(f).stem): f for f in timeline_files}
    rows, sessions, left_out = [], Counter(), Counter()
    for path in program_files:
        seed, split = Path(path).parent.parent.name, Path(path).parent.name
        if (seed, split) not in timelines:
            raise UserError(f"--programs: {path!r} has no timelines file of seed {seed}, split {split} in --timelines")
        if split not in SPLITS:
            raise UserError(f"--programs: {path!r} is of split {split!r}; the table reads {', '.join(SPLITS)}")
        phrases = {p.key: p.phrase for p in load_catalogue(split=split).predicates}
        mine, counts = event_rows(load_timelines(timelines[(seed, split)], "--timelines"), read_programs(path),
                                  phrases, system, split, int(seed))
        rows += mine
        sessions[split] += counts.get("sessions", 0)
        left_out[split] += counts.get("sessions drifted, not rewritten", 0)
    if not rows:
        raise UserError(f"--programs: no session of {system} written from the gold ledger in {len(program_files)} files")
    table = error_table(rows, dict(sessions))
    return table, error_markdown(table, dict(left_out))


def main(args: argparse.Namespace) -> None:
    """``clerk table-errors``: the error table as CSV and Markdown."""
    import pandas as pd

    from clerk.report.tabular import write_csv

    table, markdown = table_errors(args.timelines, args.programs, args.system)
    write_csv(pd.DataFrame(table, columns=list(COLUMNS)), args.out)
    if args.markdown:
        from clerk.atomic import atomic_write

        with atomic_write(args.markdown) as fh:
            fh.write(markdown + "\n")
    print(f"clerk table-errors: {len(table)} rows -> {args.out}", file=sys.stderr)


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add the ``table-errors`` verb."""
    from clerk.memory import MEMORY_REGISTRY

    p = sub.add_parser(
        "table-errors", help="where the policy fails: first error per session by op and by the line's wording",
        description="Read the evaluation's programs files against their gold timelines (test and test_ood) and "
        "count, per op and per feature of the line's wording, the gold events a writer missed when writing from "
        "the gold ledger, and each session's first error.")
    p.add_argument("--timelines", nargs="+", required=True, metavar="FILE",
                   help="the jobs' timelines, results/data/<seed>/<split>.jsonl")
    p.add_argument("--programs", nargs="+", required=True, metavar="FILE",
                   help="the evaluation's programs files, results/eval/<seed>/<split>/programs.jsonl.gz")
    p.add_argument("--system", default=MEMORY_REGISTRY.reference(), choices=MEMORY_REGISTRY.names(),
                   help="the model writer whose programs are read (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="CSV", help="output CSV, e.g. results/table_errors.csv")
    p.add_argument("--markdown", default=None, metavar="MD", help="also write the Markdown table here")
    p.set_defaults(func=main)
