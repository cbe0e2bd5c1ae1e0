"""Questions of the open world: per subject, over composed keys, with ``when`` questions (SPEC §2.9).

As in the closed generator (:mod:`clerk.generator.questions`), questions are asked against the
ledger *before* the session is consolidated, never about a (subject, key) the session touches,
and each one counts a use of the slot it reads. What the open world adds:

* every question names its ``subject`` (one of the conversation's two speakers);
* ``unknown`` asks about a key the *other* speaker stated and this one never did, so answering
  needs the subject, not only the key;
* ``when`` asks for the date of a dated fact (answer: its ``w`` as the reader's view prints it,
  ``2023-05-07``, ``2023-05`` or ``2023``; distractors: earlier dates of the fact and nearby dates
  at the same precision);
* the options of a value question include the other speaker's value of the same key.

    python -m pytest tests/test_open_world.py -q -k question
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from clerk import ledger as L
from clerk.generator.catalogue import N_OPTIONS
from clerk.generator.keyspace import KeySpace, OpenKey
from clerk.generator.questions import reference_answer, ten_options
from clerk.generator.truth import Fact

#: Question types of the open world, in the order a session draws a type among those possible.
OPEN_QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal", "when")


def nearby_dates(rng: random.Random, when: str, count: int) -> list[str]:
    """``count`` (at most 16) distinct dates near ``when`` at its precision (day, month or year),
    never ``when``.

    >>> nearby_dates(random.Random(0), "2023", 3)
    ['2030', '2018', '2031']
    >>> all(len(d) == 7 for d in nearby_dates(random.Random(1), "2023-05", 4))
    True
    """
    assert count <= 16, count
    out: list[str] = []
    while len(out) < count:
        shift = rng.choice([-1, 1]) * rng.randint(1, {4: 8, 7: 12, 10: 40}[len(when)])
        if len(when) == 4:
            text = str(int(when) + shift)
        elif len(when) == 7:
            months = int(when[:4]) * 12 + int(when[5:]) - 1 + shift
            text = f"{months // 12:04d}-{months % 12 + 1:02d}"
        else:
            text = (dt.date.fromisoformat(when) + dt.timedelta(days=shift)).isoformat()
        if text != when and text not in out:
            out.append(text)
    return out


def _eligible(facts: dict[str, dict[str, Fact]], whens: dict[tuple[str, str], list[str]], space: KeySpace,
              ledger: L.Ledger, touched: set[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """(subject, key) pairs each question type may ask about, in a fixed order."""
    out: dict[str, list[tuple[str, str]]] = {t: [] for t in OPEN_QUESTION_TYPES}
    subjects = list(facts)
    for subject in subjects:
        others = [k for s in subjects if s != subject for k in facts[s]]
        for key in dict.fromkeys(others):
            if key not in facts[subject] and (subject, key) not in touched:
                out["unknown"].append((subject, key))
        for key, fact in facts[subject].items():
            if (subject, key) in touched:
                continue
            i = L.find(ledger, subject, key)
            if i is None:  # evicted while true: never asked
                continue
            slot = ledger[i]
            assert slot["o"] == fact.value and slot["v"] == int(fact.active), (subject, slot, fact)
            if not fact.active:
                out["negated"].append((subject, key))
                out["temporal"].append((subject, key))
                continue
            out["superseded" if fact.updates else "current"].append((subject, key))
            if slot["prev"] is not None:
                out["temporal"].append((subject, key))
            if space.key(key).dated:
                assert slot.get("w") == whens[(subject, key)][-1], (subject, slot)
                out["when"].append((subject, key))
    return out


def ask_open_questions(rng: random.Random, count: int, space: KeySpace, facts: dict[str, dict[str, Fact]],
                       whens: dict[tuple[str, str], list[str]], ledger: L.Ledger,
                       touched: set[tuple[str, str]]) -> tuple[list[dict[str, Any]], L.Ledger]:
    """Draw ``count`` questions (fewer when fewer are possible); return them and the ledger with
    their uses recorded. ``facts``: subject -> key -> the true :class:`Fact`; ``whens``: (subject,
    key) -> every date the dated fact has had, oldest first."""
    eligible = _eligible(facts, whens, space, ledger, touched)
    asked: list[tuple[str, str]] = []
    questions = []
    for _ in range(count):
        types = [t for t in OPEN_QUESTION_TYPES if any(p not in asked for p in eligible[t])]
        if not types:
            break
        qtype = rng.choice(types)
        subject, key = rng.choice([p for p in eligible[qtype] if p not in asked])
        asked.append((subject, key))
        spec: OpenKey = space.key(key)
        fact = facts[subject].get(key)
        others = [facts[s][key].value for s in facts if s != subject and key in facts[s]]
        history = list(reversed(fact.history)) if fact else []
        if qtype == "when":
            answer = ledger[L.find(ledger, subject, key)]["w"]
            stale = list(reversed(whens[(subject, key)][:-1]))
            options, correct = ten_options(rng, answer, stale, nearby_dates(rng, answer, N_OPTIONS - 1), [])
            template = rng.choice(spec.ask_when)
        else:
            answer = reference_answer(ledger, subject, key, temporal=qtype == "temporal")
            if qtype == "unknown":
                stale = others
            elif qtype == "negated":
                stale = [fact.value, *history, *others]
            elif qtype == "temporal":
                stale = [v for v in [fact.value, *history] if v != answer] + others
            else:
                stale = [*history, *others]
            spare = [v for k in space.keys if k.object != spec.object for v in k.values]
            options, correct = ten_options(rng, answer, stale, list(spec.values), list(dict.fromkeys(spare)))
            template = rng.choice(spec.ask_before if qtype == "temporal" else spec.ask)
        questions.append({"question": template.format(name=subject, noun=spec.noun), "type": qtype,
                          "subject": subject, "pred": key, "answer": answer, "options": options,
                          "correct": correct})
        ledger = L.record_use(ledger, subject, key)
    return questions, ledger
