"""The Percena/locomo-mc10 format: JSON lines, one 10-option question a line (SPEC §7).

**Percena/locomo-mc10** (Hugging Face dataset, file ``data/locomo_mc10.json``): JSON lines, one
question per line with ``question_id`` (``conv-26_q0``: the conversation id is everything before
the last ``_q``), ``question``, ``question_type``, ``answer``, ``choices`` (10),
``correct_choice_index``, ``num_choices``, ``num_sessions``, ``haystack_session_ids``,
``haystack_session_datetimes``, ``haystack_session_summaries`` and ``haystack_sessions`` (a list
of sessions, each a list of OpenAI-style ``{"role", "content"}`` turns: the first speaker is
``user``, the second ``assistant``; the ``transformed/…_with_name`` variant adds ``name``). The
whole conversation repeats in every line, so lines are grouped by conversation and the
conversation is kept once, sessions in their given order. Its ``source`` is
``Percena/locomo-mc10``. Its ``question_type`` labels are mis-mapped; the corrected names come
from :func:`clerk.locomo.data.category_from_percena`. Its abstention choice ("Not mentioned in the
conversation") is read as the reader's own abstention answer, ``unknown`` (:func:`abstention_option`).

    clerk locomo-inspect --data tests/fixtures/locomo/locomo_mc10_mini.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clerk.errors import UserError
from clerk.locomo.data import NUM_OPTIONS, Conversation, Question, Session, category_from_percena, require_field
from clerk.prompts import UNKNOWN_ANSWER

SOURCE_PERCENA = "Percena/locomo-mc10"
#: How the set words abstention (case, spaces and a final period ignored); replaced on load.
_SET_ABSTENTION = "not mentioned in the conversation"


def conv_id_from_question_id(question_id: str) -> str:
    """The conversation id inside a Percena ``question_id`` (everything before the last ``_q``).

    >>> conv_id_from_question_id("conv-26_q104")
    'conv-26'

    Raises:
        UserError: when there is no ``_q<number>`` suffix.
    """
    head, sep, tail = question_id.rpartition("_q")
    if not sep or not head or not tail.isdigit():
        raise UserError(f"question_id: expected '<conversation>_q<number>', got {question_id!r}")
    return head


def _percena_sessions(record: dict, where: str) -> tuple[list[Session], tuple[str, str]]:
    """Sessions and speaker names of one Percena record's haystack."""
    haystack = require_field(record, "haystack_sessions", list, where)
    dates = record.get("haystack_session_datetimes") or []
    summaries = record.get("haystack_session_summaries") or []
    ids = record.get("haystack_session_ids") or []
    by_role: dict[str, str] = {}
    sessions = []
    for i, raw in enumerate(haystack):
        if not isinstance(raw, list):
            raise UserError(f"{where}: haystack_sessions[{i}] expected a list of turns, got {type(raw).__name__}")
        turns = []
        for j, turn in enumerate(raw):
            if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
                raise UserError(f"{where}: haystack_sessions[{i}][{j}] expected {{'role','content'}}, got {turn!r:.80}")
            role = str(turn.get("role") or "user")
            speaker = str(turn.get("name") or role)
            by_role.setdefault(role, speaker)
            turns.append({"speaker": speaker, "text": turn["content"]})
        sessions.append(
            Session(
                index=i,
                date=str(dates[i]) if i < len(dates) else "",
                turns=turns,
                summary=str(summaries[i]) if i < len(summaries) else "",
                session_id=str(ids[i]) if i < len(ids) else f"session_{i + 1}",
            )
        )
    speakers = (by_role.get("user", "user"), by_role.get("assistant", "assistant"))
    return sessions, speakers


def _read_record(line: str, where: str) -> dict:
    """One JSON line as an object; UserError naming the line otherwise."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise UserError(f"{where}: expected one JSON object per line, got invalid JSON ({err.msg})") from None
    if not isinstance(record, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(record).__name__}")
    return record


def _checked_choices(record: dict, where: str) -> tuple[list, int]:
    """The record's ten ``choices`` and its ``correct_choice_index``, both checked."""
    choices = require_field(record, "choices", list, where)
    if len(choices) != NUM_OPTIONS or not all(isinstance(c, str) for c in choices):
        raise UserError(f"{where}: field 'choices' expected {NUM_OPTIONS} strings, got {len(choices)} items")
    correct = require_field(record, "correct_choice_index", int, where)
    if not 0 <= correct < NUM_OPTIONS:
        raise UserError(f"{where}: field 'correct_choice_index' expected 0-{NUM_OPTIONS - 1}, got {correct}")
    return [abstention_option(c) for c in choices], correct


def abstention_option(choice: str) -> str:
    """A choice, with the set's abstention wording replaced by the reader's own abstention answer
    (the one it was trained to give when its memory holds no answer), so abstaining can be chosen.

    >>> abstention_option("Not mentioned in the conversation"), abstention_option("Lisbon")
    ('unknown', 'Lisbon')
    """
    return UNKNOWN_ANSWER if " ".join(choice.split()).rstrip(".").casefold() == _SET_ABSTENTION else choice


def _track_conversation(convs: dict[str, Conversation], fingerprints: dict[str, tuple[int, list]],
                        record: dict, conv_id: str, where: str) -> None:
    """Keep the first line's sessions of a conversation; later lines must agree on sessions and dates."""
    n_sessions = len(require_field(record, "haystack_sessions", list, where))
    dates = list(record.get("haystack_session_datetimes") or [])
    if conv_id not in convs:
        sessions, speakers = _percena_sessions(record, where)
        convs[conv_id] = Conversation(conv_id, speakers, sessions, [], SOURCE_PERCENA)
        fingerprints[conv_id] = (n_sessions, dates)
    elif fingerprints[conv_id] != (n_sessions, dates):
        raise UserError(
            f"{where}: conversation {conv_id!r} expected the same {fingerprints[conv_id][0]} sessions and dates "
            f"as its first line, got {n_sessions} sessions with different dates"
        )


def load_percena(path: str | Path) -> list[Conversation]:
    """Load Percena/locomo-mc10 JSON lines, one conversation per distinct conversation id.

    The first line of a conversation supplies its sessions; later lines must agree on the session
    count and dates (their haystacks are otherwise dropped unread, which keeps memory flat).

    Returns:
        Conversations in order of first appearance; questions in file order; ``source`` is
        :data:`SOURCE_PERCENA`.

    Raises:
        UserError: on malformed lines, wrong option counts, unknown labels or disagreeing copies.
    """
    from tqdm import tqdm

    convs: dict[str, Conversation] = {}
    fingerprints: dict[str, tuple[int, list]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(tqdm(fh, desc="locomo lines", unit="line", disable=None, file=sys.stderr), 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            record = _read_record(line, where)
            qid = require_field(record, "question_id", str, where)
            conv_id = conv_id_from_question_id(qid)
            label = require_field(record, "question_type", str, where)
            choices, correct = _checked_choices(record, where)
            category = category_from_percena(label)
            _track_conversation(convs, fingerprints, record, conv_id, where)
            convs[conv_id].questions.append(
                Question(
                    question_id=qid,
                    conv_id=conv_id,
                    question=require_field(record, "question", str, where),
                    category=category,
                    options=list(choices),
                    correct=correct,
                    adversarial=category == "adversarial",
                    evidence=[str(e) for e in record.get("evidence") or []],
                    answer=choices[correct],
                    raw_label=label,
                )
            )
    if not convs:
        raise UserError(f"{path}: expected at least one question line, got none")
    return list(convs.values())
