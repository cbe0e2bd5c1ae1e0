"""``clerk``: the trained LoRA adapter writes edit programs (lenient reducer); the run's reader reads the ledger.

    clerk evaluate --timelines T.jsonl --model M --adapter A --systems clerk --out OUT
"""

from __future__ import annotations

from clerk.memory.ledger_system import ModelLedgerSystem
from clerk.memory.registry import LEDGER_VIEW, LOCOMO, SYNTHETIC, register_memory


@register_memory("clerk", order=10, benchmarks=(SYNTHETIC, LOCOMO), view_kind=LEDGER_VIEW, reference=True)
class ClerkMemory(ModelLedgerSystem):
    """Trained policy writes, trained adapter reads (needs ``--adapter``)."""

    version = "1"
    writer_kind = "adapter"


# Ordered after table 1's systems: it is none of them (config/config.yaml, evaluate.systems).
@register_memory("clerk-unconstrained", order=90, benchmarks=(SYNTHETIC,), view_kind=LEDGER_VIEW)
class UnconstrainedClerkMemory(ClerkMemory):
    """The same trained policy decoded without the program grammar: what constrained decoding adds
    (run write-only in the default profile: its writes are scored, its ledger is not read)."""

    version = "1"
    constrained = False
