"""Table 2: LoCoMo accuracy per system and category, aggregated over seeds (SPEC §6, §7).

The report stage reads the LoCoMo stage's files: the per-seed ``metrics.json`` files of ``clerk
locomo`` become one row per (seed, system), then n, mean, sd (ddof=1) and the 95 % t-interval over
seeds per system (``clerk.report.stats.aggregate_frame``); a compact Markdown table shows mean ±
half-width. The paired comparisons are :mod:`clerk.report.locomo_paired`, the paragraph under the
tables :mod:`clerk.report.locomo_findings`.

    clerk table-locomo --metrics results/locomo/*/metrics.json --out results/table2.csv --markdown results/table2.md
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.locomo.data import LOCOMO_SYSTEMS
from clerk.locomo.evaluation import LOCOMO_METRICS_SCHEMA_ID

#: Per-seed value columns of table 2 (aggregated over seeds into ``<col>_{n,mean,sd,ci_low,ci_high}``).
TABLE2_VALUES = ("accuracy", "single_hop", "multi_hop", "temporal", "open_domain", "adversarial",
                 "read_tokens", "truncated_rate", "n_questions", "invalid_op_rate", "occupied_mean", "n_adversarial",
                 "abstention_rate")
#: Markdown headers of the compact table 2 (category names as in :data:`clerk.locomo.data.CATEGORIES`).
_TABLE2_MD = (("accuracy", "accuracy"), ("single_hop", "single-hop"), ("multi_hop", "multi-hop"),
              ("temporal", "temporal"), ("open_domain", "open-domain"), ("adversarial", "adversarial"),
              ("abstention_rate", "abstained when answerable"),
              ("read_tokens", "read tokens"), ("truncated_rate", "truncated"), ("invalid_op_rate", "invalid ops"))


def table2_rows(metrics_files: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per (seed, system) from LoCoMo ``metrics.json`` files; accuracies as floats, NaN when
    a category had no question; ``budget`` is the job's ledger budget (not aggregated).

    Raises:
        UserError: a file is missing or not a LoCoMo metrics file, or the files disagree on the
            data (source, sha256) or the subset size requested.
    """
    rows: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}
    for path in metrics_files:
        try:
            metrics = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise UserError(f"--metrics: expected a readable LoCoMo metrics.json, got {str(path)!r} ({err})") from None
        if not isinstance(metrics, dict) or metrics.get("schema") != LOCOMO_METRICS_SCHEMA_ID:
            got = metrics.get("schema") if isinstance(metrics, dict) else type(metrics).__name__
            raise UserError(f"--metrics: expected schema {LOCOMO_METRICS_SCHEMA_ID!r} in {str(path)!r}, got {got!r}")
        key = {"source": metrics["input"]["source"], "sha256": metrics["input"]["sha256"],
               "max_questions": metrics["subset"]["max_questions"]}
        if seen and key != seen:
            raise UserError(f"--metrics: every file must come from the same data and subset size; {str(path)!r} has "
                            f"{key}, expected {seen}")
        seen = seen or key

        def nan(x: float | None) -> float:
            return math.nan if x is None else float(x)

        for name, s in metrics["systems"].items():
            by = s["accuracy_by_category"]
            rows.append({
                "system": name, "reader": s["reader"]["model"], "source": s["source"], "seed": int(metrics["seed"]),
                "accuracy": nan(s["accuracy"]), "single_hop": nan(by["single-hop"]), "multi_hop": nan(by["multi-hop"]),
                "temporal": nan(by["temporal"]), "open_domain": nan(by["open-domain"]),
                "adversarial": nan(s["adversarial_accuracy"]), "read_tokens": nan(s["read_tokens_mean"]),
                "truncated_rate": nan(s["truncated_rate"]), "n_questions": float(s["n_questions"]),
                "invalid_op_rate": nan(s.get("invalid_op_rate")), "occupied_mean": nan(s.get("occupied_mean")),
                "n_adversarial": float(s["n_adversarial"]), "abstention_rate": nan(s.get("abstention_rate")),
                "budget": metrics["config"].get("budget"),
            })
    if not rows:
        raise UserError("--metrics: expected at least one metrics file with systems, got none")
    return rows


def _mean_ci(mean: float, low: float, high: float, fmt: str) -> str:
    """``mean ± half-width`` of the 95 % interval; just the mean when there is no interval.

    >>> _mean_ci(0.5, 0.4, 0.6, ".3f"), _mean_ci(0.5, float("nan"), float("nan"), ".3f")
    ('0.500 ± 0.100', '0.500')
    """
    if math.isnan(mean):
        return "n/a"
    if math.isnan(low) or math.isnan(high):
        return format(mean, fmt)
    return f"{format(mean, fmt)} ± {format((high - low) / 2, fmt)}"


def table2(metrics_files: Sequence[str | Path]):
    """Table 2 as (full aggregate DataFrame, compact Markdown DataFrame).

    The full frame has ``system, reader, source, n_seeds, seeds`` and ``<col>_{n,mean,sd,ci_low,ci_high}``
    for every :data:`TABLE2_VALUES` column (``clerk.report.stats.aggregate_frame``). The compact frame
    shows ``mean ± 95 % half-width`` per system in :data:`clerk.locomo.data.LOCOMO_SYSTEMS` order, with the share of
    questions whose view was truncated to the reader's context (``full``: say so in the paper).
    """
    return table2_frames(table2_rows(metrics_files))


def table2_frames(rows: list[dict[str, Any]]):
    """:func:`table2` over rows already read by :func:`table2_rows`."""
    import pandas as pd

    from clerk.report.stats import aggregate_frame

    df = aggregate_frame(pd.DataFrame(rows), by=["system", "reader", "source"], value_cols=list(TABLE2_VALUES))
    order = {name: k for k, name in enumerate(LOCOMO_SYSTEMS)}
    compact = []
    for row in sorted(df.to_dict("records"), key=lambda r: (order.get(r["system"], len(order)), r["system"])):
        line = {"system": row["system"], "reader": row["reader"], "seeds": int(row["n_seeds"]),
                "questions": int(round(row["n_questions_mean"]))}
        for col, header in _TABLE2_MD:
            fmt = {"read_tokens": ".0f", "truncated_rate": ".2f"}.get(col, ".3f")
            line[header] = _mean_ci(row[f"{col}_mean"], row[f"{col}_ci_low"], row[f"{col}_ci_high"], fmt)
        compact.append(line)
    return df, pd.DataFrame(compact)


def main_table(args: argparse.Namespace) -> None:
    """``clerk table-locomo``: aggregate LoCoMo metrics over seeds into table 2 (CSV, optional Markdown)."""
    from clerk.report.tabular import to_markdown, write_csv

    if (getattr(args, "predictions", None) is None) != (getattr(args, "paired_out", None) is None):
        raise UserError("--predictions and --paired-out go together (the paired comparisons and their CSV)")
    from clerk.report.locomo_findings import locomo_findings
    from clerk.report.paired import machine_margin

    rows = table2_rows(args.metrics)
    df, compact = table2_frames(rows)
    findings = locomo_findings(rows)
    after = "\n\n" + findings if findings else ""  # what the Markdown prints under the table
    if getattr(args, "predictions", None):
        import pandas as pd

        from clerk.report.locomo_paired import PAIRED_TABLE, locomo_paired_markdown, locomo_paired_rows

        margin = machine_margin(getattr(args, "tolerances", None), PAIRED_TABLE)
        pairs = locomo_paired_rows(args.predictions, margin=margin)
        write_csv(pd.DataFrame(pairs, columns=list(pairs[0]) if pairs else ["system", "delta"]), args.paired_out)
        after += "\n\n" + (locomo_paired_markdown(pairs) if pairs else
                            "No paired comparison: no question was answered by clerk and another system.")
    write_csv(df, args.out, sort_by=["system", "reader", "source"])
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(to_markdown(compact) + after, encoding="utf-8")
    print(f"clerk table-locomo: {len(df)} systems from {len(args.metrics)} metrics files -> {args.out}",
          file=sys.stderr)


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add the ``table-locomo`` verb."""
    t = sub.add_parser(
        "table-locomo",
        help="table 2: LoCoMo accuracy per system and category, aggregated over seeds",
        description="Aggregate LoCoMo metrics.json files (one per seed) over seeds: n, mean, sd (ddof=1) and the "
        "95 %% t-interval of accuracy (non-adversarial), per-category and adversarial accuracy, read tokens, "
        "truncation rate and question count. Writes a CSV and optionally a compact Markdown table.",
    )
    t.add_argument("--metrics", nargs="+", required=True, metavar="FILE",
                   help="LoCoMo metrics.json files, e.g. results/locomo/*/metrics.json")
    t.add_argument("--out", required=True, metavar="CSV", help="output CSV, e.g. results/table2.csv")
    t.add_argument("--markdown", default=None, metavar="MD",
                   help="also write the compact Markdown table (mean ± 95 %% half-width) here; default: none")
    t.add_argument("--predictions", nargs="+", default=None, metavar="FILE",
                   help="the jobs' predictions.jsonl (each beside its metrics.json): adds clerk minus each other "
                   "system on the same non-adversarial questions, paired bootstrap over (seed, conversation) "
                   "(clerk.report.locomo_paired); default: none")
    t.add_argument("--paired-out", dest="paired_out", default=None, metavar="CSV",
                   help="CSV of the paired comparisons (needs --predictions); the Markdown table gets them too")
    t.add_argument("--tolerances", default=None, metavar="YAML",
                   help="tolerances file (paper/tolerances.yaml): a paired comparison is then conclusive only when "
                   "its interval clears zero by more than the declared machine spread of table2_paired.csv's "
                   "bootstrap bounds; default: none (margin 0)")
    t.set_defaults(func=main_table)
