"""Tables in and out: result files read with errors that name them, CSV and Markdown written
byte-stably, and the cells and footers every paper table shares (SPEC §6, §8).

    python -m doctest -v clerk/report/tabular.py
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clerk.errors import UserError

# ---- reading ---------------------------------------------------------------------------------

def read_json(path: str | Path, what: str) -> dict:
    """A JSON object result file; a missing, empty, truncated, non-UTF-8 or non-object file (or a
    folder) is a UserError naming ``what`` and the path (:func:`clerk.inputs.read_json`)."""
    from clerk.inputs import read_json as read

    return read(path, what, shape=dict)


#: The cells a result CSV writes for a missing value (``write_csv``: NaN as empty or ``nan``).
NA_VALUES = ["", "nan", "NaN"]


def read_csv(path: str | Path, what: str, columns: tuple[str, ...]):
    """A CSV result file as a DataFrame; UserError when it is missing or lacks one of ``columns``.
    Only an empty cell or ``nan`` is missing: a system named ``null`` stays a name (pandas would
    read it, like ``None`` or ``NA``, as a missing value)."""
    import pandas as pd

    from clerk.inputs import read_text

    text = read_text(path, what, "a CSV file")  # missing, folder, not UTF-8
    try:
        df = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=NA_VALUES)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise UserError(f"{what} must be a CSV file, got {str(path)!r}, which cannot be read as CSV "
                        f"({' '.join(str(err).split())})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UserError(f"{what}: '{path}' lacks column(s) {missing}; has {list(df.columns)}")
    return df


# ---- writing ---------------------------------------------------------------------------------

def write_csv(df, path: str | Path, float_format: str = "%.6f", sort_by: list[str] | None = None) -> None:
    """Write a table byte-deterministically: rows sorted, fixed float format, ``\\n`` endings.

    Args:
        sort_by: columns to sort rows by (default: all columns, left to right).
    """
    table = df.sort_values(sort_by or list(df.columns), kind="mergesort").reset_index(drop=True)
    write_text(path, table.to_csv(index=False, float_format=float_format, lineterminator="\n", na_rep=""))


def _cell(value: Any, fmt: Callable[[float], str]) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else fmt(value)
    return str(value).replace("|", "\\|")


def to_markdown(df, float_format: str | Callable[[float], str] = ".3f") -> str:
    """A GitHub-flavoured Markdown table; numeric columns right-aligned, NaN as ``n/a``.

    >>> import pandas as pd
    >>> print(to_markdown(pd.DataFrame({"system": ["clerk"], "acc": [0.73456]})), end="")
    | system | acc |
    | :--- | ---: |
    | clerk | 0.735 |
    """
    from pandas.api.types import is_numeric_dtype

    fmt = float_format if callable(float_format) else (lambda v: format(v, float_format))
    align = ["---:" if is_numeric_dtype(df[c]) else ":---" for c in df.columns]
    lines = ["| " + " | ".join(str(c) for c in df.columns) + " |", "| " + " | ".join(align) + " |"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, fmt) for v in row) + " |")
    return "\n".join(lines) + "\n"


def write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 text as bytes (no newline translation), creating the folder; atomically
    (:func:`clerk.atomic.write_text`: whole or absent)."""
    from clerk.atomic import write_text as write_atomic

    write_atomic(path, text)


# ---- cells, rows and footers -----------------------------------------------------------------

def mean_pm(row: dict, col: str, fmt: str) -> str:
    """``mean ± half-width`` of the 95 % interval from aggregated columns; ``n/a`` for no value.

    With one seed there is no interval and only the mean is printed. A cell computed from fewer
    seeds than the row has (a seed without such questions) says so: ``0.50 (n=1)``.

    >>> mean_pm({"a_mean": 0.5, "a_ci_low": 0.4, "a_ci_high": 0.6}, "a", ".2f")
    '0.50 ± 0.10'
    >>> mean_pm({"a_mean": 0.5, "a_ci_low": float("nan"), "a_ci_high": float("nan")}, "a", ".2f")
    '0.50'
    >>> mean_pm({"a_mean": float("nan"), "a_ci_low": 0.0, "a_ci_high": 0.0}, "a", ".2f")
    'n/a'
    >>> nan = float("nan")
    >>> mean_pm({"a_mean": 0.5, "a_ci_low": nan, "a_ci_high": nan, "a_n": 1, "n_seeds": 2}, "a", ".2f")
    '0.50 (n=1)'
    """
    mean, low, high = (float(row[f"{col}_{k}"]) for k in ("mean", "ci_low", "ci_high"))
    if math.isnan(mean):
        return "n/a"
    n, n_row = row.get(f"{col}_n"), row.get("n_seeds")
    partial = f" (n={int(n)})" if n is not None and n_row is not None and int(n) < int(n_row) else ""
    if math.isnan(low) or math.isnan(high):
        return format(mean, fmt) + partial
    return f"{format(mean, fmt)} ± {format((high - low) / 2, fmt)}{partial}"


def ordered(values: list[str], preferred: list[str] | tuple[str, ...]) -> list[str]:
    """``values`` in ``preferred`` order, unknown ones after them in sorted order.

    >>> ordered(["rag", "zeta", "clerk", "alpha"], ["clerk", "rag"])
    ['clerk', 'rag', 'alpha', 'zeta']
    """
    known = [v for v in preferred if v in values]
    return known + sorted(v for v in set(values) if v not in preferred)


def markdown_table(header: list[str], rows: list[list[str]], align: list[str]) -> str:
    """A Markdown table of ready-made cells (``|`` escaped) under ``header`` with ``align`` markers."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def seed_note(agg) -> str:
    """The footer under a table: how the cells were computed and over which seeds."""
    seeds = sorted({s for cell in agg["seeds"] for s in str(cell).split(";")}, key=seed_key)
    n = sorted(set(int(x) for x in agg["n_seeds"]))
    if n == [1]:
        return f"\nCells: the value of the single seed ({seeds[0]}); one seed gives no interval.\n"
    n_text = "/".join(str(x) for x in n)
    return (f"\nCells: mean ± half-width of the 95 % Student-t interval over n = {n_text} seeds "
            f"({', '.join(seeds)}); one value per seed first, then aggregated.\n")


def seed_key(seed: str) -> tuple:
    """Sort key of a seed label: integers in numeric order, then other labels."""
    return (0, int(seed), "") if str(seed).lstrip("-").isdigit() else (1, 0, str(seed))
