"""``null``: empty memory, no writer; the plumbing check, and the no-memory floor of the reader (on
LoCoMo, the row that reads only the question).

    clerk evaluate --timelines T.jsonl --model M --systems null --out OUT
"""

from __future__ import annotations

from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.registry import LOCOMO, SYNTHETIC, register_memory


# No answer view: its view is always empty.
@register_memory("null", order=80, benchmarks=(SYNTHETIC, LOCOMO))
class NullMemory(MemorySystem):
    """Remembers nothing: every view is the empty string."""

    version = "1"

    def init_state(self, timeline: dict) -> None:
        return None

    def view(self, state: None, timeline: dict, session: dict, question: dict) -> View:
        return View("")

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        return [WriteResult(state=None) for _ in states]

    forget_action = "nothing"

    def forget(self, state: None, timeline: dict, pred: str, values: list[str]) -> None:
        """Nothing is kept, so nothing is erased."""
        return state
