"""Foundational-versus-noise streams: the file format, generation and validation (SPEC §3).

    clerk streams --seed 137 --out results/streams/stream_137.json

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
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.streams.config import StreamsSection

#: Spaced-repetition offsets (turns after registration) of the successive recalls of a fact.
BASE_OFFSETS = (3, 8, 20, 45, 90, 150)
#: Range of the uniform multiplicative jitter applied to each base offset.
JITTER = (0.7, 1.3)

Stream = dict[str, Any]
Event = list[Any]  # [turn, kind, id, foundational]


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

    # The streams section's defaults (one default each).
    length: int = StreamsSection.length
    num_foundational: int = StreamsSection.foundational
    recalls_per_foundational: int = StreamsSection.recalls
    noise_per_turn: int = StreamsSection.noise

    def __post_init__(self) -> None:
        check_int("length", self.length, 1)
        check_int("num_foundational", self.num_foundational, 0)
        check_int("recalls_per_foundational", self.recalls_per_foundational, 0, len(BASE_OFFSETS))
        check_int("noise_per_turn", self.noise_per_turn, 0)


def check_int(name: str, value: Any, low: int, high: int | None = None) -> None:
    """Raise UserError unless ``value`` is an int in ``[low, high]``.

    >>> check_int("length", 5, 1)
    >>> check_int("length", 0, 1)
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
