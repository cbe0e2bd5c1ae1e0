"""Every kind of memory view over timelines, question by question: the reader's ANSWER examples.

The reader reads every system of table 1 (SPEC §6), so it is trained on every kind of view it
will see (``clerk.sft``): the ones the systems declare as their ``view_kind`` in the registry
(``clerk.memory.registry``). The ``ledger`` kind (:data:`~clerk.memory.registry.LEDGER_VIEW`) is
``prompts.reader_ledger`` of the gold ledger at question time, and covers every ledger system,
model-written or not; every other kind is a writer-free transcript system's own view, built by the
system itself replayed over the timelines exactly as the evaluation replays them.

    python -c "from clerk.memory import MEMORY_REGISTRY; print(MEMORY_REGISTRY.view_kinds())"
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from clerk import prompts
from clerk.errors import UserError
from clerk.form import timeline_form
from clerk.memory.registry import LEDGER_VIEW, MEMORY_REGISTRY


def question_views(timelines: list[dict], kinds: list[str], runtime: Any) -> Iterator[tuple[str, dict, dict, str, list[dict]]]:
    """``(kind, timeline, session, view text, questions)`` for every session and kind, in file order:
    the questions of a session that see the same view text are grouped (all of them for every kind
    but ``rag``, whose view depends on the question).

    Args:
        timelines: persona timelines (SPEC format, with gold ``ledger_before``).
        kinds: view kinds (``MEMORY_REGISTRY.view_kinds()``).
        runtime: a :class:`~clerk.memory.base.Runtime` (tokenizer, window/rag settings).

    Raises:
        UserError: an unknown kind (the message lists the known ones).
    """
    known = MEMORY_REGISTRY.view_kinds()
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise UserError(f"answer view kinds {unknown} are unknown; expected some of {', '.join(known)}")
    # A transcript kind is its system's name (the registry checks it).
    systems = {k: MEMORY_REGISTRY.get(k)(runtime) for k in kinds if k != LEDGER_VIEW}
    for tl in timelines:
        states = {k: system.init_state(tl) for k, system in systems.items()}
        for session in tl["sessions"]:
            for k, system in systems.items():
                states[k] = system.on_questions(states[k], tl, session)
            for kind in kinds:
                groups: dict[str, list[dict]] = {}
                for question in session.get("questions") or []:
                    if kind == LEDGER_VIEW:
                        text = prompts.reader_ledger(session["ledger_before"], timeline_form(tl))
                    else:
                        text = systems[kind].view(states[kind], tl, session, question).text
                    groups.setdefault(text, []).append(question)
                for text, questions in groups.items():
                    yield kind, tl, session, text, questions
            for k, system in systems.items():
                states[k] = system.write([states[k]], [tl], [session])[0].state
