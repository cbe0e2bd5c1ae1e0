"""Scrubbing: which values a forget erases, and redacting them from texts (SPEC §9).

A forget of (subject, predicate) erases every value the predicate has held: the ledger slot's
``o`` and ``prev``, the older values the store recorded when it published them, and any value
the caller names. In the transcript log and the derived memories each such value is replaced by
:data:`REDACTED` wherever its *text* occurs, in any script and whatever the text around it:
"東京" inside "私は東京に住んでいます" (no spaces), "Oslo" inside "#Oslo_life", "Lisbon" inside
"Lisbonite". Matching compares what a reader sees (:mod:`clerk.fold`, on both sides):
invisible default-ignorable code points (zero-width joiners and spaces, soft hyphens, bidi marks,
variation selectors, ...) are ignored, and case and Unicode normalisation too (NFKC with full
case folding: a value stored in NFC is found in a text written in NFD, "Zu\\u0308rich", in
full-width forms, "İZMİR" for "izmir", "Os\\u200dlo" for "Oslo" and the other way round). The
redaction replaces the original characters the match covers (whole characters with their
combining marks, and any invisible characters inside the match), so no byte of the value is left
in any of those forms. Text outside the matches keeps its bytes. A multi-word value ("New York")
is matched as a whole, the longest value first. The turn that stated the value keeps its shape ("I moved to [forgotten].")
so the log stays readable and session indices stay stable.

Matching by text, not by word, is what erasure needs: a value must not survive because the text
around it has no spaces. The price is that a short value also goes where it was only part of a
longer word ("cat" in "relocated"): erasure errs on the side of removing too much. The erasure
study's *leak measure* counts whole words instead (``words=True``, see :class:`ValueMatcher`), so
it does not charge a system for "pho" inside "phone".

    python -m doctest clerk/scrub.py -v
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from clerk.fold import fold, folded

#: What a forgotten value becomes in transcripts and derived memories.
REDACTED = "[forgotten]"


def _wordlike(ch: str) -> bool:
    """A character that continues a word in a script written with spaces (letters, digits and
    marks, but not CJK ideographs, kana or Hangul, which are written without spaces)."""
    return ch.isalnum() and unicodedata.east_asian_width(ch) not in ("W", "F")


class ValueMatcher:
    """Finds forgotten values in texts (see the module docstring); build one with :func:`value_pattern`.

    Args:
        values: the values (blank ones ignored).
        words: whole words only (the erasure study's leak measure): a match whose first (last)
            character continues a word of a spaced script must not be preceded (followed) by a
            character that does too. Underscores and CJK neighbours are boundaries.
    """

    def __init__(self, values: Iterable[str], words: bool = False) -> None:
        forms = {fold(v) for v in values if isinstance(v, str)}
        self.values = sorted((v for v in forms if v.strip()), key=lambda v: (-len(v), v))
        self.words = words
        # A redaction marker already in the text is skipped as a whole: a value such as "got" must
        # not be found inside "[forgotten]" (the marker states no value).
        self._regex = re.compile(re.escape(fold(REDACTED)) + "|" + "|".join(map(re.escape, self.values)))

    @property
    def pattern(self) -> str:
        """The folded values, longest first, joined by ``|`` (for messages and tests)."""
        return "|".join(self.values)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` of every match in ``text`` (original character offsets, left to right)."""
        text_folded, start, end = folded(text)
        marker, out = fold(REDACTED), []
        for match in self._regex.finditer(text_folded):
            a, b = match.span()
            if match.group() == marker or a == b:
                continue
            if self.words and not self._bounded(text_folded, a, b):
                continue
            span = (start[a], end[b - 1])
            if out and span[0] < out[-1][1]:  # two matches inside one character cluster
                out[-1] = (out[-1][0], max(out[-1][1], span[1]))
            else:
                out.append(span)
        return out

    @staticmethod
    def _bounded(text: str, a: int, b: int) -> bool:
        head = not (_wordlike(text[a]) and a > 0 and _wordlike(text[a - 1]))
        tail = not (_wordlike(text[b - 1]) and b < len(text) and _wordlike(text[b]))
        return head and tail

    def search(self, text: str) -> bool:
        """True when a value occurs in ``text``."""
        return bool(self.spans(text))

    def sub(self, replacement: str, text: str) -> str:
        """``text`` with every match replaced by ``replacement``."""
        pieces, last = [], 0
        for a, b in self.spans(text):
            pieces += [text[last:a], replacement]
            last = b
        return "".join(pieces) + text[last:] if pieces else text


def value_pattern(values: Iterable[str], words: bool = False) -> ValueMatcher | None:
    """One matcher for any of ``values`` (by text; whole words with ``words``); None if no value.

    Longer values come first so "New York City" wins over "New York". Blank values are ignored
    (they state nothing).

    >>> value_pattern(["Rome", "Rome Nord"]).pattern
    'rome nord|rome'
    >>> value_pattern(["", "  "]) is None
    True
    >>> value_pattern(["pho"], words=True).search("her phone"), value_pattern(["pho"]).search("her phone")
    (False, True)
    """
    if isinstance(values, str):
        values = [values]
    matcher = ValueMatcher(values, words=words)
    return matcher if matcher.values else None


def redact(text: str, pattern: ValueMatcher | None) -> str:
    """``text`` with every match of ``pattern`` replaced by :data:`REDACTED`.

    >>> redact("I moved to Lisbon. LISBON is great; Lisbonite food too.", value_pattern(["Lisbon"]))
    'I moved to [forgotten]. [forgotten] is great; [forgotten]ite food too.'
    >>> redact("私は東京に住んでいます #Zu\\u0308rich_life", value_pattern(["東京", "Zürich"]))
    '私は[forgotten]に住んでいます #[forgotten]_life'
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
    whose ``o`` holds one (as text, any case or normal form) is freed, a ``prev`` that holds one is cleared. A
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
