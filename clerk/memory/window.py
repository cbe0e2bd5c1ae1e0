"""``window``: the reader sees the last k earlier sessions (k = ``--window-k``).

    clerk evaluate --timelines T.jsonl --model M --systems window --window-k 3 --out OUT
"""

from __future__ import annotations

from clerk.memory.full import FullMemory
from clerk.memory.registry import SYNTHETIC, register_memory


@register_memory("window", order=50, benchmarks=(SYNTHETIC,),
                 view_kind="window", read_cost_label="last-k window")
class WindowMemory(FullMemory):
    """The full view restricted to the ``window_k`` most recent sessions (still context-truncated)."""

    version = "1"

    def sessions_shown(self, state: tuple) -> tuple:
        return state[-self.rt.config.window_k:]
