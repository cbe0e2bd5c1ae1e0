"""Compile-time repair (clerk/repair.py) and the clerk-repair system.

    python -m pytest tests/test_repair.py -q
"""

from __future__ import annotations

import doctest

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import ledgers, programs, valid_programs

import clerk.repair
from clerk import ledger as L
from clerk.repair import REPAIRED, repair


def _codes(ledger, program) -> list[str]:
    _, report = L.reduce(ledger, program, 3, strict=False)
    return list(report.codes)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_no_repaired_rejection_survives(data):
    """After repair the lenient reducer meets none of the five rejections it answers; every other
    rejection is still there, as often as the ops that carry it (nothing is hidden)."""
    ledger = data.draw(ledgers())
    program = data.draw(programs(len(ledger)))
    fixed, codes = repair(ledger, program, 3)
    after = _codes(ledger, fixed)
    assert not set(after) & set(REPAIRED)
    assert all(code in REPAIRED for code in codes)
    if not isinstance(program, list):
        assert fixed == program and codes == []


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_valid_program_is_left_alone(data):
    ledger = data.draw(ledgers())
    program = data.draw(valid_programs(ledger))
    assert repair(ledger, program, 3) == (program, [])


def test_each_rule():
    """The five rewrites, one at a time (the guard: without repair each op is rejected)."""
    led = L.reduce(L.empty_ledger(2), [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"},
                                        {"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}], 0)[0]
    led = L.reduce(led, [{"op": "TOMBSTONE", "i": 1}], 1)[0]
    cases = {
        "key_held": ([{"op": "ADD", "s": "Ari", "p": "job", "o": "chef"}],
                     [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}]),
        "update_same_value": ([{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "nurse"}], []),
        "tombstone_dead": ([{"op": "TOMBSTONE", "i": 1}], []),
        "budget_full": ([{"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"}],
                        [{"op": "EVICT", "i": L.least_salient(led)}, {"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"}]),
    }
    unknown = {
        "UPDATE": ([{"op": "UPDATE", "i": -1, "s": "Ari", "p": "car", "o": "Fiat"}],
                   [{"op": "EVICT", "i": L.least_salient(led)}, {"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"}],
                   ["unknown_key", "budget_full"]),
        "TOMBSTONE": ([{"op": "TOMBSTONE", "i": -1}], [], ["unknown_key"]),
        "EVICT": ([{"op": "EVICT", "i": -1}], [], ["unknown_key"]),
    }
    for program, expected, codes in unknown.values():
        assert _codes(led, program) == ["unknown_key"]
        assert repair(led, program, 2) == (expected, codes)
        assert _codes(led, expected) == []
    # with a free slot the UPDATE of an unheld key is just its ADD
    roomy = L.reduce(L.empty_ledger(3), [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}], 0)[0]
    assert repair(roomy, unknown["UPDATE"][0], 2) == ([{"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"}], ["unknown_key"])
    for code, (program, expected) in cases.items():
        assert _codes(led, program) == [code]
        assert repair(led, program, 2) == (expected, [code])
        assert _codes(led, expected) == []
    # an ADD restating the live value is dropped, not turned into an UPDATE to the same value
    assert repair(led, [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}], 2) == ([], ["key_held"])
    # an ADD of a tombstoned key: a new value updates it; the retracted value itself replaces the slot
    assert repair(led, [{"op": "ADD", "s": "Ari", "p": "pet", "o": "dog"}], 2)[0][0]["op"] == "UPDATE"
    assert [op["op"] for op in repair(led, [{"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}], 2)[0]] == ["EVICT", "ADD"]


def test_doctests():
    assert doctest.testmod(clerk.repair).failed == 0
