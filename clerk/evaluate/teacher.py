"""Teacher-forced edit scores of the model writers (SPEC §6.3).

Closed-loop op-F1 (``metrics.system["op"]``) scores each session's program written against the
system's *own* ledger: once that ledger departs from gold, later correct decisions may count as
misses, so the score mixes decision quality with drift. The **teacher-forced** score writes every
session from the *gold* ledger before it (``session["ledger_before"]``) and scores that program
against the gold one, so it measures the decisions alone.

Cost. A model writer's program is a function of its prompt: the serialized ledger and the
session's user lines, under greedy decoding, with the grammar and the compiler also built from
that ledger. Where the system's own ledger before a session *equals* the gold one (every field,
``uses``, ``t``, ``born`` and ``prev`` included; ``serialize`` is exact, so equal ledgers and equal
prompt texts go together), the closed-loop write already is the teacher-forced write and is
reused. Only the drifted sessions are written again, batched across personas like the
closed-loop writes, and their ledgers are thrown away. The one thing reuse does not reproduce is
the batch a prompt is decoded in (padding); the closed-loop run shares that caveat with any rerun.

    clerk evaluate --timelines T.jsonl --model M --adapter A --systems clerk oracle --teacher-forced clerk --out OUT
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from clerk.form import timeline_form
from clerk.metrics import op_scores


def is_model_writer(system: Any) -> bool:
    """Whether ``system`` generates its programs with a model (it has a ``writer_kind``): the
    systems teacher-forced scores apply to. The oracle and the transcript systems do not."""
    return system.is_ledger and getattr(system, "writer_kind", None) is not None


def drifted(ledger: list, session: dict) -> bool:
    """The ledger a system writes the session against differs from the gold ledger before it (in
    any field: the teacher-forced prompt would differ)."""
    return ledger != session["ledger_before"]


@dataclass
class ForcedBatch:
    """The teacher-forced outcome of one session index for the personas of a batch.

    Attributes:
        scores: :func:`~clerk.metrics.op_scores` of each persona's teacher-forced program.
        rewritten: per persona, whether an extra write from the gold ledger was run (its own
            ledger had drifted) rather than the closed-loop write reused.
        seconds: wall seconds of the extra writes.
    """

    scores: list[dict]
    rewritten: list[bool]
    seconds: float


def teacher_forced(system: Any, timelines: list[dict], sessions: list[dict], befores: list,
                   results: list) -> ForcedBatch:
    """Score each persona's session teacher-forced, reusing the closed-loop write where it is one.

    Args:
        system: a model writer (:func:`is_model_writer`).
        timelines, sessions: the personas of the batch and their session at this index.
        befores: each persona's state the closed-loop write was made against.
        results: the closed-loop :class:`~clerk.memory.WriteResult` of each persona.

    Returns:
        A :class:`ForcedBatch`, one entry per persona in order.
    """
    redo = [k for k, (state, session) in enumerate(zip(befores, sessions)) if drifted(system.ledger(state), session)]
    programs = [result.program for result in results]
    start = time.perf_counter()
    if redo:
        extra = system.write([sessions[k]["ledger_before"] for k in redo], [timelines[k] for k in redo],
                             [sessions[k] for k in redo])
        for k, result in zip(redo, extra):
            programs[k] = result.program
    seconds = time.perf_counter() - start
    scores = [op_scores(session["ledger_before"], program, session["gold_ops"], session["index"],
                        form=timeline_form(timeline))
              for timeline, session, program in zip(timelines, sessions, programs)]
    rewritten = set(redo)
    return ForcedBatch(scores, [k in rewritten for k in range(len(sessions))], seconds)
