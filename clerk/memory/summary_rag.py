"""``summary-rag``: the reader sees the top-k earlier *session summaries* for the question (BM25, ``bm25s``).

SPEC §7's retrieval baseline for LoCoMo, whose sessions come with dataset-written summaries. No
writer: after each session its summary (``session["summary"]``, dated by ``session["date"]``)
becomes one document; sessions without a summary add nothing (synthetic timelines have none, so
there the view is empty). The view shows the k best summaries for the question in chronological
order, each as ``[session k] date: D`` followed by the summary; k is ``summary_k`` of the
runtime's config when it has one (``clerk locomo --summary-k``), else :data:`DEFAULT_K`. If the k
summaries exceed the reader's view budget, the oldest are dropped and the view is marked
truncated.

    clerk locomo --data locomo10.json --model resources/models/smollm2-135m --systems summary-rag --out /tmp/lc
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.forgetting import redact_indexed
from clerk.memory.rag import build_index, top_k
from clerk.memory.registry import LOCOMO, register_memory
from clerk.memory.text import fit_newest, session_header

#: Summaries retrieved per question when the runtime's config has no ``summary_k``.
DEFAULT_K = 3


def summary_block(index: int, date: str, summary: str) -> str:
    """One retrievable document as the reader sees it: a session header (with its date), then the summary.

    >>> summary_block(2, "8 May 2023", "Ana adopted a cat.")
    '[session 2] date: 8 May 2023\\nAna adopted a cat.'
    >>> summary_block(0, "", "Hi.")
    '[session 0]\\nHi.'
    """
    head = f"{session_header(index)} date: {date}" if date else session_header(index)
    return f"{head}\n{summary.strip()}"


def _tokenize(texts: list[str]) -> list[list[str]]:
    """BM25 tokens (lower-cased words, English stopwords removed), as the ``rag`` system does."""
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


@dataclass
class SummaryState:
    """Remembered summaries as view blocks (oldest first), their BM25 tokens and the index
    (None while no summary has a searchable token)."""

    blocks: list[str] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)
    index: Any = None


# LoCoMo only (after full in table 2): synthetic sessions have no summaries (its view would be empty),
# so the reader is not trained on its view either.
@register_memory("summary-rag", order=100, benchmarks=(LOCOMO,))
class SummaryRagMemory(MemorySystem):
    """BM25 over session summaries; the reader is the base model (``--reader-model``)."""

    version = "1"
    #: Session data it reads besides the turns (checked against the data before a run).
    session_fields = ("summary",)

    def k(self) -> int:
        """Summaries shown per question."""
        return int(getattr(self.rt.config, "summary_k", DEFAULT_K))

    def init_state(self, timeline: dict) -> SummaryState:
        return SummaryState()

    def view(self, state: SummaryState, timeline: dict, session: dict, question: dict) -> View:
        if not state.blocks:
            return View("")
        query = _tokenize([question["question"]])[0]
        if state.index is None or not query:
            scores = [0.0] * len(state.blocks)  # no evidence: top_k then prefers the newest
        else:
            scores = [float(x) for x in state.index.get_scores(query)]
        chosen = [state.blocks[j] for j in top_k(scores, self.k())]
        kept, truncated = fit_newest(chosen, self.rt.view_budget(), self.rt.line_tokens, self.rt.count_tokens)
        return View("\n".join(kept), truncated)

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        results = []
        for state, session in zip(states, sessions):
            summary = str(session.get("summary") or "").strip()
            if not summary:
                results.append(WriteResult(state=state))
                continue
            blocks = state.blocks + [summary_block(session["index"], str(session.get("date") or ""), summary)]
            # Only the summary text is searchable; the header would match every "session"/date query.
            tokens = state.tokens + _tokenize([summary])
            results.append(WriteResult(state=SummaryState(blocks, tokens, build_index(tokens))))
        return results

    forget_action = "redact"

    def forget(self, state: SummaryState, timeline: dict, pred: str, values: list[str]) -> SummaryState:
        """Redact ``values`` from every remembered summary block and rebuild the BM25 index from
        the redacted summaries (:mod:`clerk.memory.forgetting`)."""
        # The index input is the summary: the block after its header line.
        blocks, tokens = redact_indexed(state.blocks, state.tokens, values, lambda b: b.split("\n", 1)[1], _tokenize)
        return SummaryState(blocks, tokens, build_index(tokens))
