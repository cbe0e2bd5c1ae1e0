"""Every kind of memory view over timelines, question by question: the reader's ANSWER examples.

The reader reads every system of table 1 (SPEC §6), so it is trained on every kind of view it
will see (``clerk.sft``): the ledger (``prompts.reader_ledger`` of the gold ledger at question
time) and the views of the writer-free baselines, built by the systems themselves (``full``,
``window``, ``rag``, ``add-only`` from the registry) replayed over the timelines exactly as the
evaluation replays them. Model-written ledgers (clerk, prompted-ledger) are ledgers: the
``ledger`` kind covers them.

    python -c "from clerk.memory.views import VIEW_KINDS; print(VIEW_KINDS)"
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from clerk import prompts
from clerk.errors import UserError
from clerk.form import timeline_form

#: View kinds a reader can be trained on: ``ledger`` plus the writer-free transcript systems.
VIEW_KINDS = ("ledger", "full", "window", "rag", "add-only")


def question_views(timelines: list[dict], kinds: list[str], runtime: Any) -> Iterator[tuple[str, dict, dict, str, list[dict]]]:
    """``(kind, timeline, session, view text, questions)`` for every session and kind, in file order:
    the questions of a session that see the same view text are grouped (all of them for every kind
    but ``rag``, whose view depends on the question).

    Args:
        timelines: persona timelines (SPEC format, with gold ``ledger_before``).
        kinds: view kinds (:data:`VIEW_KINDS`).
        runtime: a :class:`~clerk.memory.base.Runtime` (tokenizer, window/rag settings).

    Raises:
        UserError: an unknown kind (the message lists the known ones).
    """
    from clerk.memory import MEMORY_REGISTRY

    unknown = [k for k in kinds if k not in VIEW_KINDS]
    if unknown:
        raise UserError(f"answer view kinds {unknown} are unknown; expected some of {', '.join(VIEW_KINDS)}")
    systems = {k: MEMORY_REGISTRY.get(k)(runtime) for k in kinds if k != "ledger"}
    for tl in timelines:
        states = {k: system.init_state(tl) for k, system in systems.items()}
        for session in tl["sessions"]:
            for k, system in systems.items():
                states[k] = system.on_questions(states[k], tl, session)
            for kind in kinds:
                groups: dict[str, list[dict]] = {}
                for question in session.get("questions") or []:
                    if kind == "ledger":
                        text = prompts.reader_ledger(session["ledger_before"], timeline_form(tl))
                    else:
                        text = systems[kind].view(states[kind], tl, session, question).text
                    groups.setdefault(text, []).append(question)
                for text, questions in groups.items():
                    yield kind, tl, session, text, questions
            for k, system in systems.items():
                states[k] = system.write([states[k]], [tl], [session])[0].state
