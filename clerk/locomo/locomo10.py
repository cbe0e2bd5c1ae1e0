"""The original ``locomo10.json`` format, and the 10-option questions built from it (SPEC §7).

**Original ``locomo10.json``**: a list of samples with ``sample_id``, ``conversation``
(``speaker_a``, ``speaker_b``, ``session_N`` turn lists of ``{speaker, dia_id, text}`` with
optional ``img_url``/``blip_caption``, ``session_N_date_time``), ``qa`` (``question``,
``answer`` or, for adversarial questions, ``adversarial_answer``, ``evidence``, ``category``)
and the session summaries: a ``session_summary`` block of ``session_N_summary`` keys, or (as in
the dataset's per-conversation files) the ``session_N_summary`` keys at the top level of the
sample (or inside ``conversation``); a file may also hold one sample as a JSON object instead
of a list. Sessions are the ``session_N`` keys that exist (some date keys have no session),
ordered by N as a number. A shared photo becomes ``[shares a photo: CAPTION]`` in the
turn text. The 10-option questions are built here (:func:`build_mc_options`), so the result is
labelled ``LoCoMo-MC10-local``, never as the Percena set. The numeric categories are renamed by
:func:`clerk.locomo.data.category_from_number`.

    clerk locomo-inspect --data tests/fixtures/locomo/locomo10_mini.json --json
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clerk import prompts
from clerk.errors import UserError
from clerk.locomo.data import (
    NUM_OPTIONS,
    Conversation,
    Question,
    Session,
    category_from_number,
    derived_seed,
    require_field,
)

#: Gold option of adversarial questions built from ``locomo10.json``, and an option of every other
#: question: the reader's own abstention answer (what it was trained to say when its memory holds
#: no answer), so that abstaining is a choice it can make.
NOT_MENTIONED = prompts.UNKNOWN_ANSWER
SOURCE_LOCAL = "LoCoMo-MC10-local"

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")
_SUMMARY_KEY = re.compile(r"session_\d+_summary")
#: Where a locomo10.json sample's summaries may be, as error messages name it.
SUMMARY_FIELDS = "'session_summary' (a block of 'session_N_summary' keys) or top-level 'session_N_summary' keys"


# --- ten options from one gold answer ------------------------------------------------------


def _norm(text: str) -> str:
    """Comparison key for answer options: whitespace collapsed, case folded.

    >>> _norm("  Seven  May ") == _norm("seven may")
    True
    """
    return " ".join(text.split()).casefold()


def build_mc_options(gold: str, pools: Sequence[Sequence[str]], rng: random.Random) -> tuple[list[str], int]:
    """Ten options: ``gold`` plus nine distractors drawn from ``pools`` in priority order.

    1. Each pool is shuffled by ``rng`` and consumed in turn until nine distractors are found,
       skipping empty strings and anything equal to the gold or an earlier pick (case and
       whitespace ignored).
    2. The ten options are shuffled by ``rng``; the gold's position is the answer.

    Args:
        gold: the correct answer text.
        pools: candidate distractors, most preferred pool first.
        rng: the question's own seeded generator.

    Returns:
        ``(options, correct_index)``.

    Raises:
        UserError: when the pools hold fewer than nine usable distractors.

    >>> opts, k = build_mc_options("Oslo", [[str(i) for i in range(20)]], random.Random(0))
    >>> len(opts), opts[k], len(set(opts))
    (10, 'Oslo', 10)
    """
    seen = {_norm(gold)}
    picks: list[str] = []
    for pool in pools:
        candidates = list(pool)
        rng.shuffle(candidates)
        for cand in candidates:
            key = _norm(cand)
            if not key or key in seen:
                continue
            seen.add(key)
            picks.append(cand)
            if len(picks) == NUM_OPTIONS - 1:
                break
        if len(picks) == NUM_OPTIONS - 1:
            break
    if len(picks) < NUM_OPTIONS - 1:
        raise UserError(
            f"cannot build {NUM_OPTIONS} options for gold {gold!r}: only {len(picks)} distinct distractors "
            f"in the data (expected {NUM_OPTIONS - 1})"
        )
    options = [gold, *picks]
    rng.shuffle(options)
    return options, options.index(gold)


# --- reading the file ----------------------------------------------------------------------


def evidence_ids(raw: Any) -> list[str]:
    """A question's annotated evidence as dialogue ids, in order, without repeats: the file lists
    one id per item, but some items hold several ids joined by ``;``, commas or spaces.

    >>> evidence_ids(["D1:3", "D2:8; D2:9", "D2:9", "D10:1 D10:2"]), evidence_ids(None)
    (['D1:3', 'D2:8', 'D2:9', 'D10:1', 'D10:2'], [])
    """
    found = [m for item in raw or [] for m in _DIA_ID.findall(str(item))]
    return list(dict.fromkeys(found))


def _turn_text(turn: dict[str, Any]) -> str:
    """Text of a ``locomo10.json`` turn, with a shared photo's caption spelled out.

    >>> _turn_text({"speaker": "A", "text": "Look!", "img_url": ["x"], "blip_caption": "a red kayak"})
    'Look! [shares a photo: a red kayak]'
    >>> _turn_text({"speaker": "A", "text": "Hi"})
    'Hi'
    """
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares a photo: {caption}]" if text else f"[shares a photo: {caption}]"
    return text


def _locomo10_sessions(conversation: dict, summaries: dict, where: str) -> list[Session]:
    """Sessions of one ``locomo10.json`` sample, ordered by their number N."""
    numbers = sorted(
        int(m.group(1))
        for key, value in conversation.items()
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(value, list)
    )
    sessions = []
    for index, n in enumerate(numbers):
        raw_turns = conversation[f"session_{n}"]
        turns = []
        for j, turn in enumerate(raw_turns):
            if not isinstance(turn, dict) or "speaker" not in turn:
                raise UserError(f"{where}: conversation.session_{n}[{j}] expected {{speaker, dia_id, text}}, got {turn!r:.80}")
            turns.append({"speaker": str(turn["speaker"]), "text": _turn_text(turn), "dia_id": str(turn.get("dia_id") or "")})
        sessions.append(
            Session(
                index=index,
                date=str(conversation.get(f"session_{n}_date_time") or ""),
                turns=turns,
                summary=str(summaries.get(f"session_{n}_summary") or ""),
                session_id=f"session_{n}",
            )
        )
    return sessions


def _qa_gold(qa: dict, category: str, where: str) -> str:
    """The answer text a question's pools draw on: ``adversarial_answer`` for adversarial ones."""
    if category == "adversarial":
        value = qa.get("adversarial_answer", qa.get("answer"))
        return "" if value is None else str(value)
    if qa.get("answer") is None:
        raise UserError(f"{where}: missing field 'answer'")
    return str(qa["answer"])


def _read_samples(path: str | Path) -> list:
    """The file's non-empty JSON list of samples (a file holding one sample object counts as a list of it)."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: expected a JSON list of samples, got invalid JSON ({err.msg})") from None
    if isinstance(samples, dict) and "conversation" in samples:
        samples = [samples]  # one conversation's own file
    if not isinstance(samples, list) or not samples:
        raise UserError(f"{path}: expected a non-empty JSON list of samples, got {type(samples).__name__}")
    return samples


def _summaries(sample: dict, conversation: dict, where: str) -> dict:
    """``session_N_summary`` -> text, from whichever layout the sample uses (a ``session_summary``
    block wins over top-level keys, which win over keys inside ``conversation``).

    >>> _summaries({"session_1_summary": "A", "session_summary": {"session_2_summary": "B"}}, {}, "s")
    {'session_1_summary': 'A', 'session_2_summary': 'B'}
    """
    block = sample.get("session_summary")
    if block is not None and not isinstance(block, dict):
        raise UserError(f"{where}: field 'session_summary' expected an object of 'session_N_summary' keys, "
                        f"got {type(block).__name__}")
    found: dict = {}
    for source in (conversation, sample, block or {}):
        found.update({k: v for k, v in source.items() if _SUMMARY_KEY.fullmatch(k)})
    return found


#: One parsed sample: (conv_id, speakers, sessions, [(qa, category, gold_text)]).
_Parsed = tuple[str, tuple[str, str], list[Session], list[tuple[dict, str, str]]]


def _parse_sample(sample: Any, where: str) -> _Parsed:
    """A sample's id, speakers, sessions and questions (each with its category and gold text)."""
    if not isinstance(sample, dict):
        raise UserError(f"{where}: expected an object, got {type(sample).__name__}")
    conv_id = str(require_field(sample, "sample_id", (str, int), where))
    conversation = require_field(sample, "conversation", dict, where)
    speakers = (
        str(require_field(conversation, "speaker_a", str, f"{where}.conversation")),
        str(require_field(conversation, "speaker_b", str, f"{where}.conversation")),
    )
    sessions = _locomo10_sessions(conversation, _summaries(sample, conversation, where), where)
    qas = []
    for k, qa in enumerate(require_field(sample, "qa", list, where)):
        q_where = f"{where}.qa[{k}]"
        if not isinstance(qa, dict):
            raise UserError(f"{q_where}: expected an object, got {type(qa).__name__}")
        require_field(qa, "question", str, q_where)
        category = category_from_number(qa.get("category"))
        qas.append((qa, category, _qa_gold(qa, category, q_where)))
    return conv_id, speakers, sessions, qas


def _answer_pools(parsed: list[_Parsed]) -> Callable[[str, str], list[list[str]]]:
    """The four distractor pools of a (conversation, category): answers of the same conversation
    and category, of its other categories, of other conversations' same category, of the rest."""
    memo: dict[tuple[str, str, bool, bool], list[str]] = {}

    def answers(conv_id: str, category: str, same_conv: bool, same_cat: bool) -> list[str]:
        # Answers in file order, de-duplicated, from this conversation or the others, of this
        # category or the others; memoised because every question of a conversation shares them.
        key = (conv_id, category, same_conv, same_cat)
        if key not in memo:
            out = [
                g for c_id, _, _, qas in parsed if (c_id == conv_id) == same_conv
                for _, cat, g in qas if (cat == category) == same_cat and g
            ]
            memo[key] = list(dict.fromkeys(out))
        return memo[key]

    def pools(conv_id: str, category: str) -> list[list[str]]:
        return [answers(conv_id, category, same_conv, same_cat)
                for same_conv, same_cat in ((True, True), (True, False), (False, True), (False, False))]

    return pools


def _build_question(conv_id: str, k: int, qa: dict, category: str, gold_text: str,
                    pools: list[list[str]], mc_seed: int) -> Question:
    """Question ``k`` of a conversation with its ten options (its own seeded generator)."""
    rng = random.Random(derived_seed(mc_seed, "locomo-mc", conv_id, k))
    adversarial = category == "adversarial"
    if adversarial:
        gold = NOT_MENTIONED
        pools.insert(0, [gold_text])
    else:
        gold = gold_text
        pools.insert(0, [NOT_MENTIONED])
    options, correct = build_mc_options(gold, pools, rng)
    return Question(
        question_id=f"{conv_id}_q{k}",
        conv_id=conv_id,
        question=qa["question"],
        category=category,
        options=options,
        correct=correct,
        adversarial=adversarial,
        evidence=evidence_ids(qa.get("evidence")),
        answer=gold,
        raw_label=str(qa["category"]),
    )


def load_locomo10(path: str | Path, mc_seed: int = 0) -> list[Conversation]:
    """Load the original ``locomo10.json`` and build its 10-option questions.

    Distractors per question (seeded by ``mc_seed``, the conversation id and the question's
    position, so one question's options never depend on the others' draws):

    1. Non-adversarial questions: :data:`NOT_MENTIONED` (so its presence never gives away an
       adversarial question), then other answers of the same conversation and category, then of
       its other categories, then of other conversations (same category first).
    2. Adversarial questions: the gold is :data:`NOT_MENTIONED`; the ``adversarial_answer`` (the
       tempting wrong answer) is always an option, then the pools as above.

    Returns:
        Conversations in file order, ``source`` :data:`SOURCE_LOCAL`.

    Raises:
        UserError: on malformed samples or too few distinct answers for ten options.
    """
    samples = _read_samples(path)
    # 1. Parse every sample first: the distractor pools span conversations.
    parsed = [_parse_sample(sample, f"{path}: sample[{s_i}]") for s_i, sample in enumerate(samples)]
    pools = _answer_pools(parsed)
    # 2. Build the options, one seeded generator per question.
    conversations = []
    for conv_id, speakers, sessions, qas in parsed:
        questions = [_build_question(conv_id, k, qa, category, gold_text, pools(conv_id, category), mc_seed)
                     for k, (qa, category, gold_text) in enumerate(qas)]
        conversations.append(Conversation(conv_id, speakers, sessions, questions, SOURCE_LOCAL))
    return conversations
