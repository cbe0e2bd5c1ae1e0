"""Scrubbing: which values a forget erases, and redacting them from texts (SPEC §9).

A forget of (subject, predicate) erases every value the predicate has held: the ledger slot's
``o`` and ``prev``, the older values the store recorded when it published them, and any value
the caller names. In the transcript log and the derived memories each such value is replaced by
:data:`REDACTED` wherever it occurs as a whole word (case-insensitive): "Lisbon" is redacted in
"Lisbon," and "lisbon" but not inside "Lisbonite" (a different word, so the value's text does
not occur), and a multi-word value ("New York") is matched as a whole. The turn that stated the
value keeps its shape ("I moved to [forgotten].") so the log stays readable and session indices
stay stable.

    python -m doctest clerk/store/scrub.py -v
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: What a forgotten value becomes in transcripts and derived memories.
REDACTED = "[forgotten]"


def value_pattern(values: Iterable[str]) -> re.Pattern | None:
    """One regex matching any of ``values`` as a whole word, case-insensitively; None if no value.

    Longer values come first so "New York City" wins over "New York". Blank values are ignored
    (they state nothing). A value that starts (ends) with a word character must not be preceded
    (followed) by one.

    >>> value_pattern(["Rome", "Rome Nord"]).pattern
    '(?<!\\\\w)Rome\\\\ Nord(?!\\\\w)|(?<!\\\\w)Rome(?!\\\\w)'
    >>> value_pattern(["", "  "]) is None
    True
    """
    unique = sorted({v for v in values if isinstance(v, str) and v.strip()}, key=lambda v: (-len(v), v))
    if not unique:
        return None
    parts = []
    for value in unique:
        head = r"(?<!\w)" if re.match(r"\w", value[0]) else ""
        tail = r"(?!\w)" if re.match(r"\w", value[-1]) else ""
        parts.append(head + re.escape(value) + tail)
    return re.compile("|".join(parts), flags=re.IGNORECASE)


def redact(text: str, pattern: re.Pattern | None) -> str:
    """``text`` with every match of ``pattern`` replaced by :data:`REDACTED`.

    >>> redact("I moved to Lisbon. LISBON is great; Lisbonite food too.", value_pattern(["Lisbon"]))
    'I moved to [forgotten]. [forgotten] is great; Lisbonite food too.'
    """
    if pattern is None:
        return text
    return pattern.sub(REDACTED, text)


def slot_values(slots: Iterable[dict], predicate: str) -> set[str]:
    """``o`` and ``prev`` of every occupied slot of ``predicate`` (any subject field).

    >>> sorted(slot_values([{"i": 0, "s": "Ari", "p": "city", "o": "Oslo", "prev": "Rome"},
    ...                     {"i": 1, "s": "Ari", "p": "job", "o": "chef", "prev": None}], "city"))
    ['Oslo', 'Rome']
    """
    out = set()
    for slot in slots:
        if slot.get("p") == predicate:
            out.update(v for v in (slot.get("o"), slot.get("prev")) if isinstance(v, str))
    return out


def published_values(ledger: Iterable[dict]) -> set[tuple[str, str]]:
    """(predicate, value) pairs a ledger holds (``o`` and ``prev``): what a publish records so
    that a later forget knows every value a predicate has held.

    >>> sorted(published_values([{"i": 0, "s": "Ari", "p": "city", "o": "Oslo", "prev": "Rome"}, {"i": 1}]))
    [('city', 'Oslo'), ('city', 'Rome')]
    """
    out = set()
    for slot in ledger:
        if "p" in slot:
            out.update((slot["p"], v) for v in (slot["o"], slot["prev"]) if isinstance(v, str))
    return out


def free_predicate(ledger: list[dict], predicate: str, subject: str | None = None) -> list[dict]:
    """A copy of ``ledger`` with every occupied slot of ``predicate`` freed (of ``subject`` only,
    when given): the ledger part of a forget. ``o`` and ``prev`` go with the slot; other slots
    are untouched (:func:`free_values` frees copies of the values filed under other predicates).

    >>> led = [{"i": 0, "s": "Ari", "p": "city", "o": "Oslo", "prev": "Rome", "v": 1, "born": 0, "t": 2, "uses": 1},
    ...        {"i": 1, "s": "Ari", "p": "job", "o": "chef", "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}]
    >>> [sorted(slot) for slot in free_predicate(led, "city")]
    [['i'], ['born', 'i', 'o', 'p', 'prev', 's', 't', 'uses', 'v']]
    >>> free_predicate(led, "city", subject="Bo") == led
    True
    """
    out = []
    for slot in ledger:
        doomed = "s" in slot and slot["p"] == predicate and (subject is None or slot["s"] == subject)
        out.append({"i": slot["i"]} if doomed else dict(slot))
    return out


def free_values(ledger: list[dict], values: Iterable[str]) -> list[dict]:
    """A copy of ``ledger`` with no forgotten value left in any slot, whatever its predicate: a slot
    whose ``o`` holds one (whole word, any case) is freed, a ``prev`` that holds one is cleared. A
    learned writer can file a value under the wrong predicate; a forget must still remove it.

    >>> led = [{"i": 0, "s": "Ari", "p": "deadline", "o": "the app", "prev": None, "v": 1, "born": 0, "t": 2, "uses": 1},
    ...        {"i": 1, "s": "Ari", "p": "job", "o": "chef", "prev": "the app", "v": 1, "born": 0, "t": 0, "uses": 0}]
    >>> [(s.get("o"), s.get("prev")) for s in free_values(led, ["The App"])]
    [(None, None), ('chef', None)]
    """
    pattern = value_pattern(values)
    out = []
    for slot in ledger:
        slot = dict(slot)
        if pattern is not None and "p" in slot:
            if isinstance(slot["o"], str) and pattern.search(slot["o"]):
                slot = {"i": slot["i"]}
            elif isinstance(slot["prev"], str) and pattern.search(slot["prev"]):
                slot["prev"] = None
        out.append(slot)
    return out
