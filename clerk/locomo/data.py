"""LoCoMo in memory: sessions, questions, conversations, the corrected category names, the config.

SPEC §7. Both file formats (:mod:`clerk.locomo.percena`, :mod:`clerk.locomo.locomo10`) load into
the dataclasses here; every later stage reads only these.

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

    clerk locomo-inspect --data tests/fixtures/locomo/locomo_mc10_mini.json
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from clerk.errors import UserError
from clerk.locomo.config import LocomoSection
from clerk.memory.registry import LOCOMO, MEMORY_REGISTRY

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
NUM_OPTIONS = 10
#: Memory systems evaluated on LoCoMo (SPEC §7), by registry key in table order: those that declare
#: they serve it (``clerk.memory.registry``).
LOCOMO_SYSTEMS = tuple(MEMORY_REGISTRY.in_order(LOCOMO))


# --- the in-memory form --------------------------------------------------------------------


@dataclass
class Session:
    """One dated session of a conversation.

    Attributes:
        index: 0-based position in the conversation (the ``now`` a writer sees).
        date: the date/time string exactly as the data gives it.
        turns: ``[{"speaker": name, "text": text}, ...]`` in order (``dia_id`` too where the file has it).
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
        seed: the run's seed (the workflow's ``{seed}``: which policy writes); also the seed of
            the question subset unless ``subset_seed`` is given.
        subset_seed: seed of the question subset; None = ``seed``. The workflow gives every job
            the same one (``locomo.subset_seed``), so every system answers the same questions and
            systems are compared question by question.
        mc_seed: seed of the distractors built for ``locomo10.json`` (kept fixed across
            evaluation seeds so every seed sees the same questions; unused for Percena's file).
        systems: memory systems to run, registry keys from :data:`LOCOMO_SYSTEMS`.
    """

    path: str | None = None
    download: bool = LocomoSection.download  # the locomo section's defaults (one default each)
    max_questions: int = LocomoSection.max_questions
    seed: int = 0
    mc_seed: int = 0
    systems: tuple[str, ...] = LOCOMO_SYSTEMS
    subset_seed: int | None = None

    @property
    def question_seed(self) -> int:
        """The seed the question subset is drawn with."""
        return self.seed if self.subset_seed is None else self.subset_seed

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


def as_chat_turns(session: Session) -> list[dict[str, str]]:
    """A session's turns as ``{"role", "content"}`` dicts (speaker names as roles) for ``clerk.prompts``.

    >>> as_chat_turns(Session(0, "", [{"speaker": "Ana", "text": "Hi"}], "", "session_1"))
    [{'role': 'Ana', 'content': 'Hi'}]
    """
    return [{"role": t["speaker"], "content": t["text"]} for t in session.turns]


def require_field(record: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``record[key]`` checked against ``kind``; UserError naming the field otherwise."""
    if key not in record:
        raise UserError(f"{where}: missing field {key!r}")
    value = record[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise UserError(f"{where}: field {key!r} expected {names}, got {type(value).__name__}")
    return value
