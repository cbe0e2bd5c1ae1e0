"""The workflow's ``streams`` section: the eviction study's streams and grid (SPEC §3).

    python -c "from clerk.streams.config import StreamsSection; print(StreamsSection())"
"""

from __future__ import annotations

from dataclasses import dataclass

from clerk.settings import setting


@dataclass
class StreamsSection:
    """Foundational-versus-noise streams and the capacity x noise grid of table 4 (``streams``)."""

    length: int = setting(100, help="stream length in turns", minimum=2, maximum=100_000, verbs=("streams",))
    foundational: int = setting(10, help="foundational facts registered at turn 1", minimum=1, maximum=10_000, verbs=("streams",))
    recalls: int = setting(4, help="recalls per foundational fact, at spaced base offsets", minimum=1, maximum=6,
                           verbs=("streams",))
    noise: int = setting(3, help="never-recalled noise facts registered per turn (table 4's rate)", minimum=0, maximum=1_000,
                         verbs=("streams",))
    capacities: tuple[int, ...] = setting([8, 12, 16, 24, 32], help="engine capacities swept, in items", min_items=1,
                                          items={"type": "integer", "minimum": 1}, verbs=("eviction-study",))
    noise_grid: tuple[int, ...] = setting(
        [1, 3, 6], help="noise facts per turn swept; other rates than a stream's own regenerate it from its seed",
        min_items=1, items={"type": "integer", "minimum": 0}, verbs=("eviction-study",))
    default_capacity: int = setting(16, help="capacity of table 4 (one of capacities)", minimum=1,
                                    verbs=("eviction-study",))
    policies: tuple[str, ...] = setting(
        ["salience", "lru", "lfu", "fifo", "random", "decay", "unbounded"],
        help="eviction policies (clerk/streams/engines.py)", choices="eviction_policy", min_items=1, unique=True,
        verbs=("eviction-study",))
