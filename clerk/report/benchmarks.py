"""Wall time, CPU time and peak memory per workflow stage, from Snakemake benchmark files (SPEC §8).

The stage is the TSV's folder below the root (``logs/benchmarks/<rule>/<wildcards>.tsv``); the
Markdown table lists stages in pipeline order with a total.

    clerk table-benchmarks --tsv logs/benchmarks/*/*.tsv --out results/benchmarks.csv --markdown results/benchmarks.md
"""

from __future__ import annotations

import math
from pathlib import Path

from clerk.errors import UserError
from clerk.report.tabular import markdown_table, ordered

#: Snakemake benchmark TSV columns we keep: wall seconds, peak resident memory (MB), CPU seconds.
BENCHMARK_COLUMNS = ("s", "max_rss", "cpu_time")


def benchmarks_table(paths: list[str], root: str):
    """Wall time, CPU time and peak memory per workflow stage from Snakemake ``benchmark:`` TSVs.

    The stage is the TSV's folder below ``root`` (``logs/benchmarks/<rule>/<wildcards>.tsv``).

    Returns:
        One row per stage: ``stage, jobs, wall_s_total, wall_s_max, cpu_s_total, max_rss_mb``.

    Raises:
        UserError: no files, a file outside ``root``, or a TSV without the ``s`` column.
    """
    import pandas as pd

    if not paths:
        raise UserError("--tsv: expected at least one benchmark TSV, got none")
    rows = []
    for path in paths:
        rel = Path(path).resolve().relative_to(Path(root).resolve()) if _inside(path, root) else None
        if rel is None or len(rel.parts) < 2:
            raise UserError(f"--tsv: '{path}' is not a '<rule>/<job>.tsv' file under --root '{root}'")
        df = pd.read_csv(path, sep="\t")
        if "s" not in df.columns:
            raise UserError(f"--tsv: '{path}' has no 's' column; expected a Snakemake benchmark file")
        # Snakemake writes "NA"/"-" where it could not measure (very short jobs).
        vals = {c: pd.to_numeric(df[c], errors="coerce") if c in df else pd.Series([math.nan])
                for c in BENCHMARK_COLUMNS}
        rows.append({"stage": rel.parts[0], "job": Path(*rel.parts[1:]).with_suffix("").as_posix(),
                     "wall_s": float(vals["s"].mean()), "cpu_s": float(vals["cpu_time"].mean()),
                     "max_rss_mb": float(vals["max_rss"].max())})
    jobs = pd.DataFrame(rows)
    out = (jobs.groupby("stage", sort=True)
           .agg(jobs=("job", "count"), wall_s_total=("wall_s", "sum"), wall_s_max=("wall_s", "max"),
                cpu_s_total=("cpu_s", "sum"), max_rss_mb=("max_rss_mb", "max"))
           .reset_index())
    total = {"stage": "total", "jobs": int(out["jobs"].sum()), "wall_s_total": float(out["wall_s_total"].sum()),
             "wall_s_max": float(out["wall_s_max"].max()), "cpu_s_total": float(out["cpu_s_total"].sum()),
             "max_rss_mb": float(out["max_rss_mb"].max())}
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


def _inside(path: str, root: str) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def benchmarks_markdown(table, order: list[str] | None = None) -> str:
    """The stage table in pipeline order (``order``; others after, ``total`` last)."""
    records = {r["stage"]: r for r in table.to_dict("records")}
    stages = ordered([s for s in records if s != "total"], order or [])
    header = ["stage", "jobs", "wall s (sum)", "wall s (longest job)", "CPU s (sum)", "peak RSS MB"]
    rows = [[s, str(int(r["jobs"])), *(_fmt(r[c], ".1f") for c in
                                       ("wall_s_total", "wall_s_max", "cpu_s_total", "max_rss_mb"))]
            for s, r in ((s, records[s]) for s in [*stages, "total"])]
    rows[-1][0] = "**total**"
    return markdown_table(header, rows, [":---"] + ["---:"] * 5)


def _fmt(value: float, fmt: str) -> str:
    return "n/a" if math.isnan(float(value)) else format(float(value), fmt)
