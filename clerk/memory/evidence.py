"""``evidence``: the LoCoMo ceiling: the reader sees each question's annotated evidence turns only.

No writer and no selection of its own: the memory keeps every session, and the view for a question
is, session by session in conversation order, the session's header and date line followed by the
turns the dataset annotates as the question's evidence (``question["evidence"]``, dialogue ids
such as ``D3:13``), nothing else. With the same reader and options as every other system it bounds
from above what a memory that kept exactly the right turns could score, as ``null`` (the question
alone) bounds from below. A question with no annotated evidence (most adversarial ones) gets the
empty view. Sessions must carry their turns' ids (``session["turn_ids"]``, one per turn, ``""``
for the date pseudo-turn; the LoCoMo loader writes them): a file without them cannot serve this
system (``session_fields``; the run stops with an error naming the file's field).

    clerk locomo --data locomo10.json --model resources/models/smollm2-135m --systems null evidence --out /tmp/lc
"""

from __future__ import annotations

from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.forgetting import scrub_session
from clerk.memory.registry import LOCOMO, register_memory
from clerk.memory.text import fit_newest, session_lines


def evidence_sessions(sessions: tuple, wanted: set[str]) -> list[dict]:
    """The sessions holding a ``wanted`` turn id, each cut to its date pseudo-turn (id ``""``) and those turns.

    >>> s = {"index": 0, "turns": [{"role": "date", "content": "8 May"}, {"role": "Ana", "content": "Hi"},
    ...      {"role": "Bo", "content": "Yo"}], "turn_ids": ["", "D1:1", "D1:2"]}
    >>> [t["content"] for t in evidence_sessions((s,), {"D1:2"})[0]["turns"]]
    ['8 May', 'Yo']
    >>> evidence_sessions((s,), {"D2:1"})
    []
    """
    out = []
    for session in sessions:
        ids = session["turn_ids"]
        if not wanted.intersection(ids):
            continue
        turns = [turn for turn, tid in zip(session["turns"], ids) if tid == "" or tid in wanted]
        out.append({**session, "turns": turns})
    return out


@register_memory("evidence", order=110, benchmarks=(LOCOMO,))
class EvidenceMemory(MemorySystem):
    """Keeps every session; shows a question only its annotated evidence turns (an oracle)."""

    version = "1"
    #: What each session must carry besides its turns (checked before a LoCoMo run starts).
    session_fields = ("turn_ids",)

    def init_state(self, timeline: dict) -> tuple:
        return ()

    def view(self, state: tuple, timeline: dict, session: dict, question: dict) -> View:
        shown = evidence_sessions(state, set(question.get("evidence") or ()))
        lines = [line for s in shown for line in session_lines(s)]
        kept, truncated = fit_newest(lines, self.rt.view_budget(), self.rt.line_tokens, self.rt.count_tokens)
        return View("\n".join(kept), truncated)

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        return [WriteResult(state=state + (session,)) for state, session in zip(states, sessions)]

    forget_action = "redact"

    def forget(self, state: tuple, timeline: dict, pred: str, values: list[str]) -> tuple:
        """Redact ``values`` from every kept session's turns, as ``full`` does."""
        return tuple(scrub_session(session, values) for session in state)
