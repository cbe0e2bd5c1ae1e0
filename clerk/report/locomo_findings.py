"""What table 2 shows, in words: the paragraph the paper prints under the LoCoMo tables (SPEC §7).

Every number comes from the per-job ``metrics.json`` rows of :func:`clerk.report.locomo.table2_rows`
(so from the same files as table 2); the fixed sentences state what the instrument and the data
are (the reader's abstention answer, the benchmark's known flaws) and appear only when the numbers
they explain are there.

    clerk table-locomo --metrics results/locomo/*/metrics.json --out results/table2.csv --markdown results/table2.md
"""

from __future__ import annotations

import math
from typing import Any

from clerk.prompts import UNKNOWN_ANSWER


def _range(values: list[float], fmt: str = ".3f") -> str:
    """``a`` or ``a–b`` over the finite values.

    >>> _range([0.5, 0.25, 0.5]), _range([0.5]), _range([])
    ('0.250–0.500', '0.500', 'n/a')
    """
    finite = sorted(v for v in values if not math.isnan(v))
    if not finite:
        return "n/a"
    low, high = format(finite[0], fmt), format(finite[-1], fmt)
    return low if low == high else f"{low}–{high}"


def _mean(rows: list[dict[str, Any]], col: str) -> float:
    values = [r[col] for r in rows if not math.isnan(r[col])]
    return sum(values) / len(values) if values else math.nan


def bounds_sentences(by: dict[str, list[dict[str, Any]]], reference: str) -> list[str]:
    """What the floor (``null``: the question alone) and the ceiling (``evidence``: each question's
    annotated evidence turns) bound: the table's width and the share of it the reference closes.

    >>> rows = {"clerk": [{"accuracy": 0.3}], "null": [{"accuracy": 0.2}], "evidence": [{"accuracy": 0.6}]}
    >>> print(bounds_sentences(rows, "clerk")[1])
    clerk closes 0.25 of that gap (0.300; 0 = no memory, 1 = the evidence).
    """
    from clerk.memory.evidence import EvidenceMemory
    from clerk.memory.null import NullMemory

    floor, ceiling = NullMemory.name, EvidenceMemory.name
    if floor not in by or ceiling not in by:
        return []
    low, high, mine = _mean(by[floor], "accuracy"), _mean(by[ceiling], "accuracy"), _mean(by[reference], "accuracy")
    out = [f"With no memory ({floor}: the reader sees the question alone) the reader scores {low:.3f}; given only "
           f"each question's annotated evidence turns and their session dates ({ceiling}) it scores {high:.3f}, "
           f"so the instrument separates a memory that kept the right turns from none by {high - low:+.3f}."]
    if high - low > 0:
        out.append(f"{reference} closes {(mine - low) / (high - low):.2f} of that gap "
                   f"({mine:.3f}; 0 = no memory, 1 = the evidence).")
    return out


def locomo_findings(rows: list[dict[str, Any]]) -> str:
    """The paragraph (Markdown) for table 2's per-(seed, system) ``rows``; "" without rows of the
    reference system (clerk: ``MEMORY_REGISTRY.reference()``).

    >>> row = dict(system="clerk", seed=1, invalid_op_rate=0.5, occupied_mean=6.0, read_tokens=70.0,
    ...            truncated_rate=0.0, adversarial=0.0, n_adversarial=2.0, abstention_rate=0.0, budget=12)
    >>> full = dict(row, system="full", invalid_op_rate=math.nan, occupied_mean=math.nan,
    ...             read_tokens=7000.0, truncated_rate=1.0)
    >>> print(locomo_findings([row, full])[:120])
    **Reading table 2.** CLERK's policy was trained on the synthetic closed world only. On LoCoMo the reducer rejected 0.500
    """
    from clerk.memory import MEMORY_REGISTRY
    from clerk.memory.full import FullMemory

    reference, full = MEMORY_REGISTRY.reference(), FullMemory.name  # the sentences about these two
    by: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by.setdefault(row["system"], []).append(row)
    clerk = by.get(reference)
    if not clerk:
        return ""
    seeds = len({r["seed"] for r in clerk})
    others = [f"{name} {_range([r['invalid_op_rate'] for r in rs])}" for name, rs in by.items()
              if name != reference and not math.isnan(_mean(rs, "invalid_op_rate"))]
    budget = clerk[0].get("budget")
    parts = [f"**Reading table 2.** CLERK's policy was trained on the synthetic closed world only. On LoCoMo the "
             f"reducer rejected {_range([r['invalid_op_rate'] for r in clerk])} of the edits it wrote "
             f"({'per seed, ' if seeds > 1 else ''}over {seeds} seed{'s' if seeds > 1 else ''})"
             + (f" against {', '.join(others)}" if others else "")
             + f", and its ledger held {_mean(clerk, 'occupied_mean'):.1f}" + (f" of {budget}" if budget else "")
             + " slots on average."]
    if full in by:
        mine, theirs = _mean(clerk, "read_tokens"), _mean(by[full], "read_tokens")
        parts.append(f"It reads {mine:.0f} tokens per question against full context's {theirs:.0f} "
                     f"(1/{theirs / mine:.0f}), whose view was cut to the reader's context "
                     f"on {_mean(by[full], 'truncated_rate'):.2f} of the questions.")
    parts += bounds_sentences(by, reference)
    n_adv = int(round(_mean(clerk, "n_adversarial")))
    adversarial = {name: _mean(rs, "adversarial") for name, rs in by.items()}
    wrongly = {name: _mean(rs, "abstention_rate") for name, rs in by.items()}
    if n_adv:
        parts.append(f"Every question offers the reader's own abstention answer (`{UNKNOWN_ANSWER}`), the gold "
                     f"option of the {n_adv} adversarial questions, where a system's accuracy is its abstention rate: "
                     + ", ".join(f"{name} {v:.3f}" for name, v in adversarial.items()) + "; on answerable questions it "
                     "abstained (always wrongly) at " + ", ".join(f"{name} {v:.3f}" for name, v in wrongly.items()
                                                               if not math.isnan(v)) + ".")
    parts.append("The benchmark has known flaws: some gold answers are wrong, and no question asks about a fact "
                 "that changed, which is what UPDATE and TOMBSTONE are for; LoCoMo measures the recall of facts "
                 "stated in passing, not the supersession the ledger is built for.")
    return " ".join(parts)
