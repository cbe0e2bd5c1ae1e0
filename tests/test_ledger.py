"""Tests of clerk/ledger.py (SPEC §1): Hypothesis properties of the reducer, parser, serializer and
salience, plus one example test per row of the SPEC op table with exact reasons.

    python -m pytest tests/test_ledger.py -q -x
"""

from __future__ import annotations

import copy
import doctest
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import alphabet_text, any_text, comparable_junk, ledgers, programs, unicode_text, valid_programs

import clerk.ledger
from clerk.ledger import (
    InvalidOpError,
    ReduceReport,
    check_op,
    deserialize,
    dumps,
    empty_ledger,
    find,
    least_salient,
    occupied,
    parse_program,
    record_use,
    reduce,
    salience_key,
    serialize,
    validate_ledger,
)

# 1,000 examples per property in the default run; each example is a few small dicts, so the
# whole file stays well under a minute. No deadline: the box is shared and timing is noisy.
PROPERTY = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def occ(i, s="Ari", p="job", o="chef", prev=None, v=1, born=0, t=0, uses=0):
    """An occupied slot in file format."""
    return {"i": i, "s": s, "p": p, "o": o, "prev": prev, "v": v, "born": born, "t": t, "uses": uses}


@st.composite
def ledger_and_program(draw):
    ledger = draw(ledgers())
    return ledger, draw(programs(len(ledger))), draw(st.integers(0, 20))


@st.composite
def ledger_and_valid_program(draw):
    ledger = draw(ledgers())
    return ledger, draw(valid_programs(ledger)), draw(st.integers(0, 20))


def strict_error(ledger, program, now):
    """The InvalidOpError the strict reducer raises, or None when it applies the program."""
    try:
        reduce(ledger, program, now, strict=True)
    except InvalidOpError as err:
        return err
    return None


# --------------------------------------------------------------------------- properties


class TestReduceProperties:
    @PROPERTY
    @given(ledger_and_program())
    def test_lenient_never_raises_stays_valid_and_mutates_nothing(self, case):
        """Lenient reduce of any ledger and program returns a valid ledger of the same budget,
        accounts for every position, and leaves its inputs untouched."""
        ledger, program, now = case
        ledger_copy, program_copy = copy.deepcopy(ledger), copy.deepcopy(program)
        out, report = reduce(ledger, program, now, strict=False)
        validate_ledger(out)
        assert len(out) == len(ledger)
        assert len(occupied(out)) <= len(ledger)
        if isinstance(program, list):
            skipped = [pos for pos, _, _ in report.invalid]
            assert sorted(report.applied + skipped) == list(range(len(program)))
            assert all(program[pos] is op for pos, op, _ in report.invalid)
        else:
            assert report.applied == [] and [pos for pos, _, _ in report.invalid] == [-1]
            assert out == ledger
        assert ledger == ledger_copy
        assert program == program_copy

    @PROPERTY
    @given(ledger_and_program())
    def test_strict_raises_on_first_lenient_skip(self, case):
        """Strict reduce fails on exactly the first op lenient reduce skips (same position, op and
        reason), the applied ops alone pass strict reduce with the lenient result, and strict
        reduce mutates nothing either."""
        ledger, program, now = case
        lenient, report = reduce(ledger, program, now, strict=False)
        ledger_copy, program_copy = copy.deepcopy(ledger), copy.deepcopy(program)
        err = strict_error(ledger, program, now)
        assert ledger == ledger_copy
        assert program == program_copy
        if report.invalid:
            position, op, reason = report.invalid[0]
            assert err is not None
            assert (err.position, err.reason) == (position, reason)
            assert err.op is op
        else:
            assert err is None
            assert reduce(ledger, program, now, strict=True)[0] == lenient
        if isinstance(program, list):
            kept = [program[pos] for pos in report.applied]
            assert reduce(ledger, kept, now, strict=True)[0] == lenient

    @PROPERTY
    @given(ledger_and_valid_program())
    def test_strict_and_lenient_agree_on_valid_programs(self, case):
        """A program of valid ops is applied in full, identically, by both modes."""
        ledger, program, now = case
        strict_out, strict_report = reduce(ledger, program, now, strict=True)
        lenient_out, lenient_report = reduce(ledger, program, now, strict=False)
        assert strict_out == lenient_out
        validate_ledger(strict_out)
        assert strict_report == lenient_report == ReduceReport(applied=list(range(len(program))), invalid=[])


_bracket_soup = alphabet_text('[]{}",:0123-.eE \n`tnulrafs\\\x00\ud800', 40)


@st.composite
def junk_programs(draw):
    """A list of up to 4 JSON-like values (no NaN, so equality works)."""
    return [draw(comparable_junk) for _ in range(draw(st.integers(0, 4)))]


class TestParseProgramProperties:
    @PROPERTY
    @given(unicode_text(40) | _bracket_soup | st.binary(max_size=40))
    def test_never_raises_and_returns_a_list(self, text):
        """Any text or bytes parse to a list, empty exactly when an error is recorded."""
        result = parse_program(text)
        assert isinstance(result.program, list)
        assert result.failed == (result.error is not None)
        if result.failed:
            assert result.program == []

    @PROPERTY
    @given(junk_programs(), unicode_text(12), any_text)
    def test_finds_the_list_among_chatter_and_fences(self, program, before, after):
        """A program written in a code fence between arbitrary chatter (no '[' before it) parses back exactly."""
        before = before.replace("[", "")
        text = f"{before}```json\n{dumps(program)}\n```{after}"
        assert parse_program(text).program == program


class TestSerializeProperties:
    @PROPERTY
    @given(ledgers(key_text=True))
    def test_round_trip(self, ledger):
        """deserialize(serialize(L)) == L for every ledger, free slots and any unicode values included."""
        text = serialize(ledger)
        assert deserialize(text) == ledger
        n_occupied = len(occupied(ledger))
        assert len(text.split("\n")) == 1 + (1 + n_occupied if n_occupied else 0)  # free line, subject, slots


class TestSalienceProperties:
    @PROPERTY
    @given(ledgers(), st.integers(0, 2**32))
    def test_total_order_and_least_salient(self, ledger, shuffle_seed):
        """Salience keys of occupied slots are distinct (a total order, whatever the input order), and
        least_salient picks the slot no other beats on fewer uses, then older t, then lower i."""
        slots = occupied(ledger)
        keys = [salience_key(slot) for slot in slots]
        assert len(set(keys)) == len(keys)
        shuffled = slots[:]
        random.Random(shuffle_seed).shuffle(shuffled)
        assert sorted(shuffled, key=salience_key) == sorted(slots, key=salience_key)
        if not slots:
            with pytest.raises(ValueError, match="^no occupied slot to evict$"):
                least_salient(ledger)
            return
        m = ledger[least_salient(ledger)]
        for x in slots:
            if x is m:
                continue
            assert x["uses"] > m["uses"] or (
                x["uses"] == m["uses"] and (x["t"] > m["t"] or (x["t"] == m["t"] and x["i"] > m["i"]))
            )

    @PROPERTY
    @given(ledgers(), st.sampled_from(("Ari", "Bo", "Cy")), st.sampled_from(("job", "city", "pet")))
    def test_record_use_increments_one_slot(self, ledger, subject, pred):
        """record_use adds one to the matching slot's uses only, and leaves its input alone."""
        before = copy.deepcopy(ledger)
        out = record_use(ledger, subject, pred)
        assert ledger == before
        idx = find(ledger, subject, pred)
        expected = copy.deepcopy(ledger)
        if idx is not None:
            expected[idx]["uses"] += 1
        assert out == expected


# --------------------------------------------------------------------------- the SPEC op table


class TestAdd:
    def test_fills_lowest_free_slot(self):
        """ADD fills the lowest-index free slot with v=1, born=t=now, uses=0, prev=null."""
        ledger = [occ(0), {"i": 1}, {"i": 2}]
        out, report = reduce(ledger, [{"op": "ADD", "s": "Ari", "p": "city", "o": "Oslo"}], now=5)
        assert out == [occ(0), occ(1, p="city", o="Oslo", born=5, t=5), {"i": 2}]
        assert report == ReduceReport(applied=[0], invalid=[])

    def test_no_free_slot(self):
        """ADD on a full ledger is invalid: 'no free slot'."""
        assert check_op([occ(0)], {"op": "ADD", "s": "Bo", "p": "pet", "o": "cat"}) == "no free slot"

    def test_key_already_present(self):
        """ADD of an (s, p) that an occupied slot holds is invalid, even when that slot is tombstoned."""
        for v in (1, 0):
            reason = check_op([occ(0, v=v), {"i": 1}], {"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"})
            assert reason == "(s, p) = ('Ari', 'job') already occupies a slot"

    def test_freed_key_can_be_added_again(self):
        """After EVICT the same (s, p) may be added again, into the lowest free slot."""
        program = [{"op": "EVICT", "i": 0}, {"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"}]
        out, _ = reduce([occ(0, uses=3, t=1), {"i": 1}], program, now=2)
        assert out == [occ(0, o="nurse", born=2, t=2), {"i": 1}]


class TestUpdate:
    def test_supersedes(self):
        """UPDATE sets prev=o_old, o=new, v=1, t=now and keeps born and uses."""
        ledger = [occ(0, o="chef", prev="nurse", v=1, born=1, t=2, uses=3)]
        out, _ = reduce(ledger, [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "pilot"}], now=7)
        assert out == [occ(0, o="pilot", prev="chef", v=1, born=1, t=7, uses=3)]

    def test_revives_a_tombstoned_slot(self):
        """UPDATE of a tombstoned slot with a new value makes it true again (v=1)."""
        out, _ = reduce([occ(0, v=0, t=1)], [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "pilot"}], now=3)
        assert out == [occ(0, o="pilot", prev="chef", v=1, t=3)]

    def test_slot_free(self):
        """UPDATE of a free slot is invalid."""
        assert check_op([occ(0), {"i": 1}], {"op": "UPDATE", "i": 1, "s": "Ari", "p": "job", "o": "x"}) == "slot 1 is free"

    def test_key_differs(self):
        """UPDATE naming another (s, p) than the slot holds is invalid."""
        reason = check_op([occ(0)], {"op": "UPDATE", "i": 0, "s": "Ari", "p": "city", "o": "Oslo"})
        assert reason == "slot 0 holds ('Ari', 'job'), not ('Ari', 'city')"

    def test_value_unchanged(self):
        """UPDATE to the value the slot already holds is invalid."""
        assert check_op([occ(0)], {"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}) == "value unchanged ('chef')"


class TestTombstone:
    def test_retracts(self):
        """TOMBSTONE sets v=0, t=now and keeps o, prev, born and uses."""
        out, _ = reduce([occ(0, prev="nurse", born=1, t=2, uses=4)], [{"op": "TOMBSTONE", "i": 0}], now=6)
        assert out == [occ(0, prev="nurse", v=0, born=1, t=6, uses=4)]

    def test_slot_free(self):
        """TOMBSTONE of a free slot is invalid."""
        assert check_op([{"i": 0}], {"op": "TOMBSTONE", "i": 0}) == "slot 0 is free"

    def test_already_tombstoned(self):
        """TOMBSTONE of a tombstoned slot is invalid."""
        assert check_op([occ(0, v=0)], {"op": "TOMBSTONE", "i": 0}) == "slot 0 is already tombstoned"


class TestEvict:
    def test_frees_the_slot(self):
        """EVICT turns a slot, live or tombstoned, into a free {"i"} slot."""
        out, _ = reduce([occ(0), occ(1, p="city", v=0)], [{"op": "EVICT", "i": 1}, {"op": "EVICT", "i": 0}], now=3)
        assert out == [{"i": 0}, {"i": 1}]

    def test_slot_free(self):
        """EVICT of a free slot is invalid."""
        assert check_op([occ(0), {"i": 1}], {"op": "EVICT", "i": 1}) == "slot 1 is free"


class TestAnyOp:
    @pytest.mark.parametrize(
        ("op", "reason"),
        [
            ({"op": "DELETE", "i": 0}, "unknown op 'DELETE' (expected one of ADD, UPDATE, TOMBSTONE, EVICT)"),
            ({"i": 0}, "unknown op None (expected one of ADD, UPDATE, TOMBSTONE, EVICT)"),
            ({"op": "ADD", "s": "Ari", "p": "job"}, "missing field 'o'"),
            ({"op": "UPDATE", "s": "Ari", "p": "job", "o": "x"}, "missing field 'i'"),
            ({"op": "EVICT", "i": True}, "field 'i' must be int, got bool"),
            ({"op": "EVICT", "i": 0.0}, "field 'i' must be int, got float"),
            ({"op": "EVICT", "i": "0"}, "field 'i' must be int, got str"),
            ({"op": "ADD", "s": "Ari", "p": "job", "o": 3}, "field 'o' must be str, got int"),
            ({"op": "ADD", "s": None, "p": "job", "o": "x"}, "field 's' must be str, got NoneType"),
            ({"op": "EVICT", "i": 2}, "slot index 2 out of range 0..1"),
            ({"op": "TOMBSTONE", "i": -1}, "slot index -1 out of range 0..1"),
            ({"op": "UPDATE", "i": 9, "s": "Ari", "p": "job", "o": "x"}, "slot index 9 out of range 0..1"),
            ({"op": "EVICT", "i": 0, "why": "old"}, "unexpected field(s) ['why'] for EVICT"),
            (["EVICT", 0], "an op must be a JSON object, got list"),
            ("EVICT 0", "an op must be a JSON object, got str"),
            (None, "an op must be a JSON object, got NoneType"),
        ],
    )
    def test_invalid_reason(self, op, reason):
        """Unknown op, missing or mistyped field, out-of-range index or a non-object gives this reason."""
        assert check_op([occ(0), {"i": 1}], op) == reason

    def test_valid_op_has_no_reason(self):
        """check_op returns None for an op that applies."""
        assert check_op([occ(0), {"i": 1}], {"op": "EVICT", "i": 0}) is None

    def test_program_not_a_list(self):
        """A program that is not a list is one invalid 'op' at position -1 and changes nothing."""
        ledger = [occ(0)]
        out, report = reduce(ledger, {"op": "EVICT", "i": 0}, now=1, strict=False)
        assert out == ledger
        assert report.invalid == [(-1, {"op": "EVICT", "i": 0}, "a program must be a JSON list, got dict")]

    def test_lenient_skips_and_continues(self):
        """Lenient mode records each invalid op with position and reason and applies the rest."""
        program = [{"op": "EVICT", "i": 1}, {"op": "TOMBSTONE", "i": 0}, "junk", {"op": "TOMBSTONE", "i": 0}]
        out, report = reduce([occ(0), {"i": 1}], program, now=4, strict=False)
        assert out == [occ(0, v=0, t=4), {"i": 1}]
        assert report.applied == [1]
        assert report.invalid == [
            (0, {"op": "EVICT", "i": 1}, "slot 1 is free"),
            (2, "junk", "an op must be a JSON object, got str"),
            (3, {"op": "TOMBSTONE", "i": 0}, "slot 0 is already tombstoned"),
        ]

    def test_ops_see_earlier_ops(self):
        """Ops apply in order, each checked against the ledger its predecessors left."""
        program = [{"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}, {"op": "ADD", "s": "Ari", "p": "car", "o": "van"}]
        out, report = reduce([occ(0), {"i": 1}], program, now=1, strict=False)
        assert out[1]["p"] == "pet"
        assert report.invalid == [(1, program[1], "no free slot")]

    def test_unhashable_op_kind(self):
        """Model text '[{"op":["ADD"]}]' parses; lenient reduce skips the op instead of raising TypeError."""
        program = parse_program('[{"op":["ADD"]},{"op":{}}]').program
        _, report = reduce([{"i": 0}], program, now=0, strict=False)
        assert [reason for _, _, reason in report.invalid] == [
            "unknown op ['ADD'] (expected one of ADD, UPDATE, TOMBSTONE, EVICT)",
            "unknown op {} (expected one of ADD, UPDATE, TOMBSTONE, EVICT)",
        ]


class TestInvalidOpError:
    def test_message(self):
        """The strict error names position, the op as compact JSON, and the reason."""
        with pytest.raises(InvalidOpError) as info:
            reduce([occ(0), {"i": 1}], [{"op": "EVICT", "i": 0}, {"op": "EVICT", "i": 0}], now=1)
        assert str(info.value) == 'op 1 {"op":"EVICT","i":0} is invalid: slot 0 is free'
        assert (info.value.position, info.value.op, info.value.reason) == (1, {"op": "EVICT", "i": 0}, "slot 0 is free")

    def test_is_a_value_error(self):
        """Callers that catch ValueError also catch InvalidOpError."""
        assert issubclass(InvalidOpError, ValueError)

    def test_long_op_is_shortened(self):
        """An op longer than 120 characters of JSON is cut to 117 plus '...'."""
        op = {"op": "ADD", "s": "Ari", "p": "job", "o": "x" * 200}
        with pytest.raises(InvalidOpError) as info:
            reduce([occ(0, p="car")], [op], now=0)
        assert str(info.value) == f"op 0 {dumps(op)[:117]}... is invalid: no free slot"

    def test_program_not_a_list(self):
        """A non-list program fails at position -1."""
        with pytest.raises(InvalidOpError, match=r'^op -1 "\[\]" is invalid: a program must be a JSON list, got str$'):
            reduce([occ(0)], "[]", now=0)


class TestParseProgram:
    def test_deep_nesting(self):
        """Ten thousand unclosed brackets give a recorded failure, not a RecursionError."""
        result = parse_program("[" * 10000)
        assert (result.program, result.error) == ([], "no JSON list found")

    def test_deep_nesting_closed(self):
        """Ten thousand nested brackets, closed, still parse to some list without crashing."""
        assert isinstance(parse_program("[" * 10000 + "]" * 10000).program, list)

    @pytest.mark.parametrize(
        ("text", "program"),
        [
            ("\x00\x00[1]\x00", [1]),
            ("\ud800 [\"\udfff\"] \ud800", ["\udfff"]),
            (b"\xff\xfe[2, 3]\x00", [2, 3]),
            ("[oops] then [4]", [4]),
            ('```\n[{"op":"EVICT","i":0}]\n```\nDone.', [{"op": "EVICT", "i": 0}]),
            ("[1, [2, 3]", [2, 3]),
        ],
    )
    def test_odd_text(self, text, program):
        """NUL bytes, lone surrogates, invalid UTF-8 and chatter around the list are tolerated."""
        assert parse_program(text).program == program

    @pytest.mark.parametrize(
        ("text", "error"),
        [("", "no JSON list found"), ('{"op":"EVICT"}', "no JSON list found"), (None, "expected text, got NoneType"),
         (42, "expected text, got int")],
    )
    def test_failures(self, text, error):
        """Text without a JSON list, and non-text, give an empty program and this error."""
        result = parse_program(text)
        assert (result.program, result.error, result.failed) == ([], error, True)


class TestSerialize:
    def test_exact_text(self):
        """Free slots on the first line, the subject once, then slots least salient first; strings
        that would be ambiguous raw are JSON strings."""
        ledger = [occ(0, o='a|"b"\nc', prev="\u2028", uses=1), occ(1, p="city", o="Oslo", prev="Porto"), {"i": 2}]
        assert serialize(ledger) == (
            "subject: Ari\n1 u0 t0 b0 city=Oslo <Porto\n"
            '0 u1 t0 b0 job="a|\\"b\\"\\nc" <"\u2028"\n'  # JSON escapes newlines; U+2028 stays raw
            "free 1: 2"
        )
        assert deserialize(serialize(ledger)) == ledger

    def test_other_subject_and_tombstone(self):
        """A slot of another subject names it; a tombstoned slot carries `` x``."""
        ledger = [occ(0), {**occ(1, p="pet", o="cat"), "s": "Bo", "v": 0}]
        assert serialize(ledger).split("\n")[1:3] == ["0 u0 t0 b0 job=chef", '1 u0 t0 b0 x @"Bo" pet=cat']
        assert deserialize(serialize(ledger)) == ledger

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[0,1]", "last line: expected 'free <count>: <indices>', got '[0,1]'"),
            ("free 2: 0", "last line: the count 2 does not match 1 listed free slots"),
            ("free 1: 1", "slot 0 must be a dict with i=0, got {'i': 1}"),
            ("who: Ari\nfree 0:", "line 0: expected 'subject: <name>', got 'who: Ari'"),
            ("subject: Ari\n0 u0 t0 job=chef\nfree 0:", "not a slot line: '0 u0 t0 job=chef'"),
        ],
    )
    def test_malformed_text(self, text, message):
        """deserialize rejects malformed lines, wrong counts and ledgers with wrong indices."""
        with pytest.raises(ValueError) as info:
            deserialize(text)
        assert str(info.value) == message


class TestValidateLedger:
    @pytest.mark.parametrize(
        ("ledger", "message"),
        [
            ([], "a ledger is a non-empty JSON list of slots"),
            ([{"i": 0, "x": 1}], "free slot 0 must hold only 'i', got ['i', 'x']"),
            ([occ(0, v=2)], "slot 0 field 'v' must be 0 or 1, got 2"),
            ([occ(0, uses=-1)], "slot 0 field 'uses' must be an int >= 0, got -1"),
            ([occ(0), occ(1)], "slot 1 repeats (s, p) = ('Ari', 'job')"),
        ],
    )
    def test_rejects(self, ledger, message):
        """Malformed ledgers raise ValueError with this message."""
        with pytest.raises(ValueError) as info:
            validate_ledger(ledger)
        assert str(info.value) == message


class TestEmptyLedger:
    def test_free_slots(self):
        """empty_ledger(B) is B free slots."""
        assert empty_ledger(3) == [{"i": 0}, {"i": 1}, {"i": 2}]

    @pytest.mark.parametrize("budget", [0, -1, True, 2.0])
    def test_bad_budget(self, budget):
        """A budget that is not a positive int raises ValueError."""
        with pytest.raises(ValueError, match="^budget must be a positive int, got "):
            empty_ledger(budget)


class TestSalience:
    def test_ties_evict_lower_index(self):
        """With equal uses and t, the lowest occupied index is evicted first."""
        ledger = [{"i": 0}, occ(1, p="a", t=2, uses=1), occ(2, p="b", t=2, uses=1), occ(3, p="c", t=2, uses=1)]
        assert least_salient(ledger) == 1

    def test_uses_before_recency(self):
        """Fewer uses loses before an older write does."""
        ledger = [occ(0, p="a", t=0, uses=2), occ(1, p="b", t=9, uses=1)]
        assert least_salient(ledger) == 1


class TestDoctests:
    def test_module_doctests(self):
        """The examples in clerk.ledger's docstrings run and pass."""
        result = doctest.testmod(clerk.ledger)
        assert result.attempted > 0 and result.failed == 0


class TestMessageRobustness:
    """Error messages never fail on op values that are not JSON (regressions of fixed bugs)."""

    def test_strict_reduce_reports_non_json_op(self):
        """An op holding bytes must raise InvalidOpError in strict mode, not TypeError from the message."""
        with pytest.raises(InvalidOpError):
            reduce([{"i": 0}], [{"op": "EVICT", "i": b"0"}], now=0)

    def test_strict_reduce_reports_deeply_nested_op(self):
        """A deeply nested list parsed from model text must raise InvalidOpError, not RecursionError."""
        nested: list = []
        for _ in range(5000):
            nested = [nested]
        program = [nested]
        with pytest.raises(InvalidOpError):
            reduce([{"i": 0}], program, now=0)


class TestParserCost:
    def test_unmatched_brackets_stay_cheap(self):
        """100k unmatched brackets parse to a failure without quadratic rescanning (bounded starts)."""
        result = parse_program("[" * 100_000)
        assert result.failed and result.program == []
