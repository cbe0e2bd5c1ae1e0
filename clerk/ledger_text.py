"""The text form of a ledger that the policy reads: an exact serializer and its inverse (SPEC §1.6).

:mod:`clerk.ledger` re-exports :func:`serialize` and :func:`deserialize`.

    >>> from clerk.slots import empty_ledger
    >>> print(serialize(empty_ledger(2)))
    free 2: 0 1

    python -m pytest tests/test_ledger.py -q -x -k serial
"""

from __future__ import annotations

import json
import re

from clerk.form import LedgerForm
from clerk.slots import Ledger, Slot, dumps, is_free, occupied, salience_key, validate_ledger

#: Header of the free-slot line of :func:`serialize`.
_FREE = "free"
#: An occupied slot line: index, uses, last write, born, optional when, optional tombstone mark,
#: then the fact. A raw key is followed by "=" at once, so it is never read as a when.
_SLOT_LINE = re.compile(r"^(\d+) u(\d+) t(\d+) b(\d+)(?: w([0-9]{4}(?:-[0-9]{2}){0,2}))?( x)? (.+)$")
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def _plain(text: str) -> bool:
    """True when a value can be written raw: one non-blank line, no quote first, no `` <`` inside."""
    return (bool(text) and text == text.strip() and len(text.splitlines()) == 1 and "\n" not in text
            and not text.startswith('"') and " <" not in text and text.isprintable())


def _field(text: str, key: bool = False) -> str:
    """A string field: raw when unambiguous, else a JSON string (exact for any text)."""
    ok = _KEY.match(text) is not None if key else _plain(text)
    return text if ok else dumps(text)


def _take(text: str, stop: str) -> tuple[str, str]:
    """Read one field from the start of ``text``: a JSON string, or raw text up to ``stop``."""
    if text.startswith('"'):
        value, end = json.JSONDecoder().raw_decode(text)
        if not isinstance(value, str):
            raise ValueError(f"expected a JSON string, got {text[:40]!r}")
        return value, text[end:]
    cut = text.find(stop)
    return (text, "") if cut == -1 else (text[:cut], text[cut:])


def serialize(ledger: Ledger) -> str:
    """Compact exact text form for prompts (SPEC §1): what the policy reads.

    When any slot is occupied, line 1 names the subject of the least salient slot
    (``subject: Ari``), then one line per occupied slot in the eviction oracle's order
    (:func:`salience_key`, least salient first) with every field:
    ``<i> u<uses> t<t> b<born>[ w<when>][ x] <p>=<o>[ <<prev>]`` (`` x`` = tombstoned; the when
    of a dated fact, in normal form, only in open ledgers: SPEC §1.7); a slot of another
    subject writes ``@<s> `` before its predicate. The last line lists the free slots,
    ``free <count>: <indices>`` (last: next to what the policy reads and writes after it).
    Strings are raw when that is unambiguous and JSON strings otherwise, so
    ``deserialize(serialize(L)) == L`` for every ledger.

    >>> print(serialize([{"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": "nurse", "v": 1, "born": 0, "t": 2, "uses": 1}, {"i": 1}]))
    subject: Ari
    0 u1 t2 b0 job=chef <nurse
    free 1: 1
    """
    lines = []
    slots = sorted(occupied(ledger), key=salience_key)
    if slots:
        subject = slots[0]["s"]
        lines.append(f"subject: {subject if _plain(subject) else dumps(subject)}")
        for slot in slots:
            who = "" if slot["s"] == subject else f"@{dumps(slot['s'])} "
            mark = (f" w{slot['w']}" if "w" in slot else "") + ("" if slot["v"] else " x")
            prev = "" if slot["prev"] is None else f" <{_field(slot['prev'])}"
            lines.append(f"{slot['i']} u{slot['uses']} t{slot['t']} b{slot['born']}{mark} "
                         f"{who}{_field(slot['p'], key=True)}={_field(slot['o'])}{prev}")
    free = [slot["i"] for slot in ledger if is_free(slot)]
    lines.append(f"{_FREE} {len(free)}:" + "".join(f" {i}" for i in free))
    return "\n".join(lines)


def _parse_slot(line: str, subject: str) -> Slot:
    match = _SLOT_LINE.match(line)
    if match is None:
        raise ValueError(f"not a slot line: {line!r}")
    i, uses, t, born, when, mark, rest = match.groups()
    s = subject
    if rest.startswith("@"):
        s, rest = _take(rest[1:], " ")
        rest = rest[1:]
    p, rest = _take(rest, "=")
    if not rest.startswith("="):
        raise ValueError(f"missing '=' after the predicate: {line!r}")
    o, rest = _take(rest[1:], " <")
    prev = None
    if rest:
        if not rest.startswith(" <"):
            raise ValueError(f"unexpected text after the value: {line!r}")
        prev, rest = _take(rest[2:], "\n")
        if rest:
            raise ValueError(f"unexpected text after the previous value: {line!r}")
    slot = {"i": int(i), "s": s, "p": p, "o": o}
    if when is not None:
        slot["w"] = when
    slot.update(prev=prev, v=0 if mark else 1, born=int(born), t=int(t), uses=int(uses))
    return slot


def deserialize(text: str, form: LedgerForm | None = None) -> Ledger:
    """Inverse of :func:`serialize`; dated slots need the ledger's ``form`` (its facts are then
    checked against it: :func:`clerk.slots.validate_ledger`). Raises ValueError on malformed text."""
    lines = text.split("\n")
    head = re.match(rf"^{_FREE} (\d+):((?: \d+)*)$", lines[-1])
    if head is None:
        raise ValueError(f"last line: expected 'free <count>: <indices>', got {lines[-1]!r}")
    free = [int(x) for x in head.group(2).split()]
    if int(head.group(1)) != len(free):
        raise ValueError(f"last line: the count {head.group(1)} does not match {len(free)} listed free slots")
    slots: list[Slot] = [{"i": i} for i in free]
    if len(lines) > 1:
        if not lines[0].startswith("subject: "):
            raise ValueError(f"line 0: expected 'subject: <name>', got {lines[0]!r}")
        subject = lines[0][len("subject: "):]
        if subject.startswith('"'):
            subject = json.loads(subject)
        slots += [_parse_slot(line, subject) for line in lines[1:-1]]
    ledger = sorted(slots, key=lambda slot: slot["i"])
    validate_ledger(ledger, form)
    return ledger

