"""Eviction engines: fixed-capacity memories that replay stream events, and their registry (SPEC §3).

One engine class per eviction policy, each registered in :data:`POLICIES` under its name with
:func:`register_policy`; the study looks policies up with :func:`get_policy`.

    clerk eviction-study --streams results/streams/137.json --policies salience lru fifo \\
        --out /tmp/eviction_137.csv

Engine semantics (every policy):

* A registration inserts the item; when the engine is full, the policy first evicts one held item.
  Registering an item that is already held is an error (streams never do it).
* A recall of a held item is a *hit* and updates the policy's bookkeeping; a recall of an item not
  held is a *miss* and does not re-insert it (the fact is lost for good, as for a ledger whose slot
  was evicted).
"""

from __future__ import annotations

import abc
import random
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from clerk.errors import UserError
from clerk.ledger import salience_key
from clerk.streams.generation import check_int

#: The policy registry: name -> engine class. Insertion order is the default study order.
POLICIES: dict[str, type[Engine]] = {}


def register_policy(name: str, registry: dict[str, type[Engine]] | None = None) -> Callable:
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


def get_policy(name: str, registry: dict[str, type[Engine]] | None = None) -> type[Engine]:
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
        check_int("capacity", capacity, 1)
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
