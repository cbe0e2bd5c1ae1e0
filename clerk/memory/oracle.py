"""``oracle``: gold programs write the ledger (the upper bound of the ledger approach).

Read by the run's one reader, like every system.

    clerk evaluate --timelines T.jsonl --model M --systems oracle --reader rule --out OUT
"""

from __future__ import annotations

from clerk.memory.ledger_system import LedgerSystem, Proposal
from clerk.memory.registry import LEDGER_VIEW, SYNTHETIC, register_memory


# The read-cost probe measures the gold ledger for CLERK's: same format, same B slots, same cost.
@register_memory("oracle", order=20, benchmarks=(SYNTHETIC,),
                 view_kind=LEDGER_VIEW, read_cost_label="ledger (CLERK)")
class OracleMemory(LedgerSystem):
    """Applies each session's ``gold_ops``; its ledger equals the gold ledger after every session."""

    version = "1"
    #: Session data it reads besides the turns: the gold programs (synthetic timelines only).
    session_fields = ("gold_ops",)

    def propose(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[Proposal]:
        return [Proposal(None, session["gold_ops"]) for session in sessions]
