"""Read cost: read tokens per question by session index and memory view, over seeds (SPEC §6).

``clerk read-cost`` writes one CSV per seed (named ``<seed>.csv``); this aggregates them per
(view, session) and marks each view's last session, the long-horizon end point the paper quotes.

    clerk table-read-cost --csv results/readcost/*.csv --out results/read_cost.csv
"""

from __future__ import annotations

from pathlib import Path

from clerk.errors import UserError
from clerk.report.tabular import read_csv


def read_cost_table(paths: list[str]):
    """Aggregate ``clerk read-cost`` CSVs (one per seed, named ``<seed>.csv``) per (view, session).

    Adds ``final`` = True on each view's last session index, the long-horizon end point the paper
    quotes.

    Raises:
        UserError: no files or a missing column.
    """
    import pandas as pd

    from clerk.report.stats import aggregate_frame

    if not paths:
        raise UserError("--csv: expected at least one read-cost CSV, got none")
    frames = []
    for path in paths:
        df = read_csv(path, "--csv", ("session", "view", "mean_read_tokens", "n"))
        frames.append(df.assign(seed=Path(path).stem))  # the workflow names them results/readcost/{seed}.csv
    per_seed = pd.concat(frames, ignore_index=True)
    agg = aggregate_frame(per_seed, ["view", "session"], ["mean_read_tokens"])
    last = agg.groupby("view")["session"].transform("max")
    agg["final"] = agg["session"] == last
    return agg
