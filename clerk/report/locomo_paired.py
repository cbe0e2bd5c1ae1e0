"""Paired LoCoMo comparisons: clerk minus each other system on the same questions, and the
evidence oracle minus null (the table's ceiling against its floor) (SPEC §7).

Every LoCoMo job of a run answers the same question subset (``locomo.subset_seed``), so clerk's
answers of each seed pair with every other system's answers to the same question. A system that
does not depend on the seed (``results/locomo/shared/``) pairs with clerk of every seed. Only the
non-adversarial questions count (table 2's ``accuracy``). The interval is the paired bootstrap of
:func:`clerk.report.paired.paired_from_units` with (seed, conversation) as the resampled units:
LoCoMo has ten conversations, and the questions of one conversation are not independent.

    clerk table-locomo --metrics results/locomo/*/metrics.json \\
        --predictions results/locomo/*/predictions.jsonl --paired-out results/table2_paired.csv ...
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.memory.evidence import EvidenceMemory
from clerk.memory.null import NullMemory
from clerk.report.paired import (
    N_BOOT,
    REFERENCE,
    margin_note,
    not_conclusive_reason,
    paired_from_units,
    prediction_rows,
)

#: The split name LoCoMo rows carry in the paired table.
SPLIT = "locomo"
#: The paired table's name in results/ (its tolerances in paper/tolerances.yaml go by it).
PAIRED_TABLE = "table2_paired.csv"
#: What its margin is.
MARGIN_SOURCE = ("the largest change of a paired difference between the same run on two CPU kinds "
                 "(paper/tolerances.yaml; docs/DECISIONS.md, \"LoCoMo on two CPU kinds\")")
#: The table's ceiling and floor: the reader given each question's annotated evidence turns, and
#: the reader given the question alone.
BOUNDS = (EvidenceMemory.name, NullMemory.name)
#: Fields of a LoCoMo prediction row the pairing reads.
FIELDS = ("question_id", "conversation", "system", "adversarial", "correct")


def _read(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """(the job's seed from its metrics.json beside, its prediction rows)."""
    try:
        seed = json.loads((path.parent / "metrics.json").read_text(encoding="utf-8"))["seed"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UserError(f"--predictions: {str(path)!r} needs the metrics.json of its job beside it ({err})") from None
    return int(seed), prediction_rows(path, FIELDS, "a LoCoMo prediction")


def locomo_units(paths: list[str | Path]) -> dict[tuple, dict[str, dict[str, bool]]]:
    """``(SPLIT, seed, conversation) -> system -> question_id -> correct`` over the non-adversarial
    questions. Files holding clerk give the seeds; a system of a file without clerk (the
    once-per-run job) joins every seed's units."""
    per_seed: dict[int, list[dict[str, Any]]] = defaultdict(list)
    shared: list[dict[str, Any]] = []
    for path in paths:
        seed, rows = _read(Path(path))
        if any(row["system"] == REFERENCE for row in rows):
            per_seed[seed] += rows
        else:
            shared += rows
    units: dict[tuple, dict[str, dict[str, bool]]] = defaultdict(lambda: defaultdict(dict))
    for seed, rows in per_seed.items():
        for row in [*rows, *shared]:
            if not row["adversarial"]:
                units[(SPLIT, seed, row["conversation"])][row["system"]][row["question_id"]] = bool(row["correct"])
    return units


def bound_units(paths: list[str | Path]) -> dict[tuple, dict[str, dict[str, bool]]]:
    """``(SPLIT, 0, conversation) -> system -> question_id -> correct`` of the two bounds (the
    evidence oracle and null) over the non-adversarial questions, once: both are read once per run,
    so pairing them per seed would count every answer once per seed."""
    units: dict[tuple, dict[str, dict[str, bool]]] = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        _, rows = _read(Path(path))
        for row in rows:
            if row["system"] in BOUNDS and not row["adversarial"]:
                units[(SPLIT, 0, row["conversation"])][row["system"]][row["question_id"]] = bool(row["correct"])
    return units


def locomo_paired_rows(paths: list[str | Path], n_boot: int = N_BOOT, margin: float = 0.0) -> list[dict[str, Any]]:
    """One row per system != clerk: clerk minus it on the same non-adversarial questions, per seed
    (t interval) and bootstrapped over (seed, conversation) units; then, when both bounds ran, the
    evidence oracle minus null (what the instrument can tell apart: the width of the table);
    ``units`` counts the resampled units; ``conclusive`` needs the interval to clear zero by more
    than ``margin`` (the machine spread)."""
    rows = paired_from_units(locomo_units(paths), n_boot, margin)
    rows += paired_from_units(bound_units(paths), n_boot, margin, reference=BOUNDS[0])
    return [{**row, "units": row.pop("n_personas")} for row in rows]


def locomo_paired_markdown(rows: list[dict[str, Any]]) -> str:
    """The lines table 2's Markdown ends with: each comparison with both intervals."""
    from clerk.report.tabular import markdown_table

    body = [[f"{r['reference']} − {r['system']}", f"{r['delta']:+.3f}", f"[{r['boot_low']:+.3f}, {r['boot_high']:+.3f}]",
             f"[{r['seed_ci_low']:+.3f}, {r['seed_ci_high']:+.3f}]" if r["n_seeds"] > 1 else "n/a",
             str(r["n_questions"]), "yes" if r["conclusive"] else not_conclusive_reason(r)] for r in rows]
    note = (f"\nNon-adversarial questions, paired on the same questions (one subset for every job). Bootstrap: "
            f"{N_BOOT:,} resamples of the (seed, conversation) units, percentile interval; per seed: the "
            "difference of the two accuracies in each seed, then the Student-t interval over seeds."
            + margin_note(rows, MARGIN_SOURCE))
    return markdown_table(["comparison", "Δ accuracy", "95 % bootstrap (conversations)", "per-seed 95 % t",
                           "question answers", "conclusive"], body,
                          [":---", "---:", "---:", "---:", "---:", ":---"]) + note
