"""The stress harness's judge: resurrections and lost acknowledged writes (SPEC §9).

Inputs are what the harness's processes recorded, all ordered by the store's own counters (never
by wall clock): a publish commits under one erase generation, and a forget's acknowledged
generation is the one it advanced the subject to. So a publish at generation ``g`` committed
before a forget acknowledged at ``g' > g`` and after one acknowledged at ``g' <= g``.

* A value published at ``g`` is **forgotten** by the first forget of its (subject, predicate),
  or of the whole subject, acknowledged at some ``g' > g``.
* A **resurrection** is a forgotten value present in a view of its subject (a consolidation's
  read, a forgetter's read, the final state: ledger, transcript log, derived memories) taken at
  a generation ``>= g'``, unless a publish at a generation ``>= g'`` stated it again. Counted
  once per (subject, value).
* A publish is **lost** when the final state does not hold it: its session is missing from the
  transcript log though no whole-subject forget came after it, or it was the last publish to
  write a predicate and no forget of that predicate came after it, yet the final ledger holds
  another value there.

Values in the harness are unique codes (``Lisbon-001000042``, ``東京-001000043``) and views are read
in NFC (:func:`clerk.store.stress._seen`), so finding a value in a view is an
exact string search.

    python -m doctest clerk/store/audit.py -v
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from clerk import ledger as L

#: How many resurrection / loss examples the report carries.
MAX_EXAMPLES = 3


@dataclass(frozen=True)
class Published:
    """An acknowledged publish: subject, session index, commit generation, predicate -> value."""

    subject: str
    session: int
    generation: int
    writes: dict


@dataclass(frozen=True)
class Forgot:
    """An acknowledged forget: subject, predicate (None = whole subject), new generation."""

    subject: str
    predicate: str | None
    generation: int


@dataclass(frozen=True)
class Seen:
    """A view of a subject at a generation, reduced to the value codes it contains."""

    subject: str
    generation: int
    codes: frozenset = field(default_factory=frozenset)


def _covers(forget: Forgot, subject: str, predicate: str) -> bool:
    return forget.subject == subject and forget.predicate in (None, predicate)


def forgotten_values(published: list[Published], forgets: list[Forgot]) -> dict[tuple[str, str], int]:
    """(subject, value) -> generation of the first forget that erased it.

    >>> p = [Published("Ari", 0, 0, {"city": "Oslo-1"}), Published("Ari", 1, 1, {"city": "Rome-2"})]
    >>> forgotten_values(p, [Forgot("Ari", "city", 1), Forgot("Ari", "job", 2)])
    {('Ari', 'Oslo-1'): 1}
    """
    by_subject: dict[str, list[Forgot]] = defaultdict(list)
    for f in forgets:
        by_subject[f.subject].append(f)
    out: dict[tuple[str, str], int] = {}
    for pub in published:
        for pred, value in pub.writes.items():
            gens = [f.generation for f in by_subject[pub.subject]
                    if _covers(f, pub.subject, pred) and f.generation > pub.generation]
            if gens:
                key = (pub.subject, value)
                out[key] = min(gens + ([out[key]] if key in out else []))
    return out


def resurrections(published: list[Published], forgets: list[Forgot], seen: list[Seen]) -> list[dict]:
    """Every forgotten (subject, value) seen at or after its forget's generation and not stated
    again by a later publish, with the first view that showed it.

    >>> p = [Published("Ari", 0, 0, {"city": "Oslo-1"})]
    >>> f = [Forgot("Ari", "city", 1)]
    >>> resurrections(p, f, [Seen("Ari", 0, frozenset({"Oslo-1"})), Seen("Ari", 1, frozenset())])
    []
    >>> resurrections(p, f, [Seen("Ari", 1, frozenset({"Oslo-1"}))])
    [{'subject': 'Ari', 'value': 'Oslo-1', 'forgotten_at': 1, 'seen_at': 1}]
    """
    forgotten = forgotten_values(published, forgets)
    stated: dict[tuple[str, str], list[int]] = defaultdict(list)
    for pub in published:
        for value in pub.writes.values():
            stated[(pub.subject, value)].append(pub.generation)
    found: dict[tuple[str, str], dict] = {}
    for view in seen:
        for code in view.codes:
            key = (view.subject, code)
            at = forgotten.get(key)
            if at is None or view.generation < at or key in found:
                continue
            if any(g >= at for g in stated[key]):  # stated again after the forget: legitimately back
                continue
            found[key] = {"subject": view.subject, "value": code, "forgotten_at": at, "seen_at": view.generation}
    return sorted(found.values(), key=lambda r: (r["subject"], r["value"]))


def lost_writes(published: list[Published], forgets: list[Forgot], finals: dict) -> list[dict]:
    """Acknowledged publishes the final state does not hold (see the module docstring).

    ``finals`` maps each subject to its final :class:`clerk.store.base.Snapshot`.
    """
    last: dict[tuple[str, str], Published] = {}
    for pub in sorted(published, key=lambda r: r.session):
        for pred in pub.writes:
            last[(pub.subject, pred)] = pub
    lost = []
    for pub in published:
        final = finals[pub.subject]
        after = [f for f in forgets if f.subject == pub.subject and f.generation > pub.generation]
        problems = []
        if not any(f.predicate is None for f in after) and pub.session not in {e["session"] for e in final.transcripts}:
            problems.append(f"session {pub.session} missing from the transcript log")
        values = {slot["p"]: slot["o"] for slot in L.occupied(final.ledger)}
        for pred, value in pub.writes.items():
            if last[(pub.subject, pred)] is pub and not any(_covers(f, pub.subject, pred) for f in after) \
                    and values.get(pred) != value:
                problems.append(f"{pred} should be {value}, the final ledger holds {values.get(pred)!r}")
        if problems:
            lost.append({"subject": pub.subject, "session": pub.session, "problems": problems})
    return lost


def judge(published: list[Published], forgets: list[Forgot], seen: list[Seen], finals: dict) -> dict:
    """The report's verdict fields: counts plus a few examples of each failure."""
    res = resurrections(published, forgets, seen)
    lost = lost_writes(published, forgets, finals)
    return {"forgotten_values": len(forgotten_values(published, forgets)), "views_checked": len(seen),
            "resurrections": len(res), "lost": len(lost),
            "examples": {"resurrections": res[:MAX_EXAMPLES], "lost": lost[:MAX_EXAMPLES]}}
