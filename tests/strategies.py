"""Hypothesis strategies for ledgers, edit ops and programs, shared by the property tests.

Small on purpose (budget <= 8, programs <= 6 ops, keys and values from tiny pools) so that random
programs hit the interesting cases often: duplicate keys, full ledgers, free and tombstoned slots,
unchanged values. Hypothesis pays per draw (about 0.1 ms), so with 2,000 examples per property
every slot and every op is decoded from a single integer draw (:class:`Picks`) and every string
from a single bytes draw (:func:`unicode_text`). Run the properties that use them with:

    python -m pytest tests/test_ledger.py -q -x
"""

from __future__ import annotations

import functools
import math
from typing import Any

from hypothesis import strategies as st

from clerk.form import LedgerForm
from clerk.ledger import OP_KINDS, reduce

MAX_BUDGET = 8
MAX_OPS = 6
SUBJECTS = ("Ari", "Bo")
PREDICATES = ("job", "city", "pet", "car")
KEYS = tuple((s, p) for s in SUBJECTS for p in PREDICATES)
#: Object values in reducer tests: a tiny pool, so that UPDATEs to the current value happen often.
VALUES = ("chef", "nurse", "", "a|b\n\ud800")
#: Values that break naive text formats: separators, quotes, newlines, JSON syntax, U+2028/U+2029,
#: NUL, a lone surrogate, an emoji and the empty string.
NASTY_VALUES = (
    "chef", "nurse", "", "|", "a|b", '"', "'", "\\", "\n", "x\ny", "\r\n", "\u2028", "\u2029", "\x00",
    "\ud800", "[", "]", "{}", "null", ",", "\U0001f600",
)



# --------------------------------------------------------------------------- cheap draws


class Picks:
    """One item from each of several pools, decoded from a single integer draw (mixed radix).

    Shrinking the integer towards 0 shrinks every field towards the first item of its pool.

    >>> Picks(("a", "b"), (0, 1, 2)).decode(5)
    ('b', 2)
    """

    def __init__(self, *pools: tuple):
        self.pools = pools
        self.codes = st.integers(0, math.prod(len(pool) for pool in pools) - 1)

    def decode(self, code: int) -> tuple:
        out = []
        for pool in self.pools:
            code, r = divmod(code, len(pool))
            out.append(pool[r])
        return tuple(out)

    def draw(self, draw: st.DrawFn) -> tuple:
        return self.decode(draw(self.codes))


def _bmp_chars(data: bytes) -> str:
    """Two bytes per character: odd first byte -> the Latin-1 character of the second byte (ASCII
    punctuation, controls, NUL), even -> any BMP code point, lone surrogates included.

    >>> _bmp_chars(bytes([1, 0x7c, 0xd8, 0x00, 0x20, 0x28]))
    '|\\ud800\\u2028'
    """
    return "".join(chr(b) if a & 1 else chr(a << 8 | b) for a, b in zip(data[0::2], data[1::2]))


def unicode_text(max_chars: int) -> st.SearchStrategy[str]:
    """Arbitrary BMP text, lone surrogates included, from one ``binary`` draw (``st.text`` pays a
    draw per character)."""
    return st.binary(max_size=2 * max_chars).map(_bmp_chars)


def alphabet_text(alphabet: str, max_chars: int) -> st.SearchStrategy[str]:
    """Text over ``alphabet`` (one character per byte), from one ``binary`` draw."""
    return st.binary(max_size=max_chars).map(lambda data: "".join(alphabet[b % len(alphabet)] for b in data))


def _four_strings(data: bytes) -> tuple[str, str, str, str]:
    """Cut arbitrary text (see :func:`_bmp_chars`) into four quarters: s, p, o, prev.

    >>> _four_strings(bytes([1, 97, 1, 98, 1, 99, 1, 100]))
    ('a', 'b', 'c', 'd')
    """
    text = _bmp_chars(data)
    k = len(text)
    return text[: k // 4], text[k // 4 : k // 2], text[k // 2 : 3 * k // 4], text[3 * k // 4 :]


any_text = unicode_text(8)
#: Picks an item of a list built at draw time (index modulo length): one cached strategy, so no
#: strategy is built and validated per draw.
CHOOSER = st.integers(0, 2**16)


def choose(draw: st.DrawFn, items: Any) -> Any:
    """One of ``items`` (a non-empty sequence), with a single draw."""
    return items[draw(CHOOSER) % len(items)]


# --------------------------------------------------------------------------- JSON-like junk

json_scalars = st.none() | st.booleans() | st.integers(-3, 12) | st.floats() | st.text(max_size=4)
#: Junk that ``parse_program`` can hand the reducer: a fixed pool of nested values plus scalars
#: (``st.recursive`` costs several ms per example, too slow for 2,000-example properties).
JUNK = (
    None, True, False, 0, 1, -1, 2.5, float("inf"), float("nan"), "", "ADD", "0", [], [0], [[[]]], {},
    {"op": "ADD"}, {"i": 0}, ["EVICT", 0], [{"op": "EVICT", "i": 0}], {"a": [1, {"b": None}]}, {"": ""},
)
json_values = st.sampled_from(JUNK) | json_scalars
#: JUNK without NaN (NaN != NaN breaks equality-based round trips).
comparable_junk = st.sampled_from([x for x in JUNK if x == x])


# --------------------------------------------------------------------------- ledgers

#: (key, o, prev, v, born, t, uses) of a slot; key None (a third of the time) means a free slot.
SLOT = Picks(
    (None,) * (len(KEYS) // 2) + KEYS, VALUES, (None,) + NASTY_VALUES, (0, 1),
    tuple(range(7)), tuple(range(7)), tuple(range(5)),
)
#: (budget, fill, key rotation): a third of the ledgers are full, with rotated distinct keys.
SHAPE = Picks(tuple(range(1, MAX_BUDGET + 1)), ("mixed", "mixed", "full"), tuple(range(len(KEYS))))
#: Four arbitrary strings (s, p, o, prev) for one slot, from a single draw.
slot_strings = st.binary(max_size=48).map(_four_strings)


def occupied_slot(i: int, subject: str, pred: str, fields: tuple) -> dict[str, Any]:
    """An occupied slot at index ``i``, every field in file order."""
    o, prev, v, born, t, uses = fields
    return {"i": i, "s": subject, "p": pred, "o": o, "prev": prev, "v": v, "born": born, "t": t, "uses": uses}


@st.composite
def ledgers(draw: st.DrawFn, key_text: bool = False) -> list:
    """A well-formed ledger of 1..8 slots, free and occupied mixed, (s, p) keys unique.

    With ``key_text`` subjects, predicates and values are arbitrary unicode too (serialization
    tests); otherwise they come from tiny pools so that ops collide with existing keys and values.
    """
    ledger, keys = [], set()
    budget, fill, rotation = SHAPE.draw(draw)
    for i in range(budget):
        key, *fields = SLOT.draw(draw)
        if fill == "full":  # budget <= len(KEYS), so rotated keys are distinct
            key = KEYS[(rotation + i) % len(KEYS)]
        if key_text and key is not None:
            s, p, o, prev = draw(slot_strings)
            key, fields[0] = (s, p), o + fields[0]  # arbitrary text, then a pool value ("a|b\n...")
            if fields[1] is not None and fields[2]:  # live slots: arbitrary prev; else nulls and NASTY_VALUES
                fields[1] = prev
        if key is None or key in keys:  # a repeated key would make the ledger invalid: leave it free
            ledger.append({"i": i})
            continue
        keys.add(key)
        ledger.append(occupied_slot(i, key[0], key[1], tuple(fields)))
    return ledger


# --------------------------------------------------------------------------- ops and programs

#: (kind, index offset, s, p, o, breakage) of an op (see :func:`_index` for the offset); "ok"
#: (four sevenths) leaves the op well formed.
OP = Picks(
    OP_KINDS, tuple(range(4 * MAX_BUDGET + 3)), SUBJECTS + ("\ud800",), PREDICATES, VALUES,
    ("ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "kind", "drop", "retype", "extra", "not_dict", "wrap"),
)
#: Unknown kinds, unhashable ones (lists, objects) included.
BAD_KINDS = st.sampled_from(("add", "DELETE", "", "EVICT ")) | json_values
#: True is an int subclass and 1.0 == 1: both must still be rejected as an index.
BAD_FIELD_VALUES = st.sampled_from((True, 1.0, "0", None, [0])) | json_values
EXTRA_FIELDS = st.sampled_from(("x", "uses", "v", "i", "o"))


def _index(offset: int, budget: int) -> int:
    """Slot index from a drawn offset: 0..budget-1 mostly, else -1, budget or budget + 5.

    >>> [_index(k, 2) for k in range(12)]
    [0, 1, 0, 1, 0, 1, 0, 1, -1, 2, 7, 0]
    """
    k = offset % (4 * budget + 3)
    return k % budget if k < 4 * budget else (-1, budget, budget + 5)[k - 4 * budget]


@st.composite
def ops(draw: st.DrawFn, budget: int) -> Any:
    """A program element: mostly a well-formed op (valid or not for the ledger's state), sometimes
    a broken one (unknown kind, a field missing, mistyped or extra) or not an op at all."""
    kind, offset, s, p, o, how = OP.draw(draw)
    i = _index(offset, budget)
    op = {"ADD": {"op": kind, "s": s, "p": p, "o": o}, "UPDATE": {"op": kind, "i": i, "s": s, "p": p, "o": o}}.get(
        kind, {"op": kind, "i": i}
    )
    if how == "kind":
        op["op"] = draw(BAD_KINDS)
    elif how == "drop":
        op.pop(choose(draw, sorted(op)))
    elif how == "retype":
        op[choose(draw, sorted(set(op) - {"op"}))] = draw(BAD_FIELD_VALUES)
    elif how == "extra":
        op[draw(EXTRA_FIELDS)] = draw(json_values)
    elif how == "not_dict":
        return draw(json_values)
    elif how == "wrap":
        return [op]
    return op


_ops_for = functools.lru_cache(maxsize=None)(ops)
NOT_LISTS = st.sampled_from(({}, "[]", 7, None, ("ADD",), {"op": "EVICT", "i": 0}))
PROGRAM_LENGTHS = st.integers(-1, MAX_OPS)


@st.composite
def programs(draw: st.DrawFn, budget: int) -> Any:
    """A list of up to 6 program elements, or now and then something that is not a list at all."""
    # A length draw then one draw per element: cheaper than st.lists' per-element bookkeeping.
    n = draw(PROGRAM_LENGTHS)
    if n < 0:
        return draw(NOT_LISTS)
    element = _ops_for(budget)
    return [draw(element) for _ in range(n)]


@st.composite
def valid_programs(draw: st.DrawFn, ledger: list) -> list[dict[str, Any]]:
    """A program whose every op is valid in sequence, built from the SPEC op table's conditions.

    Each step picks an op kind that the current state allows (ADD needs a free slot and a fresh
    key; UPDATE an occupied slot and a new value; TOMBSTONE a live slot; EVICT an occupied one),
    then advances the state with the strict reducer.
    """
    program, state = [], ledger
    for _ in range(draw(PROGRAM_LENGTHS)):
        taken = [slot for slot in state if "s" in slot]
        live = [slot for slot in taken if slot["v"] == 1]
        fresh = [key for key in KEYS if all((x["s"], x["p"]) != key for x in taken)]
        choices = []
        if fresh and len(taken) < len(state):
            choices.append("ADD")
        if taken:
            choices += ["UPDATE", "EVICT"]
        if live:
            choices.append("TOMBSTONE")
        if not choices:
            break
        kind = choose(draw, choices)
        if kind == "ADD":
            s, p = choose(draw, fresh)
            op = {"op": "ADD", "s": s, "p": p, "o": choose(draw, VALUES)}
        elif kind == "UPDATE":
            slot = choose(draw, taken)
            new = choose(draw, [o for o in VALUES if o != slot["o"]])
            op = {"op": "UPDATE", "i": slot["i"], "s": slot["s"], "p": slot["p"], "o": new}
        else:
            op = {"op": kind, "i": choose(draw, live if kind == "TOMBSTONE" else taken)["i"]}
        program.append(op)
        state, _ = reduce(state, [op], now=0)
    return program


# --------------------------------------------------------------------------- open ledgers (SPEC §1.7)

#: Forms the open-ledger properties run under: one subject; two; two with a closed catalogue of
#: keys; two with a short value cap.
OPEN_FORMS = (
    LedgerForm(("Jo",)),
    LedgerForm(("Jo", "Al")),
    LedgerForm(("Jo", "Al"), keys=("job", "went_to_paris", "k_2nd_job")),
    LedgerForm(("Jo", "Al"), max_value_chars=6),
)
#: Keys in normal form (``pet`` is outside the catalogue form's keys) and keys that are not.
OPEN_KEYS = ("job", "went_to_paris", "k_2nd_job", "pet")
BAD_KEYS = ("Job", "a__b", "trailing_", "2nd_job", "x" * 33, "", "caf\u00e9")
#: Values on one line of at most 6 characters, and values that are not on one line.
OPEN_VALUES = ("chef", "a cat", "Paris", "x")
BAD_VALUES = ("", " cat", "cat ", "a\nb", "a\u2028b", "x" * 61, "a long value")
#: Whens in normal form (None: an undated fact), and whens that are not.
WHENS = (None, "2023", "2023-05", "2023-05-07", "2024-02-29")
BAD_WHENS = ("2023-02-29", "2023-5-7", "", "May 2023", "1900-02-29")
OPEN_SUBJECTS = ("Jo", "Al", "Bo", "Mary Ann", "")
#: (subject pick, key, value, when, prev, v, born, t, uses) of an open slot; free a third of the time.
OPEN_SLOT = Picks(
    (None, None, 0, 0, 1, 1), OPEN_KEYS, OPEN_VALUES, WHENS, (None,) + OPEN_VALUES, (0, 1),
    tuple(range(5)), tuple(range(5)), tuple(range(4)),
)
#: (kind, index offset, subject, key, value, when, breakage) of an open op.
OPEN_OP = Picks(
    OP_KINDS, tuple(range(4 * MAX_BUDGET + 3)), OPEN_SUBJECTS[:2] * 3 + OPEN_SUBJECTS,
    OPEN_KEYS * 3 + BAD_KEYS, OPEN_VALUES * 3 + BAD_VALUES, WHENS * 3 + BAD_WHENS + (7,),
    ("ok",) * 10 + ("drop", "retype", "extra", "not_dict"),
)


def open_slot(i: int, subject: str, key: str, value: str, when: str | None, rest: tuple) -> dict[str, Any]:
    """An occupied slot of an open ledger, ``w`` present only for a dated fact, every field in file order."""
    prev, v, born, t, uses = rest
    slot = {"i": i, "s": subject, "p": key, "o": value}
    if when is not None:
        slot["w"] = when
    slot.update(prev=prev, v=v, born=born, t=t, uses=uses)
    return slot


@st.composite
def open_ledgers(draw: st.DrawFn, form: LedgerForm) -> list:
    """A ledger valid under ``form`` (:func:`clerk.ledger.validate_ledger`): 1..8 slots, free and
    occupied mixed, facts of the form's subjects and keys (the catalogue's when it has one)."""
    budget = draw(st.integers(1, MAX_BUDGET))
    keys = form.keys or OPEN_KEYS
    ledger, taken = [], set()
    for i in range(budget):
        who, key, value, when, *rest = OPEN_SLOT.draw(draw)
        subject = None if who is None else form.subjects[who % len(form.subjects)]
        key = keys[OPEN_KEYS.index(key) % len(keys)]
        if subject is None or (subject, key) in taken:
            ledger.append({"i": i})
            continue
        taken.add((subject, key))
        ledger.append(open_slot(i, subject, key, value, when, tuple(rest)))
    return ledger


@st.composite
def open_ops(draw: st.DrawFn, budget: int) -> Any:
    """A program element for an open ledger: mostly a well-shaped op whose subject, key, value and
    when may each be of the form or not, sometimes a broken one or not an op at all."""
    kind, offset, s, p, o, w, how = OPEN_OP.draw(draw)
    i = _index(offset, budget)
    if kind in ("ADD", "UPDATE"):
        op = {"op": kind, "s": s, "p": p, "o": o} if kind == "ADD" else {"op": kind, "i": i, "s": s, "p": p, "o": o}
        if w is not None:
            op["w"] = w
    else:
        op = {"op": kind, "i": i}
    if how == "drop":
        op.pop(choose(draw, sorted(op)))
    elif how == "retype":
        op[choose(draw, sorted(set(op) - {"op"}))] = draw(BAD_FIELD_VALUES)
    elif how == "extra":
        op[draw(EXTRA_FIELDS)] = draw(json_values)
    elif how == "not_dict":
        return draw(json_values)
    return op


@st.composite
def open_programs(draw: st.DrawFn, budget: int) -> list:
    """A list of up to 6 open program elements."""
    element = open_ops(budget)
    return [draw(element) for _ in range(draw(st.integers(0, MAX_OPS)))]


@st.composite
def valid_open_programs(draw: st.DrawFn, ledger: list, form: LedgerForm) -> list[dict[str, Any]]:
    """A program whose every op is valid in sequence under ``form`` (as :func:`valid_programs`),
    its ADDs and UPDATEs dated or not."""
    keys = form.keys or OPEN_KEYS
    values = [v for v in OPEN_VALUES if len(v) <= form.max_value_chars]
    program, state = [], ledger
    for _ in range(draw(PROGRAM_LENGTHS)):
        taken = [slot for slot in state if "s" in slot]
        live = [slot for slot in taken if slot["v"] == 1]
        fresh = [(s, k) for s in form.subjects for k in keys if all((x["s"], x["p"]) != (s, k) for x in taken)]
        choices = (["ADD"] if fresh and len(taken) < len(state) else []) + (["UPDATE", "EVICT"] if taken else [])
        choices += ["TOMBSTONE"] if live else []
        if not choices:
            break
        kind, when = choose(draw, choices), choose(draw, WHENS)
        if kind == "ADD":
            s, p = choose(draw, fresh)
            op = {"op": "ADD", "s": s, "p": p, "o": choose(draw, values)}
        elif kind == "UPDATE":
            slot = choose(draw, taken)
            op = {"op": "UPDATE", "i": slot["i"], "s": slot["s"], "p": slot["p"],
                  "o": choose(draw, [o for o in values if o != slot["o"]])}
        else:
            op = {"op": kind, "i": choose(draw, live if kind == "TOMBSTONE" else taken)["i"]}
        if kind in ("ADD", "UPDATE") and when is not None:
            op["w"] = when
        program.append(op)
        state, _ = reduce(state, [op], now=0, form=form)
    return program
