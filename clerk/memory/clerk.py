"""``clerk``: the trained LoRA adapter writes edit programs (lenient reducer); the run's reader reads the ledger.

    clerk evaluate --timelines T.jsonl --model M --adapter A --systems clerk --out OUT
"""

from __future__ import annotations

from clerk.memory.ledger_system import ModelLedgerSystem, Proposal
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


# Beside the raw policy in table order (docs/DECISIONS.md, "Repair at compile time").
@register_memory("clerk-repair", order=15, benchmarks=(SYNTHETIC, LOCOMO), view_kind=LEDGER_VIEW)
class RepairedClerkMemory(ClerkMemory):
    """The same trained policy, its invalid ops rewritten by the named repair of
    :mod:`clerk.repair` (ADD of a held key -> UPDATE, an ADD into a full ledger -> the salience
    EVICT first, restatements dropped, an UPDATE of an unheld key -> ADD, a TOMBSTONE or EVICT of
    one dropped) before the lenient reducer applies the program."""

    version = "2"

    def propose(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[Proposal]:
        from clerk.form import timeline_form
        from clerk.repair import repair

        out = []
        for prop, state, timeline, session in zip(super().propose(states, timelines, sessions), states, timelines,
                                                  sessions):
            program, _ = repair(state, prop.program, session["index"], timeline_form(timeline))
            out.append(Proposal(prop.text, program, prop.parse_failed, prop.write_tokens))
        return out
