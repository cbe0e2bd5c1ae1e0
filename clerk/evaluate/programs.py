"""What the model writers wrote: the programs file beside ``metrics.json`` (SPEC §6.3, §7).

An evaluation job (``clerk evaluate``, ``clerk locomo``) keeps, for every model writer (a ledger
system with a ``writer_kind``: ``clerk``, ``prompted-ledger``), one record per write: the text as
generated, the ops it compiled to, the reducer's verdict on each op (``applied`` or a rejection
code of ``clerk.ledger.REJECTION_CODES``) and the ledger after the write in the exact
serialization the policy reads (``clerk.ledger.serialize``; ``deserialize`` gives the ledger
back). Teacher-forced writes (:mod:`clerk.evaluate.teacher`) that were run again from the gold
ledger are kept too, marked; their ledgers are thrown away, so theirs is null.

The file is ``programs.jsonl.gz``: JSON lines (:data:`~clerk.evaluate.schemas.SCHEMAS`
``"programs"``), sorted by (system, persona, session, teacher-forced), gzip-compressed with no
name or time in the header, so the same writes give the same bytes; ``zcat`` reads it and
``diff <(zcat a) <(zcat b)`` compares two runs line by line.

    zcat results/eval/137/test/programs.jsonl.gz | head -1
    python -c "from clerk.evaluate.programs import read_programs; print(len(read_programs('programs.jsonl.gz')))"
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk.evaluate.schemas import validate_record

#: The file's name in a job's output folder.
PROGRAMS_FILE = "programs.jsonl.gz"
#: The verdict of an op the reducer applied; any other verdict is a rejection code.
APPLIED = "applied"


def program_row(system: str, persona: str, session: int, result: Any, *, teacher_forced: bool = False) -> dict:
    """The ``programs`` record of one write (a :class:`~clerk.memory.WriteResult` of a ledger
    system); a teacher-forced rewrite's ledger is not kept (null).

    >>> from clerk.memory import WriteResult
    >>> r = WriteResult(L.empty_ledger(1), [{"op": "EVICT", "i": 0}], verdicts=["slot_free"], text="EVICT job")
    >>> program_row("clerk", "Ari", 0, r)
    {'system': 'clerk', 'persona': 'Ari', 'session': 0, 'teacher_forced': False, 'text': 'EVICT job', 'ops': [{'op': 'EVICT', 'i': 0}], 'verdicts': ['slot_free'], 'ledger': 'free 1: 0'}
    """
    assert len(result.verdicts) == len(result.program), "one verdict per op"
    return {
        "system": system, "persona": persona, "session": session, "teacher_forced": teacher_forced,
        "text": result.text, "ops": list(result.program), "verdicts": list(result.verdicts),
        "ledger": None if teacher_forced else L.serialize(result.state),
    }


def invalid_reasons(verdict_lists: Iterable[list[str]]) -> dict[str, int]:
    """Rejected ops per rejection code over writes' verdicts, in the order of
    ``clerk.ledger.REJECTION_CODES``, codes that never occurred left out; the counts sum to the
    writes' invalid ops.

    >>> invalid_reasons([["applied", "key_held"], ["update_same_value", "key_held"]])
    {'key_held': 2, 'update_same_value': 1}
    """
    counts = Counter(v for verdicts in verdict_lists for v in verdicts if v != APPLIED)
    unknown = set(counts) - set(L.REJECTION_CODES)
    assert not unknown, f"verdicts outside REJECTION_CODES: {sorted(unknown)}"
    return {code: counts[code] for code in L.REJECTION_CODES if counts[code]}


def _order(row: dict) -> tuple:
    return row["system"], row["persona"], row["session"], row["teacher_forced"]


def write_programs(path: str | Path, rows: list[dict]) -> None:
    """Write ``rows`` (each validated as a ``programs`` record) sorted, as gzip'd JSON lines with
    fixed header bytes; whole or absent (``clerk.atomic``)."""
    from clerk.atomic import atomic_write

    for row in rows:
        validate_record("programs", row)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in sorted(rows, key=_order))
    with atomic_write(path, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
        gz.write(text.encode("utf-8"))


def read_programs(path: str | Path) -> list[dict]:
    """The records of a programs file, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]
