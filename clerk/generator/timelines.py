"""Persona timelines: one persona's sessions, with transcript, events, questions and gold (SPEC §2).

**One session**, in transcript order: a greeting that names the persona (this is how the
transcript says who "I" is, i.e. the subject ``s`` of every slot), then the session's events and
1-2 small-talk lines in a shuffled order, each user line followed by an assistant
acknowledgement. Session 0 states ``n_init`` facts and asks nothing; later sessions have 1-2 ADDs
of never-stated predicates (0 once the catalogue is exhausted), 0-2 UPDATEs and 0-1 TOMBSTONEs
of facts active before the session (distinct predicates, so a session touches a predicate at most
once), and 1-3 questions (:mod:`clerk.generator.questions`).

**Decisions** (SPEC leaves these open):

* A fact is updated to a value different from its current one; it may return to an older value.
* Persona names are drawn without replacement from the split's list; past the end of the list a
  second round appends ``-2`` (then ``-3`` ...) to keep names unique.
* With ``forgets`` > 0, forget requests free a fact before some sessions and the session dicts
  gain a ``forget`` key (:mod:`clerk.generator.forgets`); with 0 nothing changes.
* With ``compose`` > 0 the user lines are rebuilt from parts (openers, two facts in one line,
  corrections, facts about someone else: :mod:`clerk.generator.compose`) on a stream of their own;
  the events, gold programs and questions stay those of the plain run; with 0 nothing changes.

Determinism: one ``random.Random`` per run seeded with the string ``clerk.generator:{seed}:{split}``
(string seeds are hashed with SHA-512 by ``random``, so ``PYTHONHASHSEED`` does not matter); no
set iteration and no clock.

    python -c "from clerk.generator.timelines import generate; print(generate(137, 'test', personas=1)[0]['name'])"
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk.errors import UserError
from clerk.generator.catalogue import Catalogue, load_catalogue
from clerk.generator.compose import Composer
from clerk.generator.config import NAME_LIST, GeneratorConfig
from clerk.generator.forgets import draw_forget, forget_sessions, record_values
from clerk.generator.gold import gold_program
from clerk.generator.questions import ask_questions
from clerk.generator.rewrites import with_rewrites
from clerk.generator.truth import Fact, apply_truth
from clerk.scrub import free_predicate

#: Kinds of the events a session states (its gold program adds EVICT ops).
EVENT_KINDS = ("ADD", "UPDATE", "TOMBSTONE")


def persona_names(rng: random.Random, names: tuple[str, ...], count: int) -> list[str]:
    """``count`` unique names drawn without replacement; later rounds get a ``-2``, ``-3`` suffix.

    >>> persona_names(random.Random(0), ("Ari", "Bea"), 3)
    ['Bea', 'Ari', 'Bea-2']
    """
    order = rng.sample(list(names), len(names))
    return [order[k % len(order)] + ("" if k < len(order) else f"-{k // len(order) + 1}") for k in range(count)]


def _pick(rng: random.Random, pool: list[str], low_high: tuple[int, int]) -> list[str]:
    """Draw a count uniformly from ``low_high`` (always, to keep RNG use steady), then that many items."""
    count = rng.randint(*low_high)
    return rng.sample(pool, min(count, len(pool)))


def _plan_events(rng: random.Random, cfg: GeneratorConfig, cat: Catalogue, facts: dict[str, Fact],
                 index: int, exclude: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The session's events (unordered): kind, pred, value and the old value for UPDATE text.

    ``exclude``: predicates the session must not state (one forgotten at this session).
    """
    unstated = [p.key for p in cat.predicates if p.key not in facts and p.key not in exclude]
    if index == 0:
        adds, updates, tombstones = rng.sample(unstated, min(cfg.n_init, len(unstated))), [], []
    else:
        adds = _pick(rng, unstated, cfg.adds)
        active = [key for key, fact in facts.items() if fact.active]
        updates = _pick(rng, active, cfg.updates)
        tombstones = _pick(rng, [key for key in active if key not in updates], cfg.tombstones)
    events = []
    for key in adds:
        events.append({"kind": "ADD", "pred": key, "value": rng.choice(cat.predicate(key).values), "old": None})
    for key in updates:
        old = facts[key].value
        new = rng.choice([v for v in cat.predicate(key).values if v != old])
        events.append({"kind": "UPDATE", "pred": key, "value": new, "old": old})
    for key in tombstones:
        events.append({"kind": "TOMBSTONE", "pred": key, "value": facts[key].value, "old": None})
    for event in events:
        pred = cat.predicate(event["pred"])
        lines = {"ADD": pred.add, "UPDATE": pred.update, "TOMBSTONE": pred.tombstone}[event["kind"]]
        event["text"] = rng.choice(lines).format(value=event["value"], old=event["old"])
    return events


def _persona(rng: random.Random, cfg: GeneratorConfig, cat: Catalogue, name: str,
             composer: Composer) -> dict[str, Any]:
    facts: dict[str, Fact] = {}  # insertion order = order first stated
    ledger = L.empty_ledger(cfg.budget)
    sessions = []
    # Forget requests (clerk.generator.forgets; none and no RNG use when cfg.forgets == 0).
    forget_at = forget_sessions(rng, cfg.sessions, cfg.forgets)
    held: dict[str, list[str]] = {}  # pred -> every value it ever held, first-stated order
    forgotten: dict[str, list[str]] = {}  # forgotten preds not stated since -> their values
    for index in range(cfg.sessions):
        # 0. an out-of-band forget, applied before the session: the fact and its slot are gone.
        requests = []
        if index in forget_at:
            request = draw_forget(rng, list(facts), held)
            if request is not None:
                requests.append(request)
                del facts[request["pred"]]
                forgotten[request["pred"]] = request["values"]
                ledger = free_predicate(ledger, request["pred"], subject=name)
        probe = tuple(request["pred"] for request in requests)
        planned = _plan_events(rng, cfg, cat, facts, index, exclude=probe)
        touched = [event["pred"] for event in planned]
        questions, before = ([], ledger) if index == 0 else ask_questions(
            rng, cfg, cat, facts, ledger, name, touched, forgotten, probe)
        # 1. transcript: greeting first, then events and small talk shuffled together.
        chatter = rng.sample(list(cat.chatter), min(rng.randint(*cfg.chatter), len(cat.chatter)))
        items: list[Any] = [*planned, *chatter]
        rng.shuffle(items)
        turns = [{"role": "user", "content": rng.choice(cat.greetings).format(name=name)},
                 {"role": "assistant", "content": rng.choice(cat.welcomes)}]
        # One acknowledgement drawn per planned item, as without composition; a composed session
        # (fewer or more lines) takes its extra ones from the composer's own stream.
        acks = [rng.choice(cat.acknowledgements) for _ in items]
        lines = composer.session(items, cat)  # the plain lines unless cfg.compose > 0
        acks += composer.extra_acknowledgements(len(lines) - len(acks), cat)
        for line, ack in zip(lines, acks):
            turns.append({"role": "user", "content": line.text})
            turns.append({"role": "assistant", "content": ack})
        events = [{"kind": e["kind"], "pred": e["pred"], "value": e["value"], "text": line.text}
                  for line in lines for e in line.events]
        # 2. gold program in transcript order, checked against a strict reduce of the whole program.
        program = gold_program(before, events, name, index)
        after, _ = L.reduce(before, program, now=index, strict=True)
        apply_truth(facts, events)
        record_values(held, events)
        for event in events:  # stated again: no longer forgotten
            forgotten.pop(event["pred"], None)
        session = {"index": index, "turns": turns, "events": events, "questions": questions,
                   "gold_ops": program, "ledger_before": before, "ledger_after": after}
        if cfg.forgets:
            session["forget"] = requests
        sessions.append(session)
        ledger = after
    return {"name": name, "split": cfg.split, "seed": cfg.seed, "budget": cfg.budget, "sessions": sessions}


def generate_from_config(cfg: GeneratorConfig, catalogue: Catalogue | str | Path | None = None) -> list[dict[str, Any]]:
    """Generate the timelines of ``cfg`` (see :func:`generate`)."""
    from tqdm import tqdm

    if cfg.world != "closed":
        raise UserError(f"world {cfg.world!r}: the open world is generated by clerk.generator.open_world.generate_open")
    if cfg.rewrites:
        if catalogue is not None:
            raise UserError("rewrites extend the built-in catalogue; with your own phrasings file write the "
                            "extra statements into it and leave rewrites empty")
        catalogue = with_rewrites(load_catalogue(None, cfg.split), cfg.rewrites)
    if not isinstance(catalogue, Catalogue):
        catalogue = load_catalogue(catalogue, cfg.split)
    if cfg.n_init > len(catalogue.predicates):
        raise UserError(
            f"n_init must be <= the number of predicates ({len(catalogue.predicates)}), got {cfg.n_init}"
        )
    rng = random.Random(cfg.rng_seed)
    # The name order does not depend on the count, so slice personas never rename regular ones.
    names = persona_names(rng, catalogue.names[NAME_LIST[cfg.split]], cfg.personas + cfg.evict_personas)
    composer = Composer(cfg.compose, cfg.rng_seed)
    out = [_persona(rng, cfg, catalogue, name, composer)
           for name in tqdm(names[:cfg.personas], desc=f"generate {cfg.split}", unit="persona", disable=None,
                            leave=False)]
    if cfg.evict_personas:  # eviction-pressure slice, after the regular personas
        pressure = replace(cfg, adds=cfg.evict_adds, questions=(0, 0), evict_personas=0)
        for name in names[cfg.personas:]:
            out.append({**_persona(rng, pressure, catalogue, name, composer), "slice": "evict"})
    return out


def generate(seed: int, split: str, personas: int | None = None, sessions: int = 8, budget: int = 12,
             n_init: int = 4, catalogue: Catalogue | str | Path | None = None,
             forgets: int = 0, evict_personas: int = 0) -> list[dict[str, Any]]:
    """Persona timelines in the SPEC "Data formats" schema.

    Args:
        seed: base seed (recorded in every timeline).
        split: ``train`` (train names, catalogue.yaml), ``test`` (test names, catalogue.yaml) or
            ``test_ood`` (test names, ood.yaml) or ``val_ood`` (test names, val.yaml: the
            validation wording, disjoint from both).
        personas: number of personas; None = 100 for train, 40 for the test splits.
        sessions: sessions per persona (>= 2).
        budget: ledger slots B.
        n_init: facts stated in session 0.
        catalogue: a :class:`Catalogue`, a phrasings file path, or None for the split's built-in.
        forgets: forget requests per persona (:mod:`clerk.generator.forgets`); 0 = none.
        evict_personas: eviction-pressure slice personas appended (GeneratorConfig); 0 = none.

    Returns:
        One dict per persona; the same arguments always give equal output.

    Raises:
        UserError: a bad argument or phrasings file.
    """
    cfg = GeneratorConfig(seed=seed, split=split, personas=personas, sessions=sessions, budget=budget,
                          n_init=n_init, forgets=forgets, evict_personas=evict_personas)
    return generate_from_config(cfg, catalogue)
