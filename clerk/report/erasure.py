"""Table 5: the erasure study, leak rate and forgotten-fact accuracy per system over seeds (SPEC §9).

One row per seed, system and mode from each ``clerk erasure`` metrics.json (the values exactly as
the file holds them), then the aggregate over seeds per (system, mode) with the statistics of the
other tables (:func:`clerk.report.stats.aggregate_frame`). Mode ``forget`` rows are the systems with
forget requests delivered (the main rows); ``ignore`` rows the same systems with the requests not
delivered (the naive contrast).

    clerk table-erasure --metrics results/erasure/*/metrics.json --out results/table5.csv \\
        --seeds-out results/table5_seeds.csv --markdown results/table5.md
"""

from __future__ import annotations

import math

from clerk.errors import UserError
from clerk.report.systems import READER_LABELS, reader_label
from clerk.report.tabular import markdown_table, mean_pm, ordered, read_json, seed_note

#: Per-seed value columns of the erasure table, aggregated over seeds.
ERASURE_METRICS = ("leak_rate", "leak_rate_substring", "accuracy_forgotten", "forgotten_value_rate",
                   "n_views", "n_leaks", "n_forgotten", "n_personas", "n_sessions", "n_forget_requests",
                   "wall_seconds")
#: Per-seed columns taken from the file's ``input`` (the same for every row of a seed).
_INPUT_METRICS = ("n_personas", "n_sessions", "n_forget_requests")
#: Group columns (``forget_action`` and ``reader`` are constant per system and mode).
ERASURE_KEYS = ("system", "mode", "forget_action", "reader", "is_ledger")
#: Markdown columns of rates, mean ± half-interval: (metric, header, format).
ERASURE_COLUMNS = (("leak_rate", "leak rate", ".3f"), ("accuracy_forgotten", "accuracy, forgotten facts", ".3f"),
                   ("forgotten_value_rate", "answered a forgotten value", ".3f"))
#: Markdown columns of counts, summed over the seeds: (metric, header).
COUNT_COLUMNS = (("n_views", "views checked"), ("n_forgotten", "forgotten-fact questions"))
#: How the table names what a system did with the forget requests.
ACTION_LABELS = {"free-slot": "slot freed", "redact": "values redacted", "nothing": "nothing stored",
                 "ignored": "request ignored"}
#: Row order of the modes.
MODE_ORDER = ("forget", "ignore")


def _num(value) -> float:
    return math.nan if value is None else float(value)


def erasure_rows(metrics: dict, path: str = "metrics.json") -> list[dict]:
    """The per-seed rows of one ``clerk erasure`` metrics.json: one per system and mode.

    Raises:
        UserError: the file is not an erasure metrics file of exactly one seed.
    """
    if not isinstance(metrics.get("input"), dict) or not isinstance(metrics.get("rows"), list):
        raise UserError(f"--metrics: '{path}' has no 'input' object and 'rows' list; expected a metrics.json "
                        "written by `clerk erasure`")
    seeds = metrics["input"].get("seeds") or []
    if len(seeds) != 1:
        raise UserError(f"--metrics: '{path}' covers seeds {seeds}; expected exactly one seed per file")
    out = []
    for rec in metrics["rows"]:
        out.append({
            "system": rec["system"], "mode": rec["mode"], "forget_action": rec["forget_action"],
            "reader": reader_label(rec["reader"]), "is_ledger": bool(rec["is_ledger"]), "seed": int(seeds[0]),
            **{m: _num(rec.get(m)) for m in ERASURE_METRICS if m not in _INPUT_METRICS},
            **{m: _num(metrics["input"].get(m)) for m in _INPUT_METRICS},
        })
    return out


def erasure_tables(paths: list[str]):
    """Per-seed long table and its aggregate over seeds for a set of erasure metrics.json files.

    Returns:
        ``(per_seed, aggregated, system_order)``; the order is the first file's configured systems.

    Raises:
        UserError: no files, a malformed file, or the same (system, mode, seed) twice.
    """
    import pandas as pd

    from clerk.report.stats import aggregate_frame

    if not paths:
        raise UserError("--metrics: expected at least one erasure metrics.json file, got none")
    rows, order = [], []
    for path in paths:
        metrics = read_json(path, "--metrics")
        rows += erasure_rows(metrics, path)
        config = metrics.get("config") or {}
        for name in [*config.get("systems", []), *config.get("ignore_forget", [])]:
            order += [] if name in order else [name]
    per_seed = pd.DataFrame(rows, columns=[*ERASURE_KEYS, "seed", *ERASURE_METRICS])
    agg = aggregate_frame(per_seed, ["system", "mode"], list(ERASURE_METRICS))
    # forget_action, reader and is_ledger are constant per (system, mode): one value per group.
    consts = per_seed.groupby(["system", "mode"], sort=True)[["forget_action", "reader", "is_ledger"]]
    if (consts.nunique() > 1).to_numpy().any():
        raise UserError("--metrics: a system's forget action, reader or ledger flag differs between seeds")
    agg = agg.merge(consts.first().reset_index(), on=["system", "mode"])
    agg = agg[[*ERASURE_KEYS, *[c for c in agg.columns if c not in ERASURE_KEYS]]]
    return per_seed, agg, order


def _total(row: dict, col: str) -> str:
    """A per-seed count summed over the seeds that have it (mean x n), as an integer.

    >>> _total({"n_views_mean": 9.5, "n_views_n": 2}, "n_views")
    '19'
    """
    mean, n = float(row[f"{col}_mean"]), int(row[f"{col}_n"])
    return "n/a" if math.isnan(mean) else str(round(mean * n))


def erasure_markdown(agg, order: list[str]) -> str:
    """The paper's table 5: per system and mode, what forget did, the reader, the leak rate, accuracy
    on forgotten facts and how often a forgotten value was answered (mean ± half-interval), and the
    views and questions they are computed over (summed over the seeds)."""
    records = agg.to_dict("records")
    rank = {s: k for k, s in enumerate(ordered([r["system"] for r in records], order))}
    records.sort(key=lambda r: (MODE_ORDER.index(r["mode"]) if r["mode"] in MODE_ORDER else len(MODE_ORDER),
                                rank[r["system"]]))
    header = ["system", "on forget", "reader", *(h for _, h, _ in ERASURE_COLUMNS), *(h for _, h in COUNT_COLUMNS)]
    rows = [[r["system"], ACTION_LABELS.get(r["forget_action"], r["forget_action"]),
             READER_LABELS.get(r["reader"], r["reader"]), *(mean_pm(r, m, f) for m, _, f in ERASURE_COLUMNS),
             *(_total(r, m) for m, _ in COUNT_COLUMNS)]
            for r in records]
    align = [":---"] * 3 + ["---:"] * (len(ERASURE_COLUMNS) + len(COUNT_COLUMNS))
    return markdown_table(header, rows, align) + seed_note(agg)
