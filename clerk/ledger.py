"""The ledger's edit ops: a pure reducer and a tolerant JSON program parser (SPEC §1.2-1.4).

SPEC §1. A ledger is a list of exactly B slot dicts in index order (:mod:`clerk.slots`, re-exported
here with the serializer of :mod:`clerk.ledger_text`, so ``clerk.ledger`` is the one import for
ledger work). Every function treats its inputs as read-only and returns fresh objects.

The reducer has two regimes. Without a form (the closed synthetic benchmark, as before the open
ledger) any strings may be subjects, keys and values. With a :class:`clerk.form.LedgerForm` (an
open ledger, SPEC §1.7) every fact written must have the form: a known subject, a key in normal
form (and in the form's catalogue, when it has one), a value on one line, an optional ``w`` date.

    >>> L = empty_ledger(2)
    >>> L, rep = reduce(L, [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}], now=0)
    >>> L, rep = reduce(L, [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}], now=1)
    >>> L[0]["o"], L[0]["prev"], L[0]["t"]
    ('chef', 'nurse', 1)
    >>> deserialize(serialize(L)) == L
    True
    >>> from clerk.form import LedgerForm
    >>> form = LedgerForm(("Jo", "Al"))
    >>> L, rep = reduce(L, [{"op": "ADD", "s": "Jo", "p": "trip", "o": "Paris", "w": "2023-05"}], now=2, form=form)
    >>> L[1]
    {'i': 1, 's': 'Jo', 'p': 'trip', 'o': 'Paris', 'w': '2023-05', 'prev': None, 'v': 1, 'born': 2, 't': 2, 'uses': 0}
    >>> reduce(L, [{"op": "ADD", "s": "Bo", "p": "pet", "o": "cat"}], now=2, strict=False, form=form)[1].invalid[0][2]
    "subject 'Bo' is not one of the ledger's subjects ('Jo', 'Al')"
"""

from __future__ import annotations

import copy
import json
import reprlib
from dataclasses import dataclass, field
from typing import Any

from clerk.form import FACT_CODES, LedgerForm
from clerk.ledger_text import deserialize, serialize
from clerk.slots import (
    DATED_SLOT_FIELDS,
    SLOT_FIELDS,
    Ledger,
    Op,
    Program,
    Slot,
    dumps,
    empty_ledger,
    find,
    is_free,
    least_salient,
    occupied,
    record_use,
    salience_key,
    validate_ledger,
)

__all__ = [
    "DATED_SLOT_FIELDS", "MAX_PARSE_STARTS", "OP_KINDS", "PARSE_BUDGET_SLACK", "REJECTION_CODES", "SLOT_FIELDS",
    "InvalidOpError", "Ledger", "Op", "ParseResult", "Program", "ReduceReport", "Slot", "check_op", "deserialize",
    "dumps", "empty_ledger", "find", "is_free", "least_salient", "occupied", "parse_program", "record_use", "reduce",
    "rejection", "salience_key", "serialize", "validate_ledger",
]

#: How many "[" positions the program parser tries before giving up (see parse_program).
MAX_PARSE_STARTS = 256
#: Characters of failed scans the program parser allows beyond twice the text's length.
PARSE_BUDGET_SLACK = 1 << 16
OP_KINDS = ("ADD", "UPDATE", "TOMBSTONE", "EVICT")
#: Required fields per op kind (besides "op") and their types.
_OP_SCHEMA: dict[str, dict[str, type]] = {
    "ADD": {"s": str, "p": str, "o": str},
    "UPDATE": {"i": int, "s": str, "p": str, "o": str},
    "TOMBSTONE": {"i": int},
    "EVICT": {"i": int},
}
#: Optional fields per op kind under a form: the when of a dated fact (SPEC §1.7).
_OPTIONAL = {"ADD": {"w": str}, "UPDATE": {"w": str}}
#: Every reason the reducer rejects an op for, as a stable short code (SPEC §1.3), in the order
#: :func:`rejection` checks them. The message beside each code gives the particulars.
REJECTION_CODES: tuple[str, ...] = (
    "not_a_program",  # the program is not a list (position -1)
    "unparsed_line",  # the op is text: a line the program language's compiler could not read
    "not_an_object",  # the op is neither a JSON object nor text
    "unknown_op",  # "op" is not ADD, UPDATE, TOMBSTONE or EVICT
    "extra_field",  # a field the op kind does not take (a "w" without a form, too)
    "missing_field",
    "wrong_type",  # a field of another exact type (a boolean is not an index)
    "unknown_key",  # index -1: the program language's key named no slot of the ledger
    "index_out_of_range",  # any other index outside 0..B-1
    *FACT_CODES,  # under a form: the fact written is out of form (clerk.form.LedgerForm.fact_rejection)
    "key_held",  # ADD of a (subject, key) some slot already holds
    "budget_full",  # ADD with no free slot (a writer must EVICT first)
    "slot_free",  # UPDATE, TOMBSTONE or EVICT of a free slot
    "slot_mismatch",  # UPDATE of a slot holding another (subject, key)
    "update_same_value",  # UPDATE to the value (and when) the slot already holds
    "tombstone_dead",  # TOMBSTONE of a slot already tombstoned
)


class InvalidOpError(ValueError):
    """Raised by the strict reducer on the first invalid op.

    Attributes:
        position: index of the op in the program (0-based).
        op: the offending op, as given.
        reason: why it is invalid.
        code: the reason's code (:data:`REJECTION_CODES`).
    """

    def __init__(self, position: int, op: Any, reason: str, code: str | None = None):
        self.position, self.op, self.reason, self.code = position, op, reason, code
        super().__init__(f"op {position} {_short(op)} is invalid: {reason}")


@dataclass
class ReduceReport:
    """What a reduce did: positions of applied ops, ``(position, op, reason)`` for skipped ones and
    ``codes[k]``, the code (:data:`REJECTION_CODES`) of ``invalid[k]``."""

    applied: list[int] = field(default_factory=list)
    invalid: list[tuple[int, Any, str]] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)

    def verdicts(self, n_ops: int) -> list[str]:
        """One verdict per op of a program of ``n_ops`` ops: ``"applied"`` or its rejection code.
        A program that is not a list counts as one op (its verdict ``not_a_program``).

        >>> reduce(empty_ledger(1), [{"op": "EVICT", "i": 0}, {"op": "ADD", "s": "A", "p": "x", "o": "y"}],
        ...        now=0, strict=False)[1].verdicts(2)
        ['slot_free', 'applied']
        """
        out = ["applied"] * n_ops
        for (pos, _, _), code in zip(self.invalid, self.codes):
            out[max(pos, 0)] = code
        return out


@dataclass
class ParseResult:
    """A program parsed from model text; ``error`` is None when a JSON list was found."""

    program: Program
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


# --------------------------------------------------------------------------- slots and ledgers



def check_op(ledger: Ledger, op: Any, form: LedgerForm | None = None) -> str | None:
    """Why ``op`` cannot be applied to ``ledger``, or None when it can.

    With a ``form``, ADD and UPDATE may carry a when ``w`` and must write a fact of the form.
    """
    found = rejection(ledger, op, form)
    return None if found is None else found[1]


def rejection(ledger: Ledger, op: Any, form: LedgerForm | None = None) -> tuple[str, str] | None:
    """``(code, message)`` of why ``op`` cannot be applied (the code one of :data:`REJECTION_CODES`),
    or None when it can; the message is :func:`check_op`'s.

    >>> rejection(empty_ledger(2), {"op": "TOMBSTONE", "i": -1})
    ('unknown_key', 'slot index -1 out of range 0..1')
    """
    if not isinstance(op, dict):
        return ("unparsed_line" if isinstance(op, str) else "not_an_object",
                f"an op must be a JSON object, got {type(op).__name__}")
    kind = op.get("op")
    if not isinstance(kind, str) or kind not in _OP_SCHEMA:  # unhashable kinds must not raise
        return "unknown_op", f"unknown op {kind!r} (expected one of {', '.join(OP_KINDS)})"
    schema = _OP_SCHEMA[kind]
    optional = _OPTIONAL.get(kind, {}) if form is not None else {}
    extra = sorted(set(op) - set(schema) - set(optional) - {"op"}, key=str)
    if extra:
        hint = " (a dated fact needs an open ledger's form)" if form is None and "w" in extra and kind in _OPTIONAL else ""
        return "extra_field", f"unexpected field(s) {extra} for {kind}{hint}"
    for name, typ in schema.items():
        if name not in op:
            return "missing_field", f"missing field {name!r}"
        value = op[name]
        if type(value) is not typ:  # bool is not an int index; exact types only
            return "wrong_type", f"field {name!r} must be {typ.__name__}, got {type(value).__name__}"
    for name, typ in optional.items():
        if name in op and type(op[name]) is not typ:
            return "wrong_type", f"field {name!r} must be {typ.__name__}, got {type(op[name]).__name__}"
    if "i" in schema and not 0 <= op["i"] < len(ledger):
        return ("unknown_key" if op["i"] == -1 else "index_out_of_range",
                f"slot index {_int_text(op['i'])} out of range 0..{len(ledger) - 1}")
    if form is not None and "o" in schema:
        problem = form.fact_rejection(op["s"], op["p"], op["o"], op.get("w"))
        if problem is not None:
            return problem
    if kind == "ADD":
        if find(ledger, op["s"], op["p"]) is not None:
            return "key_held", f"(s, p) = ({op['s']!r}, {op['p']!r}) already occupies a slot"
        if all(not is_free(slot) for slot in ledger):
            return "budget_full", "no free slot"
        return None
    slot = ledger[op["i"]]
    if is_free(slot):
        return "slot_free", f"slot {op['i']} is free"
    if kind == "UPDATE":
        if (slot["s"], slot["p"]) != (op["s"], op["p"]):
            return ("slot_mismatch",
                    f"slot {op['i']} holds ({slot['s']!r}, {slot['p']!r}), not ({op['s']!r}, {op['p']!r})")
        if slot["o"] == op["o"] and slot.get("w") == op.get("w"):
            return ("update_same_value", f"value unchanged ({op['o']!r})"
                    + ("" if "w" not in op else f" and when unchanged ({op['w']!r})"))
    if kind == "TOMBSTONE" and slot["v"] == 0:
        return "tombstone_dead", f"slot {op['i']} is already tombstoned"
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
        slot = {"i": i, "s": op["s"], "p": op["p"], "o": op["o"]}
        if "w" in op:
            slot["w"] = op["w"]
        slot.update(prev=None, v=1, born=now, t=now, uses=0)
        ledger[i] = slot
    elif kind == "UPDATE":
        old = ledger[op["i"]]
        # The when dates the value it came with: a new value keeps the op's when or none.
        slot = {"i": old["i"], "s": old["s"], "p": old["p"], "o": op["o"]}
        if "w" in op:
            slot["w"] = op["w"]
        slot.update(prev=old["o"], v=1, born=old["born"], t=now, uses=old["uses"])
        ledger[op["i"]] = slot
    elif kind == "TOMBSTONE":
        ledger[op["i"]].update(v=0, t=now)
    else:  # EVICT
        ledger[op["i"]] = {"i": op["i"]}


def reduce(ledger: Ledger, program: Any, now: int, *, strict: bool = True,
           form: LedgerForm | None = None) -> tuple[Ledger, ReduceReport]:
    """Apply ``program`` to ``ledger`` at session ``now``; return (new ledger, report).

    Args:
        ledger: the input ledger; never mutated.
        program: a list of ops (anything else is a single invalid "program").
        now: session index written into ``born`` / ``t``.
        strict: raise on the first invalid op (gold programs, tests) instead of skipping it
            (model output).
        form: the open ledger's form (SPEC §1.7): every fact written must have it, and ADD and
            UPDATE may date it (``w``). None: the closed regime, any strings, no dates.

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
            raise InvalidOpError(-1, program, reason, "not_a_program")
        report.invalid.append((-1, program, reason))
        report.codes.append("not_a_program")
        return out, report
    for pos, op in enumerate(program):
        found = rejection(out, op, form)
        if found is not None:
            code, reason = found
            if strict:
                raise InvalidOpError(pos, op, reason, code)
            report.invalid.append((pos, op, reason))
            report.codes.append(code)
            continue
        _apply(out, op, now)
        report.applied.append(pos)
    return out, report


# --------------------------------------------------------------------------- text forms




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
