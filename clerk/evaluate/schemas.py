"""The record formats of ``clerk evaluate``: field -> allowed exact types, validated on write.

``predictions`` (one row per question x system), ``ledgers`` (one row per session x persona x
ledger system), ``programs`` (one row per write of a model writer: :mod:`clerk.evaluate.programs`,
shared with ``clerk.locomo``), ``metrics`` (the per-seed ``metrics.json``) and ``metrics.system``
(its record of one system). Other runners (``clerk.locomo``) validate their own schemas with the
same functions.

    python -c "from clerk.evaluate.schemas import SCHEMAS; print({k: len(v) for k, v in SCHEMAS.items()})"
"""

from __future__ import annotations

import json
from pathlib import Path

from clerk.ledger import OP_KINDS

QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal")
METRICS_SCHEMA_ID = "clerk.evaluate.metrics/1"

_N = type(None)
OP_FIELDS = ("tp", "fp", "fn", "precision", "recall", "f1")


def _op_columns(prefix: str = "op", nullable: bool = False) -> dict[str, tuple]:
    cols: dict[str, tuple] = {}
    null = (_N,) if nullable else ()
    for head in [prefix] + [f"{prefix}_{kind}" for kind in OP_KINDS]:
        for name in OP_FIELDS:
            cols[f"{head}_{name}"] = ((int,) if name in ("tp", "fp", "fn") else (float,)) + null
    return cols


#: Field -> allowed exact types, per record kind. Validated on write and in the tests.
SCHEMAS: dict[str, dict[str, tuple]] = {
    "predictions": {
        "system": (str,),  # registry key
        "persona": (str,),  # timeline "name"
        "split": (str,),
        "seed": (int,),  # generator seed of the timeline
        "session": (int,),  # session index the question is asked in
        "q": (int,),  # position of the question within the session
        "type": (str,),  # question type (QUESTION_TYPES)
        "pred": (str,),  # predicate asked about
        "chosen": (int,),  # chosen option index; -1 = the rule reader's answer is not an option
        "correct_index": (int,),
        "correct": (bool,),
        "stale_error": (bool,),  # chose a stale value (superseded or negated question)
        "read_tokens": (int,),  # tokens of the view text
        "truncated": (bool,),  # the view was cut to fit its budget
        "reader": (str,),  # "base" | "adapter" (MC log-likelihood) | "rule"
    },
    "ledgers": {
        "system": (str,),
        "persona": (str,),
        "split": (str,),
        "seed": (int,),
        "session": (int,),
        "n_ops": (int,),  # ops in the parsed program
        "n_invalid": (int,),  # ops the lenient reducer skipped
        "parse_failure": (bool,),  # model text held no JSON list
        "write_tokens": (int,),
        "seconds": (float,),  # write wall time (batch time / personas in the batch)
        "state_f1": (float,),  # (s,p,o,v) F1 of the ledger after the write vs gold ledger_after
        "state_exact": (bool,),  # the ledger equals gold ledger_after exactly (all fields)
        **_op_columns(),  # op_{tp..f1} overall and op_<KIND>_{tp..f1} per op type
        "drifted": (bool,),  # the system's ledger before the write differed from gold ledger_before
        # teacher-forced (the session written from gold ledger_before; clerk.evaluate.teacher):
        # op_tf_{tp..f1} and op_tf_<KIND>_{tp..f1}, null for a system not scored so
        **_op_columns("op_tf", nullable=True),
    },
    "programs": {
        "system": (str,),  # a model writer's registry key
        "persona": (str,),  # timeline "name" (on LoCoMo: the conversation id)
        "session": (int,),
        "teacher_forced": (bool,),  # an extra write from the gold ledger (clerk.evaluate.teacher)
        "text": (str, _N),  # the model's output as generated
        "ops": (list,),  # the compiled program (JSON op form; a line that did not compile: its text)
        "verdicts": (list,),  # per op: "applied" or a rejection code (clerk.ledger.REJECTION_CODES)
        "ledger": (str, _N),  # clerk.ledger.serialize of the ledger after the write; null if teacher-forced
    },
    "metrics": {
        "schema": (str,),
        "input": (dict,),  # {"path", "sha256", "n_personas", "n_slice_personas", "splits", "seeds"}
        "config": (dict,),  # the CLI config (systems, model, adapter, EvalConfig fields)
        "versions": (dict,),  # system name -> version, plus "clerk"
        "systems": (dict,),  # system name -> "metrics.system" record
        "wall_seconds": (float,),
    },
    "metrics.system": {
        "version": (str,),
        "is_ledger": (bool,),
        "reader": (dict,),  # {"method": "mc" | "rule", "model": "base" | "adapter" | None}
        "n_questions": (int,),
        "accuracy": (float, _N),  # None when there were no questions
        "accuracy_by_type": (dict,),  # QUESTION_TYPES (+ any other seen) -> float | None
        "n_by_type": (dict,),
        "stale_error_rate": (float, _N),  # over superseded questions
        "n_superseded": (int,),
        "stale_error_rate_negated": (float, _N),  # over negated questions
        "read_tokens_mean": (float, _N),
        "truncated_rate": (float, _N),
        "n_writes": (int,),  # persona-sessions consolidated
        "write_tokens_mean": (float, _N),
        "wall_seconds": (float,),  # reading + writing for this system
        # ledger systems only (None otherwise):
        "op": (dict, _N),  # micro op scores: tp/fp/fn/precision/recall/f1/n_invalid/by_type
        "state_f1_mean": (float, _N),
        "state_exact_rate": (float, _N),
        "invalid_op_rate": (float, _N),
        "parse_failure_rate": (float, _N),
        "n_ops": (int, _N),
        "invalid_reasons": (dict, _N),  # rejection code -> invalid ops (clerk.evaluate.programs.invalid_reasons)
        "drift_rate": (float, _N),  # share of writes made against a ledger that differed from gold
        # model writers scored teacher-forced only (EvalConfig.teacher_forced; None otherwise):
        "op_teacher_forced": (dict, _N),  # micro op scores, every session written from gold ledger_before
        "teacher_forced_writes": (int, _N),  # extra writes run (drifted sessions); the others reused
        "teacher_forced_seconds": (float, _N),  # wall seconds of those extra writes (not in wall_seconds)
    },
}


def validate_record(kind: str, record: dict, schemas: dict[str, dict[str, tuple]] | None = None) -> None:
    """Raise ValueError unless ``record`` has exactly the fields of ``schemas[kind]`` with their types.

    ``schemas`` defaults to :data:`SCHEMAS`; other runners (``clerk.locomo``) pass their own.

    >>> validate_record("metrics", {"schema": "x"})
    Traceback (most recent call last):
    ...
    ValueError: metrics record: missing field(s) ['config', 'input', 'systems', 'versions', 'wall_seconds']
    """
    schema = (SCHEMAS if schemas is None else schemas)[kind]
    missing = sorted(set(schema) - set(record))
    extra = sorted(set(record) - set(schema))
    if missing:
        raise ValueError(f"{kind} record: missing field(s) {missing}")
    if extra:
        raise ValueError(f"{kind} record: unexpected field(s) {extra}")
    for name, types in schema.items():
        if type(record[name]) not in types:
            allowed = " | ".join(t.__name__ for t in types)
            raise ValueError(f"{kind} record: field {name!r} must be {allowed}, got {type(record[name]).__name__}")


def write_jsonl(path: Path, kind: str, rows: list[dict], schemas: dict[str, dict[str, tuple]] | None = None) -> None:
    """Write ``rows`` as JSON lines, each validated as a ``kind`` record (see :func:`validate_record`)."""
    from clerk.atomic import atomic_write

    with atomic_write(path) as fh:  # whole or absent (clerk/atomic.py)
        for row in rows:
            validate_record(kind, row, schemas)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
