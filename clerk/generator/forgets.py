"""Forget requests in timelines: the input of the erasure study (SPEC §9, ``clerk generate --forgets K``).

**Design decision.** A forget request is an *out-of-band erasure request*, like the store's
``forget(subject, predicate, values=...)`` API (:mod:`clerk.store`): the user asks, outside the
conversation, that a fact be forgotten, and the request names the predicate and every value it
ever held. It is not a dialogue turn and no policy has to recognise it; every memory system
receives it through its ``forget`` method (:class:`clerk.memory.MemorySystem`) before that
session's questions. With ``--forgets K`` each persona gets K requests at K distinct seeded
sessions >= 1, each naming a predicate the persona has stated (active or retracted) and not
forgotten since.

**Format** (new keys only; with K = 0 nothing changes, byte for byte): every session of a
forget split carries ``"forget": [{"pred": p, "values": [v, ...]}]`` (empty on most sessions,
one request on a forget session); ``values`` lists every value ``p`` ever held, in first-stated
order (older values too: a store does not know which ones a transcript still mentions).

**Gold consequences.**

* The gold ledger has no slot for the predicate from the forget on: the session's
  ``ledger_before`` is the previous ``ledger_after`` with the slot freed (value and ``prev``
  gone), then the usual question-time ``uses``.
* The persona's record of the fact is dropped, so the predicate counts as unstated again: a later
  statement of it is a fresh ADD (the generator never updates or retracts a fact it has no record
  of; the gold rules would make such an UPDATE an ADD and drop such a TOMBSTONE, as for an evicted
  fact). The forget session itself never states it again, so its questions may ask about it.
* Questions of type ``forgotten`` ask about a forgotten predicate that was not stated again; the
  gold answer is the unknown phrase (``prompts.UNKNOWN_ANSWER``) and the forgotten values are among
  the distractors. The first question of a forget session asks about the predicate just forgotten
  (the probe); later sessions draw ``forgotten`` like any other type. A forgotten predicate is
  never an ``unknown`` question (it was stated).

    clerk generate --seed 137 --split test --personas 6 --sessions 8 --forgets 2 --out /tmp/forget.jsonl
"""

from __future__ import annotations

import random
from typing import Any

#: Question type of a question about a forgotten (and not restated) predicate.
FORGOTTEN = "forgotten"


def forget_sessions(rng: random.Random, sessions: int, forgets: int) -> list[int]:
    """The sessions (>= 1, distinct, ascending) that carry a forget request; no RNG use for 0.

    >>> forget_sessions(random.Random(0), 8, 2), forget_sessions(random.Random(0), 8, 0)
    ([4, 7], [])
    """
    if forgets == 0:
        return []
    return sorted(rng.sample(range(1, sessions), forgets))


def draw_forget(rng: random.Random, stated: list[str], held: dict[str, list[str]]) -> dict[str, Any] | None:
    """One forget request: a predicate drawn uniformly from ``stated`` (first-stated order) and
    every value it ever held; None when nothing is stated.

    >>> draw_forget(random.Random(1), ["job", "city"], {"job": ["nurse", "chef"], "city": ["Oslo"]})
    {'pred': 'job', 'values': ['nurse', 'chef']}
    >>> draw_forget(random.Random(1), [], {}) is None
    True
    """
    if not stated:
        return None
    pred = rng.choice(stated)
    return {"pred": pred, "values": list(held[pred])}


def record_values(held: dict[str, list[str]], events: list[dict[str, Any]]) -> None:
    """Add the values a session's ADD/UPDATE events state to ``held`` (pred -> values, first-stated order)."""
    for event in events:
        if event["kind"] in ("ADD", "UPDATE"):
            values = held.setdefault(event["pred"], [])
            if event["value"] not in values:
                values.append(event["value"])
