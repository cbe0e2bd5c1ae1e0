"""The ledger: B fact slots, four edit ops, a pure reducer, a tolerant parser, an exact serializer.

SPEC §1. A ledger is a list of exactly B slot dicts in index order, in the file format itself:
an occupied slot is ``{"i","s","p","o","prev","v","born","t","uses"}`` and a free one ``{"i"}``.
Keeping the in-memory form identical to the file form means there is no conversion layer to get
wrong; every function here treats its inputs as read-only and returns fresh objects.

    >>> L = empty_ledger(2)
    >>> L, rep = reduce(L, [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}], now=0)
    >>> L, rep = reduce(L, [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}], now=1)
    >>> L[0]["o"], L[0]["prev"], L[0]["t"]
    ('chef', 'nurse', 1)
    >>> deserialize(serialize(L)) == L
    True
"""

from __future__ import annotations

import copy
import json
import re
import reprlib
from dataclasses import dataclass, field
from typing import Any

Slot = dict[str, Any]
Ledger = list[Slot]
Op = dict[str, Any]
Program = list[Any]

#: How many "[" positions the program parser tries before giving up (see parse_program).
MAX_PARSE_STARTS = 256
#: Characters of failed scans the program parser allows beyond twice the text's length.
PARSE_BUDGET_SLACK = 1 << 16
#: Field order of an occupied slot, in files and in the prompt serialization.
SLOT_FIELDS = ("i", "s", "p", "o", "prev", "v", "born", "t", "uses")
OP_KINDS = ("ADD", "UPDATE", "TOMBSTONE", "EVICT")
#: Required fields per op kind (besides "op") and their types.
_OP_SCHEMA: dict[str, dict[str, type]] = {
    "ADD": {"s": str, "p": str, "o": str},
    "UPDATE": {"i": int, "s": str, "p": str, "o": str},
    "TOMBSTONE": {"i": int},
    "EVICT": {"i": int},
}


class InvalidOpError(ValueError):
    """Raised by the strict reducer on the first invalid op.

    Attributes:
        position: index of the op in the program (0-based).
        op: the offending op, as given.
        reason: why it is invalid.
    """

    def __init__(self, position: int, op: Any, reason: str):
        self.position, self.op, self.reason = position, op, reason
        super().__init__(f"op {position} {_short(op)} is invalid: {reason}")


@dataclass
class ReduceReport:
    """What a reduce did: positions of applied ops and ``(position, op, reason)`` for skipped ones."""

    applied: list[int] = field(default_factory=list)
    invalid: list[tuple[int, Any, str]] = field(default_factory=list)


@dataclass
class ParseResult:
    """A program parsed from model text; ``error`` is None when a JSON list was found."""

    program: Program
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


# --------------------------------------------------------------------------- slots and ledgers


def empty_ledger(budget: int) -> Ledger:
    """A ledger of ``budget`` free slots.

    >>> empty_ledger(2)
    [{'i': 0}, {'i': 1}]
    """
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ValueError(f"budget must be a positive int, got {budget!r}")
    return [{"i": i} for i in range(budget)]


def is_free(slot: Slot) -> bool:
    """True for a free slot (only an index)."""
    return "s" not in slot


def occupied(ledger: Ledger) -> list[Slot]:
    """The occupied slots, in index order."""
    return [slot for slot in ledger if not is_free(slot)]


def find(ledger: Ledger, subject: str, pred: str) -> int | None:
    """Index of the occupied slot holding (subject, pred), or None."""
    for slot in ledger:
        if not is_free(slot) and slot["s"] == subject and slot["p"] == pred:
            return slot["i"]
    return None


def validate_ledger(ledger: Any) -> None:
    """Raise ValueError unless ``ledger`` is well formed (indices 0..B-1, typed fields, unique keys)."""
    if not isinstance(ledger, list) or not ledger:
        raise ValueError("a ledger is a non-empty JSON list of slots")
    keys = set()
    for pos, slot in enumerate(ledger):
        if not isinstance(slot, dict) or slot.get("i") != pos or type(slot.get("i")) is not int:
            raise ValueError(f"slot {pos} must be a dict with i={pos}, got {slot!r}")
        if is_free(slot):
            if set(slot) != {"i"}:
                raise ValueError(f"free slot {pos} must hold only 'i', got {sorted(slot)}")
            continue
        if tuple(slot) != SLOT_FIELDS:
            raise ValueError(f"slot {pos} fields must be {SLOT_FIELDS} in order, got {tuple(slot)}")
        for name in ("s", "p", "o"):
            if not isinstance(slot[name], str):
                raise ValueError(f"slot {pos} field {name!r} must be a string, got {slot[name]!r}")
        if slot["prev"] is not None and not isinstance(slot["prev"], str):
            raise ValueError(f"slot {pos} field 'prev' must be a string or null, got {slot['prev']!r}")
        if slot["v"] not in (0, 1) or type(slot["v"]) is not int:
            raise ValueError(f"slot {pos} field 'v' must be 0 or 1, got {slot['v']!r}")
        for name in ("born", "t", "uses"):
            if type(slot[name]) is not int or slot[name] < 0:
                raise ValueError(f"slot {pos} field {name!r} must be an int >= 0, got {slot[name]!r}")
        if (slot["s"], slot["p"]) in keys:
            raise ValueError(f"slot {pos} repeats (s, p) = {(slot['s'], slot['p'])!r}")
        keys.add((slot["s"], slot["p"]))


# --------------------------------------------------------------------------- salience


def salience_key(slot: Slot) -> tuple[int, int, int]:
    """Sort key of the eviction oracle: the *smallest* key is the least salient slot.

    Salience uses only fields the policy sees in the serialized ledger: more ``uses`` (questions
    answered from the slot) is more salient, then a more recent last write ``t``; remaining ties
    evict the lower index ``i`` first. The order is total because indices are unique.

    >>> salience_key({"i": 4, "s": "A", "p": "job", "o": "x", "prev": None, "v": 1, "born": 0, "t": 3, "uses": 2})
    (2, 3, 4)
    """
    return (slot["uses"], slot["t"], slot["i"])


def least_salient(ledger: Ledger) -> int:
    """Index of the occupied slot the oracle evicts first. Raises ValueError on an empty ledger."""
    slots = occupied(ledger)
    if not slots:
        raise ValueError("no occupied slot to evict")
    return min(slots, key=salience_key)["i"]


def record_use(ledger: Ledger, subject: str, pred: str) -> Ledger:
    """A copy of ``ledger`` with ``uses`` of the (subject, pred) slot incremented (no-op if absent)."""
    out = copy.deepcopy(ledger)
    idx = find(out, subject, pred)
    if idx is not None:
        out[idx]["uses"] += 1
    return out


# --------------------------------------------------------------------------- reducer


def check_op(ledger: Ledger, op: Any) -> str | None:
    """Why ``op`` cannot be applied to ``ledger``, or None when it can."""
    if not isinstance(op, dict):
        return f"an op must be a JSON object, got {type(op).__name__}"
    kind = op.get("op")
    if not isinstance(kind, str) or kind not in _OP_SCHEMA:  # unhashable kinds must not raise
        return f"unknown op {kind!r} (expected one of {', '.join(OP_KINDS)})"
    schema = _OP_SCHEMA[kind]
    extra = sorted(set(op) - set(schema) - {"op"}, key=str)
    if extra:
        return f"unexpected field(s) {extra} for {kind}"
    for name, typ in schema.items():
        if name not in op:
            return f"missing field {name!r}"
        value = op[name]
        if type(value) is not typ:  # bool is not an int index; exact types only
            return f"field {name!r} must be {typ.__name__}, got {type(value).__name__}"
    if "i" in schema and not 0 <= op["i"] < len(ledger):
        return f"slot index {_int_text(op['i'])} out of range 0..{len(ledger) - 1}"
    if kind == "ADD":
        if find(ledger, op["s"], op["p"]) is not None:
            return f"(s, p) = ({op['s']!r}, {op['p']!r}) already occupies a slot"
        if all(not is_free(slot) for slot in ledger):
            return "no free slot"
        return None
    slot = ledger[op["i"]]
    if is_free(slot):
        return f"slot {op['i']} is free"
    if kind == "UPDATE":
        if (slot["s"], slot["p"]) != (op["s"], op["p"]):
            return f"slot {op['i']} holds ({slot['s']!r}, {slot['p']!r}), not ({op['s']!r}, {op['p']!r})"
        if slot["o"] == op["o"]:
            return f"value unchanged ({op['o']!r})"
    if kind == "TOMBSTONE" and slot["v"] == 0:
        return f"slot {op['i']} is already tombstoned"
    return None


def _int_text(value: int) -> str:
    """An int for a message; one too long to print (Python refuses > 4300 digits) by its size.

    >>> _int_text(-3), _int_text(10 ** 5000)
    ('-3', 'an integer of 16610 bits')
    """
    if abs(value) < 10 ** 18:
        return str(value)
    return f"{'a negative' if value < 0 else 'an'} integer of {value.bit_length()} bits"


def _apply(ledger: Ledger, op: Op, now: int) -> None:
    """Apply a checked op in place on a ledger the caller owns."""
    kind = op["op"]
    if kind == "ADD":
        i = next(slot["i"] for slot in ledger if is_free(slot))
        ledger[i] = {"i": i, "s": op["s"], "p": op["p"], "o": op["o"], "prev": None, "v": 1,
                     "born": now, "t": now, "uses": 0}
    elif kind == "UPDATE":
        slot = ledger[op["i"]]
        slot.update(prev=slot["o"], o=op["o"], v=1, t=now)
    elif kind == "TOMBSTONE":
        ledger[op["i"]].update(v=0, t=now)
    else:  # EVICT
        ledger[op["i"]] = {"i": op["i"]}


def reduce(ledger: Ledger, program: Any, now: int, *, strict: bool = True) -> tuple[Ledger, ReduceReport]:
    """Apply ``program`` to ``ledger`` at session ``now``; return (new ledger, report).

    Args:
        ledger: the input ledger; never mutated.
        program: a list of ops (anything else is a single invalid "program").
        now: session index written into ``born`` / ``t``.
        strict: raise on the first invalid op (gold programs, tests) instead of skipping it
            (model output).

    Raises:
        InvalidOpError: strict mode only, naming the op's position, the op and the reason.
        ValueError: ``now`` is not an int >= 0 (a caller's error, in either mode: slots written
            at a negative session would fail :func:`validate_ledger`).
    """
    if type(now) is not int or now < 0:
        raise ValueError(f"now must be an int >= 0 (a session index), got {now!r}")
    out = copy.deepcopy(ledger)
    report = ReduceReport()
    if not isinstance(program, list):
        reason = f"a program must be a JSON list, got {type(program).__name__}"
        if strict:
            raise InvalidOpError(-1, program, reason)
        report.invalid.append((-1, program, reason))
        return out, report
    for pos, op in enumerate(program):
        reason = check_op(out, op)
        if reason is not None:
            if strict:
                raise InvalidOpError(pos, op, reason)
            report.invalid.append((pos, op, reason))
            continue
        _apply(out, op, now)
        report.applied.append(pos)
    return out, report


# --------------------------------------------------------------------------- text forms


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON (the one JSON style for ops, programs and slots)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def parse_program(text: Any) -> ParseResult:
    """Take the first JSON list in model text; never raises.

    Code fences and chatter around the list are allowed. Anything unparseable gives an empty
    program and an ``error``.

    >>> parse_program('Sure! ```json\\n[{"op":"EVICT","i":0}]\\n```').program
    [{'op': 'EVICT', 'i': 0}]
    >>> parse_program("no list here").failed
    True
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return ParseResult([], f"expected text, got {type(text).__name__}")
    decoder = json.JSONDecoder()
    # Each failed start costs a scan from it to where the decoder gave up. Adversarial text makes
    # every start scan to the end ("[1,[1,[1,..." or "[[[[..."), so the scans are charged against
    # a budget linear in the text's length: at most about three full passes, whatever the text.
    # A real program starts within the first few "[" and costs its own length.
    budget = 2 * len(text) + PARSE_BUDGET_SLACK
    start = text.find("[")
    for _ in range(MAX_PARSE_STARTS):
        if start == -1 or budget < 0:
            break
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as err:
            value, budget = None, budget - (err.pos - start + 1)
        except (ValueError, RecursionError):  # an int too long to convert, nesting too deep: a full scan
            value, budget = None, budget - (len(text) - start)
        if isinstance(value, list):
            return ParseResult(value)
        if value is not None:
            budget -= 1
        start = text.find("[", start + 1)
    return ParseResult([], "no JSON list found")


#: Header of the free-slot line of :func:`serialize`.
_FREE = "free"
#: An occupied slot line: index, uses, last write, born, optional tombstone mark, then the fact.
_SLOT_LINE = re.compile(r"^(\d+) u(\d+) t(\d+) b(\d+)( x)? (.+)$")
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def _plain(text: str) -> bool:
    """True when a value can be written raw: one non-blank line, no quote first, no `` <`` inside."""
    return (bool(text) and text == text.strip() and len(text.splitlines()) == 1 and "\n" not in text
            and not text.startswith('"') and " <" not in text and text.isprintable())


def _field(text: str, key: bool = False) -> str:
    """A string field: raw when unambiguous, else a JSON string (exact for any text)."""
    ok = _KEY.match(text) is not None if key else _plain(text)
    return text if ok else dumps(text)


def _take(text: str, stop: str) -> tuple[str, str]:
    """Read one field from the start of ``text``: a JSON string, or raw text up to ``stop``."""
    if text.startswith('"'):
        value, end = json.JSONDecoder().raw_decode(text)
        if not isinstance(value, str):
            raise ValueError(f"expected a JSON string, got {text[:40]!r}")
        return value, text[end:]
    cut = text.find(stop)
    return (text, "") if cut == -1 else (text[:cut], text[cut:])


def serialize(ledger: Ledger) -> str:
    """Compact exact text form for prompts (SPEC §1): what the policy reads.

    When any slot is occupied, line 1 names the subject of the least salient slot
    (``subject: Ari``), then one line per occupied slot in the eviction oracle's order
    (:func:`salience_key`, least salient first) with every field:
    ``<i> u<uses> t<t> b<born>[ x] <p>=<o>[ <<prev>]`` (`` x`` = tombstoned); a slot of another
    subject writes ``@<s> `` before its predicate. The last line lists the free slots,
    ``free <count>: <indices>`` (last: next to what the policy reads and writes after it).
    Strings are raw when that is unambiguous and JSON strings otherwise, so
    ``deserialize(serialize(L)) == L`` for every ledger.

    >>> print(serialize([{"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": "nurse", "v": 1, "born": 0, "t": 2, "uses": 1}, {"i": 1}]))
    subject: Ari
    0 u1 t2 b0 job=chef <nurse
    free 1: 1
    """
    lines = []
    slots = sorted(occupied(ledger), key=salience_key)
    if slots:
        subject = slots[0]["s"]
        lines.append(f"subject: {subject if _plain(subject) else dumps(subject)}")
        for slot in slots:
            who = "" if slot["s"] == subject else f"@{dumps(slot['s'])} "
            mark = "" if slot["v"] else " x"
            prev = "" if slot["prev"] is None else f" <{_field(slot['prev'])}"
            lines.append(f"{slot['i']} u{slot['uses']} t{slot['t']} b{slot['born']}{mark} "
                         f"{who}{_field(slot['p'], key=True)}={_field(slot['o'])}{prev}")
    free = [slot["i"] for slot in ledger if is_free(slot)]
    lines.append(f"{_FREE} {len(free)}:" + "".join(f" {i}" for i in free))
    return "\n".join(lines)


def _parse_slot(line: str, subject: str) -> Slot:
    match = _SLOT_LINE.match(line)
    if match is None:
        raise ValueError(f"not a slot line: {line!r}")
    i, uses, t, born, mark, rest = match.groups()
    s = subject
    if rest.startswith("@"):
        s, rest = _take(rest[1:], " ")
        rest = rest[1:]
    p, rest = _take(rest, "=")
    if not rest.startswith("="):
        raise ValueError(f"missing '=' after the predicate: {line!r}")
    o, rest = _take(rest[1:], " <")
    prev = None
    if rest:
        if not rest.startswith(" <"):
            raise ValueError(f"unexpected text after the value: {line!r}")
        prev, rest = _take(rest[2:], "\n")
        if rest:
            raise ValueError(f"unexpected text after the previous value: {line!r}")
    return {"i": int(i), "s": s, "p": p, "o": o, "prev": prev, "v": 0 if mark else 1,
            "born": int(born), "t": int(t), "uses": int(uses)}


def deserialize(text: str) -> Ledger:
    """Inverse of :func:`serialize`. Raises ValueError on malformed text."""
    lines = text.split("\n")
    head = re.match(rf"^{_FREE} (\d+):((?: \d+)*)$", lines[-1])
    if head is None:
        raise ValueError(f"last line: expected 'free <count>: <indices>', got {lines[-1]!r}")
    free = [int(x) for x in head.group(2).split()]
    if int(head.group(1)) != len(free):
        raise ValueError(f"last line: the count {head.group(1)} does not match {len(free)} listed free slots")
    slots: list[Slot] = [{"i": i} for i in free]
    if len(lines) > 1:
        if not lines[0].startswith("subject: "):
            raise ValueError(f"line 0: expected 'subject: <name>', got {lines[0]!r}")
        subject = lines[0][len("subject: "):]
        if subject.startswith('"'):
            subject = json.loads(subject)
        slots += [_parse_slot(line, subject) for line in lines[1:-1]]
    ledger = sorted(slots, key=lambda slot: slot["i"])
    validate_ledger(ledger)
    return ledger


def _short(obj: Any, limit: int = 120) -> str:
    """A bounded one-line rendering of an op for error messages; never raises."""
    try:
        text = dumps(obj)
    except (TypeError, ValueError, RecursionError):  # bytes, sets, deep nesting, huge ints from model output
        try:
            text = reprlib.repr(obj)
        except (ValueError, RecursionError):  # reprlib prints ints in full, too
            text = f"<{type(obj).__name__} too large to print>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
