"""Synthetic evolving-session persona generator: timelines with exact gold programs (SPEC §2).

Each persona is a simulated user who, across ``sessions`` dialogue sessions, states facts (ADD),
changes them (UPDATE), retracts them (TOMBSTONE) and is asked multiple-choice questions about
them. Because we write the facts, we know the gold edit program for every session and the gold
ledger after it, so supervision and evaluation are exact.

    clerk generate --seed 137 --split train --out results/data/train_137.jsonl
    clerk generate --seed 137 --split test_ood --personas 5 --sessions 50 --out /tmp/long.jsonl

**Phrasings are data.** ``clerk/phrasing/catalogue.yaml`` (train and test splits) and
``clerk/phrasing/ood.yaml`` (the ``test_ood`` split; no template string in common with the first)
hold the predicates, value pools, phrasings, question templates, small talk and persona names.
The schema is documented at the top of ``catalogue.yaml``; ``--phrasings FILE`` replaces the
built-in file with your own (it may omit ``names``, then the built-in name lists are used).

**One session**, in transcript order: a greeting that names the persona (this is how the
transcript says who "I" is, i.e. the subject ``s`` of every slot), then the session's events and
1-2 small-talk lines in a shuffled order, each user line followed by an assistant
acknowledgement. Session 0 states ``n_init`` facts and asks nothing; later sessions have 1-2 ADDs
of never-stated predicates (0 once the catalogue is exhausted), 0-2 UPDATEs and 0-1 TOMBSTONEs
of facts active before the session (distinct predicates, so a session touches a predicate at most
once), and 1-3 questions. Questions are *not* part of the transcript: they are answered from the
ledger before consolidation and never about a predicate the session's events touch.

**Decisions** (SPEC leaves these open):

* A fact is updated to a value different from its current one; it may return to an older value.
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
* Persona names are drawn without replacement from the split's list; past the end of the list a
  second round appends ``-2`` (then ``-3`` ...) to keep names unique.

Determinism: one ``random.Random`` per run seeded with the string ``clerk.generator:{seed}:{split}``
(string seeds are hashed with SHA-512 by ``random``, so ``PYTHONHASHSEED`` does not matter); no
set iteration and no clock. Files are written with :func:`clerk.ledger.dumps`, one persona a line.
"""

from __future__ import annotations

import json
import random
import string
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk import prompts
from clerk.errors import UserError

SPLITS = ("train", "test", "test_ood")
QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal")
EVENT_KINDS = ("ADD", "UPDATE", "TOMBSTONE")
N_OPTIONS = 10
#: Personas per split when ``--personas`` is not given (SPEC default sizes).
DEFAULT_PERSONAS = {"train": 100, "test": 40, "test_ood": 40}
PHRASING_DIR = Path(__file__).resolve().parent / "phrasing"
BUILTIN_PHRASINGS = {
    "train": PHRASING_DIR / "catalogue.yaml",
    "test": PHRASING_DIR / "catalogue.yaml",
    "test_ood": PHRASING_DIR / "ood.yaml",
}
#: Name list each split draws from (the test_ood split reuses the test names).
NAME_LIST = {"train": "train", "test": "test", "test_ood": "test"}

#: Template lists: key -> (placeholders that must appear, placeholders allowed).
_PREDICATE_TEMPLATES = {
    "add": (("value",), ("value",)),
    "update": (("value",), ("value", "old")),
    "tombstone": ((), ("value",)),
    "current": (("name",), ("name",)),
    "temporal": (("name",), ("name",)),
}
_TOP_TEMPLATES = {
    "greetings": (("name",), ("name",)),
    "welcomes": ((), ()),
    "chatter": ((), ()),
    "acknowledgements": ((), ()),
}


# --------------------------------------------------------------------------- catalogue


@dataclass(frozen=True)
class Predicate:
    """One catalogue predicate: its key, human phrase, value pool and phrasings."""

    key: str
    phrase: str
    values: tuple[str, ...]
    add: tuple[str, ...]
    update: tuple[str, ...]
    tombstone: tuple[str, ...]
    current: tuple[str, ...]
    temporal: tuple[str, ...]


@dataclass(frozen=True)
class Catalogue:
    """A loaded, validated phrasings file (see the schema in ``phrasing/catalogue.yaml``)."""

    predicates: tuple[Predicate, ...]
    greetings: tuple[str, ...]
    welcomes: tuple[str, ...]
    chatter: tuple[str, ...]
    acknowledgements: tuple[str, ...]
    names: dict[str, tuple[str, ...]]
    source: str

    def predicate(self, key: str) -> Predicate:
        """The predicate with ``key``; raises KeyError if absent."""
        for pred in self.predicates:
            if pred.key == key:
                return pred
        raise KeyError(key)

    def templates(self) -> list[str]:
        """Every template string in the file (phrasings, questions, small talk), in file order."""
        out: list[str] = []
        for pred in self.predicates:
            for key in _PREDICATE_TEMPLATES:
                out.extend(getattr(pred, key))
        for key in _TOP_TEMPLATES:
            out.extend(getattr(self, key))
        return out


def load_catalogue(path: str | Path | None = None, split: str = "train") -> Catalogue:
    """Load and validate a phrasings file.

    Args:
        path: a YAML file in the catalogue schema; None = the built-in file for ``split``.
        split: picks the built-in file when ``path`` is None (``test_ood`` -> ``ood.yaml``).

    Returns:
        The validated :class:`Catalogue`. When the file has no ``names``, the built-in
        ``catalogue.yaml`` name lists are used.

    Raises:
        UserError: unreadable file, invalid YAML, a missing key (named in the message), a wrong
            type, a bad placeholder, or train/test name lists that overlap.
    """
    if path is None:
        if split not in SPLITS:
            raise UserError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        path = BUILTIN_PHRASINGS[split]
    path = Path(path)
    data = _read_yaml(path)
    where = f"phrasings file {path}"
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    raw_preds = _require(data, "predicates", where)
    if not isinstance(raw_preds, list) or not raw_preds:
        raise UserError(f"{where}: key 'predicates' must be a non-empty list, got {_brief(raw_preds)}")
    preds = [_parse_predicate(raw, f"{where}: predicates[{n}]") for n, raw in enumerate(raw_preds)]
    keys = [p.key for p in preds]
    dupes = sorted(k for k, c in Counter(keys).items() if c > 1)
    if dupes:
        raise UserError(f"{where}: predicate keys must be unique, repeated: {dupes}")
    top = {key: _templates(data, key, where, *rule) for key, rule in _TOP_TEMPLATES.items()}
    if "names" in data or path.resolve() == BUILTIN_PHRASINGS["train"]:
        names = _parse_names(_require(data, "names", where), where)
    else:  # names are not phrasings: a user or OOD file may leave them to the built-in lists
        names = load_catalogue(BUILTIN_PHRASINGS["train"]).names
    distinct = {v for p in preds for v in p.values}
    if len(distinct) < N_OPTIONS - 2:
        raise UserError(
            f"{where}: key 'values' must hold at least {N_OPTIONS - 2} distinct values over all "
            f"predicates (to build {N_OPTIONS} options), got {len(distinct)}"
        )
    return Catalogue(tuple(preds), names=names, source=str(path), **top)


def _read_yaml(path: Path) -> Any:
    import yaml  # only needed when a catalogue is loaded

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"phrasings file {path}: cannot read it ({err.strerror})") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as err:
        raise UserError(f"phrasings file {path}: not valid YAML ({' '.join(str(err).split())})") from None


def _require(mapping: dict, key: str, where: str) -> Any:
    if key not in mapping:
        raise UserError(f"{where} is missing key {key!r}")
    return mapping[key]


def _brief(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _strings(mapping: dict, key: str, where: str, minimum: int = 1) -> tuple[str, ...]:
    value = _require(mapping, key, where)
    if (
        not isinstance(value, list)
        or len(value) < minimum
        or not all(isinstance(x, str) and x.strip() for x in value)
    ):
        raise UserError(
            f"{where}: key {key!r} must be a list of at least {minimum} non-empty strings, got {_brief(value)}"
        )
    return tuple(value)


def _templates(mapping: dict, key: str, where: str, required: tuple, allowed: tuple) -> tuple[str, ...]:
    out = _strings(mapping, key, where)
    for template in out:
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        except ValueError as err:
            raise UserError(f"{where}: key {key!r} has a malformed template {template!r} ({err})") from None
        bad = [f for f in fields if f not in allowed]
        if bad:
            allowed_text = ", ".join("{" + a + "}" for a in allowed) or "none"
            raise UserError(
                f"{where}: key {key!r} template {template!r} uses placeholder {{{bad[0]}}}; "
                f"allowed: {allowed_text}"
            )
        for name in required:
            if name not in fields:
                raise UserError(f"{where}: key {key!r} template {template!r} must contain {{{name}}}")
    return out


def _parse_predicate(raw: Any, where: str) -> Predicate:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a mapping, got {_brief(raw)}")
    key = _require(raw, "key", where)
    if not isinstance(key, str) or not key.isidentifier() or key != key.lower():
        raise UserError(f"{where}: key 'key' must be a snake_case name, got {_brief(key)}")
    where = f"{where} ({key})"
    phrase = _require(raw, "phrase", where)
    if not isinstance(phrase, str) or not phrase.strip():
        raise UserError(f"{where}: key 'phrase' must be a non-empty string, got {_brief(phrase)}")
    values = _strings(raw, "values", where, minimum=2)
    if len(set(values)) != len(values):
        raise UserError(f"{where}: key 'values' must not repeat a value")
    fixed = [v for v in values if v in (prompts.UNKNOWN_ANSWER, prompts.NEGATED_ANSWER)]
    if fixed:
        raise UserError(f"{where}: key 'values' must not contain the fixed answer {fixed[0]!r}")
    lists = {name: _templates(raw, name, where, *rule) for name, rule in _PREDICATE_TEMPLATES.items()}
    return Predicate(key=key, phrase=phrase, values=values, **lists)


def _parse_names(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: key 'names' must be a mapping with 'train' and 'test', got {_brief(raw)}")
    names = {split: _strings(raw, split, f"{where}: names") for split in ("train", "test")}
    for split, listed in names.items():
        if len(set(listed)) != len(listed):
            raise UserError(f"{where}: names: key {split!r} must not repeat a name")
    overlap = sorted(set(names["train"]) & set(names["test"]))
    if overlap:
        raise UserError(f"{where}: names: train and test must be disjoint, both contain {overlap[:5]}")
    return names


# --------------------------------------------------------------------------- config


@dataclass
class GeneratorConfig:
    """Knobs of one generation run (``clerk generate``). Ranges are inclusive ``(low, high)``.

    Attributes:
        seed: base seed; the run's RNG is seeded from ``(seed, split)``.
        split: train | test | test_ood (names and built-in phrasings depend on it).
        personas: personas to generate; None = ``DEFAULT_PERSONAS[split]``.
        sessions: sessions per persona (>= 2: session 0 only states facts).
        budget: ledger slots B.
        n_init: facts stated in session 0.
        adds / updates / tombstones / questions / chatter: per-session count ranges
            (sessions >= 1; chatter applies to every session).
    """

    seed: int
    split: str
    personas: int | None = None
    sessions: int = 8
    budget: int = 12
    n_init: int = 4
    adds: tuple[int, int] = (1, 2)
    updates: tuple[int, int] = (0, 2)
    tombstones: tuple[int, int] = (0, 1)
    questions: tuple[int, int] = (1, 3)
    chatter: tuple[int, int] = (1, 2)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise UserError(f"split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        if self.personas is None:
            self.personas = DEFAULT_PERSONAS[self.split]
        checks = (("seed", self.seed, None), ("personas", self.personas, 1), ("sessions", self.sessions, 2),
                  ("budget", self.budget, 1), ("n_init", self.n_init, 1))
        for name, value, low in checks:
            if type(value) is not int or (low is not None and value < low):
                expected = "an int" if low is None else f"an int >= {low}"
                raise UserError(f"{name} must be {expected}, got {value!r}")
        for name in ("adds", "updates", "tombstones", "questions", "chatter"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise UserError(f"{name} must be a range 0 <= low <= high, got {(low, high)!r}")

    @property
    def rng_seed(self) -> str:
        """The string the run's ``random.Random`` is seeded with."""
        return f"clerk.generator:{self.seed}:{self.split}"


# --------------------------------------------------------------------------- rule reader


def reference_answer(ledger: L.Ledger, subject: str, pred: str, temporal: bool = False) -> str:
    """The answer a perfect reader gives from ``ledger`` alone (the rule reader).

    Non-temporal: no slot -> unknown phrase; tombstoned -> negated phrase; else the value.
    Temporal ("what did it used to be?"): tombstoned -> its last true value ``o``; updated ->
    ``prev``; never changed or no slot -> unknown phrase (no earlier value is on record).

    >>> led = [{"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": "nurse", "v": 1, "born": 0, "t": 2, "uses": 0}]
    >>> reference_answer(led, "Ari", "job"), reference_answer(led, "Ari", "job", temporal=True)
    ('chef', 'nurse')
    >>> reference_answer(led, "Ari", "pet")
    "I don't know."
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


# --------------------------------------------------------------------------- gold program


def gold_program(ledger: L.Ledger, events: list[dict[str, Any]], subject: str, now: int) -> L.Program:
    """The gold edit program for a session's events, in transcript order.

    An ADD that meets a full ledger is preceded by EVICT of :func:`clerk.ledger.least_salient` of
    the working ledger (after the session's earlier ops); an UPDATE of a fact with no slot (it was
    evicted) becomes an ADD under the same rule; a TOMBSTONE of a fact with no slot is dropped.

    Args:
        ledger: the ledger before the session (``ledger_before``); not mutated.
        events: ``{"kind","pred","value"}`` dicts in transcript order.
        subject: the persona name (``s`` of every op).
        now: the session index.

    Returns:
        A program that applies cleanly to ``ledger`` in strict mode.
    """
    work, program = ledger, []
    for event in events:
        kind, pred = event["kind"], event["pred"]
        i = L.find(work, subject, pred)
        if kind == "TOMBSTONE":
            ops = [] if i is None else [{"op": "TOMBSTONE", "i": i}]
        elif kind == "UPDATE" and i is not None:
            ops = [{"op": "UPDATE", "i": i, "s": subject, "p": pred, "o": event["value"]}]
        else:
            assert i is None, f"ADD of {pred!r} that already has slot {i}"
            ops = [] if any(L.is_free(slot) for slot in work) else [{"op": "EVICT", "i": L.least_salient(work)}]
            ops.append({"op": "ADD", "s": subject, "p": pred, "o": event["value"]})
        for op in ops:
            work, _ = L.reduce(work, [op], now=now)
        program.extend(ops)
    return program


# --------------------------------------------------------------------------- generation


@dataclass
class _Fact:
    """The persona's true state for one predicate (tracked apart from the ledger)."""

    value: str
    history: list[str]  # earlier values, oldest first
    active: bool = True
    updates: int = 0


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


def _plan_events(rng: random.Random, cfg: GeneratorConfig, cat: Catalogue, facts: dict[str, _Fact],
                 index: int) -> list[dict[str, Any]]:
    """The session's events (unordered): kind, pred, value and the old value for UPDATE text."""
    unstated = [p.key for p in cat.predicates if p.key not in facts]
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


def _eligible(cat: Catalogue, facts: dict[str, _Fact], ledger: L.Ledger, subject: str,
              touched: list[str]) -> dict[str, list[str]]:
    """Predicates each question type may ask about, in catalogue order (SPEC §2 table)."""
    out: dict[str, list[str]] = {qtype: [] for qtype in QUESTION_TYPES}
    for pred in cat.predicates:
        if pred.key in touched:
            continue
        fact = facts.get(pred.key)
        if fact is None:
            out["unknown"].append(pred.key)
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


def _options(rng: random.Random, cat: Catalogue, pred: Predicate, answer: str,
             stale: list[str]) -> tuple[list[str], int]:
    """Ten distinct options (gold, both fixed phrases, stale values, pool values), shuffled."""
    options = [answer]
    others = [v for p in cat.predicates if p.key != pred.key for v in p.values]
    pool, spare = list(pred.values), list(dict.fromkeys(others))
    rng.shuffle(pool)
    rng.shuffle(spare)
    for value in [prompts.UNKNOWN_ANSWER, prompts.NEGATED_ANSWER, *stale, *pool, *spare]:
        if len(options) == N_OPTIONS:
            break
        if value not in options:
            options.append(value)
    assert len(options) == N_OPTIONS, options
    rng.shuffle(options)
    return options, options.index(answer)


def _ask(rng: random.Random, cfg: GeneratorConfig, cat: Catalogue, facts: dict[str, _Fact],
         ledger: L.Ledger, subject: str, touched: list[str]) -> tuple[list[dict[str, Any]], L.Ledger]:
    """Draw the session's questions; return them and the ledger with their ``uses`` recorded."""
    eligible = _eligible(cat, facts, ledger, subject, touched)
    count = rng.randint(*cfg.questions)
    asked: list[str] = []
    questions = []
    for _ in range(count):
        types = [t for t in QUESTION_TYPES if any(k not in asked for k in eligible[t])]
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


def _apply_truth(facts: dict[str, _Fact], events: list[dict[str, Any]]) -> None:
    for event in events:
        kind, key = event["kind"], event["pred"]
        if kind == "ADD":
            facts[key] = _Fact(value=event["value"], history=[])
        elif kind == "UPDATE":
            fact = facts[key]
            fact.history.append(fact.value)
            fact.value, fact.updates = event["value"], fact.updates + 1
        else:
            facts[key].active = False


def _persona(rng: random.Random, cfg: GeneratorConfig, cat: Catalogue, name: str) -> dict[str, Any]:
    facts: dict[str, _Fact] = {}  # insertion order = order first stated
    ledger = L.empty_ledger(cfg.budget)
    sessions = []
    for index in range(cfg.sessions):
        planned = _plan_events(rng, cfg, cat, facts, index)
        touched = [event["pred"] for event in planned]
        questions, before = ([], ledger) if index == 0 else _ask(rng, cfg, cat, facts, ledger, name, touched)
        # 1. transcript: greeting first, then events and small talk shuffled together.
        chatter = rng.sample(list(cat.chatter), min(rng.randint(*cfg.chatter), len(cat.chatter)))
        items: list[Any] = [*planned, *chatter]
        rng.shuffle(items)
        turns = [{"role": "user", "content": rng.choice(cat.greetings).format(name=name)},
                 {"role": "assistant", "content": rng.choice(cat.welcomes)}]
        for item in items:
            turns.append({"role": "user", "content": item["text"] if isinstance(item, dict) else item})
            turns.append({"role": "assistant", "content": rng.choice(cat.acknowledgements)})
        events = [{"kind": e["kind"], "pred": e["pred"], "value": e["value"], "text": e["text"]}
                  for e in items if isinstance(e, dict)]
        # 2. gold program in transcript order, checked against a strict reduce of the whole program.
        program = gold_program(before, events, name, index)
        after, _ = L.reduce(before, program, now=index, strict=True)
        _apply_truth(facts, events)
        sessions.append({"index": index, "turns": turns, "events": events, "questions": questions,
                         "gold_ops": program, "ledger_before": before, "ledger_after": after})
        ledger = after
    return {"name": name, "split": cfg.split, "seed": cfg.seed, "budget": cfg.budget, "sessions": sessions}


def generate_from_config(cfg: GeneratorConfig, catalogue: Catalogue | str | Path | None = None) -> list[dict[str, Any]]:
    """Generate the timelines of ``cfg`` (see :func:`generate`)."""
    from tqdm import tqdm

    if not isinstance(catalogue, Catalogue):
        catalogue = load_catalogue(catalogue, cfg.split)
    if cfg.n_init > len(catalogue.predicates):
        raise UserError(
            f"n_init must be <= the number of predicates ({len(catalogue.predicates)}), got {cfg.n_init}"
        )
    rng = random.Random(cfg.rng_seed)
    names = persona_names(rng, catalogue.names[NAME_LIST[cfg.split]], cfg.personas)
    return [_persona(rng, cfg, catalogue, name)
            for name in tqdm(names, desc=f"generate {cfg.split}", unit="persona", disable=None, leave=False)]


def generate(seed: int, split: str, personas: int | None = None, sessions: int = 8, budget: int = 12,
             n_init: int = 4, catalogue: Catalogue | str | Path | None = None) -> list[dict[str, Any]]:
    """Persona timelines in the SPEC "Data formats" schema.

    Args:
        seed: base seed (recorded in every timeline).
        split: ``train`` (train names, catalogue.yaml), ``test`` (test names, catalogue.yaml) or
            ``test_ood`` (test names, ood.yaml).
        personas: number of personas; None = 100 for train, 40 for the test splits.
        sessions: sessions per persona (>= 2).
        budget: ledger slots B.
        n_init: facts stated in session 0.
        catalogue: a :class:`Catalogue`, a phrasings file path, or None for the split's built-in.

    Returns:
        One dict per persona; the same arguments always give equal output.

    Raises:
        UserError: a bad argument or phrasings file.
    """
    cfg = GeneratorConfig(seed=seed, split=split, personas=personas, sessions=sessions, budget=budget,
                          n_init=n_init)
    return generate_from_config(cfg, catalogue)


# --------------------------------------------------------------------------- files and stats


def write_timelines(path: str | Path, timelines: list[dict[str, Any]]) -> None:
    """Write one compact JSON line per persona (UTF-8, ``\\n`` endings, trailing newline)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for timeline in timelines:
            fh.write(L.dumps(timeline) + "\n")


def load_timelines(path: str | Path) -> list[dict[str, Any]]:
    """Read a timeline file written by :func:`write_timelines`.

    Raises:
        UserError: the file cannot be read or a line is not a JSON object.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"timeline file {path}: cannot read it ({err.strerror})") from None
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            raise UserError(f"timeline file {path}: line {n} is not JSON ({err})") from None
        if not isinstance(obj, dict) or "sessions" not in obj:
            raise UserError(f"timeline file {path}: line {n} must be a persona object with 'sessions'")
        out.append(obj)
    return out


def timeline_stats(timelines: list[dict[str, Any]]) -> dict[str, Any]:
    """Summary numbers of a set of timelines (printed by ``clerk generate``).

    Returns:
        A dict: ``personas``, ``sessions``, ``share_personas_with_evict``, ``facts_updated_more_than_once``
        (persona-predicate pairs with >= 2 UPDATE events), ``share_personas_with_multi_update``,
        ``events`` / ``gold_ops`` / ``questions`` counts by kind or type, ``updates_readded``
        (UPDATE events that became ADD after eviction), ``tombstones_dropped``, ``max_occupied``.
    """
    events: Counter = Counter({kind: 0 for kind in EVENT_KINDS})
    ops: Counter = Counter({kind: 0 for kind in L.OP_KINDS})
    qtypes: Counter = Counter({qtype: 0 for qtype in QUESTION_TYPES})
    with_evict = with_multi = multi = readded = dropped = n_sessions = max_occ = 0
    for tl in timelines:
        updates: Counter = Counter()
        evicted = False
        for session in tl["sessions"]:
            n_sessions += 1
            kinds = Counter(op["op"] for op in session["gold_ops"])
            ev = Counter(e["kind"] for e in session["events"])
            events.update(ev)
            ops.update(kinds)
            qtypes.update(q["type"] for q in session["questions"])
            updates.update(e["pred"] for e in session["events"] if e["kind"] == "UPDATE")
            evicted = evicted or kinds["EVICT"] > 0
            readded += kinds["ADD"] - ev["ADD"]
            dropped += ev["TOMBSTONE"] - kinds["TOMBSTONE"]
            max_occ = max(max_occ, len(L.occupied(session["ledger_after"])))
        n_multi = sum(1 for c in updates.values() if c > 1)
        multi += n_multi
        with_evict += evicted
        with_multi += n_multi > 0
    n = max(len(timelines), 1)
    return {
        "personas": len(timelines),
        "sessions": n_sessions,
        "share_personas_with_evict": round(with_evict / n, 4),
        "facts_updated_more_than_once": multi,
        "share_personas_with_multi_update": round(with_multi / n, 4),
        "events": dict(events),
        "gold_ops": dict(ops),
        "questions": dict(qtypes),
        "updates_readded": readded,
        "tombstones_dropped": dropped,
        "max_occupied": max_occ,
    }


# --------------------------------------------------------------------------- CLI


def main(args: Any) -> None:
    """``clerk generate``: write timelines to ``args.out`` and print their stats to stderr."""
    cfg = GeneratorConfig(seed=args.seed, split=args.split, personas=args.personas, sessions=args.sessions,
                          budget=args.budget, n_init=args.init_facts)
    timelines = generate_from_config(cfg, args.phrasings)
    write_timelines(args.out, timelines)
    print(json.dumps(timeline_stats(timelines), indent=1), file=sys.stderr)


def register_cli(sub: Any) -> None:
    """Add the ``generate`` verb."""
    p = sub.add_parser(
        "generate",
        help="write synthetic persona timelines (JSON lines) with gold programs and MC questions",
        description="Generate persona timelines (SPEC §2): one JSON line per persona with every "
        "session's turns, events, questions (10 options), gold program and ledgers before/after. "
        "Same arguments, same bytes. Prints summary statistics to stderr.",
    )
    # what to generate
    p.add_argument("--seed", type=int, required=True, help="base seed; the RNG is seeded from (seed, split)")
    p.add_argument("--split", required=True, metavar="SPLIT",
                   help="train (train names), test (test names) or test_ood (test names, OOD phrasings)")
    p.add_argument("--personas", type=int, default=None,
                   help="number of personas (default: 100 for train, 40 for test and test_ood)")
    p.add_argument("--sessions", type=int, default=8, help="sessions per persona, >= 2 (default: 8)")
    p.add_argument("--budget", type=int, default=12, help="ledger slots B, >= 1 (default: 12)")
    p.add_argument("--init-facts", type=int, default=4, dest="init_facts",
                   help="facts stated in session 0 (default: 4)")
    p.add_argument("--phrasings", default=None, metavar="FILE",
                   help="YAML phrasings file replacing the built-in catalogue (schema: clerk/phrasing/catalogue.yaml)")
    # where to write
    p.add_argument("--out", required=True, metavar="FILE", help="output timeline file (JSON lines)")
    p.set_defaults(func=main)


if __name__ == "__main__":
    from clerk.cli import main as _cli_main

    _cli_main(["generate", *sys.argv[1:]])
