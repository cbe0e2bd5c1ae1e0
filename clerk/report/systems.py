"""Tables 1 and 3: memory systems on the test and out-of-distribution splits (SPEC §6).

One row per seed and system from each ``clerk evaluate`` metrics.json (the values exactly as the
file holds them), then the aggregate over seeds per (split, system, reader); the paper includes
two compact Markdown renderings: answers (accuracy overall and per question type, stale errors)
and write quality and cost (op-F1 closed loop and teacher-forced, state-F1, invalid ops, tokens,
seconds), under which a note gives the gold EVICT ops each seed's EVICT F1 is measured on.

Personas of the eviction-pressure slice ask no questions: they add nothing to the answer columns
(``n_personas`` counts the personas that are asked), and their edits count in every op and state
column (``n_slice_personas``).

    clerk table-systems --metrics results/eval/*/test/metrics.json --out results/table1.csv \\
        --seeds-out results/table1_seeds.csv --markdown results/table1.md --markdown-cost results/table1_cost.md
"""

from __future__ import annotations

import math
from typing import Any

from clerk.errors import UserError
from clerk.memory.registry import MEMORY_REGISTRY
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
    # Added later (after the columns above, which keep their names and places): teacher-forced op
    # scores, the share of writes made against a drifted ledger, the gold EVICT ops the EVICT F1
    # is measured on, the extra writes' seconds and the eviction-pressure slice's personas.
    "op_tf_precision", "op_tf_recall", "op_tf_f1", *(f"op_tf_{k.lower()}_f1" for k in OP_KINDS),
    "drift_rate", "n_gold_evict", "tf_wall_seconds", "n_slice_personas",
)
#: Group columns of the systems table (``reader`` is constant per system; a change shows as a new row).
SYSTEM_KEYS = ("split", "system", "reader", "is_ledger")
#: Row order of systems where no config order is at hand (the SPEC §6 table order): the order each
#: system declares in the registry.
SYSTEM_ORDER = tuple(MEMORY_REGISTRY.in_order())
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
        does not apply, e.g. op-F1 of a transcript system, or the file predates it).

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
        forced = rec.get("op_teacher_forced") or {}  # absent from files written before it existed
        by_forced = forced.get("by_type") or {}
        evict = by_op.get("EVICT")
        n_slice = int(metrics["input"].get("n_slice_personas") or 0)
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
               "n_personas": _num(metrics["input"].get("n_personas")) - n_slice,
               "op_tf_precision": _num(forced.get("precision")), "op_tf_recall": _num(forced.get("recall")),
               "op_tf_f1": _num(forced.get("f1")),
               **{f"op_tf_{k.lower()}_f1": _num((by_forced.get(k) or {}).get("f1")) for k in OP_KINDS},
               "drift_rate": _num(rec.get("drift_rate")),
               "n_gold_evict": math.nan if evict is None else float(evict["tp"] + evict["fn"]),
               "tf_wall_seconds": _num(rec.get("teacher_forced_seconds")), "n_slice_personas": float(n_slice)}
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
                ("op_tf_f1", "TF op-F1", ".3f"), *((f"op_tf_{k.lower()}_f1", f"TF {k}", ".3f") for k in OP_KINDS),
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


def evict_note(per_seed) -> str:
    """The line under the write-quality table: the gold EVICT ops each seed's EVICT F1 (closed
    loop and teacher-forced) is measured on, per split, and the eviction-pressure slice's
    personas; empty without ledger systems.

    Args:
        per_seed: the per-seed DataFrame of :func:`systems_tables` (every ledger system of a seed
            and split is scored against the same gold programs, so the count is the split's).
    """
    from clerk.report.tabular import seed_key

    rows = per_seed[per_seed["is_ledger"].astype(bool) & per_seed["n_gold_evict"].notna()]
    parts = []
    for split in sorted(set(rows["split"])):
        mine = rows[rows["split"] == split].drop_duplicates("seed").sort_values(
            "seed", key=lambda col: col.map(seed_key), kind="mergesort")
        counts = ", ".join(f"{int(n)} (seed {seed})" for seed, n in zip(mine["seed"], mine["n_gold_evict"]))
        text = f"{split}: {counts}"
        n_slice = sorted({int(n) for n in mine["n_slice_personas"]})
        if n_slice != [0]:
            text += (f", with an eviction-pressure slice of {'/'.join(map(str, n_slice))} "
                     f"persona{'' if n_slice == [1] else 's'} a seed (no questions: their edits count in the op "
                     "and state columns, not in accuracy)")
        parts.append(text)
    if not parts:
        return ""
    return "\nGold EVICT ops that EVICT F1 and TF EVICT are measured on, per seed: " + "; ".join(parts) + ".\n"
