"""LoCoMo loading for the zero-shot transfer study: both public formats, one in-memory form.

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

    clerk locomo-inspect --data tests/fixtures/locomo/locomo10_mini.json
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import re
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Sequence

from clerk.errors import UserError

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


# --- command line --------------------------------------------------------------------------


def main_locomo(args: argparse.Namespace) -> None:
    """``clerk locomo``: resolve, load and subset the data, then record the selection.

    The evaluation itself (writers over sessions, MC reader) is wired in by the evaluation
    module; until then this writes ``<out>/selection.json`` (which questions, from which file).
    Data resolution comes first so a missing file leaves no output behind.
    """
    cfg = LocomoConfig(
        path=args.data, download=args.download, max_questions=args.max_questions,
        seed=args.seed, mc_seed=args.mc_seed, systems=tuple(args.systems),
    )
    data = resolve_locomo_path(cfg.path, cfg.download)
    if not Path(args.model).is_dir():
        raise UserError(f"--model: expected a model directory, got {args.model!r}")
    if args.adapter is not None and not Path(args.adapter).is_dir():
        raise UserError(f"--adapter: expected an adapter directory, got {args.adapter!r}")
    conversations = load_locomo(data, mc_seed=cfg.mc_seed)
    chosen = stratified_subset(all_questions(conversations), cfg.max_questions, cfg.seed)
    selection = {
        "data_file": str(data),
        "data_sha256": _sha256(data),
        "format": detect_format(data),
        "sources": list(dict.fromkeys(c.source for c in conversations)),
        "config": dataclasses.asdict(cfg) | {"path": str(data), "systems": list(cfg.systems)},
        "questions": len(chosen),
        "per_category": count_by_category(chosen),
        "adversarial": sum(q.adversarial for q in chosen),
        "conversations": [c.conv_id for c in restrict(conversations, chosen)],
        "question_ids": [q.question_id for q in chosen],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "selection.json").write_text(json.dumps(selection, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    # The lead wires evaluate_locomo(...) here once clerk.evaluate exists.
    print(
        f"clerk locomo: {len(chosen)} of {len(all_questions(conversations))} questions from "
        f"{len(selection['conversations'])} conversations selected; evaluation is not wired yet "
        f"(wrote {out / 'selection.json'})",
        file=sys.stderr,
    )


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
    """Add ``clerk locomo`` and ``clerk locomo-inspect``."""
    p = sub.add_parser(
        "locomo",
        help="LoCoMo-MC10 zero-shot transfer: load, subset and evaluate memory systems",
        description=(
            "Evaluate memory systems on LoCoMo (Percena/locomo-mc10 JSON lines or the original locomo10.json). "
            "Without data it exits with status 2 and says where to get it; it writes nothing then."
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
    p.add_argument("--adapter", metavar="DIR", default=None, help="trained LoRA adapter directory; default: none")
    p.add_argument("--systems", nargs="+", choices=LOCOMO_SYSTEMS, default=list(LOCOMO_SYSTEMS), metavar="NAME",
                   help=f"memory systems to run, from {', '.join(LOCOMO_SYSTEMS)}; default: all")
    # output and sampling
    p.add_argument("--out", metavar="DIR", required=True, help="output directory (created only when data loads)")
    p.add_argument("--max-questions", type=int, default=0, metavar="N",
                   help="stratified subset size in questions; 0 = all (default)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="subset seed; default: 0")
    p.add_argument("--mc-seed", type=int, default=0, metavar="S",
                   help="seed of the distractors built for locomo10.json (unused for Percena's file); default: 0")
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
