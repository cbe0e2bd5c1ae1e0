"""``prompted-ledger``: the untrained base model writes programs with the same prompt and reads the ledger.

    clerk evaluate --timelines T.jsonl --model M --systems prompted-ledger --out OUT
"""

from __future__ import annotations

from clerk.memory.ledger_system import ModelLedgerSystem
from clerk.memory.registry import register_memory


@register_memory("prompted-ledger")
class PromptedLedgerMemory(ModelLedgerSystem):
    """Zero-shot ledger writing: isolates what training adds over the prompt alone."""

    version = "1"
    writer_kind = "base"

    def reader_model(self) -> str:
        return "base"
