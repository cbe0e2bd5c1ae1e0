"""Ledger slots: the file form of a ledger, its checks, and the salience order (SPEC §1.1, §1.5).

A ledger is a list of exactly B slot dicts in index order, in the file format itself: an occupied
slot is ``{"i","s","p","o",["w",]"prev","v","born","t","uses"}`` and a free one ``{"i"}``
(``w``, the date of a dated fact, exists in open ledgers only: SPEC §1.7). Keeping the in-memory
form identical to the file form means there is no conversion layer to get wrong; every function
here treats its inputs as read-only and returns fresh objects. :mod:`clerk.ledger` re-exports all
of it next to the reducer.

    >>> L = empty_ledger(2)
    >>> validate_ledger(L), occupied(L)
    (None, [])

    python -m pytest tests/test_ledger.py -q -x
"""

from __future__ import annotations

import copy
import json
from typing import Any

from clerk.form import LedgerForm

Slot = dict[str, Any]
Ledger = list[Slot]
Op = dict[str, Any]
Program = list[Any]

#: Field order of an occupied slot, in files and in the prompt serialization.
SLOT_FIELDS = ("i", "s", "p", "o", "prev", "v", "born", "t", "uses")
#: Field order of an occupied slot holding a dated fact (open ledgers, SPEC §1.7).
DATED_SLOT_FIELDS = ("i", "s", "p", "o", "w", "prev", "v", "born", "t", "uses")


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON (the one JSON style for ops, programs and slots)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- slots and ledgers


def empty_ledger(budget: int) -> Ledger:
    """A ledger of ``budget`` free slots.

    >>> empty_ledger(2)
    [{'i': 0}, {'i': 1}]
    """
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ValueError(f"budget must be a positive int, got {budget!r}")
    return [{"i": i} for i in range(budget)]


def is_free(slot: Slot) -> bool:
    """True for a free slot (only an index)."""
    return "s" not in slot


def occupied(ledger: Ledger) -> list[Slot]:
    """The occupied slots, in index order."""
    return [slot for slot in ledger if not is_free(slot)]


def find(ledger: Ledger, subject: str, pred: str) -> int | None:
    """Index of the occupied slot holding (subject, pred), or None."""
    for slot in ledger:
        if not is_free(slot) and slot["s"] == subject and slot["p"] == pred:
            return slot["i"]
    return None


def validate_ledger(ledger: Any, form: LedgerForm | None = None) -> None:
    """Raise ValueError unless ``ledger`` is well formed (indices 0..B-1, typed fields, unique keys).

    A slot may hold ``w`` (:data:`DATED_SLOT_FIELDS`) only with a ``form``; with one, every
    occupied slot's fact must also be of that form (SPEC §1.7). ``prev`` is a former value and is
    not checked against the form.
    """
    if not isinstance(ledger, list) or not ledger:
        raise ValueError("a ledger is a non-empty JSON list of slots")
    keys = set()
    for pos, slot in enumerate(ledger):
        if not isinstance(slot, dict) or slot.get("i") != pos or type(slot.get("i")) is not int:
            raise ValueError(f"slot {pos} must be a dict with i={pos}, got {slot!r}")
        if is_free(slot):
            if set(slot) != {"i"}:
                raise ValueError(f"free slot {pos} must hold only 'i', got {sorted(slot)}")
            continue
        if tuple(slot) != SLOT_FIELDS and (form is None or tuple(slot) != DATED_SLOT_FIELDS):
            dated = "" if form is None else f" or {DATED_SLOT_FIELDS}"
            hint = " ('w', a date, needs an open ledger's form)" if form is None and "w" in slot else ""
            raise ValueError(f"slot {pos} fields must be {SLOT_FIELDS}{dated} in order, got {tuple(slot)}{hint}")
        for name in ("s", "p", "o"):
            if not isinstance(slot[name], str):
                raise ValueError(f"slot {pos} field {name!r} must be a string, got {slot[name]!r}")
        if slot["prev"] is not None and not isinstance(slot["prev"], str):
            raise ValueError(f"slot {pos} field 'prev' must be a string or null, got {slot['prev']!r}")
        if slot["v"] not in (0, 1) or type(slot["v"]) is not int:
            raise ValueError(f"slot {pos} field 'v' must be 0 or 1, got {slot['v']!r}")
        for name in ("born", "t", "uses"):
            if type(slot[name]) is not int or slot[name] < 0:
                raise ValueError(f"slot {pos} field {name!r} must be an int >= 0, got {slot[name]!r}")
        if form is not None:
            if "w" in slot and not isinstance(slot["w"], str):
                raise ValueError(f"slot {pos} field 'w' must be a date string, got {slot['w']!r}")
            problem = form.fact_problem(slot["s"], slot["p"], slot["o"], slot.get("w"))
            if problem is not None:
                raise ValueError(f"slot {pos}: {problem}")
        if (slot["s"], slot["p"]) in keys:
            raise ValueError(f"slot {pos} repeats (s, p) = {(slot['s'], slot['p'])!r}")
        keys.add((slot["s"], slot["p"]))


# --------------------------------------------------------------------------- salience


def salience_key(slot: Slot) -> tuple[int, int, int]:
    """Sort key of the eviction oracle: the *smallest* key is the least salient slot.

    Salience uses only fields the policy sees in the serialized ledger: more ``uses`` (questions
    answered from the slot) is more salient, then a more recent last write ``t``; remaining ties
    evict the lower index ``i`` first. The order is total because indices are unique.

    >>> salience_key({"i": 4, "s": "A", "p": "job", "o": "x", "prev": None, "v": 1, "born": 0, "t": 3, "uses": 2})
    (2, 3, 4)
    """
    return (slot["uses"], slot["t"], slot["i"])


def least_salient(ledger: Ledger) -> int:
    """Index of the occupied slot the oracle evicts first. Raises ValueError on an empty ledger."""
    slots = occupied(ledger)
    if not slots:
        raise ValueError("no occupied slot to evict")
    return min(slots, key=salience_key)["i"]


def record_use(ledger: Ledger, subject: str, pred: str) -> Ledger:
    """A copy of ``ledger`` with ``uses`` of the (subject, pred) slot incremented (no-op if absent)."""
    out = copy.deepcopy(ledger)
    idx = find(out, subject, pred)
    if idx is not None:
        out[idx]["uses"] += 1
    return out
