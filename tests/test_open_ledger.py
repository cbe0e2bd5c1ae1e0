"""Tests of the open ledger (SPEC §1.7) through the reducer, the serializer and the program language
(clerk/ledger.py, clerk/ledger_text.py, clerk/program.py under a clerk.form.LedgerForm): Hypothesis
properties (no budget overrun, inputs never mutated, strict = lenient's first skip, program text
round trip), exact reasons, and the grammar of the open language (llguidance on the scratch
tokenizer; constrained decoding with a random tiny model), as tests/test_program.py does for the
closed language.

    python -m pytest tests/test_open_ledger.py -q -x
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import (
    BAD_KEYS,
    BAD_WHENS,
    OPEN_FORMS,
    open_ledgers,
    open_programs,
    open_slot,
    unicode_text,
    valid_open_programs,
)
from test_program import accepts, lltok, split, tiny, tokenizer

from clerk import ledger as L
from clerk.form import LedgerForm
from clerk.program import Compiled, compile_program, program_grammar, render_program

pytestmark = pytest.mark.usefixtures("one_torch_thread")
#: The closed language's test fixtures, shared: the scratch tokenizer trained on a generated split,
#: its llguidance tokenizer and a random tiny Llama (pytest finds them here by name).
SHARED_FIXTURES = (lltok, split, tiny, tokenizer)
PROPERTY = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TWO = LedgerForm(("Caroline", "Melanie"))
ONE = LedgerForm(("Ari",))


def fact(i, s="Caroline", p="job", o="nurse", w=None, prev=None, v=1):
    return open_slot(i, s, p, o, w, (prev, v, 0, 0, 0))


#: Budget 4: Caroline's job, Melanie's (tombstoned, dated) pet, Caroline's dated trip, one free slot.
LEDGER = [fact(0), fact(1, "Melanie", "pet", "cat", "2022", v=0), fact(2, p="trip", o="Paris", w="2023-05-07"), {"i": 3}]
FULL = LEDGER[:3]


@st.composite
def form_ledger_program(draw, valid=False):
    form = draw(st.sampled_from(OPEN_FORMS))
    ledger = draw(open_ledgers(form))
    program = draw(valid_open_programs(ledger, form) if valid else open_programs(len(ledger)))
    return form, ledger, program, draw(st.integers(0, 20))


# --------------------------------------------------------------------------- reducer properties


class TestOpenReduceProperties:
    @PROPERTY
    @given(form_ledger_program())
    def test_lenient_stays_in_form_within_budget_and_mutates_nothing(self, case):
        """Lenient reduce under a form never raises, keeps the budget, returns a ledger whose every
        fact has the form, accounts for every op, and leaves its inputs untouched."""
        form, ledger, program, now = case
        ledger_copy, program_copy = copy.deepcopy(ledger), copy.deepcopy(program)
        out, report = L.reduce(ledger, program, now, strict=False, form=form)
        L.validate_ledger(out, form)
        assert len(out) == len(ledger) and len(L.occupied(out)) <= len(ledger)
        assert sorted(report.applied + [pos for pos, _, _ in report.invalid]) == list(range(len(program)))
        assert ledger == ledger_copy and program == program_copy

    @PROPERTY
    @given(form_ledger_program())
    def test_strict_raises_on_first_lenient_skip(self, case):
        """Strict reduce under a form fails on exactly the first op lenient reduce skips."""
        form, ledger, program, now = case
        lenient, report = L.reduce(ledger, program, now, strict=False, form=form)
        try:
            strict, _ = L.reduce(ledger, program, now, strict=True, form=form)
            err = None
        except L.InvalidOpError as raised:
            err = raised
        if report.invalid:
            assert err is not None and (err.position, err.reason) == report.invalid[0][::2]
        else:
            assert err is None and strict == lenient

    @PROPERTY
    @given(form_ledger_program(valid=True))
    def test_valid_programs_apply_in_full(self, case):
        """A program of valid ops (dated or not) applies in full in both modes, identically."""
        form, ledger, program, now = case
        strict, report = L.reduce(ledger, program, now, strict=True, form=form)
        assert report.applied == list(range(len(program))) and L.reduce(ledger, program, now, strict=False, form=form)[0] == strict

    @PROPERTY
    @given(st.sampled_from(OPEN_FORMS).flatmap(open_ledgers))
    def test_serialization_round_trip(self, ledger):
        """A dated open ledger reads back from its serialization exactly (given its form)."""
        form = next(f for f in OPEN_FORMS if _fits(ledger, f))
        assert L.deserialize(L.serialize(ledger), form) == ledger


def _names_each_fact_once(ledger, program, now, form):
    named, state = [], ledger
    for op in program:
        named.append((op["s"], op["p"]) if "s" in op else (state[op["i"]]["s"], state[op["i"]]["p"]))
        state, _ = L.reduce(state, [op], now, form=form)
    return len(set(named)) == len(named)


def _fits(ledger, form):
    try:
        L.validate_ledger(ledger, form)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- reducer examples


class TestOpenOps:
    @pytest.mark.parametrize(("op", "reason"), [
        ({"op": "ADD", "s": "Bob", "p": "job", "o": "chef"}, "subject 'Bob' is not one of the ledger's subjects ('Caroline', 'Melanie')"),
        ({"op": "ADD", "s": "Melanie", "p": "Job", "o": "chef"}, "key 'Job' is not in normal form (lower-case a-z/0-9 words joined by '_', a letter first, <= 32 characters)"),
        ({"op": "ADD", "s": "Melanie", "p": "job", "o": "a\nb"}, "value 'a\\nb' is not one line of 1-60 characters without outer whitespace"),
        ({"op": "ADD", "s": "Melanie", "p": "job", "o": "chef", "w": "2023-02-29"}, "when '2023-02-29' is not a date YYYY, YYYY-MM or YYYY-MM-DD that exists (years 1000-2999)"),
        ({"op": "ADD", "s": "Melanie", "p": "job", "o": "chef", "w": 2023}, "field 'w' must be str, got int"),
        ({"op": "UPDATE", "i": 2, "s": "Caroline", "p": "trip", "o": "Paris", "w": "2023-05-07"}, "value unchanged ('Paris') and when unchanged ('2023-05-07')"),
        ({"op": "TOMBSTONE", "i": 0, "w": "2023"}, "unexpected field(s) ['w'] for TOMBSTONE"),
    ])
    def test_invalid_reason(self, op, reason):
        """Facts out of form are rejected with a reason naming the part, the value and the rule."""
        assert L.check_op(LEDGER, op, TWO) == reason

    def test_when_needs_a_form(self):
        """Without a form (the closed regime) a dated op is an unexpected field, with the hint why,
        and a slot holding 'w' is not a valid ledger."""
        op = {"op": "ADD", "s": "Ari", "p": "job", "o": "chef", "w": "2023"}
        assert L.check_op(L.empty_ledger(1), op) == "unexpected field(s) ['w'] for ADD (a dated fact needs an open ledger's form)"
        with pytest.raises(ValueError, match=r"\('w', a date, needs an open ledger's form\)$"):
            L.validate_ledger(LEDGER)
        L.validate_ledger(LEDGER, TWO)

    def test_dates_follow_the_value(self):
        """ADD stores the when after the value; an UPDATE replaces it with its own (or none); an
        UPDATE may change only the date; TOMBSTONE keeps it."""
        out, _ = L.reduce(LEDGER, [{"op": "ADD", "s": "Melanie", "p": "trip", "o": "Rome", "w": "2023-06"},
                                   {"op": "UPDATE", "i": 2, "s": "Caroline", "p": "trip", "o": "Paris", "w": "2023-05-06"}], 4, form=TWO)
        assert out[3] == open_slot(3, "Melanie", "trip", "Rome", "2023-06", (None, 1, 4, 4, 0))
        assert out[2]["w"] == "2023-05-06" and out[2]["prev"] == "Paris" and list(out[2]) == list(L.DATED_SLOT_FIELDS)
        out, _ = L.reduce(out, [{"op": "UPDATE", "i": 2, "s": "Caroline", "p": "trip", "o": "Oslo"}, {"op": "TOMBSTONE", "i": 3}], 5, form=TWO)
        assert "w" not in out[2] and list(out[2]) == list(L.SLOT_FIELDS)
        assert out[3]["w"] == "2023-06" and out[3]["v"] == 0

    def test_catalogue_restricts_keys(self):
        """A form with keys allows those only: the closed benchmark's catalogue as an optional restriction."""
        form = LedgerForm(("Ari",), keys=("job", "city"))
        assert L.check_op(L.empty_ledger(2), {"op": "ADD", "s": "Ari", "p": "city", "o": "Oslo"}, form) is None
        assert L.check_op(L.empty_ledger(2), {"op": "ADD", "s": "Ari", "p": "went_to_paris", "o": "yes"}, form) == (
            "key 'went_to_paris' is not one of the form's 2 allowed keys")

    def test_serialized_text(self):
        """A dated slot shows ``w<when>`` after ``b<born>``; another subject is named; a key that
        looks like a when (``w2023``) is still read as a key."""
        ledger = LEDGER + [fact(4, "Melanie", "w2023", "x y")]
        text = L.serialize(ledger)
        assert text.split("\n")[1:] == ["0 u0 t0 b0 job=nurse", '1 u0 t0 b0 w2022 x @"Melanie" pet=cat',
                                        "2 u0 t0 b0 w2023-05-07 trip=Paris", '4 u0 t0 b0 @"Melanie" w2023=x y', "free 1: 3"]
        assert L.deserialize(text, TWO) == ledger


# --------------------------------------------------------------------------- the open program language


class TestOpenProgram:
    @PROPERTY
    @given(form_ledger_program(valid=True))
    def test_text_round_trip(self, case):
        """A valid open program renders to one line per op that compiles back to exactly it."""
        form, ledger, program, now = case
        text = render_program(ledger, program, now, form=form)
        assert compile_program(text, ledger, form, now) == Compiled(program, [], False)
        assert len(text.splitlines()) == len(program)

    def test_lines(self):
        """Several subjects: every line names its subject; ``@<when>`` dates an ADD or UPDATE."""
        program = [{"op": "EVICT", "i": 0}, {"op": "ADD", "s": "Melanie", "p": "painted_sunrise", "o": "a lake at dawn", "w": "2022"},
                   {"op": "UPDATE", "i": 2, "s": "Caroline", "p": "trip", "o": "Rome"}, {"op": "TOMBSTONE", "i": 2}]
        text = render_program(FULL, program, 3, form=TWO)
        assert text == ("EVICT Caroline job\nADD @2022 Melanie painted_sunrise a lake at dawn\n"
                        "UPDATE Caroline trip Rome\nTOMBSTONE Caroline trip")
        assert compile_program(text, FULL, TWO, 3) == Compiled(program, [], False)

    def test_one_subject_is_the_closed_language(self):
        """With one known subject and no dates the open language is the closed one, line for line."""
        ledger = [open_slot(0, "Ari", "job", "nurse", None, (None, 1, 0, 0, 0)), {"i": 1}]
        text = "UPDATE job chef\nADD pet a small cat\nEVICT job"
        assert compile_program(text, ledger, ONE, 1) == compile_program(text, ledger, "Ari", 1)
        assert render_program(ledger, compile_program(text, ledger, ONE, 1).program, 1, form=ONE) == text

    def test_form_is_judged_by_the_reducer(self):
        """The compiler reads syntax; an unknown subject, a key out of form or a bad when compile
        to ops the reducer rejects with its reason."""
        text = "ADD Bob job chef\nADD Melanie job__x x\nADD @2023-02-30 Melanie trip Rome\nADD Melanie car Fiat"
        got = compile_program(text, LEDGER, TWO, 2)
        assert got.errors == [] and len(got.program) == 4
        _, report = L.reduce(LEDGER, got.program, 2, strict=False, form=TWO)
        assert [pos for pos, _, _ in report.invalid] == [0, 1, 2] and report.applied == [3]
        assert [reason.split()[0] for _, _, reason in report.invalid] == ["subject", "key", "when"]
        assert compile_program("ADD Melanie Job_ x", LEDGER, TWO, 2).parse_failed  # "Job_" is no key at all

    @pytest.mark.parametrize("text", ["ADD job chef", "TOMBSTONE @2023 Caroline job", "EVICT Caroline job now",
                                      "ADD Caroline job", "UPDATE @2023 Caroline"])
    def test_malformed_lines(self, text):
        """Lines of no open form stay raw text, with an error that shows the open forms."""
        got = compile_program(text, LEDGER, TWO, 2)
        assert got.parse_failed and got.errors == [
            f"line 1: {text!r} is not ADD/UPDATE [@<when> ][<subject> ]<pred> <value> or TOMBSTONE/EVICT [<subject> ]<pred>"]

    @settings(max_examples=300, deadline=None)
    @given(unicode_text(30) | st.lists(st.sampled_from(["ADD Melanie job chef", "ADD @2023 Caroline car Fiat", "EVICT Caroline job",
                                                         "UPDATE Caroline trip Rome", "TOMBSTONE Melanie pet", "ADD", "@", ""]))
           .map("\n".join))
    def test_never_raises_and_never_mutates(self, text):
        """Any text compiles under a form without raising or touching the ledger, and applies within the budget."""
        before = copy.deepcopy(LEDGER)
        got = compile_program(text, LEDGER, TWO, 3)
        assert LEDGER == before
        out, _ = L.reduce(LEDGER, got.program, 3, strict=False, form=TWO)
        assert len(out) == len(LEDGER)


# --------------------------------------------------------------------------- the open grammar


class TestOpenGrammar:
    @pytest.mark.parametrize("text", [
        "", "ADD Caroline went_to_support_group LGBTQ group", "ADD @2023-05-07 Melanie painted_sunrise a lake at dawn",
        "UPDATE Caroline job chef", "UPDATE @2024-02-29 Caroline trip Rome", "TOMBSTONE Caroline trip", "EVICT Melanie pet",
        "ADD Melanie k_2nd_job barista\nEVICT Caroline job\nADD Caroline x1 y", "ADD Caroline " + "a" * 32 + " v",
        "ADD Caroline job chef",  # an ADD of a held key is well formed here (the reducer rejects it)
    ])
    def test_accepts(self, tokenizer, lltok, text):
        """Coined keys of the normal form for known subjects, dated or not, within the budget."""
        assert accepts(lltok, tokenizer, program_grammar(LEDGER, TWO), text)

    @pytest.mark.parametrize(("text", "why"), [
        ("ADD Bob job chef", "an unknown subject"),
        ("ADD job chef", "no subject on a two-subject ledger"),
        ("ADD Caroline went_to_paris yes\nADD Melanie x y", "a second ADD with one free slot"),
        ("UPDATE Melanie job chef", "an UPDATE of a fact the subject does not hold"),
        ("TOMBSTONE Melanie pet", "a TOMBSTONE of a tombstoned fact"),
        ("TOMBSTONE @2023 Caroline job", "a dated TOMBSTONE"),
        ("ADD Caroline " + "a" * 33 + " v", "a key over 32 characters"),
        ("ADD @2023-02-29 Caroline k v", "29 February of a common year"),
        ("ADD @1900-02-29 Caroline k v", "29 February of a century that is no leap year"),
        ("ADD @2023-5-7 Caroline k v", "an unpadded date"),
        ("ADD @2023-13 Caroline k v", "month 13"),
        ("ADD Caroline k " + "x" * 61, "a value over the form's cap"),
    ] + [(f"ADD Caroline {key} v", f"the key {key!r}") for key in BAD_KEYS if key] + [
        (f"ADD @{when} Caroline k v", f"the when {when!r}") for when in BAD_WHENS])
    def test_rejects(self, tokenizer, lltok, text, why):
        """The open grammar refuses what cannot be a well-formed program under the form."""
        assert not accepts(lltok, tokenizer, program_grammar(LEDGER, TWO), text), why

    def test_catalogue_form(self, tokenizer, lltok):
        """A form with keys allows exactly those keys per subject, fresh ones for ADD."""
        grammar = program_grammar(LEDGER, LedgerForm(("Caroline", "Melanie"), keys=("job", "trip", "pet")))
        assert accepts(lltok, tokenizer, grammar, "ADD Melanie job chef")
        assert not accepts(lltok, tokenizer, grammar, "ADD Melanie car Fiat")
        assert not accepts(lltok, tokenizer, grammar, "ADD Melanie pet dog")  # held (tombstoned)
        assert accepts(lltok, tokenizer, grammar, "EVICT Melanie pet\nADD Melanie pet dog")  # added back

    def test_value_cap_follows_the_form(self, tokenizer, lltok):
        """The longest value is the form's."""
        form = LedgerForm(("Caroline", "Melanie"), max_value_chars=5)
        assert accepts(lltok, tokenizer, program_grammar(LEDGER, form), "UPDATE Caroline job chefs")
        assert not accepts(lltok, tokenizer, program_grammar(LEDGER, form), "UPDATE Caroline job chefss")

    @settings(max_examples=150, deadline=None)
    @given(form_ledger_program(valid=True))
    def test_accepts_every_valid_program(self, tokenizer, lltok, case):
        """The grammar of a ledger accepts the text of every valid open program against it that
        names each fact once, as gold programs do (the grammar tracks the ledger before the program,
        not each fact's state inside it: it does not follow, e.g., a TOMBSTONE after a revival)."""
        form, ledger, program, now = case
        assume(_names_each_fact_once(ledger, program, now, form))
        assert accepts(lltok, tokenizer, program_grammar(ledger, form), render_program(ledger, program, now, form=form))


class TestOpenConstrainedDecoding:
    def test_output_compiles_in_form(self, tiny, tokenizer, split):
        """Constrained greedy output of a random model under open grammars compiles without error,
        every fact it writes has the form (known subject, key in normal form, a when that exists),
        and its ADDs fit the free slots."""
        from clerk import prompts
        from clerk.models.decoding import greedy_generate
        from clerk.models.loading import chat_prompt

        ledgers = [LEDGER, FULL, L.empty_ledger(3), [fact(0, "Melanie", "pet", "dog"), {"i": 1}]]
        texts = [chat_prompt(tokenizer, prompts.consolidate_messages(L.serialize(led), f"I am {n}.")) for n, led in enumerate(ledgers)]
        outs = greedy_generate(tiny, tokenizer, texts, max_new_tokens=120, batch_size=4,
                               grammars=[program_grammar(led, TWO) for led in ledgers])
        n_ops = 0
        for ledger, out in zip(ledgers, outs):
            got = compile_program(out, ledger, TWO, 1)
            assert got.errors == [] and not got.parse_failed, out
            for op in got.program:
                if op["op"] in ("ADD", "UPDATE"):
                    assert TWO.fact_problem(op["s"], op["p"], op["o"], op.get("w")) is None, out
            adds = sum(op["op"] == "ADD" for op in got.program) - sum(op["op"] == "EVICT" for op in got.program)
            assert adds <= sum(L.is_free(x) for x in ledger), out
            n_ops += len(got.program)
        assert n_ops >= 2  # real programs, not only empty ones
