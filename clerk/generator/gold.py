"""Gold edit programs: the ops that turn a session's events into the gold ledger (SPEC §2).

    python -m pytest tests/test_generator.py -q -k gold
"""

from __future__ import annotations

from typing import Any

from clerk import ledger as L
from clerk.form import LedgerForm


def gold_program(ledger: L.Ledger, events: list[dict[str, Any]], subject: str, now: int,
                 form: LedgerForm | None = None) -> L.Program:
    """The gold edit program for a session's events, in transcript order.

    An ADD that meets a full ledger is preceded by EVICT of :func:`clerk.ledger.least_salient` of
    the working ledger (after the session's earlier ops); an UPDATE of a fact with no slot (it was
    evicted) becomes an ADD under the same rule; a TOMBSTONE of a fact with no slot is dropped.

    Args:
        ledger: the ledger before the session (``ledger_before``); not mutated.
        events: ``{"kind","pred","value"}`` dicts in transcript order; an open world's event
            (SPEC §2.9) also names its ``subject`` and, when dated, its ``when`` (the op's ``w``).
        subject: the persona name (``s`` of every op whose event names no subject).
        now: the session index.
        form: the open ledger's form (SPEC §1.7) the ops are reduced under; None = closed.

    Returns:
        A program that applies cleanly to ``ledger`` in strict mode.
    """
    work, program = ledger, []
    for event in events:
        kind, pred, who = event["kind"], event["pred"], event.get("subject", subject)
        fact = {"s": who, "p": pred, "o": event["value"], **({"w": event["when"]} if "when" in event else {})}
        i = L.find(work, who, pred)
        if kind == "TOMBSTONE":
            ops = [] if i is None else [{"op": "TOMBSTONE", "i": i}]
        elif kind == "UPDATE" and i is not None:
            ops = [{"op": "UPDATE", "i": i, **fact}]
        else:
            assert i is None, f"ADD of {pred!r} that already has slot {i}"
            ops = [] if any(L.is_free(slot) for slot in work) else [{"op": "EVICT", "i": L.least_salient(work)}]
            ops.append({"op": "ADD", **fact})
        for op in ops:
            work, _ = L.reduce(work, [op], now=now, form=form)
        program.extend(ops)
    return program
