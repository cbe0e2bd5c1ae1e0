"""``clerk``: the trained LoRA adapter writes edit programs (lenient reducer); the run's reader reads the ledger.

    clerk evaluate --timelines T.jsonl --model M --adapter A --systems clerk --out OUT
"""

from __future__ import annotations

from clerk.memory.ledger_system import ModelLedgerSystem
from clerk.memory.registry import register_memory


@register_memory("clerk")
class ClerkMemory(ModelLedgerSystem):
    """Trained policy writes, trained adapter reads (needs ``--adapter``)."""

    version = "1"
    writer_kind = "adapter"


@register_memory("clerk-unconstrained")
class UnconstrainedClerkMemory(ClerkMemory):
    """The same trained policy decoded without the program grammar: what constrained decoding adds
    (run write-only in the default profile: its writes are scored, its ledger is not read)."""

    version = "1"
    constrained = False
