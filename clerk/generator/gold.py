"""Gold edit programs: the ops that turn a session's events into the gold ledger (SPEC §2).

    python -m pytest tests/test_generator.py -q -k gold
"""

from __future__ import annotations

from typing import Any

from clerk import ledger as L


def gold_program(ledger: L.Ledger, events: list[dict[str, Any]], subject: str, now: int) -> L.Program:
    """The gold edit program for a session's events, in transcript order.

    An ADD that meets a full ledger is preceded by EVICT of :func:`clerk.ledger.least_salient` of
    the working ledger (after the session's earlier ops); an UPDATE of a fact with no slot (it was
    evicted) becomes an ADD under the same rule; a TOMBSTONE of a fact with no slot is dropped.

    Args:
        ledger: the ledger before the session (``ledger_before``); not mutated.
        events: ``{"kind","pred","value"}`` dicts in transcript order.
        subject: the persona name (``s`` of every op).
        now: the session index.

    Returns:
        A program that applies cleanly to ``ledger`` in strict mode.
    """
    work, program = ledger, []
    for event in events:
        kind, pred = event["kind"], event["pred"]
        i = L.find(work, subject, pred)
        if kind == "TOMBSTONE":
            ops = [] if i is None else [{"op": "TOMBSTONE", "i": i}]
        elif kind == "UPDATE" and i is not None:
            ops = [{"op": "UPDATE", "i": i, "s": subject, "p": pred, "o": event["value"]}]
        else:
            assert i is None, f"ADD of {pred!r} that already has slot {i}"
            ops = [] if any(L.is_free(slot) for slot in work) else [{"op": "EVICT", "i": L.least_salient(work)}]
            ops.append({"op": "ADD", "s": subject, "p": pred, "o": event["value"]})
        for op in ops:
            work, _ = L.reduce(work, [op], now=now)
        program.extend(ops)
    return program
