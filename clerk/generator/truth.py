"""The persona's true history: what each predicate really holds, tracked apart from the ledger.

The gold ledger may evict a fact the persona still holds; the truth never forgets (but a forget
request drops the record, :mod:`clerk.generator.forgets`). :mod:`clerk.generator.timelines`
keeps it up to date and :mod:`clerk.generator.questions` reads it to choose questions and their
stale distractors.

    python -m doctest clerk/generator/truth.py -v
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Fact:
    """The persona's true state for one predicate (tracked apart from the ledger)."""

    value: str
    history: list[str]  # earlier values, oldest first
    active: bool = True
    updates: int = 0


def apply_truth(facts: dict[str, Fact], events: list[dict[str, Any]]) -> None:
    """Apply a session's events (ADD, UPDATE, TOMBSTONE) to ``facts`` in place.

    >>> facts = {}
    >>> apply_truth(facts, [{"kind": "ADD", "pred": "job", "value": "nurse"}])
    >>> apply_truth(facts, [{"kind": "UPDATE", "pred": "job", "value": "chef"}])
    >>> apply_truth(facts, [{"kind": "TOMBSTONE", "pred": "job", "value": "chef"}])
    >>> facts["job"]
    Fact(value='chef', history=['nurse'], active=False, updates=1)
    """
    for event in events:
        kind, key = event["kind"], event["pred"]
        if kind == "ADD":
            facts[key] = Fact(value=event["value"], history=[])
        elif kind == "UPDATE":
            fact = facts[key]
            fact.history.append(fact.value)
            fact.value, fact.updates = event["value"], fact.updates + 1
        else:
            facts[key].active = False
