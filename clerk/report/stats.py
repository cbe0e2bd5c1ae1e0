"""Aggregation over seeds: n, mean, sd (ddof=1) and the 95 % Student-t interval (SPEC §6, §8).

Every table of the paper is one row per seed first, then these statistics per group; a cell of
the paper is the mean ± half-width of the interval.

    python -c "from clerk.report.stats import aggregate; print(aggregate([0.5, 0.6, 0.8]))"
"""

from __future__ import annotations

import math
from typing import Any

from clerk.errors import UserError

#: Two-sided confidence level of every interval in the paper.
CI_LEVEL = 0.95


def aggregate(values: list[float]) -> dict[str, float]:
    """n, mean, sd (ddof=1) and the 95 % Student-t interval of the mean over seeds.

    NaN values are left out (n counts the rest). With n = 1, sd and the interval are NaN (no
    spread can be estimated from one seed); with n = 0, the mean is NaN too.

    >>> aggregate([1.0, 2.0, 3.0])["sd"], aggregate([0.5])["ci_low"]
    (1.0, nan)
    """
    from scipy import stats

    xs = [float(v) for v in values if not math.isnan(float(v))]
    n, nan = len(xs), math.nan
    mean = sum(xs) / n if n else nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else nan
    half = float(stats.t.ppf(0.5 + CI_LEVEL / 2, n - 1)) * sd / math.sqrt(n) if n > 1 else nan
    return {"n": n, "mean": mean, "sd": sd, "ci_low": mean - half, "ci_high": mean + half}


def aggregate_frame(df, by: list[str], value_cols: list[str], seed_col: str = "seed"):
    """Aggregate per-seed rows into one row per ``by`` group.

    Returns:
        A DataFrame with the ``by`` columns, ``n_seeds``, ``seeds`` (sorted, ``;``-joined) and per
        value column ``<col>_n``, ``_mean``, ``_sd``, ``_ci_low``, ``_ci_high``; sorted by ``by``.

    Raises:
        UserError: a missing column, or a (group, seed) pair that occurs twice.
    """
    import pandas as pd

    missing = [c for c in [*by, *value_cols, seed_col] if c not in df.columns]
    if missing:
        raise UserError(f"aggregate: columns {missing} missing; have {list(df.columns)}")
    dup = df.duplicated([*by, seed_col])
    if dup.any():
        raise UserError(f"aggregate: duplicate {[*by, seed_col]} row: {df[dup].iloc[0].to_dict()}")
    rows = []
    for key, group in df.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        seeds = sorted(group[seed_col].tolist(), key=lambda s: (str(type(s)), s))
        row: dict[str, Any] = {**dict(zip(by, key)), "n_seeds": len(seeds),
                               "seeds": ";".join(str(s) for s in seeds)}
        for col in value_cols:
            row.update({f"{col}_{k}": v for k, v in aggregate(group[col].tolist()).items()})
        rows.append(row)
    return pd.DataFrame(rows)

