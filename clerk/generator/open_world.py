"""The open world: two-person dated conversations over a compositional key space (SPEC §2.9).

``clerk generate --world open`` writes **format-2 timelines** (SPEC "Data formats"): one line per
conversation between two people, both subjects of one open ledger
(:class:`clerk.form.LedgerForm` with the two names and no key list), as a LoCoMo conversation is.

**One session**: a date line (``role`` ``date``, LoCoMo's ``1:56 pm on 8 May, 2023`` form; the
session also keeps it as ``date`` in ISO), a greeting by each speaker, then the session's fact
lines, small talk and one line about somebody else in a shuffled order, each answered by a
reaction of the other speaker. Turns carry the speaker's name as ``role``, as LoCoMo sessions
replayed by ``clerk locomo`` do.

**Facts**: each speaker states its own facts over keys composed by :mod:`clerk.generator.keyspace`.
Session 0 states ``n_init`` facts per speaker; each later session, per speaker, ``adds`` new
keys, ``updates`` and ``tombstones`` of its active facts (the closed generator's ranges). A
*dated* key is an event that happened on a day: its line says when, relative to the session's
date ("yesterday", "three days ago", "on 3 May", "last month", "in March", "last year"), and its
gold op carries the absolute date (``w``); a new event of the same key is an UPDATE with the new
date; a dated fact is never retracted. A line about somebody else (a sister, a friend) has no op.
On the held-out splits (``val_ood``, ``test_ood``) a new key is drawn from the split's held-out
heads with probability 1/2, so about half of their keys never occur in training.

**Gold**: :func:`clerk.generator.gold.gold_program` under the conversation's form (EVICT of the
least salient slot before an ADD that meets a full ledger, SPEC §2.5), checked by a strict reduce.
Questions: :mod:`clerk.generator.open_questions`.

Determinism: one ``random.Random`` seeded with ``clerk.generator.open:{seed}:{split}``; no set
iteration, no clock.

    python -c "from clerk.generator.config import GeneratorConfig as G; from clerk.generator.open_world import generate_open; print(generate_open(G(137, 'test', personas=1, world='open'))[0]['name'])"
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from dataclasses import replace
from typing import Any

from clerk import ledger as L
from clerk.form import MAX_VALUE_CHARS, LedgerForm
from clerk.generator.catalogue import load_catalogue
from clerk.generator.config import NAME_LIST, GeneratorConfig
from clerk.generator.gold import gold_program
from clerk.generator.keyspace import KeySpace, OpenKey, load_keyspace
from clerk.generator.open_questions import ask_open_questions
from clerk.generator.timelines import persona_names
from clerk.generator.truth import Fact, apply_truth

#: The role of a session's date line (as ``clerk.locomo.evaluation.DATE_ROLE``).
DATE_ROLE = "date"
#: First day a conversation may start on, and the span of start days after it.
FIRST_DAY, START_SPAN_DAYS = dt.date(2021, 1, 4), 3 * 365
#: Days between two sessions of a conversation.
GAP_DAYS = (1, 21)
#: Chance that a session has a line about somebody who is not a subject (no op).
ABOUT_OTHERS = 0.5


def time_phrase(rng: random.Random, today: dt.date) -> tuple[str, str]:
    """A phrase for when a dated event happened, and its absolute date (ISO at its precision).

    >>> time_phrase(random.Random(3), dt.date(2023, 5, 8))
    ('yesterday', '2023-05-07')
    """
    kind = rng.choice(("today", "yesterday", "days", "on", "last month", "in month", "last year"))
    if kind == "today":
        return "today", today.isoformat()
    if kind == "yesterday":
        return "yesterday", (today - dt.timedelta(days=1)).isoformat()
    if kind == "days":
        n = rng.randint(2, 5)
        return f"{('two', 'three', 'four', 'five')[n - 2]} days ago", (today - dt.timedelta(days=n)).isoformat()
    if kind == "on":
        day = today - dt.timedelta(days=rng.randint(6, 20))
        return f"on {day.day} {calendar.month_name[day.month]}", day.isoformat()
    if kind == "last month":
        first = today.replace(day=1) - dt.timedelta(days=1)
        return "last month", f"{first.year:04d}-{first.month:02d}"
    if kind == "in month":  # the most recent such month, 2 to 6 months back
        months = today.year * 12 + today.month - 1 - rng.randint(2, 6)
        year, month = divmod(months, 12)
        return f"in {calendar.month_name[month + 1]}", f"{year:04d}-{month + 1:02d}"
    return "last year", f"{today.year - 1:04d}"


def date_line(rng: random.Random, day: dt.date) -> str:
    """A session's date as LoCoMo writes it (``1:56 pm on 8 May, 2023``).

    >>> date_line(random.Random(0), dt.date(2023, 5, 8))
    '9:24 pm on 8 May, 2023'
    """
    hour, minute = rng.randint(8, 21), rng.randint(0, 59)
    half = "am" if hour < 12 else "pm"
    return f"{(hour - 1) % 12 + 1}:{minute:02d} {half} on {day.day} {calendar.month_name[day.month]}, {day.year}"


def _draw_key(rng: random.Random, pool: tuple[list[OpenKey], list[OpenKey]], taken: dict[str, Fact]) -> OpenKey | None:
    """A key the speaker never stated: from the split's held-out heads with probability 1/2."""
    common, held_out = ([k for k in keys if k.key not in taken] for keys in pool)
    if held_out and (not common or rng.random() < 0.5):
        return rng.choice(held_out)
    return rng.choice(common) if common else None


def _speaker_events(rng: random.Random, cfg: GeneratorConfig, pool: tuple[list[OpenKey], list[OpenKey]],
                    space: KeySpace, facts: dict[str, Fact], subject: str, index: int,
                    today: dt.date) -> list[dict[str, Any]]:
    """One speaker's events of a session: ADDs of new keys, UPDATEs and TOMBSTONEs of its facts."""
    n_adds = cfg.n_init if index == 0 else rng.randint(*cfg.adds)
    new: list[OpenKey] = []
    for _ in range(n_adds):
        key = _draw_key(rng, pool, {**facts, **{k.key: None for k in new}})
        if key is not None:
            new.append(key)
    active = [k for k, fact in facts.items() if fact.active] if index else []
    updates = rng.sample(active, min(rng.randint(*cfg.updates), len(active))) if index else []
    undated = [k for k in active if k not in updates and not space.key(k).dated]
    tombstones = rng.sample(undated, min(rng.randint(*cfg.tombstones), len(undated))) if index else []
    events = []
    for kind, keys in (("ADD", [k.key for k in new]), ("UPDATE", updates), ("TOMBSTONE", tombstones)):
        for name in keys:
            spec, old = space.key(name), facts[name].value if name in facts else None
            value = old if kind == "TOMBSTONE" else rng.choice([v for v in spec.values if v != old])
            fields = {"value": value, "old": old, "noun": spec.noun}
            event = {"kind": kind, "subject": subject, "pred": name, "value": value}
            if spec.dated:
                phrase, event["when"] = time_phrase(rng, today)
                fields.update(time=phrase, time_cap=phrase[:1].upper() + phrase[1:])
            template = rng.choice({"ADD": spec.add, "UPDATE": spec.update, "TOMBSTONE": spec.tombstone}[kind])
            text = template.format(**fields)
            event["text"] = text[:1].upper() + text[1:]
            events.append(event)
    return events


def _turns(rng: random.Random, space: KeySpace, speakers: tuple[str, str], day: dt.date,
           events: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The session's turns and its events in transcript order (see the module docstring)."""
    items: list[tuple[str, str, dict[str, Any] | None]] = [(e["subject"], e["text"], e) for e in events]
    for _ in range(rng.randint(1, 2)):
        items.append((rng.choice(speakers), rng.choice(space.chatter), None))
    if rng.random() < ABOUT_OTHERS:
        spec = rng.choice(space.keys)
        text = rng.choice(space.about_others).format(noun=spec.noun, value=rng.choice(spec.values))
        items.append((rng.choice(speakers), text[:1].upper() + text[1:], None))
    rng.shuffle(items)
    first = rng.randrange(2)
    turns = [{"role": DATE_ROLE, "content": date_line(rng, day)}]
    for k in (first, 1 - first):
        turns.append({"role": speakers[k], "content": rng.choice(space.greetings).format(other=speakers[1 - k])})
    for speaker, text, _ in items:
        other = speakers[1] if speaker == speakers[0] else speakers[0]
        turns += [{"role": speaker, "content": text}, {"role": other, "content": rng.choice(space.reactions)}]
    ordered = [{**e, "text": text} for _, text, e in items if e is not None]
    return turns, [{k: e[k] for k in ("kind", "subject", "pred", "value", "when", "text") if k in e} for e in ordered]


def _conversation(rng: random.Random, cfg: GeneratorConfig, space: KeySpace, speakers: tuple[str, str]) -> dict[str, Any]:
    form = LedgerForm(speakers, None, MAX_VALUE_CHARS)
    pool = space.for_split(cfg.split)
    facts: dict[str, dict[str, Fact]] = {s: {} for s in speakers}
    whens: dict[tuple[str, str], list[str]] = {}
    ledger = L.empty_ledger(cfg.budget)
    day = FIRST_DAY + dt.timedelta(days=rng.randrange(START_SPAN_DAYS))
    sessions = []
    for index in range(cfg.sessions):
        if index:
            day += dt.timedelta(days=rng.randint(*GAP_DAYS))
        planned = [e for s in speakers for e in _speaker_events(rng, cfg, pool, space, facts[s], s, index, day)]
        touched = {(e["subject"], e["pred"]) for e in planned}
        questions, before = ([], ledger) if index == 0 else ask_open_questions(
            rng, rng.randint(*cfg.questions), space, facts, whens, ledger, touched)
        turns, events = _turns(rng, space, speakers, day, planned)
        program = gold_program(before, events, speakers[0], index, form=form)
        after, _ = L.reduce(before, program, now=index, strict=True, form=form)
        for subject in speakers:
            apply_truth(facts[subject], [e for e in events if e["subject"] == subject])
        for event in events:
            if "when" in event:
                whens.setdefault((event["subject"], event["pred"]), []).append(event["when"])
        sessions.append({"index": index, "date": day.isoformat(), "turns": turns, "events": events,
                         "questions": questions, "gold_ops": program, "ledger_before": before, "ledger_after": after})
        ledger = after
    return {"format": 2, "form": form.to_json(), "name": "+".join(speakers), "split": cfg.split, "seed": cfg.seed,
            "budget": cfg.budget, "sessions": sessions}


def generate_open(cfg: GeneratorConfig, space: KeySpace | None = None) -> list[dict[str, Any]]:
    """The open world's conversations for ``cfg`` (``cfg.personas`` conversations, then
    ``cfg.evict_personas`` eviction-pressure ones with ``evict_adds`` ADDs per speaker and no
    questions, marked ``"slice": "evict"``).

    Raises:
        UserError: options the open world does not take (``forgets``, ``compose``), a bad key space.
    """
    from tqdm import tqdm

    from clerk.errors import UserError

    for name in ("forgets", "compose"):
        if getattr(cfg, name):
            raise UserError(f"{name} is not available with world 'open' (the closed benchmark only), got {getattr(cfg, name)!r}")
    space = space or load_keyspace()
    rng = random.Random(f"clerk.generator.open:{cfg.seed}:{cfg.split}")
    total = cfg.personas + cfg.evict_personas
    names = persona_names(rng, load_catalogue(None, cfg.split).names[NAME_LIST[cfg.split]], 2 * total)
    pairs = [(names[2 * k], names[2 * k + 1]) for k in range(total)]
    out = [_conversation(rng, cfg, space, pair)
           for pair in tqdm(pairs[:cfg.personas], desc=f"generate open {cfg.split}", unit="conversation",
                            disable=None, leave=False)]
    pressure = replace(cfg, adds=cfg.evict_adds, questions=(0, 0), evict_personas=0)
    out += [{**_conversation(rng, pressure, space, pair), "slice": "evict"} for pair in pairs[cfg.personas:]]
    return out
