"""The reducer's rejection codes (SPEC §1.3): one example per code, every code of the declared set
reached, every rejection coded, and the codes leave the reducer's results as they were.

    python -m pytest tests/test_rejection_codes.py -q
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import ledgers, open_ledgers, open_programs, programs

from clerk import ledger as L
from clerk.form import FACT_CODES, LedgerForm

PROPERTY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TWO = LedgerForm(("Jo", "Al"), keys=None)
ONLY = LedgerForm(("Jo",), keys=("job", "city"))


def occ(i, s="Ari", p="job", o="chef", v=1, **extra):
    return {"i": i, "s": s, "p": p, "o": o, **extra, "prev": None, "v": v, "born": 0, "t": 0, "uses": 0}


FULL = [occ(0), occ(1, p="city", o="Oslo")]
HALF = [occ(0), {"i": 1}]
DEAD = [occ(0, v=0), {"i": 1}]
DATED = [occ(0, s="Jo", p="trip", o="Paris", w="2023-05"), {"i": 1}]

#: code -> (ledger, program, form, message): the first op of ``program`` is rejected with
#: ``code`` and exactly ``message``.
CASES = {
    "not_a_program": (HALF, {"op": "EVICT", "i": 0}, None, "a program must be a JSON list, got dict"),
    "unparsed_line": (HALF, ["MOVE job chef"], None, "an op must be a JSON object, got str"),
    "not_an_object": (HALF, [7], None, "an op must be a JSON object, got int"),
    "unknown_op": (HALF, [{"op": "DELETE", "i": 0}], None,
                   "unknown op 'DELETE' (expected one of ADD, UPDATE, TOMBSTONE, EVICT)"),
    "extra_field": (HALF, [{"op": "EVICT", "i": 0, "why": "x"}], None, "unexpected field(s) ['why'] for EVICT"),
    "missing_field": (HALF, [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job"}], None, "missing field 'o'"),
    "wrong_type": (HALF, [{"op": "EVICT", "i": True}], None, "field 'i' must be int, got bool"),
    "unknown_key": (HALF, [{"op": "TOMBSTONE", "i": -1}], None, "slot index -1 out of range 0..1"),
    "index_out_of_range": (HALF, [{"op": "EVICT", "i": 2}], None, "slot index 2 out of range 0..1"),
    "subject_unknown": (L.empty_ledger(2), [{"op": "ADD", "s": "Bo", "p": "pet", "o": "cat"}], TWO,
                        "subject 'Bo' is not one of the ledger's subjects ('Jo', 'Al')"),
    "key_not_normal": (L.empty_ledger(2), [{"op": "ADD", "s": "Jo", "p": "Pet", "o": "cat"}], TWO,
                       "key 'Pet' is not in normal form (lower-case a-z/0-9 words joined by '_', a letter first, "
                       "<= 32 characters)"),
    "key_not_allowed": (L.empty_ledger(2), [{"op": "ADD", "s": "Jo", "p": "pet", "o": "cat"}], ONLY,
                        "key 'pet' is not one of the form's 2 allowed keys"),
    "value_malformed": (L.empty_ledger(2), [{"op": "ADD", "s": "Jo", "p": "pet", "o": " cat"}], TWO,
                        "value ' cat' is not one line of 1-60 characters without outer whitespace"),
    "when_malformed": (L.empty_ledger(2), [{"op": "ADD", "s": "Jo", "p": "pet", "o": "cat", "w": "2023-02-30"}],
                       TWO, "when '2023-02-30' is not a date YYYY, YYYY-MM or YYYY-MM-DD that exists "
                       "(years 1000-2999)"),
    "key_held": (HALF, [{"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}], None,
                 "(s, p) = ('Ari', 'job') already occupies a slot"),
    "budget_full": (FULL, [{"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}], None, "no free slot"),
    "slot_free": (HALF, [{"op": "EVICT", "i": 1}], None, "slot 1 is free"),
    "slot_mismatch": (FULL, [{"op": "UPDATE", "i": 1, "s": "Ari", "p": "job", "o": "cook"}], None,
                      "slot 1 holds ('Ari', 'city'), not ('Ari', 'job')"),
    "update_same_value": (DATED, [{"op": "UPDATE", "i": 0, "s": "Jo", "p": "trip", "o": "Paris", "w": "2023-05"}],
                          TWO, "value unchanged ('Paris') and when unchanged ('2023-05')"),
    "tombstone_dead": (DEAD, [{"op": "TOMBSTONE", "i": 0}], None, "slot 0 is already tombstoned"),
}


def test_every_declared_code_has_a_case():
    """The examples cover the declared set exactly, which holds no duplicate."""
    assert sorted(CASES) == sorted(L.REJECTION_CODES) and len(set(L.REJECTION_CODES)) == len(L.REJECTION_CODES)
    assert set(FACT_CODES) <= set(L.REJECTION_CODES)


@pytest.mark.parametrize("code", L.REJECTION_CODES)
def test_code(code):
    """The op is rejected with its code beside the unchanged message, in both modes; its verdict
    is the code; the reducer leaves the ledger as it was."""
    ledger, program, form, message = CASES[code]
    out, report = L.reduce(ledger, program, 3, strict=False, form=form)
    assert report.codes == [code] and [reason for _, _, reason in report.invalid] == [message]
    assert report.applied == [] and out == ledger
    assert report.verdicts(len(program) if isinstance(program, list) else 1) == [code]
    with pytest.raises(L.InvalidOpError) as err:
        L.reduce(ledger, program, 3, strict=True, form=form)
    assert (err.value.code, err.value.reason) == (code, message)
    if isinstance(program, list):
        assert L.rejection(ledger, program[0], form) == (code, message)
        assert L.check_op(ledger, program[0], form) == message


def test_same_value_without_when():
    """A closed ledger's unchanged value: the same code, the message without a when."""
    op = {"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}
    assert L.rejection(HALF, op) == ("update_same_value", "value unchanged ('chef')")


def test_verdicts_follow_positions():
    """Verdicts sit at the rejected ops' positions; applied ops read ``applied``."""
    program = [{"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}, {"op": "ADD", "s": "Ari", "p": "age", "o": "9"},
               "junk", {"op": "EVICT", "i": 0}, {"op": "EVICT", "i": 0}]
    _, report = L.reduce(HALF, program, 1, strict=False)
    assert report.verdicts(len(program)) == ["applied", "budget_full", "unparsed_line", "applied", "slot_free"]


@st.composite
def closed_case(draw):
    ledger = draw(ledgers())
    return ledger, draw(programs(len(ledger))), None


@st.composite
def open_case(draw):
    ledger = draw(open_ledgers(TWO))
    return ledger, draw(open_programs(len(ledger))), TWO


class TestEveryRejectionIsCoded:
    @PROPERTY
    @given(closed_case() | open_case())
    def test_codes_match_rejections(self, case):
        """Every skipped op carries one code of the declared set, the one :func:`rejection` gives
        for it against the ledger as it stood; strict mode raises the first with its code."""
        ledger, program, form = case
        out, report = L.reduce(ledger, program, 5, strict=False, form=form)
        assert len(report.codes) == len(report.invalid)
        assert set(report.codes) <= set(L.REJECTION_CODES)
        if not isinstance(program, list):
            assert report.codes == ["not_a_program"]
            return
        current = ledger
        codes = iter(report.codes)
        for op in program:
            found = L.rejection(current, op, form)
            if found is None:
                current, _ = L.reduce(current, [op], 5, form=form)
            else:
                assert next(codes) == found[0]
        assert current == out and next(codes, None) is None
        verdicts = report.verdicts(len(program))
        assert [k for k, v in enumerate(verdicts) if v == "applied"] == report.applied
        if report.invalid:
            with pytest.raises(L.InvalidOpError) as err:
                L.reduce(ledger, program, 5, strict=True, form=form)
            assert err.value.code == report.codes[0]
