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
from clerk.form import FormError, timeline_form
from clerk.generator.questions import QUESTION_TYPES
from clerk.generator.timelines import EVENT_KINDS


def write_timelines(path: str | Path, timelines: list[dict[str, Any]]) -> None:
    """Write one compact JSON line per persona (UTF-8, ``\\n`` endings, trailing newline)."""
    from clerk.atomic import atomic_write

    with atomic_write(path, newline="\n") as fh:  # whole or absent
        for timeline in timelines:
            fh.write(L.dumps(timeline) + "\n")


def load_timelines(path: str | Path, what: str = "timeline file") -> list[dict[str, Any]]:
    """Read a timeline file written by :func:`write_timelines`; errors name ``what`` (the
    argument, e.g. ``--timelines``) and the path.

    Raises:
        UserError: the file cannot be read or a line is not a JSON object.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UserError(f"{what} {str(path)!r}: cannot read it ({err.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"{what} {str(path)!r}: not UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}); "
                        f"timelines are UTF-8 JSON lines") from None
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as err:
            raise UserError(f"{what} {str(path)!r}: line {n} is not JSON ({err}; truncated?)") from None
        problem = timeline_problem(obj)
        if problem:
            raise UserError(f"{what} {str(path)!r}: line {n}: {problem}")
        out.append(obj)
    if not out:
        raise UserError(f"{what} {str(path)!r}: holds no persona (the file is empty)")
    return out


#: What a persona holds besides its sessions: field -> (check, what is allowed).
PERSONA_FIELDS = {
    "name": (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string"),
    "split": (lambda v: isinstance(v, str), "a string"),
    "seed": (lambda v: type(v) is int, "a whole number"),
    "budget": (lambda v: type(v) is int and v >= 1, "a whole number >= 1 (the ledger's slots)"),
}
#: What every session of a timeline holds, and the JSON type of each field.
SESSION_FIELDS = {"index": int, "turns": list, "events": list, "questions": list, "gold_ops": list,
                  "ledger_before": list, "ledger_after": list}


def timeline_problem(obj: Any) -> str | None:
    """Why ``obj`` is not a persona timeline (:func:`write_timelines`' shape), or None.

    Checked: a format this code reads (``format``: absent or 1, or 2 with a valid ``form``:
    :func:`clerk.form.timeline_form`); a persona object with a non-empty ``sessions`` list; every session an object with
    :data:`SESSION_FIELDS` of the right types (``index`` its position); turns
    ``{"role", "content"}`` strings; questions objects; the persona's :data:`PERSONA_FIELDS`
    (``budget`` a whole number, not the string "6"). Values inside are the evaluation's to judge.

    >>> timeline_problem({"name": "Ari", "sessions": []})
    "'sessions' must be a non-empty list of sessions, got []"
    >>> timeline_problem({"name": "Ari", "sessions": [{"index": 0, "turns": 5}]})
    "session 0: field 'turns' must be a list, got 5"
    >>> timeline_problem({"format": 7, "name": "Ari", "sessions": []})
    "field 'format' is 7: this clerk reads timeline formats 1 and 2 (a newer clerk wrote the file?)"
    >>> session = {"index": 0, "turns": [], "events": [], "questions": [], "gold_ops": [], "ledger_before": [],
    ...            "ledger_after": []}
    >>> timeline_problem({"name": "Ari", "split": "test", "seed": 1, "budget": "6", "sessions": [session]})
    "field 'budget' must be a whole number >= 1 (the ledger's slots), got '6'"
    """
    if not isinstance(obj, dict):
        return f"must be a persona object, got {type(obj).__name__}"
    try:
        timeline_form(obj)
    except FormError as err:
        return str(err)
    sessions = obj.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        return f"'sessions' must be a non-empty list of sessions, got {sessions!r:.80}"
    for pos, session in enumerate(sessions):
        if not isinstance(session, dict):
            return f"session {pos} must be an object, got {type(session).__name__}"
        for field, kind in SESSION_FIELDS.items():
            if field not in session:
                return f"session {pos} lacks field {field!r} (a session holds {', '.join(SESSION_FIELDS)})"
            if type(session[field]) is not kind:
                return f"session {pos}: field {field!r} must be a {kind.__name__}, got {session[field]!r:.80}"
        if session["index"] != pos:
            return f"session {pos}: field 'index' must be {pos} (its position), got {session['index']!r}"
        for k, turn in enumerate(session["turns"]):
            if not (isinstance(turn, dict) and isinstance(turn.get("role"), str) and isinstance(turn.get("content"), str)):
                return f"session {pos} turn {k} must be an object with string 'role' and 'content', got {turn!r:.80}"
        for k, question in enumerate(session["questions"]):
            if not isinstance(question, dict):
                return f"session {pos} question {k} must be an object, got {question!r:.80}"
    for name, (ok, allowed) in PERSONA_FIELDS.items():
        if name not in obj:
            return f"lacks field {name!r} ({allowed}; a persona holds {', '.join(PERSONA_FIELDS)} and 'sessions')"
        if not ok(obj[name]):
            return f"field {name!r} must be {allowed}, got {obj[name]!r:.80}"
    return None


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
