"""Foundational-versus-noise streams and the eviction-policy study (SPEC §3).

An LLM-free testbed for the question "which eviction rule keeps the facts that matter?". A stream
registers a few *foundational* facts at turn 1 and recalls them on a jittered spaced-repetition
schedule, while *noise* facts that are never recalled arrive every turn. Memory engines of fixed
capacity replay the stream under different eviction policies; the study reports the fraction of
recalls whose fact is still held and how much of the memory noise occupies.

    clerk streams --seed 137 --out results/streams/stream_137.json
    clerk eviction-study --streams results/streams/stream_137.json --capacities 8 16 32 \\
        --noise-grid 1 3 6 --out results/streams/eviction_137.csv

Stream file (one JSON object, written with :func:`clerk.ledger.dumps` plus a newline)::

    {"seed": 137,
     "config": {"length": 100, "num_foundational": 10, "recalls_per_foundational": 4,
                "noise_per_turn": 3},
     "foundational": ["f0", ..., "f9"],
     "events": [[1, "register", "f0", true], ..., [1, "register", "n1.0", false], ...,
                [4, "recall", "f3", true], ...]}

Decisions (SPEC §3 leaves them open):

* Turns run 1..``length``. Foundational ids are ``f<k>``; noise ids are ``n<turn>.<k>``.
* Within a turn, registrations come before recalls; foundational registrations (turn 1 only)
  come before that turn's noise, and equal-kind events keep fact order. Putting foundational
  facts first makes them the *oldest* items from the start, the hard case for recency rules.
* Recall schedule: recall ``k`` of fact ``f`` is at ``1 + round(BASE_OFFSETS[k] * j)``, with
  ``j ~ U[0.7, 1.3]`` drawn per (fact, offset) and ``round`` half-up. The turn is then clamped
  into ``[previous recall turn + 1, length]`` so recall turns strictly increase and stay in the
  stream; a recall that cannot fit (the previous one is already at ``length``) is dropped, and so
  are all later ones of that fact. With the default 100 turns and 4 recalls nothing is clamped
  (the latest possible recall is turn 1 + 59); offsets 90 and 150 can be clamped to turn
  ``length`` or dropped.
* Randomness: one ``random.Random`` per stream, string-seeded from the seed, and it draws the
  jitter of *all six* base offsets of every fact in fact order, whatever
  ``recalls_per_foundational`` is, and nothing else. So the recall schedule depends only on
  (seed, length, num_foundational): streams differing only in noise rate or recall count share
  the same schedule (a prefix of it), which makes the noise-rate sweep a controlled comparison.

Engine semantics (every policy):

* A registration inserts the item; when the engine is full, the policy first evicts one held item.
  Registering an item that is already held is an error (streams never do it).
* A recall of a held item is a *hit* and updates the policy's bookkeeping; a recall of an item not
  held is a *miss* and does not re-insert it (the fact is lost for good, as for a ledger whose slot
  was evicted).
"""

from __future__ import annotations

import abc
import argparse
import csv
import io
import json
import math
import random
import statistics
import sys
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Sequence

from clerk.errors import UserError
from clerk.ledger import dumps, salience_key

#: Spaced-repetition offsets (turns after registration) of the successive recalls of a fact.
BASE_OFFSETS = (3, 8, 20, 45, 90, 150)
#: Range of the uniform multiplicative jitter applied to each base offset.
JITTER = (0.7, 1.3)
#: Decimal places of floats in the study CSV (fixed so the bytes are deterministic).
CSV_PRECISION = 6
CSV_FIELDS = ("seed", "policy", "capacity", "noise_per_turn", "hits", "recalls",
              "recall_hit_rate", "noise_occupancy")

Stream = dict[str, Any]
Event = list[Any]  # [turn, kind, id, foundational]


# --------------------------------------------------------------------------- streams


@dataclass(frozen=True)
class StreamConfig:
    """Knobs of one stream; the defaults are the paper's setting.

    Attributes:
        length: number of turns (1..length). 100 turns fit four spaced recalls with room to spare.
        num_foundational: facts registered at turn 1 and recalled later (10: a handful, less than
            the smallest studied capacity of 16 but more than 8, so capacity matters).
        recalls_per_foundational: how many of :data:`BASE_OFFSETS` each fact is recalled at, 0..6
            (4: offsets 3, 8, 20, 45, all inside the default length).
        noise_per_turn: never-recalled facts registered every turn (3: a 16-slot memory fills
            with noise within a handful of turns).

    Raises:
        UserError: a knob is not an int in its range (names the field, the range and the value).
    """

    length: int = 100
    num_foundational: int = 10
    recalls_per_foundational: int = 4
    noise_per_turn: int = 3

    def __post_init__(self) -> None:
        _check_int("length", self.length, 1)
        _check_int("num_foundational", self.num_foundational, 0)
        _check_int("recalls_per_foundational", self.recalls_per_foundational, 0, len(BASE_OFFSETS))
        _check_int("noise_per_turn", self.noise_per_turn, 0)


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> None:
    """Raise UserError unless ``value`` is an int in ``[low, high]``.

    >>> _check_int("length", 5, 1)
    >>> _check_int("length", 0, 1)
    Traceback (most recent call last):
    ...
    clerk.errors.UserError: length must be an int >= 1, got 0
    """
    ok = type(value) is int and value >= low and (high is None or value <= high)
    if not ok:
        expected = f"an int >= {low}" if high is None else f"an int in {low}..{high}"
        raise UserError(f"{name} must be {expected}, got {value!r}")


def round_half_up(x: float) -> int:
    """Round to the nearest int, halves up (Python's ``round`` rounds halves to even).

    >>> round_half_up(2.5), round_half_up(3.5), round_half_up(2.49)
    (3, 4, 2)
    """
    return math.floor(x + 0.5)


def schedule_recalls(offsets: Sequence[int], start: int, length: int) -> list[int]:
    """Recall turns for raw offsets after ``start``, clamped to strictly increase within ``length``.

    Each turn is ``start + offset`` clamped into ``[previous + 1, length]``; once the previous
    recall sits at ``length`` the rest cannot fit and are dropped.

    Args:
        offsets: jittered offsets in turns, in schedule order.
        start: the registration turn.
        length: the last turn of the stream.

    Returns:
        The recall turns, strictly increasing, each in ``(start, length]``.

    >>> schedule_recalls([3, 9, 21], start=1, length=100)
    [4, 10, 22]
    >>> schedule_recalls([3, 3, 200, 300], start=1, length=100)
    [4, 5, 100]
    """
    turns: list[int] = []
    previous = start
    for offset in offsets:
        if previous >= length:
            break
        turn = min(max(start + offset, previous + 1), length)
        turns.append(turn)
        previous = turn
    return turns


def make_stream(seed: int, length: int = 100, num_foundational: int = 10,
                recalls_per_foundational: int = 4, noise_per_turn: int = 3) -> Stream:
    """Generate one foundational-versus-noise stream (see the module docstring for the rules).

    Args:
        seed: the stream seed (an int); the only source of randomness.
        length, num_foundational, recalls_per_foundational, noise_per_turn: see
            :class:`StreamConfig`.

    Returns:
        The stream dict in the file format ``{"seed", "config", "foundational", "events"}``.

    Raises:
        UserError: a knob or the seed is out of range.

    >>> s = make_stream(7, length=12, num_foundational=1, recalls_per_foundational=2, noise_per_turn=1)
    >>> s["events"][:3]
    [[1, 'register', 'f0', True], [1, 'register', 'n1.0', False], [2, 'register', 'n2.0', False]]
    >>> [e for e in s["events"] if e[1] == "recall"]
    [[3, 'recall', 'f0', True], [11, 'recall', 'f0', True]]
    """
    if type(seed) is not int:
        raise UserError(f"seed must be an int, got {seed!r}")
    cfg = StreamConfig(length, num_foundational, recalls_per_foundational, noise_per_turn)
    # String seeding is hashed with SHA-512 by ``random``, so it does not depend on PYTHONHASHSEED.
    rng = random.Random(f"clerk.streams:{seed}")
    foundational = [f"f{k}" for k in range(cfg.num_foundational)]
    keyed: list[tuple[tuple[int, int, int], Event]] = []  # (turn, kind rank, order) -> event
    order = 0
    for fact in foundational:
        keyed.append(((1, 0, order), [1, "register", fact, True]))
        order += 1
    for turn in range(1, cfg.length + 1):
        for k in range(cfg.noise_per_turn):
            keyed.append(((turn, 0, order), [turn, "register", f"n{turn}.{k}", False]))
            order += 1
    for fact in foundational:
        # Draw every base offset's jitter so the schedule does not depend on the recall count.
        jitters = [rng.uniform(*JITTER) for _ in BASE_OFFSETS]
        offsets = [round_half_up(base * j) for base, j in zip(BASE_OFFSETS, jitters)]
        for turn in schedule_recalls(offsets[: cfg.recalls_per_foundational], 1, cfg.length):
            keyed.append(((turn, 1, order), [turn, "recall", fact, True]))
            order += 1
    keyed.sort(key=lambda pair: pair[0])
    return {"seed": seed, "config": asdict(cfg), "foundational": foundational,
            "events": [event for _, event in keyed]}


def validate_stream(stream: Any, where: str = "stream") -> None:
    """Raise UserError unless ``stream`` is a well-formed stream dict.

    Checks the keys, the config knobs, the event shape, turns in 1..length, sorting by turn with
    registrations before recalls, and that foundational flags match the ``foundational`` list.

    Args:
        stream: the parsed JSON object.
        where: how to name the stream in messages (e.g. its file path).

    Raises:
        UserError: naming ``where``, the field, what was expected and what was found.
    """
    if not isinstance(stream, dict) or set(stream) != {"seed", "config", "foundational", "events"}:
        got = sorted(stream) if isinstance(stream, dict) else type(stream).__name__
        raise UserError(f"{where}: expected an object with keys config, events, foundational, seed; got {got}")
    if type(stream["seed"]) is not int:
        raise UserError(f"{where}: seed must be an int, got {stream['seed']!r}")
    config = stream["config"]
    if not isinstance(config, dict) or set(config) != set(StreamConfig.__dataclass_fields__):
        raise UserError(f"{where}: config must have keys {sorted(StreamConfig.__dataclass_fields__)}, "
                        f"got {sorted(config) if isinstance(config, dict) else config!r}")
    try:
        StreamConfig(**config)
    except UserError as err:
        raise UserError(f"{where}: config.{err}") from None
    found = stream["foundational"]
    if not isinstance(found, list) or not all(isinstance(x, str) for x in found):
        raise UserError(f"{where}: foundational must be a list of id strings, got {found!r}")
    found_set = set(found)
    events = stream["events"]
    if not isinstance(events, list):
        raise UserError(f"{where}: events must be a list, got {type(events).__name__}")
    previous = (1, 0)
    for n, event in enumerate(events):
        shape_ok = (isinstance(event, list) and len(event) == 4 and type(event[0]) is int
                    and event[1] in ("register", "recall") and isinstance(event[2], str)
                    and type(event[3]) is bool)
        if not shape_ok:
            raise UserError(f"{where}: event {n} must be [turn, 'register'|'recall', id, true|false], "
                            f"got {event!r}")
        turn, kind, item, flag = event
        if not 1 <= turn <= config["length"]:
            raise UserError(f"{where}: event {n} turn must be in 1..{config['length']}, got {turn}")
        if flag != (item in found_set):
            raise UserError(f"{where}: event {n} foundational flag {flag} disagrees with the "
                            f"foundational list for {item!r}")
        position = (turn, 0 if kind == "register" else 1)
        if position < previous:
            raise UserError(f"{where}: event {n} {event!r} is out of order (events are sorted by "
                            "turn, registrations before recalls)")
        previous = position


def load_stream(path: str | Path) -> Stream:
    """Read and validate a stream file.

    Raises:
        UserError: the file is missing, not JSON, or not a valid stream.
    """
    path = Path(path)
    try:
        stream = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--streams: file {str(path)!r} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"--streams: {str(path)!r} is not a JSON stream file ({err})") from None
    validate_stream(stream, where=str(path))
    return stream


# --------------------------------------------------------------------------- engines

#: The policy registry: name -> engine class. Insertion order is the default study order.
POLICIES: dict[str, type["Engine"]] = {}


def register_policy(name: str, registry: dict[str, type["Engine"]] | None = None) -> Callable:
    """Class decorator adding an engine to ``registry`` (default :data:`POLICIES`) under ``name``.

    Raises:
        ValueError: ``name`` is already registered.
    """
    target = POLICIES if registry is None else registry

    def decorate(cls: type[Engine]) -> type[Engine]:
        if name in target:
            raise ValueError(f"policy {name!r} is already registered (by {target[name].__name__})")
        cls.name = name
        target[name] = cls
        return cls

    return decorate


def get_policy(name: str, registry: dict[str, type["Engine"]] | None = None) -> type["Engine"]:
    """The engine class registered under ``name``.

    Raises:
        UserError: unknown name; the message lists the known names.
    """
    target = POLICIES if registry is None else registry
    if name not in target:
        raise UserError(f"unknown policy {name!r} (known: {', '.join(sorted(target))})")
    return target[name]


class Engine(abc.ABC):
    """A memory of fixed capacity that replays stream events under one eviction policy.

    Contract: :meth:`register` inserts an item, first evicting the victim chosen by
    :meth:`_victim` when the engine is full; :meth:`recall` is a hit (policy bookkeeping updated
    by :meth:`_on_hit`) when the item is held and a miss otherwise (nothing is inserted).
    Subclasses implement :meth:`_victim` and may override :meth:`_on_admit`, :meth:`_on_hit`
    and :meth:`_on_evict`; the base class tracks which items are held, in insertion order.

    Args:
        capacity: the most items held at once (an int >= 1).
        seed: the stream seed, for policies that draw random numbers.
    """

    name: ClassVar[str] = ""

    def __init__(self, capacity: int | None, seed: int = 0):
        _check_int("capacity", capacity, 1)
        self.capacity: int | None = capacity
        self.seed = seed
        self._held: dict[str, bool] = {}  # id -> foundational flag, in insertion order

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._held

    def __len__(self) -> int:
        return len(self._held)

    def held(self) -> list[str]:
        """Held item ids in insertion order."""
        return list(self._held)

    def noise_held(self) -> int:
        """How many held items are noise (not foundational)."""
        return sum(1 for flag in self._held.values() if not flag)

    def register(self, item_id: str, turn: int, foundational: bool) -> str | None:
        """Insert ``item_id`` at ``turn``; return the evicted id, or None when nothing was evicted.

        Raises:
            ValueError: ``item_id`` is already held.
        """
        if item_id in self._held:
            raise ValueError(f"item {item_id!r} is already held")
        victim = None
        if self.capacity is not None and len(self._held) >= self.capacity:
            victim = self._victim(turn)
            assert victim in self._held, (self.name, victim)
            self._on_evict(victim)
            del self._held[victim]
        self._held[item_id] = foundational
        self._on_admit(item_id, turn)
        assert self.capacity is None or len(self._held) <= self.capacity
        return victim

    def recall(self, item_id: str, turn: int) -> bool:
        """A recall at ``turn``: True (hit, bookkeeping updated) when held, False (miss) otherwise."""
        if item_id not in self._held:
            return False
        self._on_hit(item_id, turn)
        return True

    @abc.abstractmethod
    def _victim(self, turn: int) -> str:
        """The held id to evict to make room for a registration at ``turn``."""

    def _on_admit(self, item_id: str, turn: int) -> None:
        """Bookkeeping for a newly inserted item."""

    def _on_hit(self, item_id: str, turn: int) -> None:
        """Bookkeeping for a recall hit."""

    def _on_evict(self, item_id: str) -> None:
        """Bookkeeping for an item about to be evicted."""


@register_policy("salience")
class SalienceEngine(Engine):
    """The CLERK oracle: ledger-like slots, evict the minimum :func:`clerk.ledger.salience_key`.

    An item is a slot ``{"i", "id", "foundational", "uses", "t"}`` where ``uses`` counts recall
    hits (questions answered from it) and ``t`` is the turn of its last write, i.e. its
    registration (a recall reads a slot, it does not write it). A new item takes the lowest free
    index, as the reducer's ADD does; a free slot is ``{"i"}``. ``slots`` is public so tests and
    readers can inspect the ledger-like state.
    """

    def __init__(self, capacity: int | None, seed: int = 0):
        super().__init__(capacity, seed)
        self.slots: list[dict[str, Any]] = [{"i": i} for i in range(capacity)]
        self._index: dict[str, int] = {}

    def _victim(self, turn: int) -> str:
        taken = [slot for slot in self.slots if "id" in slot]
        return min(taken, key=salience_key)["id"]

    def _on_admit(self, item_id: str, turn: int) -> None:
        i = next(slot["i"] for slot in self.slots if "id" not in slot)
        self.slots[i] = {"i": i, "id": item_id, "foundational": self._held[item_id], "uses": 0, "t": turn}
        self._index[item_id] = i

    def _on_hit(self, item_id: str, turn: int) -> None:
        self.slots[self._index[item_id]]["uses"] += 1

    def _on_evict(self, item_id: str) -> None:
        i = self._index.pop(item_id)
        self.slots[i] = {"i": i}


@register_policy("lru")
class LRUEngine(Engine):
    """Least recently used: evict the item whose last access (registration or hit) is oldest.

    Accesses are ordered by event order, so same-turn ties follow the stream's event order.
    """

    def __init__(self, capacity: int | None, seed: int = 0):
        super().__init__(capacity, seed)
        self._recency: OrderedDict[str, None] = OrderedDict()  # least recent first

    def _victim(self, turn: int) -> str:
        return next(iter(self._recency))

    def _on_admit(self, item_id: str, turn: int) -> None:
        self._recency[item_id] = None

    def _on_hit(self, item_id: str, turn: int) -> None:
        self._recency.move_to_end(item_id)

    def _on_evict(self, item_id: str) -> None:
        del self._recency[item_id]


@register_policy("lfu")
class LFUEngine(Engine):
    """Least frequently used: evict the fewest recall hits; ties evict the least recently accessed.

    The key is ``(hits, last access)`` with accesses numbered in event order (registration counts
    as an access with 0 hits), so the order is total.
    """

    def __init__(self, capacity: int | None, seed: int = 0):
        super().__init__(capacity, seed)
        self._key: dict[str, tuple[int, int]] = {}
        self._clock = 0  # event counter: a total order on accesses

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def _victim(self, turn: int) -> str:
        return min(self._key, key=self._key.__getitem__)

    def _on_admit(self, item_id: str, turn: int) -> None:
        self._key[item_id] = (0, self._tick())

    def _on_hit(self, item_id: str, turn: int) -> None:
        self._key[item_id] = (self._key[item_id][0] + 1, self._tick())

    def _on_evict(self, item_id: str) -> None:
        del self._key[item_id]


@register_policy("fifo")
class FIFOEngine(Engine):
    """First in, first out: evict the earliest inserted item; hits change nothing."""

    def _victim(self, turn: int) -> str:
        return next(iter(self._held))


@register_policy("random")
class RandomEngine(Engine):
    """Evict a uniformly random held item, from an RNG derived from the stream seed.

    The RNG is ``random.Random("clerk.streams.random:<seed>")``; candidates are taken in insertion
    order so the draw is reproducible.
    """

    def __init__(self, capacity: int | None, seed: int = 0):
        super().__init__(capacity, seed)
        self._rng = random.Random(f"clerk.streams.random:{seed}")

    def _victim(self, turn: int) -> str:
        items = list(self._held)
        return items[self._rng.randrange(len(items))]


@register_policy("decay")
class DecayEngine(Engine):
    """Exponentially decaying strength reinforced by recalls; evict the weakest.

    An item's strength at turn ``t`` is ``w * 2 ** (-(t - t_last) / HALF_LIFE)``: registration sets
    ``w = 1, t_last = turn``; a recall hit adds ``REINFORCE`` to the decayed strength and sets
    ``t_last`` to the hit's turn. This is the combined recency-frequency value of LRFU
    (Lee et al., IEEE Trans. Computers 50(12), 2001) with ``2 ** (-1 / HALF_LIFE)`` as its
    per-turn decay. Ties (equal strength) evict the earliest inserted item.

    Constants: ``HALF_LIFE = 10`` turns sits between the early spaced offsets (3, 8) and the late
    ones (20, 45), so a fact recalled on schedule stays strong while one that is never recalled
    fades like noise; ``REINFORCE = 1.0`` makes one recall worth a fresh registration.
    """

    HALF_LIFE: ClassVar[float] = 10.0
    REINFORCE: ClassVar[float] = 1.0

    def __init__(self, capacity: int | None, seed: int = 0):
        super().__init__(capacity, seed)
        self._state: dict[str, tuple[float, int, int]] = {}  # id -> (w, t_last, insertion number)
        self._inserted = 0

    def strength(self, item_id: str, turn: int) -> float:
        """Strength of a held item at ``turn``."""
        w, last, _ = self._state[item_id]
        return w * 2.0 ** (-(turn - last) / self.HALF_LIFE)

    def _victim(self, turn: int) -> str:
        return min(self._state, key=lambda item: (self.strength(item, turn), self._state[item][2]))

    def _on_admit(self, item_id: str, turn: int) -> None:
        self._inserted += 1
        self._state[item_id] = (1.0, turn, self._inserted)

    def _on_hit(self, item_id: str, turn: int) -> None:
        _, _, number = self._state[item_id]
        self._state[item_id] = (self.strength(item_id, turn) + self.REINFORCE, turn, number)

    def _on_evict(self, item_id: str) -> None:
        del self._state[item_id]


@register_policy("unbounded")
class UnboundedEngine(Engine):
    """Reference memory that never evicts: every recall of a registered fact is a hit.

    The capacity argument is accepted (so every policy is built the same way) and ignored.
    """

    def __init__(self, capacity: int | None = None, seed: int = 0):
        super().__init__(1, seed)
        self.capacity = None

    def _victim(self, turn: int) -> str:  # pragma: no cover - capacity is None, never called
        raise AssertionError("the unbounded engine never evicts")


# --------------------------------------------------------------------------- replay and metrics


@dataclass
class ReplayResult:
    """What one replay of a stream through an engine measured.

    Attributes:
        hits: recall events whose fact was held.
        recalls: recall events.
        noise_occupancy: mean over turns 1..length, after each turn's events, of the fraction of
            capacity held by noise (unbounded engine: the fraction of held items that are noise,
            0 while it holds nothing).
        evictions: ``(turn, evicted id)`` in order.
    """

    hits: int
    recalls: int
    noise_occupancy: float
    evictions: list[tuple[int, str]] = field(default_factory=list)

    @property
    def recall_hit_rate(self) -> float:
        """hits / recalls; NaN for a stream without recalls."""
        return self.hits / self.recalls if self.recalls else math.nan


def replay(stream: Stream, engine: Engine) -> ReplayResult:
    """Feed a stream's events to ``engine`` turn by turn and measure hits and noise occupancy.

    Args:
        stream: a valid stream dict (see :func:`validate_stream`).
        engine: a fresh engine.

    Returns:
        The :class:`ReplayResult`.
    """
    length = stream["config"]["length"]
    by_turn: list[list[Event]] = [[] for _ in range(length + 1)]
    for event in stream["events"]:
        by_turn[event[0]].append(event)
    hits = recalls = 0
    evictions: list[tuple[int, str]] = []
    occupancy = 0.0
    for turn in range(1, length + 1):
        for _, kind, item, flag in by_turn[turn]:
            if kind == "register":
                victim = engine.register(item, turn, flag)
                if victim is not None:
                    evictions.append((turn, victim))
            else:
                recalls += 1
                hits += engine.recall(item, turn)
        denominator = engine.capacity if engine.capacity is not None else len(engine)
        occupancy += engine.noise_held() / denominator if denominator else 0.0
    return ReplayResult(hits, recalls, occupancy / length, evictions)


# --------------------------------------------------------------------------- study


def _with_noise(stream: Stream, noise_per_turn: int) -> Stream:
    """The stream itself at its own noise rate, else regenerated with only the noise replaced."""
    if stream["config"]["noise_per_turn"] == noise_per_turn:
        return stream
    return make_stream(stream["seed"], **{**stream["config"], "noise_per_turn": noise_per_turn})


def eviction_study(streams: Sequence[Stream], policies: Sequence[str], capacities: Sequence[int],
                   noise_grid: Sequence[int], progress: bool = False) -> list[dict[str, Any]]:
    """Replay every stream under every (policy, capacity, noise rate).

    For a noise rate other than the stream's own, the stream is regenerated with
    :func:`make_stream` from the same seed and config with ``noise_per_turn`` replaced; because the
    recall schedule does not depend on the noise rate, the foundational facts and their recall
    turns stay identical across the noise sweep. The unbounded reference gets one row per
    capacity too (its results do not depend on it) so every (policy, capacity) cell is filled.

    Args:
        streams: stream dicts with distinct seeds.
        policies: registered policy names.
        capacities: engine capacities (ints >= 1).
        noise_grid: noise rates (ints >= 0).
        progress: show a tqdm bar on stderr.

    Returns:
        One row per (seed, policy, capacity, noise_per_turn), sorted by those keys, with ``hits``,
        ``recalls``, ``recall_hit_rate`` and ``noise_occupancy``.

    Raises:
        UserError: an unknown policy, a bad capacity or noise rate, or a repeated seed.
    """
    engines = {name: get_policy(name) for name in policies}
    for capacity in capacities:
        _check_int("capacity", capacity, 1)
    for noise in noise_grid:
        _check_int("noise_per_turn", noise, 0)
    seeds = [stream["seed"] for stream in streams]
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise UserError(f"--streams: each stream needs its own seed, got seed(s) {repeated} more than once")
    cells = [(stream, noise) for stream in streams for noise in sorted(set(noise_grid))]
    if progress:
        from tqdm import tqdm

        cells = tqdm(cells, desc="eviction study", unit="stream", file=sys.stderr)
    rows = []
    for stream, noise in cells:
        variant = _with_noise(stream, noise)
        for name, engine_cls in engines.items():
            for capacity in sorted(set(capacities)):
                result = replay(variant, engine_cls(capacity, stream["seed"]))
                rows.append({"seed": stream["seed"], "policy": name, "capacity": capacity,
                             "noise_per_turn": noise, "hits": result.hits, "recalls": result.recalls,
                             "recall_hit_rate": result.recall_hit_rate,
                             "noise_occupancy": result.noise_occupancy})
    rows.sort(key=lambda row: (row["seed"], row["policy"], row["capacity"], row["noise_per_turn"]))
    return rows


def format_float(x: float, precision: int = CSV_PRECISION) -> str:
    """Fixed-precision text for a CSV float (``nan`` for NaN).

    >>> format_float(2 / 3), format_float(math.nan)
    ('0.666667', 'nan')
    """
    return "nan" if math.isnan(x) else f"{x:.{precision}f}"


def rows_to_csv(rows: Iterable[dict[str, Any]]) -> str:
    """The study rows as CSV text: :data:`CSV_FIELDS` columns, ``\\n`` line ends, fixed floats."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row in rows:
        writer.writerow([format_float(row[name]) if isinstance(row[name], float) else row[name]
                         for name in CSV_FIELDS])
    return buffer.getvalue()


def summary_table(rows: Sequence[dict[str, Any]], capacity: int, noise_per_turn: int,
                  policies: Sequence[str] | None = None) -> str:
    """A plain-text table of mean hit rate and noise occupancy per policy over seeds at one cell.

    Args:
        rows: study rows from :func:`eviction_study`.
        capacity, noise_per_turn: the cell to summarise.
        policies: row order of the table (default: first appearance in ``rows``).

    Returns:
        The table text (NaN hit rates are left out of the means).
    """
    cell = [row for row in rows if row["capacity"] == capacity and row["noise_per_turn"] == noise_per_turn]
    names = list(policies) if policies is not None else list(dict.fromkeys(row["policy"] for row in cell))
    lines = [f"recall hit rate at capacity {capacity}, noise {noise_per_turn}/turn "
             f"(mean over {len({row['seed'] for row in cell})} seed(s))",
             f"{'policy':<10} {'hit_rate':>8} {'noise_occ':>9}"]
    for name in names:
        mine = [row for row in cell if row["policy"] == name]
        rates = [row["recall_hit_rate"] for row in mine if not math.isnan(row["recall_hit_rate"])]
        rate = statistics.fmean(rates) if rates else math.nan
        occupancy = statistics.fmean(row["noise_occupancy"] for row in mine)
        lines.append(f"{name:<10} {format_float(rate, 3):>8} {format_float(occupancy, 3):>9}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def _streams_main(args: argparse.Namespace) -> None:
    """``clerk streams``: write one stream file."""
    stream = make_stream(args.seed, length=args.length, num_foundational=args.foundational,
                         recalls_per_foundational=args.recalls, noise_per_turn=args.noise)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(stream) + "\n", encoding="utf-8")


def _study_main(args: argparse.Namespace) -> None:
    """``clerk eviction-study``: sweep policies x capacities x noise rates, write the CSV."""
    streams = [load_stream(path) for path in args.streams]
    policies = list(dict.fromkeys(args.policies)) if args.policies else list(POLICIES)
    for name in policies:
        get_policy(name)
    for capacity in args.capacities:
        if capacity < 1:
            raise UserError(f"--capacities must be ints >= 1, got {capacity}")
    for noise in args.noise_grid:
        if noise < 0:
            raise UserError(f"--noise-grid must be ints >= 0, got {noise}")
    capacities = sorted(set(args.capacities))
    noise_grid = sorted(set(args.noise_grid))
    # Default cell: the middle capacity of the grid and the streams' own noise rate when swept.
    capacity = args.default_capacity if args.default_capacity is not None else capacities[(len(capacities) - 1) // 2]
    if capacity not in capacities:
        raise UserError(f"--default-capacity must be one of --capacities {capacities}, got {capacity}")
    own = streams[0]["config"]["noise_per_turn"]
    noise = args.default_noise if args.default_noise is not None else (
        own if own in noise_grid else noise_grid[(len(noise_grid) - 1) // 2])
    if noise not in noise_grid:
        raise UserError(f"--default-noise must be one of --noise-grid {noise_grid}, got {noise}")
    rows = eviction_study(streams, policies, capacities, noise_grid, progress=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(rows_to_csv(rows), encoding="utf-8")
    print(summary_table(rows, capacity, noise, policies))


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add the ``streams`` and ``eviction-study`` verbs."""
    defaults = StreamConfig()
    p = sub.add_parser("streams", help="generate a foundational-vs-noise stream (SPEC §3)",
                       description="Write one foundational-versus-noise event stream as JSON.")
    # what the stream looks like
    p.add_argument("--seed", type=int, required=True, help="stream seed (int); same seed, same bytes")
    p.add_argument("--length", type=int, default=defaults.length,
                   help=f"stream length in turns (default {defaults.length})")
    p.add_argument("--foundational", type=int, default=defaults.num_foundational,
                   help=f"foundational facts registered at turn 1 (default {defaults.num_foundational})")
    p.add_argument("--recalls", type=int, default=defaults.recalls_per_foundational,
                   help=f"recalls per foundational fact, 0..{len(BASE_OFFSETS)}, at base offsets "
                        f"{', '.join(map(str, BASE_OFFSETS))} turns x U[0.7, 1.3] "
                        f"(default {defaults.recalls_per_foundational})")
    p.add_argument("--noise", type=int, default=defaults.noise_per_turn,
                   help=f"never-recalled noise facts registered per turn (default {defaults.noise_per_turn})")
    # where it goes
    p.add_argument("--out", required=True, help="output stream file (.json)")
    p.set_defaults(func=_streams_main)

    p = sub.add_parser("eviction-study", help="replay streams under eviction policies (SPEC §3)",
                       description="Replay stream files under every policy x capacity x noise rate and "
                                   "write one CSV row per (seed, policy, capacity, noise_per_turn).")
    # inputs and grid
    p.add_argument("--streams", nargs="+", required=True, help="stream files from `clerk streams`")
    p.add_argument("--capacities", type=int, nargs="+", default=[8, 16, 32],
                   help="engine capacities in items (default 8 16 32)")
    p.add_argument("--noise-grid", type=int, nargs="+", default=[1, 3, 6],
                   help="noise facts per turn; other rates than a stream's own regenerate it from "
                        "its seed and config (default 1 3 6)")
    p.add_argument("--policies", nargs="+", default=None,
                   help=f"eviction policies (default: all, {' '.join(POLICIES)})")
    # summary printed to stdout
    p.add_argument("--default-capacity", type=int, default=None,
                   help="capacity of the printed summary (default: the middle of --capacities)")
    p.add_argument("--default-noise", type=int, default=None,
                   help="noise rate of the printed summary (default: the first stream's own rate if "
                        "in --noise-grid, else the middle of the grid)")
    # output
    p.add_argument("--out", required=True, help="output CSV file")
    p.set_defaults(func=_study_main)
