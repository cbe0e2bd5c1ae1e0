"""Metrics of ``clerk evaluate``: the per-write ledger record and the per-system summary.

Definitions: *stale error* = the chosen option is a value the fact held earlier
(``generator.stale_answers``): on a ``superseded`` question an earlier value, on a ``negated``
question a value of the retracted fact. ``stale_error_rate`` is over superseded questions (SPEC
§6); ``stale_error_rate_negated`` over negated ones. *Invalid-op rate* = invalid ops / predicted ops;
``invalid_reasons`` = invalid ops per rejection code (``clerk.ledger.REJECTION_CODES``, SPEC §1.3);
*parse-failure rate* = writes whose text held no JSON list / writes. *Read tokens* = tokens of
the view text under the reader's tokenizer (the answer prompt's frame and question are the same
for every system and not counted). *Write tokens* = generated tokens per session (0 for non-model writers). *Drift
rate* = writes whose own ledger before the session differed from the gold one / writes;
*teacher-forced* op scores = the same scores with every session written from the gold ledger
(:mod:`clerk.evaluate.teacher`).

    python -c "import doctest, clerk.evaluate.summary as m; print(doctest.testmod(m))"
"""

from __future__ import annotations

import math
from typing import Any

from clerk.evaluate.programs import invalid_reasons
from clerk.evaluate.schemas import OP_FIELDS, QUESTION_TYPES
from clerk.evaluate.teacher import drifted
from clerk.form import timeline_form
from clerk.ledger import OP_KINDS
from clerk.memory import EvalConfig, MemorySystem
from clerk.metrics import micro_op_scores, op_scores, state_f1


def mean_or_none(values: list[float]) -> float | None:
    """Mean, or None for no values.

    >>> mean_or_none([1, 2]), mean_or_none([])
    (1.5, None)
    """
    return math.fsum(values) / len(values) if values else None


def is_stale_error(timeline: dict, index: int, question: dict, chosen: int) -> bool:
    """The chosen option is a stale value (``generator.stale_answers``): an earlier value of a
    superseded fact, or any value of a retracted fact answered as if still true."""
    from clerk.generator.questions import stale_answers

    if not 0 <= chosen < len(question["options"]):
        return False
    return question["options"][chosen] in stale_answers(timeline, index, question)


def ledger_row(name: str, tl: dict, session: dict, before: list, result: Any) -> dict:
    """The ``ledgers`` record of one write; the predicted program resolves on the system's own
    ledger, the gold one on the gold ledger (ops compare as facts). The teacher-forced columns
    are null until :func:`set_teacher_forced` fills them."""
    scores = op_scores(before, result.program, session["gold_ops"], session["index"],
                       gold_ledger_before=session["ledger_before"], form=timeline_form(tl))
    row = {
        "system": name, "persona": tl["name"], "split": tl["split"], "seed": tl["seed"], "session": session["index"],
        "n_ops": len(result.program), "n_invalid": result.n_invalid, "parse_failure": bool(result.parse_failed),
        "write_tokens": int(result.write_tokens), "seconds": float(result.seconds),
        "state_f1": float(state_f1(result.state, session["ledger_after"])),
        "state_exact": result.state == session["ledger_after"],
        "drifted": drifted(before, session),
        **op_columns("op", scores), **op_columns("op_tf", None),
    }
    row["_scores"] = scores  # kept in memory for micro-averaging; dropped before writing
    row["_verdicts"] = result.verdicts  # for the counts of rejection codes; dropped before writing
    row["_tf_scores"] = None
    return row


def op_columns(prefix: str, scores: dict | None) -> dict:
    """The flat op-score columns of a ``ledgers`` record: ``<prefix>_{tp..f1}`` overall and
    ``<prefix>_<KIND>_{tp..f1}`` per op kind; all null for no scores.

    >>> cols = op_columns("op_tf", None); len(cols), cols["op_tf_EVICT_f1"]
    (30, None)
    """
    out = {f"{prefix}_{key}": None if scores is None else scores[key] for key in OP_FIELDS}
    for kind in OP_KINDS:
        for key in OP_FIELDS:
            out[f"{prefix}_{kind}_{key}"] = None if scores is None else scores["by_type"][kind][key]
    return out


def set_teacher_forced(row: dict, scores: dict) -> None:
    """Fill a ``ledgers`` record's teacher-forced columns (:mod:`clerk.evaluate.teacher`)."""
    row.update(op_columns("op_tf", scores))
    row["_tf_scores"] = scores


def summarize(name: str, system: MemorySystem, predictions: list[dict], ledger_rows: list[dict],
               write_tokens: list[int], seconds: float, cfg: EvalConfig, tf_seconds: float = 0.0) -> dict:
    """The ``metrics.system`` record of one system; ``tf_seconds``: its teacher-forced extra writes'
    wall seconds (not part of ``wall_seconds``)."""
    rows = [r for r in predictions if r["system"] == name]
    writes = [r for r in ledger_rows if r["system"] == name]
    types = list(QUESTION_TYPES) + sorted({r["type"] for r in rows} - set(QUESTION_TYPES))
    superseded = [r for r in rows if r["type"] == "superseded"]
    out = {
        "version": system.version,
        "is_ledger": system.is_ledger,
        "reader": {"method": cfg.reader, "model": None if cfg.reader == "rule" else system.reader_model()},
        "n_questions": len(rows),
        "accuracy": mean_or_none([float(r["correct"]) for r in rows]),
        "accuracy_by_type": {t: mean_or_none([float(r["correct"]) for r in rows if r["type"] == t]) for t in types},
        "n_by_type": {t: sum(1 for r in rows if r["type"] == t) for t in types},
        "stale_error_rate": mean_or_none([float(r["stale_error"]) for r in superseded]),
        "n_superseded": len(superseded),
        "stale_error_rate_negated": mean_or_none([float(r["stale_error"]) for r in rows if r["type"] == "negated"]),
        "read_tokens_mean": mean_or_none([float(r["read_tokens"]) for r in rows]),
        "truncated_rate": mean_or_none([float(r["truncated"]) for r in rows]),
        "n_writes": len(writes) if system.is_ledger else len(write_tokens),
        "write_tokens_mean": mean_or_none([float(r["write_tokens"]) for r in writes] if system.is_ledger
                                   else [float(x) for x in write_tokens]),
        "wall_seconds": float(seconds),
        "op": None, "state_f1_mean": None, "state_exact_rate": None, "invalid_op_rate": None,
        "parse_failure_rate": None, "n_ops": None, "invalid_reasons": None,
        "drift_rate": None, "op_teacher_forced": None, "teacher_forced_writes": None, "teacher_forced_seconds": None,
    }
    if system.is_ledger:
        n_ops = sum(r["n_ops"] for r in writes)
        out.update(
            op=micro_op_scores(r["_scores"] for r in writes),
            state_f1_mean=mean_or_none([r["state_f1"] for r in writes]),
            state_exact_rate=mean_or_none([float(r["state_exact"]) for r in writes]),
            invalid_op_rate=sum(r["n_invalid"] for r in writes) / n_ops if n_ops else 0.0,
            parse_failure_rate=mean_or_none([float(r["parse_failure"]) for r in writes]),
            n_ops=n_ops,
            invalid_reasons=invalid_reasons(r["_verdicts"] for r in writes),
            drift_rate=mean_or_none([float(r["drifted"]) for r in writes]),
        )
    if system.is_ledger and name in cfg.teacher_forced:
        assert all(r["_tf_scores"] is not None for r in writes), f"{name}: a write without teacher-forced scores"
        out.update(op_teacher_forced=micro_op_scores(r["_tf_scores"] for r in writes),
                   teacher_forced_writes=sum(1 for r in writes if r["drifted"]), teacher_forced_seconds=float(tf_seconds))
    return out
