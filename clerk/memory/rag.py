"""``rag``: the reader sees the top-k earlier turns for the question, retrieved by BM25 (``bm25s``).

    clerk evaluate --timelines T.jsonl --model M --systems rag --rag-k 8 --out OUT
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.forgetting import redact_indexed
from clerk.memory.registry import SYNTHETIC, register_memory
from clerk.memory.text import session_header


def _tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def top_k(scores: list[float], k: int) -> list[int]:
    """Indices of the ``k`` best scores; ties go to the *later* document (a newer turn), then the
    result is put back in chronological order. Deterministic, unlike a partial sort.

    >>> top_k([0.5, 0.0, 0.5, 0.2], 2)
    [0, 2]
    >>> top_k([0.0, 0.0, 0.0], 2)
    [1, 2]
    """
    order = sorted(range(len(scores)), key=lambda j: (-scores[j], -j))
    return sorted(order[:k])


@dataclass
class RagState:
    """Every earlier turn as a view line, its BM25 tokens and the index over them (None when no
    turn has a searchable token)."""

    lines: list[str] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)
    index: Any = None


def build_index(tokens: list[list[str]]) -> Any:
    """A BM25 index over tokenised turns, or None if there is no vocabulary (bm25s cannot index it)."""
    import bm25s

    if not any(tokens):
        return None
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return retriever


@register_memory("rag", order=60, benchmarks=(SYNTHETIC,),
                 view_kind="rag", read_cost_label="BM25 top-k turns")
class RagMemory(MemorySystem):
    """No writer: every earlier turn (user and assistant) is a document, indexed on its content.
    The view shows the ``rag_k`` best turns for the question in chronological order, each as
    ``[session k] role: content``. Fewer than k turns remembered = all of them."""

    version = "1"

    def init_state(self, timeline: dict) -> RagState:
        return RagState()

    def view(self, state: RagState, timeline: dict, session: dict, question: dict) -> View:
        if not state.lines:
            return View("")
        query = _tokenize([question["question"]])[0]
        if state.index is None or not query:
            scores = [0.0] * len(state.lines)
        else:
            scores = [float(x) for x in state.index.get_scores(query)]
        return View("\n".join(state.lines[j] for j in top_k(scores, self.rt.config.rag_k)))

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        results = []
        for state, session in zip(states, sessions):
            turns = session["turns"]
            lines = state.lines + [f"{session_header(session['index'])} {t['role']}: {t['content']}" for t in turns]
            tokens = state.tokens + _tokenize([t["content"] for t in turns])
            results.append(WriteResult(state=RagState(lines, tokens, build_index(tokens))))
        return results

    forget_action = "redact"

    def forget(self, state: RagState, timeline: dict, pred: str, values: list[str]) -> RagState:
        """Redact ``values`` from every remembered turn and rebuild the BM25 index from the
        redacted contents, so the index input holds no forgotten value (:mod:`clerk.memory.forgetting`)."""
        # The index input is the turn's content: the line after "[session k] role: ".
        lines, tokens = redact_indexed(state.lines, state.tokens, values, lambda line: line.split(": ", 1)[1], _tokenize)
        return RagState(lines, tokens, build_index(tokens))
