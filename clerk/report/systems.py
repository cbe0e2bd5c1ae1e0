"""Tables 1 and 3: memory systems on the test and out-of-distribution splits (SPEC §6).

One row per seed and system from each ``clerk evaluate`` metrics.json (the values exactly as the
file holds them), then the aggregate over seeds per (split, system, reader); the paper includes
two compact Markdown renderings: answers (accuracy overall and per question type, stale errors)
and write quality and cost (op-F1, state-F1, invalid ops, tokens, seconds).

    clerk table-systems --metrics results/eval/*/test/metrics.json --out results/table1.csv \\
        --seeds-out results/table1_seeds.csv --markdown results/table1.md --markdown-cost results/table1_cost.md
"""

from __future__ import annotations

import math
from typing import Any

from clerk.errors import UserError
from clerk.report.tabular import markdown_table, mean_pm, ordered, read_json, seed_note

#: Question types in the order the tables and figures list them (SPEC §2).
QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal")
#: Edit-op kinds (SPEC §1), for the per-op F1 columns.
OP_KINDS = ("ADD", "UPDATE", "TOMBSTONE", "EVICT")
#: Per-seed metric columns of the systems table, in table order.
SYSTEM_METRICS = (
    "accuracy", *(f"accuracy_{t}" for t in QUESTION_TYPES), "stale_error_rate",
    "stale_error_rate_negated", "op_precision", "op_recall", "op_f1",
    *(f"op_{k.lower()}_f1" for k in OP_KINDS), "state_f1", "state_exact_rate", "invalid_op_rate",
    "parse_failure_rate", "read_tokens", "write_tokens", "truncated_rate", "wall_seconds",
    "n_questions", "n_personas",
)
#: Group columns of the systems table (``reader`` is constant per system; a change shows as a new row).
SYSTEM_KEYS = ("split", "system", "reader", "is_ledger")
#: Row order of systems where no config order is at hand (the SPEC §6 table order).
SYSTEM_ORDER = ("clerk", "oracle", "prompted-ledger", "full", "window", "rag", "add-only", "null")
#: How the tables name a reader (:func:`reader_label`).
READER_LABELS = {"mc:adapter": "trained adapter", "mc:reader": "reader adapter", "mc:base": "base model",
                 "rule": "exact rule"}


def _num(value: Any) -> float:
    """A metric value as a float; null (not applicable, no questions) is NaN.

    >>> _num(None), _num(3), _num(0.25)
    (nan, 3.0, 0.25)
    """
    return math.nan if value is None else float(value)


def reader_label(reader: dict) -> str:
    """The reader of a system as one token: ``mc:<model>`` or ``rule``.

    >>> reader_label({"method": "mc", "model": "adapter"}), reader_label({"method": "rule", "model": None})
    ('mc:adapter', 'rule')
    """
    return "rule" if reader.get("method") == "rule" else f"{reader.get('method')}:{reader.get('model')}"


def system_rows(metrics: dict, path: str = "metrics.json") -> list[dict]:
    """The per-seed rows of one ``clerk evaluate`` metrics.json: one row per system.

    Args:
        metrics: the parsed metrics.json (``clerk.evaluate.SCHEMAS["metrics"]``).
        path: its path, for error messages.

    Returns:
        Dicts with :data:`SYSTEM_KEYS`, ``seed`` and :data:`SYSTEM_METRICS` (NaN where a metric
        does not apply, e.g. op-F1 of a transcript system).

    Raises:
        UserError: the file is not a metrics file of exactly one seed and one split.
    """
    for field in ("input", "systems"):
        if not isinstance(metrics.get(field), dict):
            raise UserError(f"--metrics: '{path}' has no '{field}' object; expected a metrics.json "
                            "written by `clerk evaluate`")
    seeds, splits = metrics["input"].get("seeds") or [], metrics["input"].get("splits") or []
    if len(seeds) != 1 or len(splits) != 1:
        raise UserError(f"--metrics: '{path}' covers seeds {seeds} and splits {splits}; "
                        "expected exactly one seed and one split per file")
    rows = []
    for name, rec in metrics["systems"].items():
        by_type = rec.get("accuracy_by_type") or {}
        op = rec.get("op") or {}
        by_op = op.get("by_type") or {}
        row = {"split": splits[0], "system": name, "reader": reader_label(rec["reader"]),
               "is_ledger": bool(rec["is_ledger"]), "seed": int(seeds[0]),
               "accuracy": _num(rec["accuracy"]),
               **{f"accuracy_{t}": _num(by_type.get(t)) for t in QUESTION_TYPES},
               "stale_error_rate": _num(rec["stale_error_rate"]),
               "stale_error_rate_negated": _num(rec["stale_error_rate_negated"]),
               "op_precision": _num(op.get("precision")), "op_recall": _num(op.get("recall")),
               "op_f1": _num(op.get("f1")),
               **{f"op_{k.lower()}_f1": _num((by_op.get(k) or {}).get("f1")) for k in OP_KINDS},
               "state_f1": _num(rec["state_f1_mean"]), "state_exact_rate": _num(rec["state_exact_rate"]),
               "invalid_op_rate": _num(rec["invalid_op_rate"]),
               "parse_failure_rate": _num(rec["parse_failure_rate"]),
               "read_tokens": _num(rec["read_tokens_mean"]), "write_tokens": _num(rec["write_tokens_mean"]),
               "truncated_rate": _num(rec["truncated_rate"]), "wall_seconds": _num(rec["wall_seconds"]),
               "n_questions": float(rec["n_questions"]),
               "n_personas": _num(metrics["input"].get("n_personas"))}
        rows.append(row)
    return rows


def systems_tables(paths: list[str]):
    """Per-seed long table and the aggregate over seeds for a set of metrics.json files.

    Returns:
        ``(per_seed, aggregated, system_order)``: two DataFrames and the systems in the order the
        first file's config lists them (the paper's row order).

    Raises:
        UserError: no files, a malformed file, or the same (split, system, seed) twice.
    """
    import pandas as pd

    from clerk.report.stats import aggregate_frame

    if not paths:
        raise UserError("--metrics: expected at least one metrics.json file, got none")
    rows, order = [], []
    for path in paths:
        metrics = read_json(path, "--metrics")
        rows += system_rows(metrics, path)
        order += [s for s in (metrics.get("config") or {}).get("systems", metrics["systems"]) if s not in order]
    per_seed = pd.DataFrame(rows, columns=[*SYSTEM_KEYS, "seed", *SYSTEM_METRICS])
    agg = aggregate_frame(per_seed, list(SYSTEM_KEYS), list(SYSTEM_METRICS))
    return per_seed, agg, order


#: Markdown columns of the answer table: (metric, header, format).
ANSWER_COLUMNS = (("accuracy", "accuracy", ".3f"),
                  *((f"accuracy_{t}", t, ".3f") for t in QUESTION_TYPES),
                  ("stale_error_rate", "stale errors", ".3f"))
#: Markdown columns of the write-quality and cost table.
COST_COLUMNS = (("op_f1", "op-F1", ".3f"), *((f"op_{k.lower()}_f1", k, ".3f") for k in OP_KINDS),
                ("state_f1", "state-F1", ".3f"), ("invalid_op_rate", "invalid ops", ".3f"),
                ("parse_failure_rate", "parse failures", ".3f"),
                ("read_tokens", "read tok./question", ".1f"), ("write_tokens", "write tok./session", ".1f"),
                ("wall_seconds", "wall s", ".1f"))


def systems_markdown(agg, order: list[str], columns=ANSWER_COLUMNS, reader: bool = True) -> str:
    """A compact Markdown table of the aggregated systems table (mean ± half-interval).

    Args:
        agg: the aggregated DataFrame from :func:`systems_tables`.
        order: system row order. columns: (metric, header, format) triples.
        reader: add the reader column.
    """
    records = agg.to_dict("records")
    multi_split = len({r["split"] for r in records}) > 1
    rank = {s: k for k, s in enumerate(ordered([r["system"] for r in records], order))}
    records.sort(key=lambda r: (r["split"], rank[r["system"]], r["reader"]))
    header = (["split"] if multi_split else []) + ["system"] + (["reader"] if reader else [])
    header += [h for _, h, _ in columns]
    rows = []
    for r in records:
        row = ([r["split"]] if multi_split else []) + [r["system"]]
        row += [READER_LABELS.get(r["reader"], r["reader"])] if reader else []
        rows.append(row + [mean_pm(r, m, f) for m, _, f in columns])
    align = [":---"] * (len(header) - len(columns)) + ["---:"] * len(columns)
    return markdown_table(header, rows, align) + seed_note(agg)
