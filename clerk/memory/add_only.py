"""``add-only``: append every user statement, never edit; newest first within a ledger's token budget.

The Mem0-v3-style baseline: memory only grows, nothing is superseded or retracted. The view
lists statements newest first and stops at the first one that no longer fits the budget: by
default the token count of the gold (oracle) ledger's reader view at the same session, i.e. the
same read cost as a ledger (``--add-only-budget`` overrides it).

    clerk evaluate --timelines T.jsonl --model M --systems add-only --out OUT
"""

from __future__ import annotations

from clerk import prompts
from clerk.errors import UserError
from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.forgetting import redact, value_pattern
from clerk.memory.registry import SYNTHETIC, register_memory
from clerk.memory.text import fit_newest, session_header


@register_memory("add-only", order=70, benchmarks=(SYNTHETIC,),
                 view_kind="add-only", read_cost_label="add-only notes")
class AddOnlyMemory(MemorySystem):
    """State: a tuple of ``[session k] statement`` lines, oldest first."""

    version = "2"

    def init_state(self, timeline: dict) -> tuple:
        return ()

    def budget(self, session: dict) -> int:
        """Token budget of the view for questions asked in ``session``."""
        if self.rt.config.add_only_budget != -1:
            return self.rt.config.add_only_budget
        if "ledger_before" not in session:
            raise UserError("add-only matches the gold ledger's read cost, but this data has no gold ledger; "
                            "set add_only_budget (--add-only-budget) to a token count")
        return self.rt.count_tokens(prompts.reader_ledger(session["ledger_before"]))

    def view(self, state: tuple, timeline: dict, session: dict, question: dict) -> View:
        budget = self.budget(session)
        kept, truncated = fit_newest(list(state), budget, self.rt.line_tokens, self.rt.count_tokens)
        shown = kept[::-1]  # newest first
        while shown and self.rt.count_tokens("\n".join(shown)) > budget:  # exact check in shown order
            shown, truncated = shown[:-1], True
        return View("\n".join(shown), truncated)

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        results = []
        for state, session in zip(states, sessions):
            new = tuple(f"{session_header(session['index'])} {t['content']}" for t in session["turns"] if t["role"] == "user")
            results.append(WriteResult(state=state + new))
        return results

    forget_action = "redact"

    def forget(self, state: tuple, timeline: dict, pred: str, values: list[str]) -> tuple:
        """Redact ``values`` from every stored statement (:mod:`clerk.memory.forgetting`)."""
        pattern = value_pattern(values)
        return tuple(redact(line, pattern) for line in state)
