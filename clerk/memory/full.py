"""``full``: the reader sees every earlier session's transcript, left-truncated to its context.

    clerk evaluate --timelines T.jsonl --model M --systems full --out OUT
"""

from __future__ import annotations

from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.forgetting import scrub_session
from clerk.memory.registry import LOCOMO, SYNTHETIC, register_memory
from clerk.memory.text import fit_newest, session_lines


@register_memory("full", order=40, benchmarks=(SYNTHETIC, LOCOMO),
                 view_kind="full", read_cost_label="full history")
class FullMemory(MemorySystem):
    """No writer: memory is the list of earlier sessions. When the transcript exceeds the
    reader's budget (``Runtime.view_budget``) the oldest lines are cut and the view is marked
    truncated."""

    version = "1"

    def init_state(self, timeline: dict) -> tuple:
        return ()

    def sessions_shown(self, state: tuple) -> tuple:
        """Which remembered sessions the view shows (all of them)."""
        return state

    def view(self, state: tuple, timeline: dict, session: dict, question: dict) -> View:
        lines = [line for s in self.sessions_shown(state) for line in session_lines(s)]
        kept, truncated = fit_newest(lines, self.rt.view_budget(), self.rt.line_tokens, self.rt.count_tokens)
        return View("\n".join(kept), truncated)

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        return [WriteResult(state=state + (session,)) for state, session in zip(states, sessions)]

    forget_action = "redact"

    def forget(self, state: tuple, timeline: dict, pred: str, values: list[str]) -> tuple:
        """Redact ``values`` from every remembered session's turns (:func:`~clerk.memory.forgetting.scrub_session`)."""
        return tuple(scrub_session(session, values) for session in state)
