"""The forget stress harness: consolidation workers and forgetters racing on one store (SPEC §9).

Worker processes loop: pick a subject, draw a session from a small seeded feed (1-2 statements
"My city is Lisbon-001000042 now.", "私のcityは東京-001000043です。" or
"#Zu\u0308rich-001000044_city now", value in NFC or NFD, a fresh unique value each), open a consolidation
(capture the generation, read), run the policy, think, publish. The policy is a deterministic
stand-in for a trained one: the gold writer over the transcript it read (ADD a new predicate,
UPDATE a known one, EVICT the least salient slot first when the ledger is full). With the
session it publishes the derived memories the memory systems keep, rebuilt from what it read:
the BM25 index input (every turn), the add-only notes (every user statement) and a summary of
the new ledger. A refused publish (:class:`StaleGeneration`, or :class:`ConcurrentPublish` when
another worker published that subject first) is retried from a fresh read, as a caller should.

Forgetter processes loop: wait, pick a subject and a predicate (or, one time in ten, the whole
subject), read it (a view for the judge), forget, record the acknowledged generation.

A run lasts ``seconds``, or, with ``events`` N, until N publishes, N forgets and N *stale*
publishes (a publish whose captured generation a forget has advanced since: refused with the
fence, let through without it) have happened, whatever the machine's speed; ``seconds`` is then
only a cap, and reaching it first marks the run incomplete (``events_reached`` false, and
``clerk stress-forget`` exits 1). The processes share the event counts.

Every read is recorded as a view (subject, generation, value codes present); at the end the
parent reads the final state and :mod:`clerk.store.audit` counts resurrections and lost writes.
``fence=False`` runs the same code with only the store's generation re-proof skipped: the
negative control that shows what the fence prevents.

    clerk stress-forget --store sqlite:///$(mktemp -d)/m.db --workers 4 --forgetters 2 --seconds 20
    clerk stress-forget --store sqlite:///$(mktemp -d)/m.db --events 20 --seconds 300
"""

from __future__ import annotations

import math
import multiprocessing
import random
import re
import time
import unicodedata
from dataclasses import asdict, dataclass

from clerk import ledger as L
from clerk.errors import UserError
from clerk.store import ConcurrentPublish, StaleGeneration, UnknownSubject, backend_of, open_store
from clerk.store.audit import Forgot, Published, Seen, judge

#: Value pools per predicate; a value is ``<pool word>-<worker:3><counter:6>``, unique per run. Some
#: words are not ASCII (CJK, accented) so the race also checks that erasure finds them by text.
PREDICATES = {
    "city": ("Lisbon", "Zürich", "東京", "Kraków", "Lima"),
    "job": ("Chef", "Nurse", "Pilot", "Tailor", "Bäcker"),
    "pet": ("Cat", "Dog", "Ferret", "Parrot", "Gecko"),
    "car": ("Volvo", "Fiat", "Škoda", "Saab", "Lada"),
    "hobby": ("Chess", "Golf", "Rowing", "囲碁", "Tango"),
    "gym": ("Apex", "Forge", "Pulse", "Core", "Titan"),
}
NAMES = ("Ari", "Bo", "Cyd", "Dee", "Eli", "Fay", "Gus", "Hal", "Ida", "Jo", "Kit", "Lu")
#: A value code in NFC text (views are normalised to NFC before the judge looks).
CODE_RE = re.compile("(?:" + "|".join(re.escape(w) for words in PREDICATES.values() for w in words)
                     + r")-\d{9}(?!\d)")
_CODE = r"[^\W\d_]+-\d{9}"
#: How a statement is written: with spaces, with no space at all around the value (as Japanese is
#: written), and as a tag whose value touches an underscore. ``{v}`` may be written in NFD.
STATEMENT_FORMS = ("My {p} is {v} now.", "私の{p}は{v}です。", "#{v}_{p} now")
#: A statement in NFC text, any form: (pred, value) from the groups that matched.
STATEMENT_RE = re.compile(rf"My ([a-z]+) is ({_CODE}) now\.|私の([a-z]+)は({_CODE})です。|#({_CODE})_([a-z]+) now")
#: Ledger budget: more slots than predicates, so the gold writer never has to evict.
BUDGET = 8
#: Longest run ``--seconds`` accepts (a day): beyond it a typo, and past ~1e9 not a time at all.
MAX_SECONDS = 86400.0
#: The most worker (or forgetter) processes one run may start.
MAX_PROCESSES = 256
#: Seconds past the deadline a process may take to finish its last operation.
GRACE_S = 90.0
#: Positions in the shared event counts: publishes, forgets, stale publishes.
PUBLISHED, FORGOTTEN, STALE = 0, 1, 2
#: The event counts shared by the processes of one run (set in each by :func:`_share`), or None.
_EVENTS = None


@dataclass
class StressConfig:
    """Knobs of one stress run (CLI flags of the same names)."""

    url: str
    workers: int = 4
    forgetters: int = 2
    seconds: float = 20.0
    fence: bool = True
    seed: int = 0
    subjects: int = 6
    #: a worker's think time between its read and its publish, ms (drawn from [0.5x, 1.5x]).
    think_ms: float = 10.0
    #: a forgetter's wait between forgets, ms (drawn from [0.5x, 1.5x]).
    forget_gap_ms: float = 40.0
    #: run until this many publishes, forgets and stale publishes each (``seconds`` is then a cap).
    events: int | None = None

    def __post_init__(self) -> None:
        backend_of(self.url)
        for name, low in (("workers", 1), ("forgetters", 1), ("subjects", 1)):
            value = getattr(self, name)
            if type(value) is not int or value < low:
                raise UserError(f"{name} must be an int >= {low}, got {value!r}")
        for name in ("workers", "forgetters"):  # each is a process of its own
            if getattr(self, name) > MAX_PROCESSES:
                raise UserError(f"{name} must be at most {MAX_PROCESSES}, got {getattr(self, name)}")
        if self.subjects > len(NAMES):
            raise UserError(f"subjects must be at most {len(NAMES)}, got {self.subjects}")
        for name in ("seconds", "think_ms", "forget_gap_ms"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                    or value <= 0:
                raise UserError(f"{name} must be a finite number > 0, got {value!r}")
        if self.events is not None and (type(self.events) is not int or self.events < 1):
            raise UserError(f"events must be an int >= 1 (or absent: run for seconds), got {self.events!r}")
        if self.seconds > MAX_SECONDS:
            raise UserError(f"seconds must be at most {MAX_SECONDS:g} (one day), got {self.seconds!r}")

    def names(self) -> tuple[str, ...]:
        return NAMES[: self.subjects]


# --------------------------------------------------------------------------- the workers' policy


def make_session(rng: random.Random, worker: int, counter: int) -> tuple[list[dict], dict]:
    """A session of 1-2 statements with fresh values: (turns, predicate -> value in NFC). Each
    statement takes a form of :data:`STATEMENT_FORMS`; one in two writes the value in NFD."""
    preds = rng.sample(sorted(PREDICATES), rng.choice((1, 1, 2)))
    turns, writes = [], {}
    for k, pred in enumerate(preds):
        value = f"{rng.choice(PREDICATES[pred])}-{worker:03d}{counter + k:06d}"
        writes[pred] = value
        written = unicodedata.normalize(rng.choice(("NFC", "NFD")), value)
        turns += [{"role": "user", "content": rng.choice(STATEMENT_FORMS).format(p=pred, v=written)},
                  {"role": "assistant", "content": "Noted."}]
    return turns, writes


def statements(text: str) -> list[tuple[str, str]]:
    """(pred, value in NFC) of every statement in a turn, whatever its form.

    >>> statements("私のcityは東京-000000001です。 #Zu\u0308rich-000000002_city now")
    [('city', '東京-000000001'), ('city', 'Zürich-000000002')]
    """
    out = []
    for match in STATEMENT_RE.finditer(unicodedata.normalize("NFC", text)):
        g = match.groups()
        out.append((g[0], g[1]) if g[0] else (g[2], g[3]) if g[2] else (g[5], g[4]))
    return out


def gold_program(ledger: list, subject: str, turns: list[dict]) -> list[dict]:
    """The gold writer over a transcript: each statement ADDs or UPDATEs its predicate.

    >>> gold_program(L.empty_ledger(2), "Ari", [{"role": "user", "content": "My pet is Cat-000000001 now."}])
    [{'op': 'ADD', 's': 'Ari', 'p': 'pet', 'o': 'Cat-000000001'}]
    """
    program, state = [], ledger
    for turn in turns:
        if turn["role"] != "user":
            continue
        for pred, value in statements(turn["content"]):
            i = L.find(state, subject, pred)
            ops = [{"op": "UPDATE", "i": i, "s": subject, "p": pred, "o": value}] if i is not None else []
            if i is None:
                if not any(L.is_free(slot) for slot in state):
                    ops.append({"op": "EVICT", "i": L.least_salient(state)})
                ops.append({"op": "ADD", "s": subject, "p": pred, "o": value})
            state, _ = L.reduce(state, ops, 0)
            program += ops
    return program


def derive(derived: dict, turns: list[dict], ledger: list, session: int) -> dict[str, list[str]]:
    """The derived memories after a session, rebuilt from what the consolidation read."""
    summary = "; ".join(f"{s['p']}={s['o']}" + (f" (was {s['prev']})" if s["prev"] else "") for s in L.occupied(ledger))
    return {"bm25": derived.get("bm25", []) + [f"[session {session}] {t['role']}: {t['content']}" for t in turns],
            "note": derived.get("note", []) + [t["content"] for t in turns if t["role"] == "user"],
            "summary": [summary]}


def _seen(snapshot) -> Seen:
    return Seen(snapshot.subject, snapshot.generation,
                frozenset(code for text in snapshot.texts() for code in CODE_RE.findall(unicodedata.normalize("NFC", text))))


# --------------------------------------------------------------------------- processes


def _sleep(rng: random.Random, ms: float) -> None:
    time.sleep(rng.uniform(0.5, 1.5) * ms / 1000)


def _share(events) -> None:
    """Pool initializer: the run's shared event counts (a ``multiprocessing`` int array of 3)."""
    global _EVENTS
    _EVENTS = events


def _count(kind: int) -> None:
    if _EVENTS is not None:
        with _EVENTS.get_lock():
            _EVENTS[kind] += 1


def _running(cfg: StressConfig, deadline: float) -> bool:
    """True until ``deadline`` (a ``time.time()``), or until every event count reached ``cfg.events``."""
    if time.time() >= deadline:
        return False
    if cfg.events is None or _EVENTS is None:
        return True
    with _EVENTS.get_lock():
        return min(_EVENTS[:]) < cfg.events


def run_worker(cfg: dict, worker: int, deadline: float) -> dict:
    """One consolidation worker until ``deadline`` (a ``time.time()``); returns its records."""
    cfg_ = StressConfig(**cfg)
    rng = random.Random(f"{cfg_.seed}:worker:{worker}")
    out = {"published": [], "seen": [], "refused": 0, "conflicts": 0, "stale_published": 0}
    counter = 0
    with open_store(cfg_.url, budget=BUDGET, fence=cfg_.fence) as store:
        while _running(cfg_, deadline):
            subject = rng.choice(cfg_.names())
            turns, writes = make_session(rng, worker, counter)
            counter += len(writes)
            while _running(cfg_, deadline):
                with store.consolidation(subject) as c:
                    out["seen"].append(_seen(c.snapshot))
                    program = gold_program(c.ledger, subject, turns)
                    _sleep(rng, cfg_.think_ms)
                    new_ledger, _ = L.reduce(c.ledger, program, c.now, strict=False)
                    try:
                        receipt = c.publish(program, turns, derived=derive(c.derived, turns, new_ledger, c.now))
                    except StaleGeneration:
                        out["refused"] += 1
                        _count(STALE)
                        continue
                    except ConcurrentPublish:
                        out["conflicts"] += 1
                        continue
                out["published"].append(Published(subject, receipt.session, receipt.generation, writes))
                _count(PUBLISHED)
                if receipt.generation != c.generation:  # only without the fence: a forget landed since the read
                    out["stale_published"] += 1
                    _count(STALE)
                break
    return out


def run_forgetter(cfg: dict, forgetter: int, deadline: float) -> dict:
    """One forgetter until ``deadline``; returns the acknowledged forgets and the views it read."""
    cfg_ = StressConfig(**cfg)
    rng = random.Random(f"{cfg_.seed}:forgetter:{forgetter}")
    out = {"forgets": [], "seen": []}
    with open_store(cfg_.url, budget=BUDGET, fence=cfg_.fence) as store:
        while _running(cfg_, deadline):
            _sleep(rng, cfg_.forget_gap_ms)
            subject = rng.choice(cfg_.names())
            predicate = None if rng.random() < 0.1 else rng.choice(sorted(PREDICATES))
            out["seen"].append(_seen(store.read(subject)))
            try:
                report = store.forget(subject, predicate)
            except UnknownSubject:  # no worker has published for it yet: nothing to erase
                continue
            out["forgets"].append(Forgot(subject, predicate, report.generation))
            _count(FORGOTTEN)
    return out


def run_stress(cfg: StressConfig) -> dict:
    """Run workers and forgetters against ``cfg.url`` for ``cfg.seconds`` (or until ``cfg.events``
    of each kind, ``cfg.seconds`` the cap); judge; return the report.

    Raises:
        UserError: the store already holds subjects (the harness must own every subject it judges).
    """
    with open_store(cfg.url, budget=BUDGET) as store:  # creates the schema before the processes race
        if store.subjects():
            raise UserError(f"stress-forget needs an empty store, but it holds {len(store.subjects())} "
                            f"subject(s); point --store at a new database")
    ctx = multiprocessing.get_context("spawn")  # no fork of a parent holding connections or threads
    start = time.time()
    deadline = start + cfg.seconds
    events = ctx.Array("q", 3)  # publishes, forgets, stale publishes: shared by every process
    with ctx.Pool(cfg.workers + cfg.forgetters, initializer=_share, initargs=(events,)) as pool:
        jobs = [pool.apply_async(run_worker, (asdict(cfg), w, deadline)) for w in range(cfg.workers)]
        jobs += [pool.apply_async(run_forgetter, (asdict(cfg), f, deadline)) for f in range(cfg.forgetters)]
        results = [job.get(timeout=max(0.0, deadline - time.time()) + GRACE_S) for job in jobs]
    seconds = time.time() - start
    workers, forgetters = results[: cfg.workers], results[cfg.workers:]
    with open_store(cfg.url, budget=BUDGET) as store:
        finals = {name: store.read(name) for name in cfg.names()}
    published = [p for r in workers for p in r["published"]]
    forgets = [f for r in forgetters for f in r["forgets"]]
    seen = [s for r in results for s in r["seen"]] + [_seen(snap) for snap in finals.values()]
    report = {"backend": backend_of(cfg.url), "fence": cfg.fence, "workers": cfg.workers,
              "forgetters": cfg.forgetters, "seconds": round(seconds, 2), "published": len(published),
              "refused": sum(r["refused"] for r in workers), "conflicts": sum(r["conflicts"] for r in workers),
              "stale_published": sum(r["stale_published"] for r in workers), "forgets": len(forgets),
              "events": cfg.events}
    stale = report["refused"] + report["stale_published"]
    report["events_reached"] = cfg.events is None or min(len(published), len(forgets), stale) >= cfg.events
    report.update(judge(published, forgets, seen, finals))
    return report
