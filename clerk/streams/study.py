"""The eviction-policy study: replay streams through engines, sweep the grid, write the CSV (SPEC §3).

:func:`replay` feeds one stream to one engine and measures the recall hit rate and the noise
occupancy; :func:`eviction_study` sweeps policies x capacities x noise rates over streams, and
:func:`rows_to_csv` / :func:`summary_table` render the rows.

    clerk eviction-study --streams results/streams/137.json --capacities 8 16 32 \\
        --noise-grid 1 3 6 --out /tmp/eviction_137.csv
"""

from __future__ import annotations

import csv
import io
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clerk.errors import UserError
from clerk.streams.engines import Engine, get_policy
from clerk.streams.generation import Event, Stream, check_int, make_stream

#: Decimal places of floats in the study CSV (fixed so the bytes are deterministic).
CSV_PRECISION = 6
CSV_FIELDS = ("seed", "policy", "capacity", "noise_per_turn", "hits", "recalls",
              "recall_hit_rate", "noise_occupancy")


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
        check_int("capacity", capacity, 1)
    for noise in noise_grid:
        check_int("noise_per_turn", noise, 0)
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
