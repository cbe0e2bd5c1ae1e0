"""The numbers registry: every number the paper prints, resolved into ``results/numbers.json``.

Each entry is read from a results file at a *key* (:mod:`clerk.provenance.keys`), formatted, and
pinned to the file's sha256 and the Snakemake rule that wrote it (:mod:`clerk.provenance.records`).
The paper prints it as :func:`reference` with a :func:`footnote` that names all four.

    clerk numbers --spec paper/numbers.yaml --out results/numbers.json
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.files import sha256_path
from clerk.provenance.keys import format_value, read_rows, resolve
from clerk.provenance.records import find_record, snakemake_records

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_NUMBER_KEYS = {"source", "key", "format", "rule"}
_FOREACH_KEYS = {"source", "id", "select", "columns", "where", "format", "rule"}


def reference(number_id: str, text: str) -> str:
    """How a number appears in the paper: its text and a footnote reference.

    >>> reference("acc.clerk", "0.734")
    '0.734[^num-acc.clerk]'
    """
    return f"{text}[^num-{number_id}]"


def footnote(number_id: str, entry: dict) -> str:
    """The footnote definition that gives a number's rule, file, key and sha256."""
    return (f"[^num-{number_id}]: `{number_id}` = {entry['text']}: rule `{entry['rule']}`, "
            f"file `{entry['source']}`, key `{entry['key']}`, sha256 `{entry['sha256']}`.")


def expand_spec(spec: dict, workdir: Path) -> dict[str, dict]:
    """Expand a numbers spec (``numbers:`` entries and ``foreach:`` patterns) into id -> entry.

    A ``foreach`` item iterates the rows of a CSV ``source`` (optionally filtered by ``where:``,
    a mapping column -> value) and makes one id per row and entry of ``columns``: the ``id``
    template is formatted with the row's cells and ``column``; the key selects the row by the
    ``select`` columns; ``format`` is a Python format spec or a mapping column -> spec. ``rule``
    is optional everywhere (Snakemake's record supplies it and must agree). Example::

        numbers:
          n_personas: {source: results/data/stats.json, key: /test/personas, format: d}
        foreach:
          - {source: results/tables/table1.csv, where: {split: test}, select: [system, split],
             columns: [accuracy_mean, accuracy_ci_low], id: "t1.{system}.{split}.{column}",
             format: .3f}

    Raises:
        UserError: unknown fields, invalid or duplicate ids, a missing source.
    """
    out: dict[str, dict] = {}

    def add(number_id: str, entry: dict, origin: str) -> None:
        if not _ID.fullmatch(number_id):
            raise UserError(f"numbers spec: {origin}: id '{number_id}' must match {_ID.pattern}")
        if number_id in out:
            raise UserError(f"numbers spec: {origin}: duplicate id '{number_id}'")
        out[number_id] = entry

    unknown = set(spec) - {"numbers", "foreach"}
    if unknown:
        raise UserError(f"numbers spec: unknown top-level keys {sorted(unknown)}; "
                        "expected 'numbers' and/or 'foreach'")
    for number_id, entry in (spec.get("numbers") or {}).items():
        if set(entry) - _NUMBER_KEYS or {"source", "key", "format"} - set(entry):
            raise UserError(f"numbers spec: id '{number_id}': expected fields source, key, "
                            f"format (and optional rule), got {sorted(entry)}")
        add(str(number_id), dict(entry), f"id '{number_id}'")
    for n, item in enumerate(spec.get("foreach") or []):
        origin = f"foreach #{n}"
        for number_id, entry in _foreach_entries(item, origin, Path(workdir)):
            add(number_id, entry, origin)
    return out


def _foreach_entries(item: dict, origin: str, workdir: Path) -> Iterator[tuple[str, dict]]:
    """``(id, entry)`` of one ``foreach`` item, row by row (see :func:`expand_spec`).

    Raises:
        UserError: unknown or missing fields, a missing source or column, a bad id template.
    """
    if set(item) - _FOREACH_KEYS or {"source", "id", "select", "columns", "format"} - set(item):
        raise UserError(f"numbers spec: {origin}: expected fields {sorted(_FOREACH_KEYS)} "
                        "(where, rule optional), got " + str(sorted(item)))
    source = workdir / item["source"]
    if not source.is_file():
        raise UserError(f"numbers spec: {origin}: source file '{item['source']}' does not exist")
    where = {str(k): str(v) for k, v in (item.get("where") or {}).items()}
    rows = read_rows(source)
    header = list(rows[0]) if rows else []
    missing = [c for c in [*item["select"], *item["columns"], *where] if c not in header]
    if missing:
        raise UserError(f"numbers spec: {origin}: no column(s) {missing} in '{item['source']}'")
    for row in rows:
        if any(row[k] != v for k, v in where.items()):
            continue
        selector = ",".join(f"{c}={row[c]}" for c in item["select"])
        for column in item["columns"]:
            fmt = item["format"]
            fmt = fmt[column] if isinstance(fmt, dict) else fmt
            entry = {"source": item["source"], "key": f"{selector}/{column}", "format": fmt}
            if "rule" in item:
                entry["rule"] = item["rule"]
            try:
                number_id = item["id"].format(**row, column=column)
            except (KeyError, IndexError, ValueError) as err:
                raise UserError(f"numbers spec: {origin}: id template '{item['id']}': "
                                f"no field {err}") from None
            yield number_id, entry


def build_numbers(spec: dict, workdir: Path) -> dict:
    """Resolve a numbers spec against the files under ``workdir``.

    Returns:
        ``{"numbers": {id: {value, format, text, source, key, sha256, rule}}}``; NaN values are
        stored as null with text ``n/a``.

    Raises:
        UserError: naming the id and file for a missing file, an unresolvable key, a bad format,
            or a rule that is neither in the spec nor in Snakemake's record (or that disagrees).
    """
    workdir = Path(workdir)
    records = snakemake_records(workdir)
    numbers = {}
    for number_id, entry in sorted(expand_spec(spec, workdir).items()):
        where = f"number '{number_id}': "
        source = os.path.normpath(entry["source"])
        value = resolve(workdir / source, entry["key"], where)
        if not isinstance(entry["format"], str):  # YAML reads `.2` as 0.2: formats must be strings
            raise UserError(f"{where}format must be a string (quote it), got {entry['format']!r}")
        try:
            text = format_value(value, entry["format"])
        except ValueError as err:
            raise UserError(f"{where}format '{entry['format']}' cannot print {value!r}: {err}") from None
        _, record = find_record(records, source)
        rule = entry.get("rule") or (record or {}).get("rule")
        if rule is None:
            raise UserError(f"{where}no Snakemake record for '{source}' and no 'rule:' in the spec")
        if record and record.get("rule") != rule:
            raise UserError(f"{where}spec says rule '{rule}' but Snakemake's record of '{source}' "
                            f"says '{record.get('rule')}'")
        numbers[number_id] = {
            "value": None if isinstance(value, float) and math.isnan(value) else value,
            "format": entry["format"], "text": text, "source": Path(source).as_posix(),
            "key": entry["key"], "sha256": sha256_path(workdir / source), "rule": rule}
    return {"numbers": numbers}
