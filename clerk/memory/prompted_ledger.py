"""``prompted-ledger``: the untrained base model writes programs from a few-shot prompt and reads the ledger.

Every advantage that is not training (so that "trained beats prompted" is a claim about
training): instructions and worked examples in the style of Mem0's memory-update prompt
(``prompts.PROMPTED_SYSTEM``/``PROMPTED_EXAMPLES``), the same program language and, when the
evaluation constrains decoding, the same grammar as the trained policy. The instructions and
examples are the same for every write, so the decoder encodes them once.

    clerk evaluate --timelines T.jsonl --model M --systems prompted-ledger --out OUT
"""

from __future__ import annotations

from clerk import ledger as L
from clerk import prompts
from clerk.memory.ledger_system import ModelLedgerSystem
from clerk.memory.registry import LEDGER_VIEW, LOCOMO, SYNTHETIC, register_memory


@register_memory("prompted-ledger", order=30, benchmarks=(SYNTHETIC, LOCOMO), view_kind=LEDGER_VIEW)
class PromptedLedgerMemory(ModelLedgerSystem):
    """Few-shot ledger writing by the base model: isolates what training adds over prompting."""

    version = "2"
    writer_kind = "base"

    def messages(self, state: list, session: dict) -> list[dict]:
        return prompts.prompted_messages(L.serialize(state), prompts.policy_transcript(session["turns"]))

    def shared_prefix(self, tokenizer) -> str | None:
        from clerk.models.loading import chat_prompt

        # The frame up to the last user turn, cut just before its <|im_start|> (a special token,
        # so the rest of each prompt tokenizes on its own exactly as within the whole prompt).
        text = chat_prompt(tokenizer, self.messages(L.empty_ledger(1), {"turns": []}))
        return text[: text.rindex("<|im_start|>user")]
