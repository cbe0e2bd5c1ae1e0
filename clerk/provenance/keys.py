"""Keys: where in a results file a number is read, and how it is printed.

JSON sources take an RFC 6901 pointer (``/runs/0/acc``; ``~1`` = ``/``, ``~0`` = ``~``); CSV
sources take ``SELECTOR/COLUMN``, SELECTOR = ``col=value[,col=value...]`` matching exactly one row
(empty = a one-row file; split at the last ``/``; values must not contain ``,`` or ``=``).

    python -c "import doctest, clerk.provenance.keys as m; print(doctest.testmod(m))"
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

from clerk.errors import UserError

_INT = re.compile(r"[+-]?\d+")


def json_pointer(doc: Any, pointer: str) -> Any:
    """The member of ``doc`` at an RFC 6901 pointer.

    >>> json_pointer({"a": [{"b/c": 3}]}, "/a/0/b~1c")
    3

    Raises:
        KeyError: with a message naming the missing member and where it was looked for.
    """
    if pointer and not pointer.startswith("/"):
        raise KeyError(f"a JSON pointer starts with '/', got '{pointer}'")
    here, seen = doc, ""
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(here, list) and part.isdigit() and int(part) < len(here):
            here = here[int(part)]
        elif isinstance(here, dict) and part in here:
            here = here[part]
        else:
            raise KeyError(f"no member '{part}' at '{seen or '/'}'")
        seen += "/" + raw
    return here


def csv_lookup(rows: list[dict[str, str]], key: str) -> str:
    """The cell at ``SELECTOR/COLUMN`` in CSV rows (see the module docstring).

    >>> csv_lookup([{"system": "a", "acc": "0.5"}, {"system": "b", "acc": "0.7"}], "system=b/acc")
    '0.7'

    Raises:
        KeyError: malformed key, unknown column, or not exactly one matching row.
    """
    selector, sep, column = key.rpartition("/")
    if not sep:
        raise KeyError(f"a CSV key is 'col=value,.../column', got '{key}'")
    conditions = [c.split("=", 1) for c in selector.split(",")] if selector else []
    columns = list(rows[0]) if rows else []
    for name in [c[0] for c in conditions] + [column]:
        if name not in columns:
            raise KeyError(f"no column '{name}' (columns: {', '.join(columns)})")
    if any(len(c) != 2 for c in conditions):
        raise KeyError(f"a row selector is 'col=value,...', got '{selector}'")
    hits = [r for r in rows if all(r[c] == v for c, v in conditions)]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} rows match '{selector}' (need exactly 1)")
    return hits[0][column]


def _as_number(raw: Any) -> int | float:
    """A JSON value or CSV cell as a number; empty/NaN/null cells are NaN."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "nan")):
        return math.nan
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"not a number: {raw!r}")
    if isinstance(raw, str):
        return int(raw) if _INT.fullmatch(raw.strip()) else float(raw)
    return raw


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file, as dicts keyed by its header."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def resolve(path: Path, key: str, where: str = "") -> int | float:
    """The number at ``key`` in the JSON or CSV file ``path``.

    Raises:
        UserError: the file is missing, the key does not resolve, or the value is not a number;
            the message starts with ``where`` (e.g. the number id) and names the file and key.
    """
    if not path.is_file():
        raise UserError(f"{where}source file '{path}' does not exist")
    try:
        if path.suffix == ".csv":
            return _as_number(csv_lookup(read_rows(path), key))
        return _as_number(json_pointer(json.loads(path.read_text(encoding="utf-8")), key))
    except (KeyError, ValueError) as err:
        reason = err.args[0] if err.args else str(err)
        raise UserError(f"{where}key '{key}' in '{path}': {reason}") from None


def format_value(value: int | float, fmt: str) -> str:
    """Format a number with a Python format spec; NaN prints as ``n/a``.

    >>> format_value(0.73456, ".3f"), format_value(12.0, "d"), format_value(0.1234, ".1%")
    ('0.735', '12', '12.3%')
    """
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if fmt.endswith("d") and isinstance(value, float) and value.is_integer():
        value = int(value)
    return format(value, fmt)
