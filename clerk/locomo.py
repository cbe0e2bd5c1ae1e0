"""LoCoMo zero-shot transfer: loading both public formats, evaluating memory systems, table 2.

SPEC §7. LoCoMo (Maharana et al., 2024, https://github.com/snap-research/locomo) holds 10 long
two-person conversations and 1,986 questions; licence CC BY-NC 4.0, so the data is never committed
(tests use invented fixtures in ``tests/fixtures/locomo/``). Two formats are accepted:

* **Percena/locomo-mc10** (Hugging Face dataset, file ``data/locomo_mc10.json``): JSON lines, one
  question per line with ``question_id`` (``conv-26_q0``: the conversation id is everything before
  the last ``_q``), ``question``, ``question_type``, ``answer``, ``choices`` (10),
  ``correct_choice_index``, ``num_choices``, ``num_sessions``, ``haystack_session_ids``,
  ``haystack_session_datetimes``, ``haystack_session_summaries`` and ``haystack_sessions`` (a list
  of sessions, each a list of OpenAI-style ``{"role", "content"}`` turns: the first speaker is
  ``user``, the second ``assistant``; the ``transformed/…_with_name`` variant adds ``name``). The
  whole conversation repeats in every line, so lines are grouped by conversation and the
  conversation is kept once, sessions in their given order. Its ``source`` is
  ``Percena/locomo-mc10``.
* **Original ``locomo10.json``**: a list of samples with ``sample_id``, ``conversation``
  (``speaker_a``, ``speaker_b``, ``session_N`` turn lists of ``{speaker, dia_id, text}`` with
  optional ``img_url``/``blip_caption``, ``session_N_date_time``), ``qa`` (``question``,
  ``answer`` or, for adversarial questions, ``adversarial_answer``, ``evidence``, ``category``)
  and ``session_summary``. Sessions are the ``session_N`` keys that exist (some date keys have no
  session), ordered by N as a number. A shared photo becomes ``[shares a photo: CAPTION]`` in the
  turn text. The 10-option questions are built here (:func:`build_mc_options`), so the result is
  labelled ``LoCoMo-MC10-local``, never as the Percena set.

**Category names.** LoCoMo's numeric ``category`` is not in the paper's order: 4 = single-hop,
1 = multi-hop, 2 = temporal, 3 = open-domain, 5 = adversarial. Evidence: the official scorer
(``task_eval/evaluation.py``) scores 1 as multi-hop (sub-answer F1) and 5 as adversarial; its
prompt appends "Use DATE of CONVERSATION" to category 2 only; every category-2 question asks
"When …" with a date answer; category 3 questions need world knowledge ("Would X likely …");
category 4 is the largest bucket of one-evidence look-ups (841 questions); see
snap-research/locomo issues #6 and #29. Percena's ``question_type`` applied the paper's order
(1 single-hop, 2 multi-hop, 3 temporal, 4 open-domain) to those numbers, so its labels are wrong
for four of five types: its ``open_domain`` holds single-hop questions (841 = the category-4
count), ``multi_hop`` holds temporal (321, all "When …"), ``temporal_reasoning`` holds
open-domain (96), ``single_hop`` holds multi-hop (282); ``adversarial`` (446) is right. The
counts 282/321/96/841/446 of categories 1-5 in ``locomo10.json`` equal Percena's
single_hop/multi_hop/temporal_reasoning/open_domain/adversarial counts, and Percena's rows follow
``locomo10.json``'s question order. Every question here carries the corrected name
(:data:`CATEGORIES`), the raw label it came with (``raw_label``) and an ``adversarial`` flag so
reports keep adversarial questions apart.

**Evaluation** (:func:`evaluate_locomo`, ``clerk locomo``). Each conversation is replayed through
every memory system's writer session by session, in order (the synthetic runner's
``clerk.evaluate.replay``); its two speakers are the transcript roles, so ledger writers can use
their names as subjects, and each session's date heads its transcript (:func:`session_record`).
Ledger systems (``clerk``: the trained adapter writes and reads; ``prompted-ledger``: the base
model) keep a ledger of ``--budget`` slots, by default the synthetic budget (12, config
``data.budget``): the budget the policy was trained with. Only then are the questions asked, once
each, against the system's final memory, and scored by the same multiple-choice log-likelihood
reader as the synthetic benchmark (``clerk.evaluate.mc_choose``). ``full`` shows the whole
conversation, left-truncated to the reader's context (``truncated`` in every prediction; the
untruncated length per conversation is in ``metrics.json``); the prompt up to the question is
identical for every question of a conversation, so it is encoded once and its KV cache reused
(``clerk bench-locomo-prefix`` measures the saving). ``summary-rag``
(``clerk/memory/summary_rag.py``) shows the top-k session summaries for the question by BM25.
There is no gold ledger on LoCoMo, so only answer accuracy is scored (plus write-side health for
ledger systems: parse failures, invalid ops). ``accuracy`` is over non-adversarial questions;
adversarial questions are reported apart (``adversarial_accuracy``). Outputs: ``selection.json``,
``predictions.jsonl`` and ``metrics.json`` (:data:`LOCOMO_SCHEMAS`); ``clerk table-locomo``
aggregates the per-seed metrics into table 2.

    clerk locomo-inspect --data tests/fixtures/locomo/locomo10_mini.json
    clerk locomo --data locomo_mc10.json --model resources/models/smollm2-135m --adapter results/train/137 \\
        --max-questions 200 --seed 137 --out results/locomo/137
    clerk table-locomo --metrics results/locomo/*/metrics.json --out results/table2.csv --markdown results/table2.md
    clerk bench-locomo-prefix --data tests/fixtures/locomo/locomo10_mini.json --model resources/models/smollm2-135m
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import random
import re
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Sequence

from clerk.errors import UserError
from clerk.memory.base import DTYPES, EvalConfig, Runtime

# --- names and constants -------------------------------------------------------------------

#: Corrected category names, in the LoCoMo paper's order (tables use this order).
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")
#: LoCoMo ``locomo10.json`` numeric category -> real name (see the module docstring).
CATEGORY_BY_NUMBER = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
#: Percena ``question_type`` label -> real name (its labels are mis-mapped; see the docstring).
PERCENA_TYPE_TO_CATEGORY = {
    "open_domain": "single-hop",
    "single_hop": "multi-hop",
    "multi_hop": "temporal",
    "temporal_reasoning": "open-domain",
    "adversarial": "adversarial",
}
#: Gold option of adversarial questions built from ``locomo10.json``.
NOT_MENTIONED = "Not mentioned in the conversation."
NUM_OPTIONS = 10

SOURCE_PERCENA = "Percena/locomo-mc10"
SOURCE_LOCAL = "LoCoMo-MC10-local"
PERCENA_REPO_ID = "Percena/locomo-mc10"
PERCENA_FILENAME = "data/locomo_mc10.json"
PERCENA_URL = "https://huggingface.co/datasets/Percena/locomo-mc10"
ORIGINAL_REPO_URL = "https://github.com/snap-research/locomo"
#: Memory systems evaluated on LoCoMo (SPEC §7), by registry key.
LOCOMO_SYSTEMS = ("clerk", "prompted-ledger", "full", "summary-rag")

FORMAT_PERCENA = "percena-jsonl"
FORMAT_LOCOMO10 = "locomo10-json"

_SESSION_KEY = re.compile(r"session_(\d+)")


# --- the in-memory form --------------------------------------------------------------------


@dataclass
class Session:
    """One dated session of a conversation.

    Attributes:
        index: 0-based position in the conversation (the ``now`` a writer sees).
        date: the date/time string exactly as the data gives it.
        turns: ``[{"speaker": name, "text": text}, ...]`` in order.
        summary: the dataset's session summary ("" when absent).
        session_id: the dataset's own name for it (``session_N``; N may skip numbers).
    """

    index: int
    date: str
    turns: list[dict[str, str]]
    summary: str
    session_id: str


@dataclass
class Question:
    """One 10-option question about a conversation.

    Attributes:
        question_id: ``<conv_id>_q<k>``, k the question's position in its conversation.
        conv_id: the conversation it is about.
        question: question text.
        category: corrected name, one of :data:`CATEGORIES`.
        options: the 10 answer options.
        correct: index of the gold option.
        adversarial: True for adversarial questions (reported apart).
        evidence: dialogue ids of the supporting turns (``D3:13`` = session 3, turn 13) when known.
        answer: gold answer text (``options[correct]``).
        raw_label: the label as the file had it (Percena ``question_type`` or LoCoMo ``category``).
    """

    question_id: str
    conv_id: str
    question: str
    category: str
    options: list[str]
    correct: int
    adversarial: bool
    evidence: list[str]
    answer: str
    raw_label: str


@dataclass
class Conversation:
    """One long conversation with its sessions (in order) and its questions."""

    conv_id: str
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question]
    source: str


@dataclass
class LocomoConfig:
    """Knobs of the LoCoMo stage (config key ``locomo``).

    Attributes:
        path: the data file (either format); None = not configured.
        download: fetch ``data/locomo_mc10.json`` from the Hugging Face hub when ``path`` is absent.
        max_questions: evaluate a stratified subset of this many questions; 0 = all 1,986.
        seed: seed of the subset.
        mc_seed: seed of the distractors built for ``locomo10.json`` (kept fixed across
            evaluation seeds so every seed sees the same questions; unused for Percena's file).
        systems: memory systems to run, registry keys from :data:`LOCOMO_SYSTEMS`.
    """

    path: str | None = None
    download: bool = False
    max_questions: int = 0
    seed: int = 0
    mc_seed: int = 0
    systems: tuple[str, ...] = LOCOMO_SYSTEMS

    def __post_init__(self) -> None:
        if self.max_questions < 0:
            raise UserError(f"locomo.max_questions: expected an integer >= 0 (0 = all), got {self.max_questions}")
        unknown = [s for s in self.systems if s not in LOCOMO_SYSTEMS]
        if unknown:
            raise UserError(f"locomo.systems: expected names from {list(LOCOMO_SYSTEMS)}, got {unknown}")


# --- small pure helpers --------------------------------------------------------------------


def derived_seed(*parts: object) -> int:
    """A 64-bit seed from ``parts``, stable across runs and machines (no ``hash()``).

    >>> derived_seed(0, "mc", "conv-26", 3) == derived_seed(0, "mc", "conv-26", 3)
    True
    >>> derived_seed(0, "mc") != derived_seed(1, "mc")
    True
    """
    blob = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


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


def category_from_number(number: Any) -> str:
    """Real category name of a ``locomo10.json`` numeric category.

    >>> [category_from_number(n) for n in (1, 2, 3, 4, 5)]
    ['multi-hop', 'temporal', 'open-domain', 'single-hop', 'adversarial']

    Raises:
        UserError: for anything other than 1-5.
    """
    if isinstance(number, bool) or not isinstance(number, int) or number not in CATEGORY_BY_NUMBER:
        raise UserError(f"qa.category: expected an integer 1-5, got {number!r}")
    return CATEGORY_BY_NUMBER[number]


def category_from_percena(label: str) -> str:
    """Corrected category name of a Percena ``question_type`` label.

    >>> category_from_percena("open_domain"), category_from_percena("multi_hop")
    ('single-hop', 'temporal')

    Raises:
        UserError: for a label Percena does not use.
    """
    if label not in PERCENA_TYPE_TO_CATEGORY:
        raise UserError(f"question_type: expected one of {sorted(PERCENA_TYPE_TO_CATEGORY)}, got {label!r}")
    return PERCENA_TYPE_TO_CATEGORY[label]


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


def as_chat_turns(session: Session) -> list[dict[str, str]]:
    """A session's turns as ``{"role", "content"}`` dicts (speaker names as roles) for ``clerk.prompts``.

    >>> as_chat_turns(Session(0, "", [{"speaker": "Ana", "text": "Hi"}], "", "session_1"))
    [{'role': 'Ana', 'content': 'Hi'}]
    """
    return [{"role": t["speaker"], "content": t["text"]} for t in session.turns]


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


# --- reading files -------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """:data:`FORMAT_PERCENA` (JSON lines) or :data:`FORMAT_LOCOMO10` (one JSON list), by the first byte.

    Raises:
        UserError: when the file is empty or starts with anything else.
    """
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        return FORMAT_LOCOMO10
    if head.startswith(b"{"):
        return FORMAT_PERCENA
    raise UserError(
        f"{path}: expected Percena JSON lines (starting with '{{') or locomo10.json (starting with '['), "
        f"got {head[:20]!r}"
    )


def load_locomo(path: str | Path, mc_seed: int = 0) -> list[Conversation]:
    """Load either format (detected from the file) into :class:`Conversation` objects.

    Args:
        path: the data file.
        mc_seed: seed of the distractors built for ``locomo10.json`` (ignored for Percena's file).

    Returns:
        Conversations in file order.

    Raises:
        UserError: on a missing file or malformed data (the message names the field).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"LoCoMo data: expected an existing file, got {str(path)!r}")
    if detect_format(path) == FORMAT_LOCOMO10:
        return load_locomo10(path, mc_seed=mc_seed)
    return load_percena(path)


def _require(record: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``record[key]`` checked against ``kind``; UserError naming the field otherwise."""
    if key not in record:
        raise UserError(f"{where}: missing field {key!r}")
    value = record[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise UserError(f"{where}: field {key!r} expected {names}, got {type(value).__name__}")
    return value


def _percena_sessions(record: dict, where: str) -> tuple[list[Session], tuple[str, str]]:
    """Sessions and speaker names of one Percena record's haystack."""
    haystack = _require(record, "haystack_sessions", list, where)
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
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise UserError(f"{where}: expected one JSON object per line, got invalid JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise UserError(f"{where}: expected a JSON object, got {type(record).__name__}")
            qid = _require(record, "question_id", str, where)
            conv_id = conv_id_from_question_id(qid)
            label = _require(record, "question_type", str, where)
            choices = _require(record, "choices", list, where)
            if len(choices) != NUM_OPTIONS or not all(isinstance(c, str) for c in choices):
                raise UserError(f"{where}: field 'choices' expected {NUM_OPTIONS} strings, got {len(choices)} items")
            correct = _require(record, "correct_choice_index", int, where)
            if not 0 <= correct < NUM_OPTIONS:
                raise UserError(f"{where}: field 'correct_choice_index' expected 0-{NUM_OPTIONS - 1}, got {correct}")
            category = category_from_percena(label)
            n_sessions = len(_require(record, "haystack_sessions", list, where))
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
            convs[conv_id].questions.append(
                Question(
                    question_id=qid,
                    conv_id=conv_id,
                    question=_require(record, "question", str, where),
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
            turns.append({"speaker": str(turn["speaker"]), "text": _turn_text(turn)})
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
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: expected a JSON list of samples, got invalid JSON ({err.msg})") from None
    if not isinstance(samples, list) or not samples:
        raise UserError(f"{path}: expected a non-empty JSON list of samples, got {type(samples).__name__}")

    # 1. Parse every sample first: the distractor pools span conversations.
    parsed = []  # (conv_id, speakers, sessions, [(qa, category, gold_text, where)])
    for s_i, sample in enumerate(samples):
        where = f"{path}: sample[{s_i}]"
        if not isinstance(sample, dict):
            raise UserError(f"{where}: expected an object, got {type(sample).__name__}")
        conv_id = str(_require(sample, "sample_id", (str, int), where))
        conversation = _require(sample, "conversation", dict, where)
        speakers = (
            str(_require(conversation, "speaker_a", str, f"{where}.conversation")),
            str(_require(conversation, "speaker_b", str, f"{where}.conversation")),
        )
        summaries = sample.get("session_summary") or {}
        sessions = _locomo10_sessions(conversation, summaries, where)
        qas = []
        for k, qa in enumerate(_require(sample, "qa", list, where)):
            q_where = f"{where}.qa[{k}]"
            if not isinstance(qa, dict):
                raise UserError(f"{q_where}: expected an object, got {type(qa).__name__}")
            _require(qa, "question", str, q_where)
            category = category_from_number(qa.get("category"))
            qas.append((qa, category, _qa_gold(qa, category, q_where)))
        parsed.append((conv_id, speakers, sessions, qas))

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

    # 2. Build the options, one seeded generator per question.
    conversations = []
    for conv_id, speakers, sessions, qas in parsed:
        questions = []
        for k, (qa, category, gold_text) in enumerate(qas):
            rng = random.Random(derived_seed(mc_seed, "locomo-mc", conv_id, k))
            pools = [
                answers(conv_id, category, same_conv=True, same_cat=True),
                answers(conv_id, category, same_conv=True, same_cat=False),
                answers(conv_id, category, same_conv=False, same_cat=True),
                answers(conv_id, category, same_conv=False, same_cat=False),
            ]
            adversarial = category == "adversarial"
            if adversarial:
                gold = NOT_MENTIONED
                pools.insert(0, [gold_text])
            else:
                gold = gold_text
                pools.insert(0, [NOT_MENTIONED])
            options, correct = build_mc_options(gold, pools, rng)
            questions.append(
                Question(
                    question_id=f"{conv_id}_q{k}",
                    conv_id=conv_id,
                    question=qa["question"],
                    category=category,
                    options=options,
                    correct=correct,
                    adversarial=adversarial,
                    evidence=[str(e) for e in qa.get("evidence") or []],
                    answer=gold,
                    raw_label=str(qa["category"]),
                )
            )
        conversations.append(Conversation(conv_id, speakers, sessions, questions, SOURCE_LOCAL))
    return conversations


# --- locating the data ---------------------------------------------------------------------


def _missing_data_message(reason: str) -> str:
    return (
        f"LoCoMo data not found: {reason}. Get data/locomo_mc10.json from the Hugging Face dataset "
        f"{PERCENA_REPO_ID} ({PERCENA_URL}) or locomo10.json from the original repo {ORIGINAL_REPO_URL} "
        "(licence CC BY-NC 4.0: never commit it), then set locomo.path (clerk locomo --data FILE) to that file, "
        "or set locomo.download: true (clerk locomo --download) where the network allows"
    )


def resolve_locomo_path(path: str | None, download: bool, revision: str | None = None) -> Path:
    """Find the LoCoMo data file: a configured path wins, else the Hugging Face hub when allowed.

    Nothing is written when this fails (the hub client is not even called while
    ``HF_HUB_OFFLINE`` is set).

    Args:
        path: configured file (``locomo.path``), or None.
        download: whether fetching ``data/locomo_mc10.json`` of :data:`PERCENA_REPO_ID` is allowed
            (``locomo.download``); the file lands in the Hugging Face cache.
        revision: hub revision (branch, tag or commit) to fetch; None = ``main``.

    Returns:
        Path of an existing file.

    Raises:
        UserError: one line saying where to get the data and which config key to set.
    """
    if path:
        p = Path(path)
        if p.is_file():
            return p
        what = "is not a file" if p.exists() else "does not exist"
        reason = f"locomo.path {str(p)!r} {what}"
    else:
        reason = "locomo.path is not set"
    if not download:
        raise UserError(_missing_data_message(f"{reason} and locomo.download is false"))
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        raise UserError(_missing_data_message(f"{reason} and the download was skipped because HF_HUB_OFFLINE is set"))
    try:
        from huggingface_hub import hf_hub_download

        fetched = hf_hub_download(
            repo_id=PERCENA_REPO_ID, filename=PERCENA_FILENAME, repo_type="dataset", revision=revision
        )
    except Exception as err:  # any failure (import, network, auth, missing file) means: no data
        detail = " ".join(str(err).split())[:160]
        raise UserError(_missing_data_message(f"{reason} and the download failed ({type(err).__name__}: {detail})")) from None
    return Path(fetched)


# --- subsets and summaries -----------------------------------------------------------------


def all_questions(conversations: Iterable[Conversation]) -> list[Question]:
    """Every question, conversation by conversation, in file order."""
    return [q for conv in conversations for q in conv.questions]


def _allocate(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over groups in proportion to ``sizes`` (largest remainder, ties by name).

    When ``total`` allows, every non-empty group gets at least one: groups whose share is below
    one get exactly one and the rest is shared among the others in proportion to their sizes.

    >>> _allocate({"a": 6, "b": 3, "c": 1}, 5)
    {'a': 3, 'b': 1, 'c': 1}
    >>> _allocate({"a": 841, "b": 282, "c": 321, "d": 96, "e": 446}, 200)
    {'a': 85, 'b': 28, 'c': 32, 'd': 10, 'e': 45}
    """
    names = sorted(n for n, size in sizes.items() if size > 0)
    alloc = {n: 0 for n in sorted(sizes)}
    total = min(total, sum(sizes[n] for n in names))
    forced: list[str] = []
    if total >= len(names):
        # 1. Fix at one every group whose proportional share of what is left is below one.
        while True:
            free = [n for n in names if n not in forced]
            budget, n_free = total - len(forced), sum(sizes[n] for n in free)
            low = [n for n in free if budget * sizes[n] < n_free]
            if not low:
                break
            forced += low
    for n in forced:
        alloc[n] = 1
    # 2. Largest-remainder apportionment of the rest, never above a group's size.
    free = [n for n in names if n not in forced]
    budget, n_free = total - len(forced), sum(sizes[n] for n in free)
    if budget <= 0 or not free:
        return alloc
    quotas = {n: Fraction(budget * sizes[n], n_free) for n in free}
    for n in free:
        alloc[n] = min(int(quotas[n]), sizes[n])
    order = sorted(free, key=lambda n: (-(quotas[n] - int(quotas[n])), n))
    while sum(alloc.values()) < total:
        for n in order:
            if sum(alloc.values()) < total and alloc[n] < sizes[n]:
                alloc[n] += 1
    return alloc


def stratified_subset(questions: Sequence[Question], max_questions: int, seed: int) -> list[Question]:
    """A seeded subset of at most ``max_questions``, stratified by (corrected) category.

    1. Each category gets a share proportional to its size (largest remainder; at least one per
       category when the budget allows), see :func:`_allocate`.
    2. Within a category, questions are drawn by a generator seeded from ``seed`` and the
       category name.
    3. The chosen questions come back in their input order.

    Args:
        questions: the pool (e.g. :func:`all_questions`).
        max_questions: subset size; ``0`` or anything >= ``len(questions)`` keeps all.
        seed: subset seed.

    Returns:
        The chosen questions, in input order.

    Raises:
        UserError: when ``max_questions`` is negative.
    """
    if max_questions < 0:
        raise UserError(f"max_questions: expected an integer >= 0 (0 = all), got {max_questions}")
    if max_questions == 0 or max_questions >= len(questions):
        return list(questions)
    groups: dict[str, list[int]] = {}
    for pos, q in enumerate(questions):
        groups.setdefault(q.category, []).append(pos)
    alloc = _allocate({c: len(v) for c, v in groups.items()}, max_questions)
    chosen: list[int] = []
    for category in sorted(groups):
        rng = random.Random(derived_seed(seed, "locomo-subset", category))
        chosen += rng.sample(groups[category], alloc[category])
    return [questions[pos] for pos in sorted(chosen)]


def restrict(conversations: Iterable[Conversation], questions: Iterable[Question]) -> list[Conversation]:
    """Conversations holding only the given questions; conversations left without any are dropped."""
    keep = {q.question_id for q in questions}
    out = []
    for conv in conversations:
        qs = [q for q in conv.questions if q.question_id in keep]
        if qs:
            out.append(dataclasses.replace(conv, questions=qs))
    return out


def count_by_category(questions: Iterable[Question]) -> dict[str, int]:
    """Question counts per corrected category, in :data:`CATEGORIES` order (zeros included)."""
    counts = {c: 0 for c in CATEGORIES}
    for q in questions:
        counts[q.category] += 1
    return counts


def summarize(conversations: Sequence[Conversation]) -> dict[str, Any]:
    """Counts of conversations, sessions, turns and questions (per category), overall and per conversation."""
    qs = all_questions(conversations)
    return {
        "sources": list(dict.fromkeys(c.source for c in conversations)),
        "conversations": len(conversations),
        "sessions": sum(len(c.sessions) for c in conversations),
        "turns": sum(len(s.turns) for c in conversations for s in c.sessions),
        "questions": len(qs),
        "adversarial": sum(q.adversarial for q in qs),
        "per_category": count_by_category(qs),
        "per_conversation": [
            {
                "conv_id": c.conv_id,
                "speakers": list(c.speakers),
                "sessions": len(c.sessions),
                "turns": sum(len(s.turns) for s in c.sessions),
                "questions": len(c.questions),
                "per_category": count_by_category(c.questions),
            }
            for c in conversations
        ],
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- evaluation: writers over sessions, then the MC reader ---------------------------------

#: ``role`` of the leading pseudo-turn that carries a session's date (see :func:`session_record`).
DATE_ROLE = "date"
#: Ledger budget B on LoCoMo when none is given: the synthetic default (config ``data.budget``).
DEFAULT_BUDGET = 12
#: Summaries the ``summary-rag`` view retrieves per question by default.
DEFAULT_SUMMARY_K = 3
#: Non-adversarial categories; ``accuracy`` is over these, adversarial questions are reported apart.
ANSWERABLE = CATEGORIES[:4]
LOCOMO_METRICS_SCHEMA_ID = "clerk.locomo.metrics/1"

_N = type(None)
#: Field -> allowed exact types per record kind (validated with ``clerk.evaluate.validate_record``).
LOCOMO_SCHEMAS: dict[str, dict[str, tuple]] = {
    "predictions": {
        "question_id": (str,),
        "conversation": (str,),  # conversation id
        "category": (str,),  # corrected name (CATEGORIES)
        "raw_label": (str,),  # the label as the data file had it
        "adversarial": (bool,),
        "system": (str,),  # registry key
        "reader": (str,),  # "base" | "adapter"
        "chosen": (int,),
        "correct_index": (int,),
        "correct": (bool,),
        "read_tokens": (int,),  # tokens of the view text under the reader's tokenizer
        "truncated": (bool,),  # the view was cut (oldest first) to fit the reader's context
    },
    "metrics": {
        "schema": (str,),
        "seed": (int,),  # subset seed = the workflow's {seed}
        "input": (dict,),  # data file: path, format, source, sha256, sizes, per-conversation tokens
        "subset": (dict,),  # max_questions, seed, size, per_category, adversarial
        "config": (dict,),  # systems, model, adapter, budget, summary_k, EvalConfig fields, context
        "versions": (dict,),  # system -> version, plus "clerk"
        "systems": (dict,),  # system -> "metrics.system"
        "wall_seconds": (float,),
    },
    "metrics.system": {
        "version": (str,),
        "is_ledger": (bool,),
        "reader": (dict,),  # {"method": "mc", "model": "base" | "adapter"}
        "source": (str,),  # SOURCE_PERCENA or SOURCE_LOCAL
        "data_sha256": (str,),
        "subset_size": (int,),  # questions evaluated (adversarial included)
        "subset_seed": (int,),
        "n_questions": (int,),  # = subset_size
        "n": (int,),  # non-adversarial questions (the denominator of accuracy)
        "accuracy": (float, _N),  # over non-adversarial questions; None when there are none
        "accuracy_by_category": (dict,),  # ANSWERABLE -> float | None
        "n_by_category": (dict,),
        "adversarial_accuracy": (float, _N),
        "n_adversarial": (int,),
        "read_tokens_mean": (float, _N),
        "truncated_rate": (float, _N),
        "wall_seconds": (float,),  # writing + reading
        "write_seconds": (float,),
        "read_seconds": (float,),
        "n_writes": (int,),  # conversation-sessions consolidated
        # ledger systems only (None otherwise):
        "write_tokens_mean": (float, _N),
        "n_ops": (int, _N),
        "invalid_op_rate": (float, _N),
        "parse_failure_rate": (float, _N),
        "occupied_mean": (float, _N),  # occupied slots of the final ledgers
    },
}


@dataclass
class LocomoEvalConfig(EvalConfig):
    """The synthetic evaluation knobs (:class:`clerk.memory.EvalConfig`) plus LoCoMo's own.

    Attributes:
        budget: ledger slots B of the ledger systems on LoCoMo (``--budget``); default the
            synthetic budget, :data:`DEFAULT_BUDGET`, so the trained policy sees the budget it
            was trained with.
        summary_k: summaries the ``summary-rag`` view retrieves per question.
    """

    budget: int = DEFAULT_BUDGET
    summary_k: int = DEFAULT_SUMMARY_K

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("budget", "summary_k"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UserError(f"{name} must be an int >= 1, got {value!r}")
        if self.reader != "mc":
            raise UserError(f"reader must be 'mc' on LoCoMo (no gold ledger for the rule reader), got {self.reader!r}")


def session_record(session: Session) -> dict[str, Any]:
    """A LoCoMo session in the form memory systems read (``index``, ``turns`` of ``role``/``content``).

    Speakers' names are the roles, so a ledger writer sees who said what and can use the names
    as subjects. The session's date is carried as a leading ``date`` pseudo-turn, which
    ``prompts.render_turns`` renders exactly as its ``date=`` argument would: every system that
    renders turns (the ledger writers' CONSOLIDATE transcript, the ``full`` view) shows the date
    with no LoCoMo-specific code in the systems. ``date`` and ``summary`` are kept as fields too
    (``summary-rag`` reads them).

    >>> from clerk.prompts import render_turns
    >>> s = Session(2, "8 May 2023", [{"speaker": "Ana", "text": "Hi"}], "Ana said hi.", "session_3")
    >>> render_turns(session_record(s)["turns"]) == render_turns(as_chat_turns(s), date=s.date)
    True
    >>> render_turns(session_record(s)["turns"])
    'date: 8 May 2023\\nAna: Hi'
    """
    turns = as_chat_turns(session)
    if session.date:
        turns = [{"role": DATE_ROLE, "content": session.date}, *turns]
    return {"index": session.index, "session_id": session.session_id, "date": session.date,
            "summary": session.summary, "turns": turns, "questions": []}


def conversation_timeline(conv: Conversation, budget: int) -> dict[str, Any]:
    """A conversation as the runner's persona record: its sessions (no questions inside them:
    LoCoMo questions are asked after the whole conversation) and the ledger budget."""
    return {"name": conv.conv_id, "split": "locomo", "seed": 0, "budget": budget,
            "speakers": list(conv.speakers), "sessions": [session_record(s) for s in conv.sessions]}


def question_time(conv: Conversation) -> dict[str, Any]:
    """The pseudo-session the questions are asked in: after the last session, with no turns."""
    return {"index": len(conv.sessions), "turns": [], "questions": [question_record(q) for q in conv.questions]}


def question_record(q: Question) -> dict[str, Any]:
    """The question dict the MC reader scores (``question``, ``options``, ``correct``)."""
    return {"question": q.question, "options": list(q.options), "correct": q.correct, "id": q.question_id}


def _mean(values: Sequence[float]) -> float | None:
    """Mean, or None for no values.

    >>> _mean([1, 0, 1, 1]), _mean([])
    (0.75, None)
    """
    return math.fsum(values) / len(values) if values else None


def locomo_registry():
    """The memory registry with ``summary-rag`` registered (imported here, on first use)."""
    import clerk.memory.summary_rag  # noqa: F401  (registers "summary-rag")
    from clerk.memory import MEMORY_REGISTRY

    return MEMORY_REGISTRY


def _summarize_system(system: Any, rows: list[dict], writes: list[Any], finals: list[Any],
                      write_s: float, read_s: float) -> dict[str, Any]:
    """The ``metrics.system`` record of one system (data fields are filled in by the caller)."""
    answerable = [r for r in rows if not r["adversarial"]]
    adversarial = [r for r in rows if r["adversarial"]]
    out: dict[str, Any] = {
        "version": system.version,
        "is_ledger": system.is_ledger,
        "reader": {"method": "mc", "model": system.reader_model()},
        "n_questions": len(rows),
        "n": len(answerable),
        "accuracy": _mean([float(r["correct"]) for r in answerable]),
        "accuracy_by_category": {
            c: _mean([float(r["correct"]) for r in rows if r["category"] == c]) for c in ANSWERABLE
        },
        "n_by_category": {c: sum(1 for r in rows if r["category"] == c) for c in ANSWERABLE},
        "adversarial_accuracy": _mean([float(r["correct"]) for r in adversarial]),
        "n_adversarial": len(adversarial),
        "read_tokens_mean": _mean([float(r["read_tokens"]) for r in rows]),
        "truncated_rate": _mean([float(r["truncated"]) for r in rows]),
        "wall_seconds": float(write_s + read_s),
        "write_seconds": float(write_s),
        "read_seconds": float(read_s),
        "n_writes": len(writes),
        "write_tokens_mean": None, "n_ops": None, "invalid_op_rate": None, "parse_failure_rate": None,
        "occupied_mean": None,
    }
    if system.is_ledger:
        from clerk import ledger as L

        n_ops = sum(len(w.program or []) for w in writes)
        out.update(
            write_tokens_mean=_mean([float(w.write_tokens) for w in writes]),
            n_ops=n_ops,
            invalid_op_rate=sum(w.n_invalid for w in writes) / n_ops if n_ops else 0.0,
            parse_failure_rate=_mean([float(w.parse_failed) for w in writes]),
            occupied_mean=_mean([float(len(L.occupied(system.ledger(state)))) for state in finals]),
        )
    return out


def evaluate_locomo(
    conversations: Sequence[Conversation],
    system_names: Sequence[str],
    runtime: Runtime,
    registry: Any = None,
    progress: bool = True,
) -> tuple[list[dict], dict[str, dict]]:
    """Run memory systems over LoCoMo conversations and score every question with the MC reader.

    1. Each conversation becomes a persona record (:func:`conversation_timeline`); the synthetic
       runner's ``clerk.evaluate.replay`` drives every system's writer over its sessions in
       order, batched across conversations at the same session index (ledger systems start from
       an empty ledger of ``runtime.config.budget`` slots and apply their programs leniently).
    2. After the last session, every question of the conversation is asked once against the
       system's final memory (:func:`question_time`): its view is built and scored by the MC
       log-likelihood reader (``clerk.evaluate.mc_choose``). Questions with the same view text
       share one encoded prompt prefix: for ``full`` (one view per conversation, left-truncated
       to the reader's context) the conversation is encoded once and its KV cache reused for
       every question.

    Args:
        conversations: the conversations, each holding only the questions to ask.
        system_names: registry keys, e.g. :data:`LOCOMO_SYSTEMS`.
        runtime: a :class:`clerk.memory.Runtime` whose config is a :class:`LocomoEvalConfig`.
        registry: where names are looked up; default :func:`locomo_registry`.
        progress: show progress bars on stderr.

    Returns:
        (prediction rows, per-system summaries) following :data:`LOCOMO_SCHEMAS` (the summaries'
        data fields ``source``, ``data_sha256``, ``subset_size``, ``subset_seed`` are left to the
        caller).

    Raises:
        UserError: unknown systems or a missing adapter (``clerk.evaluate.make_systems``).
    """
    import time

    from tqdm.auto import tqdm

    from clerk.evaluate.runner import make_systems, mc_choose, replay

    cfg = runtime.config
    assert isinstance(cfg, LocomoEvalConfig), "runtime.config must be a LocomoEvalConfig"
    systems = make_systems(list(system_names), runtime, registry if registry is not None else locomo_registry())
    # Load everything up front so wall times exclude loading.
    runtime.tokenizer  # noqa: B018
    for system in systems.values():
        runtime.model(system.reader_model())
        if getattr(system, "writer_kind", None) is not None:
            runtime.model(system.writer_kind)

    timelines = [conversation_timeline(conv, cfg.budget) for conv in conversations]
    finals = {name: {tl["name"]: system.init_state(tl) for tl in timelines} for name, system in systems.items()}
    writes: dict[str, list[Any]] = {name: [] for name in systems}

    def wrote(name, system, tl, session, before, result):
        finals[name][tl["name"]] = result.state
        writes[name].append(result)

    # No session holds questions, so replay only writes; its answer callback is never called.
    write_seconds = replay(timelines, systems, lambda *a: None, wrote, progress)

    predictions: list[dict] = []
    summaries: dict[str, dict] = {}
    view_tokens: dict[str, int] = {}  # the full view recurs for every question of a conversation
    for name, system in systems.items():
        reader = system.reader_model()
        model, tok = runtime.model(reader)
        start = time.perf_counter()
        rows: list[dict] = []
        for conv, tl in tqdm(list(zip(conversations, timelines)), desc=f"read {name}", unit="conv",
                             file=sys.stderr, disable=not progress):
            if not conv.questions:
                continue
            asked = question_time(conv)
            state = finals[name][tl["name"]]
            views = [system.view(state, tl, asked, qd) for qd in asked["questions"]]
            chosen = mc_choose(model, tok, asked["questions"], views)
            for q, view, c in zip(conv.questions, views, chosen):
                if view.text not in view_tokens:
                    view_tokens[view.text] = runtime.count_tokens(view.text)
                rows.append({
                    "question_id": q.question_id, "conversation": conv.conv_id, "category": q.category,
                    "raw_label": q.raw_label, "adversarial": bool(q.adversarial), "system": name, "reader": reader,
                    "chosen": int(c), "correct_index": q.correct, "correct": int(c) == q.correct,
                    "read_tokens": view_tokens[view.text], "truncated": bool(view.truncated),
                })
        read_s = time.perf_counter() - start
        predictions += rows
        summaries[name] = _summarize_system(system, rows, writes[name], list(finals[name].values()),
                                            write_seconds[name], read_s)
    return predictions, summaries


def transcript_tokens(conv: Conversation, runtime: Runtime) -> int:
    """Tokens of the whole conversation as the ``full`` view renders it, before any truncation."""
    from clerk.memory.text import session_lines

    lines = [line for s in conv.sessions for line in session_lines(session_record(s))]
    return runtime.count_tokens("\n".join(lines))


def _write_jsonl(path: Path, kind: str, rows: list[dict]) -> None:
    from clerk.evaluate.schemas import validate_record

    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            validate_record(kind, row, LOCOMO_SCHEMAS)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


# --- command line --------------------------------------------------------------------------


def main_locomo(args: argparse.Namespace) -> None:
    """``clerk locomo``: resolve, load and subset the data, evaluate the systems, write the results.

    Data resolution comes first so a missing file leaves no output behind; then the arguments
    and systems are checked before any model loads. Writes ``selection.json`` (which questions,
    from which file), ``predictions.jsonl`` and, last, ``metrics.json`` to ``--out``.

    Raises:
        UserError: missing data, bad directories or knobs, unknown systems, a missing adapter.
    """
    import time

    from clerk import __version__
    from clerk.evaluate.runner import make_systems
    from clerk.evaluate.schemas import validate_record

    from clerk.models import set_torch_threads

    start = time.perf_counter()
    set_torch_threads(args.threads)
    cfg = LocomoConfig(
        path=args.data, download=args.download, max_questions=args.max_questions,
        seed=args.seed, mc_seed=args.mc_seed, systems=tuple(args.systems),
    )
    data = resolve_locomo_path(cfg.path, cfg.download)
    if not Path(args.model).is_dir():
        raise UserError(f"--model: expected a model directory, got {args.model!r}")
    if args.adapter is not None and not Path(args.adapter).is_dir():
        raise UserError(f"--adapter: expected an adapter directory, got {args.adapter!r}")
    ecfg = LocomoEvalConfig(budget=args.budget, summary_k=args.summary_k, max_new_tokens=args.max_new_tokens,
                            batch_size=args.batch_size, baseline_reader=args.baseline_reader,
                            max_read_tokens=args.max_read_tokens, dtype=args.dtype)
    runtime = Runtime(ecfg, model_dir=args.model, adapter_dir=args.adapter)
    make_systems(list(cfg.systems), runtime, locomo_registry())  # fail on names/adapter before loading
    conversations = load_locomo(data, mc_seed=cfg.mc_seed)
    chosen = stratified_subset(all_questions(conversations), cfg.max_questions, cfg.seed)
    selected = restrict(conversations, chosen)
    sha = _sha256(data)
    sources = list(dict.fromkeys(c.source for c in conversations))
    selection = {
        "data_file": str(data),
        "data_sha256": sha,
        "format": detect_format(data),
        "sources": sources,
        "config": dataclasses.asdict(cfg) | {"path": str(data), "systems": list(cfg.systems)},
        "questions": len(chosen),
        "per_category": count_by_category(chosen),
        "adversarial": sum(q.adversarial for q in chosen),
        "conversations": [c.conv_id for c in selected],
        "question_ids": [q.question_id for q in chosen],
    }

    predictions, summaries = evaluate_locomo(selected, list(cfg.systems), runtime, progress=not args.quiet)
    for summary in summaries.values():
        summary.update(source=sources[0], data_sha256=sha, subset_size=len(chosen), subset_seed=cfg.seed)
        validate_record("metrics.system", summary, LOCOMO_SCHEMAS)
    metrics = {
        "schema": LOCOMO_METRICS_SCHEMA_ID,
        "seed": cfg.seed,
        "input": {
            "path": str(data), "format": selection["format"], "source": sources[0], "sha256": sha,
            "n_conversations": len(conversations), "n_questions": len(all_questions(conversations)),
            "conversations": [
                {"conv_id": c.conv_id, "sessions": len(c.sessions), "questions": len(c.questions),
                 "transcript_tokens": transcript_tokens(c, runtime)}
                for c in selected
            ],
        },
        "subset": {"max_questions": cfg.max_questions, "seed": cfg.seed, "size": len(chosen),
                   "per_category": selection["per_category"], "adversarial": selection["adversarial"],
                   "mc_seed": cfg.mc_seed},
        "config": {"systems": list(cfg.systems), "model": args.model, "adapter": args.adapter, **ecfg.to_dict(),
                   "context_tokens": runtime.context_tokens, "view_budget_tokens": runtime.view_budget()},
        "versions": {"clerk": __version__, **{name: summaries[name]["version"] for name in cfg.systems}},
        "systems": summaries,
        "wall_seconds": float(time.perf_counter() - start),
    }
    validate_record("metrics", metrics, LOCOMO_SCHEMAS)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "selection.json").write_text(json.dumps(selection, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    _write_jsonl(out / "predictions.jsonl", "predictions", predictions)
    # metrics.json last: its existence means the run completed.
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    accs = ", ".join(f"{n}={s['accuracy']:.3f}" if s["accuracy"] is not None else f"{n}=n/a"
                     for n, s in summaries.items())
    print(f"clerk locomo: {len(chosen)} questions x {len(summaries)} systems from {len(selected)} conversations "
          f"({sources[0]}); accuracy (non-adversarial): {accs}; -> {out} in {metrics['wall_seconds']:.1f} s",
          file=sys.stderr)


# --- table 2 -------------------------------------------------------------------------------

#: Per-seed value columns of table 2 (aggregated over seeds into ``<col>_{n,mean,sd,ci_low,ci_high}``).
TABLE2_VALUES = ("accuracy", "single_hop", "multi_hop", "temporal", "open_domain", "adversarial",
                 "read_tokens", "truncated_rate", "n_questions")
#: Markdown headers of the compact table 2 (category names as in :data:`CATEGORIES`).
_TABLE2_MD = (("accuracy", "accuracy"), ("single_hop", "single-hop"), ("multi_hop", "multi-hop"),
              ("temporal", "temporal"), ("open_domain", "open-domain"), ("adversarial", "adversarial"),
              ("read_tokens", "read tokens"), ("truncated_rate", "truncated"))


def table2_rows(metrics_files: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per (seed, system) from LoCoMo ``metrics.json`` files; accuracies as floats, NaN when
    a category had no question.

    Raises:
        UserError: a file is missing or not a LoCoMo metrics file, or the files disagree on the
            data (source, sha256) or the subset size requested.
    """
    rows: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}
    for path in metrics_files:
        try:
            metrics = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise UserError(f"--metrics: expected a readable LoCoMo metrics.json, got {str(path)!r} ({err})") from None
        if not isinstance(metrics, dict) or metrics.get("schema") != LOCOMO_METRICS_SCHEMA_ID:
            got = metrics.get("schema") if isinstance(metrics, dict) else type(metrics).__name__
            raise UserError(f"--metrics: expected schema {LOCOMO_METRICS_SCHEMA_ID!r} in {str(path)!r}, got {got!r}")
        key = {"source": metrics["input"]["source"], "sha256": metrics["input"]["sha256"],
               "max_questions": metrics["subset"]["max_questions"]}
        if seen and key != seen:
            raise UserError(f"--metrics: every file must come from the same data and subset size; {str(path)!r} has "
                            f"{key}, expected {seen}")
        seen = seen or key

        def nan(x: float | None) -> float:
            return math.nan if x is None else float(x)

        for name, s in metrics["systems"].items():
            by = s["accuracy_by_category"]
            rows.append({
                "system": name, "reader": s["reader"]["model"], "source": s["source"], "seed": int(metrics["seed"]),
                "accuracy": nan(s["accuracy"]), "single_hop": nan(by["single-hop"]), "multi_hop": nan(by["multi-hop"]),
                "temporal": nan(by["temporal"]), "open_domain": nan(by["open-domain"]),
                "adversarial": nan(s["adversarial_accuracy"]), "read_tokens": nan(s["read_tokens_mean"]),
                "truncated_rate": nan(s["truncated_rate"]), "n_questions": float(s["n_questions"]),
            })
    if not rows:
        raise UserError("--metrics: expected at least one metrics file with systems, got none")
    return rows


def _mean_ci(mean: float, low: float, high: float, fmt: str) -> str:
    """``mean ± half-width`` of the 95 % interval; just the mean when there is no interval.

    >>> _mean_ci(0.5, 0.4, 0.6, ".3f"), _mean_ci(0.5, float("nan"), float("nan"), ".3f")
    ('0.500 ± 0.100', '0.500')
    """
    if math.isnan(mean):
        return "n/a"
    if math.isnan(low) or math.isnan(high):
        return format(mean, fmt)
    return f"{format(mean, fmt)} ± {format((high - low) / 2, fmt)}"


def table2(metrics_files: Sequence[str | Path]):
    """Table 2 as (full aggregate DataFrame, compact Markdown DataFrame).

    The full frame has ``system, reader, source, n_seeds, seeds`` and ``<col>_{n,mean,sd,ci_low,ci_high}``
    for every :data:`TABLE2_VALUES` column (``clerk.report.aggregate_frame``). The compact frame
    shows ``mean ± 95 % half-width`` per system in :data:`LOCOMO_SYSTEMS` order, with the share of
    questions whose view was truncated to the reader's context (``full``: say so in the paper).
    """
    import pandas as pd

    from clerk.report import aggregate_frame

    df = aggregate_frame(pd.DataFrame(table2_rows(metrics_files)), by=["system", "reader", "source"],
                         value_cols=list(TABLE2_VALUES))
    order = {name: k for k, name in enumerate(LOCOMO_SYSTEMS)}
    compact = []
    for row in sorted(df.to_dict("records"), key=lambda r: (order.get(r["system"], len(order)), r["system"])):
        line = {"system": row["system"], "reader": row["reader"], "seeds": int(row["n_seeds"]),
                "questions": int(round(row["n_questions_mean"]))}
        for col, header in _TABLE2_MD:
            fmt = {"read_tokens": ".0f", "truncated_rate": ".2f"}.get(col, ".3f")
            line[header] = _mean_ci(row[f"{col}_mean"], row[f"{col}_ci_low"], row[f"{col}_ci_high"], fmt)
        compact.append(line)
    return df, pd.DataFrame(compact)


def main_table(args: argparse.Namespace) -> None:
    """``clerk table-locomo``: aggregate LoCoMo metrics over seeds into table 2 (CSV, optional Markdown)."""
    from clerk.report import to_markdown, write_csv

    df, compact = table2(args.metrics)
    write_csv(df, args.out, sort_by=["system", "reader", "source"])
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(to_markdown(compact), encoding="utf-8")
    print(f"clerk table-locomo: {len(df)} systems from {len(args.metrics)} metrics files -> {args.out}",
          file=sys.stderr)


# --- prefix-reuse benchmark ----------------------------------------------------------------


def bench_prefix(data: str | Path, model_dir: str | Path, conversation: str | None = None, tile: int = 1,
                 max_read_tokens: int = -1, mc_seed: int = 0, progress: bool = True,
                 dtype: str = "auto") -> dict[str, Any]:
    """Time the ``full`` system's questions on one conversation with and without prefix reuse.

    1. The conversation's sessions (repeated ``tile`` times, to emulate a longer conversation) go
       through the ``full`` system; its view is left-truncated to the reader's context exactly
       as in :func:`evaluate_locomo`.
    2. *No reuse*: each question's whole answer prompt is prefilled and its options scored
       (``scoring.score_options``). *Reuse*: what the evaluation does for questions sharing a
       view (``clerk.evaluate.mc_choose`` -> ``reader.mc_choices``): the prompt up to the
       question is encoded once (``scoring.encode_prefix``, timed once and charged to the
       questions) and every question prefills only its own suffix (``scoring.score_with_prefix``).
       The two paths alternate question by question, so load on a shared machine hits both alike.

    Returns:
        Tokens (view, prefix, prompt and suffix per question, prefill per question both ways),
        seconds per question both ways, the speed-up and whether both pick the same options.

    Raises:
        UserError: bad data/model paths, an unknown conversation id or ``tile`` < 1.
    """
    import time

    from tqdm.auto import tqdm

    from clerk import models, prompts
    from clerk.evaluate.runner import make_systems
    from clerk.scoring import mc as scoring
    from clerk.memory.reader import split_prompt

    if tile < 1:
        raise UserError(f"--tile: expected an integer >= 1, got {tile}")
    conversations = load_locomo(data, mc_seed=mc_seed)
    if conversation is None:
        conv = conversations[0]
    else:
        by_id = {c.conv_id: c for c in conversations}
        if conversation not in by_id:
            raise UserError(f"--conversation: expected one of {sorted(by_id)}, got {conversation!r}")
        conv = by_id[conversation]
    if tile > 1:
        n = len(conv.sessions)
        sessions = [dataclasses.replace(s, index=r * n + s.index) for r in range(tile) for s in conv.sessions]
        conv = dataclasses.replace(conv, sessions=sessions)
    runtime = Runtime(LocomoEvalConfig(max_read_tokens=max_read_tokens, dtype=dtype), model_dir=str(model_dir))
    full = make_systems(["full"], runtime, locomo_registry())["full"]
    tl = conversation_timeline(conv, DEFAULT_BUDGET)
    state = full.init_state(tl)
    for session in tl["sessions"]:
        state = full.write([state], [tl], [session])[0].state
    asked = question_time(conv)
    qds = asked["questions"]
    views = [full.view(state, tl, asked, qd) for qd in qds]
    model, tok = runtime.model("base")
    texts = [models.chat_prompt(tok, prompts.answer_messages(v.text, qd["question"])) for v, qd in zip(views, qds)]
    prefix_text, _ = split_prompt(texts[0])

    def n_tokens(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    suffixes = [t[len(prefix_text):] for t in texts]
    assert all(t.startswith(prefix_text) for t in texts)  # one view, one frame: the prefix is shared
    scoring.score_options(model, tok, texts[0], qds[0]["options"])  # warm-up: allocator, kernels
    # Interleave the two paths question by question so a shared machine's load hits both alike.
    start = time.perf_counter()
    prefix = scoring.encode_prefix(model, tok, prefix_text)
    encode_s = time.perf_counter() - start
    plain, reused, plain_s, reuse_s = [], [], 0.0, encode_s
    for text, suffix, qd in tqdm(list(zip(texts, suffixes, qds)), desc="questions", unit="q", file=sys.stderr,
                                 disable=not progress):
        t0 = time.perf_counter()
        plain.append(scoring.pick(scoring.score_options(model, tok, text, qd["options"])))
        t1 = time.perf_counter()
        reused.append(scoring.pick(scoring.score_with_prefix(model, tok, prefix, suffix, qd["options"])))
        t2 = time.perf_counter()
        plain_s, reuse_s = plain_s + (t1 - t0), reuse_s + (t2 - t1)
    nq = len(qds)
    prompt_tokens = [n_tokens(t) for t in texts]
    suffix_tokens = [n_tokens(t) for t in suffixes]
    prefix_tokens = n_tokens(prefix_text)
    return {
        "conversation": conv.conv_id, "sessions": len(conv.sessions), "tile": tile, "questions": nq,
        "model": str(model_dir), "dtype": str(model.dtype).removeprefix("torch."), "torch_threads": _torch_threads(),
        "load_average_1min": os.getloadavg()[0],
        "view_tokens": runtime.count_tokens(views[0].text), "truncated": bool(views[0].truncated),
        "view_budget_tokens": runtime.view_budget(), "prefix_tokens": prefix_tokens,
        "prompt_tokens_mean": _mean([float(x) for x in prompt_tokens]),
        "suffix_tokens_mean": _mean([float(x) for x in suffix_tokens]),
        "prefill_tokens_per_question_no_reuse": _mean([float(x) for x in prompt_tokens]),
        "prefill_tokens_per_question_reuse": (prefix_tokens + sum(suffix_tokens)) / nq,
        "prefix_encode_seconds": encode_s,
        "seconds_per_question_no_reuse": plain_s / nq,
        "seconds_per_question_reuse": reuse_s / nq,
        "speedup": plain_s / reuse_s,
        "same_choices": plain == reused,
        "choices_no_reuse": plain,
        "choices_reuse": reused,
    }


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def main_bench(args: argparse.Namespace) -> None:
    """``clerk bench-locomo-prefix``: print prefill tokens and seconds per question with and without reuse."""
    from clerk.models import set_torch_threads

    set_torch_threads(args.threads)
    r = bench_prefix(args.data, args.model, conversation=args.conversation, tile=args.tile,
                     max_read_tokens=args.max_read_tokens, mc_seed=args.mc_seed, dtype=args.dtype)
    print(f"conversation {r['conversation']}: {r['sessions']} sessions (tile {r['tile']}), {r['questions']} questions, "
          f"model {r['model']} ({r['dtype']}), torch threads {r['torch_threads']}, "
          f"load average {r['load_average_1min']:.1f}")
    print(f"full view: {r['view_tokens']} tokens (budget {r['view_budget_tokens']}, truncated: {r['truncated']}); "
          f"shared prefix {r['prefix_tokens']} tokens; per-question suffix {r['suffix_tokens_mean']:.1f} tokens (mean)")
    print(f"no reuse:     prefill {r['prefill_tokens_per_question_no_reuse']:.1f} tokens/question, "
          f"{r['seconds_per_question_no_reuse']:.3f} s/question")
    print(f"prefix reuse: prefill {r['prefill_tokens_per_question_reuse']:.1f} tokens/question (amortised), "
          f"{r['seconds_per_question_reuse']:.3f} s/question "
          f"(prefix encoded once in {r['prefix_encode_seconds']:.3f} s)")
    print(f"speed-up: {r['speedup']:.2f}x; same choices: {r['same_choices']}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(r, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# --- inspection ------------------------------------------------------------------------------


def format_summary(summary: dict[str, Any], path: str) -> str:
    """Human-readable text of :func:`summarize` for ``clerk locomo-inspect``."""
    lines = [
        f"file: {path}",
        f"source: {', '.join(summary['sources'])}",
        f"conversations: {summary['conversations']}  sessions: {summary['sessions']}  turns: {summary['turns']}  "
        f"questions: {summary['questions']} (adversarial: {summary['adversarial']})",
        "questions per category (corrected names):",
    ]
    lines += [f"  {name:<12} {n}" for name, n in summary["per_category"].items()]
    lines.append("per conversation:")
    for c in summary["per_conversation"]:
        lines.append(
            f"  {c['conv_id']}  speakers={'/'.join(c['speakers'])}  sessions={c['sessions']}  "
            f"turns={c['turns']}  questions={c['questions']}"
        )
    return "\n".join(lines)


def main_inspect(args: argparse.Namespace) -> None:
    """``clerk locomo-inspect``: print conversations, sessions, turns and questions per category."""
    conversations = load_locomo(args.data, mc_seed=args.mc_seed)
    summary = summarize(conversations)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_summary(summary, args.data))


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``clerk locomo``, ``clerk locomo-inspect``, ``clerk table-locomo`` and ``clerk bench-locomo-prefix``."""
    d = LocomoEvalConfig()
    p = sub.add_parser(
        "locomo",
        help="LoCoMo-MC10 zero-shot transfer: load, subset and evaluate memory systems",
        description=(
            "Evaluate memory systems on LoCoMo (Percena/locomo-mc10 JSON lines or the original locomo10.json): "
            "each system's writer runs over every conversation's sessions in order, then every selected question "
            "is scored by the multiple-choice log-likelihood reader over the system's final memory. Writes "
            "selection.json, predictions.jsonl and metrics.json (last) to --out. Without data it exits with "
            "status 2 and says where to get it; it writes nothing then."
        ),
    )
    # data
    p.add_argument("--data", metavar="FILE", default=None,
                   help="LoCoMo file, either format (config locomo.path); default: none")
    p.add_argument("--download", action="store_true",
                   help=f"fetch {PERCENA_FILENAME} of {PERCENA_REPO_ID} with the Hugging Face client when "
                        "--data is absent (config locomo.download); default: off")
    # models and systems
    p.add_argument("--model", metavar="DIR", required=True, help="base model directory (safetensors + tokenizer)")
    p.add_argument("--adapter", metavar="DIR", default=None,
                   help="trained LoRA adapter directory (clerk train); needed by the clerk system; default: none")
    p.add_argument("--systems", nargs="+", choices=LOCOMO_SYSTEMS, default=list(LOCOMO_SYSTEMS), metavar="NAME",
                   help=f"memory systems to run, from {', '.join(LOCOMO_SYSTEMS)}; default: all")
    # memory and views
    p.add_argument("--budget", type=int, default=d.budget, metavar="B",
                   help=f"ledger slots of the ledger systems (config data.budget: the synthetic budget the policy "
                        f"was trained with); default: {d.budget}")
    p.add_argument("--summary-k", dest="summary_k", type=int, default=d.summary_k, metavar="K",
                   help=f"session summaries the summary-rag view retrieves per question; default: {d.summary_k}")
    p.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=d.max_read_tokens, metavar="N",
                   help="cap on transcript-view tokens; -1 = the reader's context minus a prompt reserve (default: -1)")
    # writers and readers
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=d.max_new_tokens, metavar="N",
                   help=f"generation cap of the ledger writers per session, tokens; default: {d.max_new_tokens}")
    p.add_argument("--batch-size", dest="batch_size", type=int, default=d.batch_size, metavar="N",
                   help=f"conversations per generation batch; default: {d.batch_size}")
    p.add_argument("--baseline-reader", dest="baseline_reader", choices=("base", "adapter"), default=d.baseline_reader,
                   help="model reading full and summary-rag (default: base)")
    p.add_argument("--dtype", choices=DTYPES, default=d.dtype,
                   help="inference dtype of every model; auto = bf16 on CUDA, fp32 on CPU (default: auto)")
    # output and sampling
    p.add_argument("--out", metavar="DIR", required=True, help="output directory (created only when data loads)")
    p.add_argument("--max-questions", type=int, default=0, metavar="N",
                   help="stratified subset size in questions; 0 = all (default)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="subset seed (the workflow's {seed}); default: 0")
    p.add_argument("--mc-seed", type=int, default=0, metavar="S",
                   help="seed of the distractors built for locomo10.json (unused for Percena's file); default: 0")
    p.add_argument("--threads", type=int, default=0, metavar="N", help="torch CPU threads; 0 = torch's default")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=main_locomo)

    q = sub.add_parser(
        "locomo-inspect",
        help="print conversations, sessions, turns and question counts per corrected category",
        description="Load a LoCoMo file (either format) and print what it holds, categories named correctly.",
    )
    q.add_argument("--data", metavar="FILE", required=True, help="LoCoMo file, either format")
    q.add_argument("--mc-seed", type=int, default=0, metavar="S",
                   help="seed of the distractors built for locomo10.json; default: 0")
    q.add_argument("--json", action="store_true", help="print the counts as JSON instead of text")
    q.set_defaults(func=main_inspect)

    t = sub.add_parser(
        "table-locomo",
        help="table 2: LoCoMo accuracy per system and category, aggregated over seeds",
        description="Aggregate LoCoMo metrics.json files (one per seed) over seeds: n, mean, sd (ddof=1) and the "
        "95 %% t-interval of accuracy (non-adversarial), per-category and adversarial accuracy, read tokens, "
        "truncation rate and question count. Writes a CSV and optionally a compact Markdown table.",
    )
    t.add_argument("--metrics", nargs="+", required=True, metavar="FILE",
                   help="LoCoMo metrics.json files, e.g. results/locomo/*/metrics.json")
    t.add_argument("--out", required=True, metavar="CSV", help="output CSV, e.g. results/table2.csv")
    t.add_argument("--markdown", default=None, metavar="MD",
                   help="also write the compact Markdown table (mean ± 95 %% half-width) here; default: none")
    t.set_defaults(func=main_table)

    b = sub.add_parser(
        "bench-locomo-prefix",
        help="prefill tokens and seconds per question for full-context reading with and without prefix reuse",
        description="On one conversation, score every question over the full (context-truncated) conversation "
        "twice: prefilling each whole prompt, and encoding the conversation prefix once and reusing its KV cache "
        "(the path clerk locomo takes). Prints tokens, seconds per question, the speed-up and whether the "
        "choices agree.",
    )
    b.add_argument("--data", required=True, metavar="FILE", help="LoCoMo file, either format (e.g. a test fixture)")
    b.add_argument("--model", required=True, metavar="DIR", help="base model directory")
    b.add_argument("--conversation", default=None, metavar="ID", help="conversation id; default: the first")
    b.add_argument("--tile", type=int, default=1, metavar="N",
                   help="repeat the conversation's sessions N times to emulate a longer one; default: 1")
    b.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=-1, metavar="N",
                   help="cap on view tokens; -1 = the reader's context minus a prompt reserve (default: -1)")
    b.add_argument("--mc-seed", type=int, default=0, metavar="S", help="distractor seed for locomo10.json; default: 0")
    b.add_argument("--threads", type=int, default=0, metavar="N", help="torch CPU threads; 0 = torch's default")
    b.add_argument("--dtype", choices=DTYPES, default="auto",
                   help="inference dtype; auto = bf16 on CUDA, fp32 on CPU (default: auto)")
    b.add_argument("--out", default=None, metavar="JSON", help="also write the numbers as JSON here; default: none")
    b.set_defaults(func=main_bench)
