"""Compile-time repair: the op a writer evidently meant, where the ledger makes its op invalid.

Between the strict reducer (refuse the program) and the lenient one (skip the op) lies a third
reading of a writer's invalid op: a small policy that writes "ADD job chef" while the ledger holds
a job meant to change it. :func:`repair` walks a program against the ledger as it stands before
each op and rewrites exactly five rejections, deterministically:

* ``key_held`` (ADD of a (subject, key) a slot holds): an UPDATE of that slot to the new value;
  nothing when the slot holds that value, live (the ADD restated the fact); when it holds it
  retracted, the EVICT of that slot and the ADD (the fact holds again);
* ``update_same_value`` (UPDATE to the value held): nothing (the fact was restated);
* ``tombstone_dead`` (TOMBSTONE of a tombstoned slot): nothing;
* ``budget_full`` (ADD with no free slot): the EVICT the oracle would write (the least salient
  slot, :func:`clerk.slots.least_salient`), then the ADD;
* ``unknown_key`` (an op on a key no slot holds): an UPDATE becomes the ADD of its fact (the ledger
  lacks the fact the line states, so it is new), repaired in turn if the ledger is full; a
  TOMBSTONE or an EVICT goes (there is nothing to retract or free).

Every other op goes through unchanged (the lenient reducer then applies it or skips it as before,
so its rejection is still counted). Each rewrite is named by the rejection it answers; the memory
system ``clerk-repair`` (:mod:`clerk.memory.clerk`) is the trained policy plus this repair, and its
row sits beside the raw policy's.

    python -c "import doctest, clerk.repair as m; print(doctest.testmod(m))"
"""

from __future__ import annotations

from typing import Any

from clerk import ledger as L
from clerk.form import LedgerForm

#: The rejections :func:`repair` rewrites, in :data:`clerk.ledger.REJECTION_CODES` order.
REPAIRED = ("unknown_key", "key_held", "budget_full", "update_same_value", "tombstone_dead")


def _one(ledger: L.Ledger, op: Any, code: str) -> list[dict]:
    """The ops that stand for ``op``, rejected with ``code`` on ``ledger``."""
    if code == "key_held":
        i = L.find(ledger, op["s"], op["p"])
        slot = ledger[i]
        if slot["o"] == op["o"] and slot.get("w") == op.get("w"):
            # restated live: nothing to do; restated after a retraction: it holds again, and no UPDATE
            # can write the value a slot holds, so the dead slot goes and the ADD takes a free one
            return [] if slot["v"] == 1 else [{"op": "EVICT", "i": i}, op]
        update = {"op": "UPDATE", "i": i, "s": op["s"], "p": op["p"], "o": op["o"]}
        return [{**update, "w": op["w"]} if "w" in op else update]
    if code == "budget_full":
        return [{"op": "EVICT", "i": L.least_salient(ledger)}, op]
    if code == "unknown_key" and op["op"] == "UPDATE":
        return [{"op": "ADD", **{k: op[k] for k in ("s", "p", "o", "w") if k in op}}]
    # update_same_value, tombstone_dead: the writer restated what the ledger holds; unknown_key of a
    # TOMBSTONE or EVICT: nothing held to retract or free
    return []


def repair(ledger: L.Ledger, program: Any, now: int, form: LedgerForm | None = None) -> tuple[Any, list[str]]:
    """``program`` with each op of a :data:`REPAIRED` rejection rewritten (see the module
    docstring), and the codes it rewrote, in order. A program that is not a list is returned as is.

    >>> led = L.empty_ledger(1)
    >>> prog = [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}, {"op": "ADD", "s": "Ari", "p": "job", "o": "chef"},
    ...         {"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}]
    >>> fixed, codes = repair(led, prog, now=1)
    >>> [op["op"] for op in fixed], codes
    (['ADD', 'UPDATE', 'EVICT', 'ADD'], ['key_held', 'budget_full'])
    >>> L.reduce(led, fixed, now=1)[0][0]["o"]
    'cat'
    """
    if not isinstance(program, list):
        return program, []
    current, out, codes = ledger, [], []
    for op in program:
        pending = [op]
        while pending:  # a rewrite may meet a rejection of its own (an UPDATE's ADD into a full ledger)
            new = pending.pop(0)
            found = L.rejection(current, new, form)
            if found is not None and found[0] in REPAIRED:  # no rewrite is the op itself alone
                codes.append(found[0])
                pending = _one(current, new, found[0]) + pending
                continue
            out.append(new)
            current, _ = L.reduce(current, [new], now, strict=False, form=form)
    return out, codes
