"""Questions and options: the rule reader, the questions a session asks, their ten options (SPEC §2).

Questions are *not* part of the transcript: they are answered from the ledger before
consolidation and never about a predicate the session's events touch.

**Decisions** (SPEC leaves these open):

* A question type is drawn uniformly among the types that have an eligible predicate, then a
  predicate uniformly among those; one question per predicate per session. When fewer than the
  drawn number of questions are possible (tiny budgets), the session asks fewer (possibly 0).
* "superseded" and "current" follow the persona's *true* history; the answer (current value) is
  always in the ledger. A temporal question needs the previous value *in the ledger*: ``prev`` of
  an active slot, or ``o`` of a tombstoned one; a fact that was evicted and re-added through an
  UPDATE has ``prev = null`` and is not asked temporally.
* Options: the gold answer, both fixed phrases, the stale values (older values, or the current
  value for a temporal question), then other values of the predicate's pool, then other
  predicates' values if the pool is too small; all distinct, seeded shuffle.
* Forget splits add the type ``forgotten`` (gold: the unknown phrase; the forgotten values are
  the stale distractors), drawn after the five SPEC types (:mod:`clerk.generator.forgets`).

    python -m pytest tests/test_generator.py -q -k "question or option or reference"
"""

from __future__ import annotations

import random
from typing import Any

from clerk import ledger as L
from clerk import prompts
from clerk.generator.catalogue import N_OPTIONS, Catalogue, Predicate
from clerk.generator.config import GeneratorConfig
from clerk.generator.forgets import FORGOTTEN
from clerk.generator.truth import Fact

#: Question types, in the order a session draws a type among those with an eligible predicate.
QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal")


def reference_answer(ledger: L.Ledger, subject: str, pred: str, temporal: bool = False) -> str:
    """The answer a perfect reader gives from ``ledger`` alone (the rule reader).

    Non-temporal: no slot -> unknown phrase; tombstoned -> negated phrase; else the value.
    Temporal ("what did it used to be?"): tombstoned -> its last true value ``o``; updated ->
    ``prev``; never changed or no slot -> unknown phrase (no earlier value is on record).

    >>> led = [{"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": "nurse", "v": 1, "born": 0, "t": 2, "uses": 0}]
    >>> reference_answer(led, "Ari", "job"), reference_answer(led, "Ari", "job", temporal=True)
    ('chef', 'nurse')
    >>> reference_answer(led, "Ari", "pet")
    'unknown'
    """
    i = L.find(ledger, subject, pred)
    if i is None:
        return prompts.UNKNOWN_ANSWER
    slot = ledger[i]
    if temporal:
        if slot["v"] == 0:
            return slot["o"]
        return slot["prev"] if slot["prev"] is not None else prompts.UNKNOWN_ANSWER
    return prompts.NEGATED_ANSWER if slot["v"] == 0 else slot["o"]


def when_answer(ledger: L.Ledger, subject: str, pred: str) -> str:
    """The answer to "when did it happen?" from ``ledger`` alone: the date ``w`` of the slot, or the
    unknown phrase (no slot, or an undated one). Open world only (SPEC §2.9).

    >>> when_answer([{"i": 0, "s": "Jo", "p": "went_to_concert", "o": "an opera", "w": "2023-05", "prev": None,
    ...               "v": 1, "born": 0, "t": 0, "uses": 0}], "Jo", "went_to_concert")
    '2023-05'
    """
    i = L.find(ledger, subject, pred)
    return prompts.UNKNOWN_ANSWER if i is None or "w" not in ledger[i] else ledger[i]["w"]


def question_is_temporal(question: dict[str, Any]) -> bool:
    """True when a timeline question asks for the earlier value ("what did it used to be?").

    >>> question_is_temporal({"type": "temporal"}), question_is_temporal({"type": "negated"})
    (True, False)
    """
    return question["type"] == "temporal"


def stale_answers(timeline: dict[str, Any], index: int, question: dict[str, Any]) -> list[str]:
    """Options that would be a *stale error* for a question of session ``index``.

    superseded: every earlier value of the predicate other than the current one; negated: every
    value it ever held (answering as if still true); other types: none. Values come from the
    events of sessions before ``index``, in first-stated order.
    """
    if question["type"] not in ("superseded", "negated"):
        return []
    held: list[str] = []
    for session in timeline["sessions"][:index]:
        for event in session["events"]:
            if event["pred"] == question["pred"] and event["kind"] != "TOMBSTONE" and event["value"] not in held:
                held.append(event["value"])
    return [v for v in held if v != question["answer"]]


def _eligible(cat: Catalogue, facts: dict[str, Fact], ledger: L.Ledger, subject: str,
              touched: list[str], forgotten: dict[str, list[str]]) -> dict[str, list[str]]:
    """Predicates each question type may ask about, in catalogue order (SPEC §2 table; the
    ``forgotten`` type of :mod:`clerk.generator.forgets` for forgotten, not restated predicates)."""
    out: dict[str, list[str]] = {qtype: [] for qtype in (*QUESTION_TYPES, FORGOTTEN)}
    for pred in cat.predicates:
        if pred.key in touched:
            continue
        fact = facts.get(pred.key)
        if fact is None:
            out[FORGOTTEN if pred.key in forgotten else "unknown"].append(pred.key)
            continue
        i = L.find(ledger, subject, pred.key)
        if i is None:  # evicted (or its TOMBSTONE was dropped after eviction): never asked
            continue
        slot = ledger[i]
        assert slot["o"] == fact.value and slot["v"] == int(fact.active), (subject, slot, fact)
        if not fact.active:
            out["negated"].append(pred.key)
            out["temporal"].append(pred.key)
            continue
        out["superseded" if fact.updates else "current"].append(pred.key)
        if slot["prev"] is not None:
            assert slot["prev"] == fact.history[-1], (subject, slot, fact)
            out["temporal"].append(pred.key)
    return out


def ten_options(rng: random.Random, answer: str, first: list[str], pool: list[str],
                spare: list[str]) -> tuple[list[str], int]:
    """Ten distinct options and the answer's index: the answer, both fixed phrases, ``first``
    (stale values, another subject's), then ``pool`` (the fact's own values) and ``spare`` (other
    values), each of the two in a seeded order; then all ten shuffled."""
    pool, spare = list(pool), list(spare)
    rng.shuffle(pool)
    rng.shuffle(spare)
    options = [answer]
    for value in [prompts.UNKNOWN_ANSWER, prompts.NEGATED_ANSWER, *first, *pool, *spare]:
        if len(options) == N_OPTIONS:
            break
        if value not in options:
            options.append(value)
    assert len(options) == N_OPTIONS, options
    rng.shuffle(options)
    return options, options.index(answer)


def _options(rng: random.Random, cat: Catalogue, pred: Predicate, answer: str,
             stale: list[str]) -> tuple[list[str], int]:
    """Ten distinct options (gold, both fixed phrases, stale values, pool values), shuffled."""
    others = [v for p in cat.predicates if p.key != pred.key for v in p.values]
    return ten_options(rng, answer, stale, list(pred.values), list(dict.fromkeys(others)))


def ask_questions(rng: random.Random, cfg: GeneratorConfig, cat: Catalogue, facts: dict[str, Fact],
                  ledger: L.Ledger, subject: str, touched: list[str],
                  forgotten: dict[str, list[str]] | None = None,
                  probe: tuple[str, ...] = ()) -> tuple[list[dict[str, Any]], L.Ledger]:
    """Draw the session's questions; return them and the ledger with their ``uses`` recorded.

    ``forgotten``: forgotten, not restated predicates -> their values (``forgotten`` questions);
    ``probe``: predicates forgotten at this session, asked about first (:mod:`clerk.generator.forgets`).
    With neither, the draws are exactly those of a timeline without forgets.
    """
    forgotten = forgotten or {}
    eligible = _eligible(cat, facts, ledger, subject, touched, forgotten)
    count = rng.randint(*cfg.questions)
    asked: list[str] = []
    questions = []
    for n in range(count):
        if n < len(probe):
            assert probe[n] in eligible[FORGOTTEN], (subject, probe[n])
            qtype, key = FORGOTTEN, probe[n]
        else:
            types = [t for t in (*QUESTION_TYPES, FORGOTTEN) if any(k not in asked for k in eligible[t])]
            if not types:
                break
            qtype = rng.choice(types)
            key = rng.choice([k for k in eligible[qtype] if k not in asked])
        asked.append(key)
        pred, fact = cat.predicate(key), facts.get(key)
        temporal = qtype == "temporal"
        answer = reference_answer(ledger, subject, key, temporal)
        history = list(reversed(fact.history)) if fact else []  # most recent first
        if qtype == "unknown":
            truth, stale = prompts.UNKNOWN_ANSWER, []
        elif qtype == FORGOTTEN:  # the forgotten values, most recent first, are distractors
            truth, stale = prompts.UNKNOWN_ANSWER, list(reversed(forgotten[key]))
        elif qtype in ("current", "superseded"):
            truth, stale = fact.value, history
        elif qtype == "negated":
            truth, stale = prompts.NEGATED_ANSWER, [fact.value, *history]
        elif fact.active:  # temporal, superseded fact: the value before the last update
            truth, stale = fact.history[-1], [fact.value, *history[1:]]
        else:  # temporal, tombstoned fact: its last true value
            truth, stale = fact.value, history
        assert answer == truth, (subject, key, qtype, answer, truth)
        template = rng.choice(pred.temporal if temporal else pred.current)
        options, correct = _options(rng, cat, pred, answer, stale)
        questions.append({"question": template.format(name=subject), "type": qtype, "pred": key,
                          "answer": answer, "options": options, "correct": correct})
        ledger = L.record_use(ledger, subject, key)  # the oracle sees this use from now on
    return questions, ledger
