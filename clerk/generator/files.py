"""Timeline files (one compact JSON line per persona) and their summary statistics (SPEC §2).

    clerk generate --seed 137 --split test --personas 5 --out /tmp/test.jsonl   # stats on stderr
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk.errors import UserError
from clerk.generator.questions import QUESTION_TYPES
from clerk.generator.timelines import EVENT_KINDS


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
        (UPDATE events that became ADD after eviction), ``tombstones_dropped``, ``max_occupied``;
        on forget splits (:mod:`clerk.generator.forgets`) also ``forget_requests``.
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
    forgets = [r for tl in timelines for session in tl["sessions"] for r in session.get("forget", [])]
    extra = {"forget_requests": len(forgets)} if any("forget" in s for tl in timelines for s in tl["sessions"]) else {}
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
        **extra,
    }
