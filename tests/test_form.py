"""Tests of clerk/form.py (SPEC §1.7): the open ledger's key, subject, value and when forms, their
normalisers (Hypothesis: idempotent, landing in the form), the form of a ledger, and the timeline
format versions.

    python -m pytest tests/test_form.py -q
"""

from __future__ import annotations

import calendar
import datetime
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import alphabet_text, unicode_text

from clerk.errors import UserError
from clerk.form import (
    KEY_TOKEN,
    MAX_KEY_CHARS,
    WHEN_REGEX,
    FormError,
    LedgerForm,
    is_key,
    is_subject,
    is_value,
    is_when,
    normalise_key,
    normalise_subject,
    normalise_value,
    normalise_when,
    timeline_form,
)
from clerk.generator.files import load_timelines

PROPERTY = settings(max_examples=1000, deadline=None)
#: Key-ish text: the characters that matter to the key form, case, digits and separators.
_keyish = alphabet_text("ab_9Z -'é", 40)


def _lenient(normalise, text):
    """``normalise(text)``, or None when it raises FormError (nothing of the text is left)."""
    try:
        return normalise(text)
    except FormError:
        return None


class TestKeys:
    @pytest.mark.parametrize(("text", "key"), [
        ("Favourite Food", "favourite_food"), ("favourite_food", "favourite_food"), ("  went to -- Paris!", "went_to_paris"),
        ("Mum's café", "mums_cafe"), ("2nd job", "k_2nd_job"), ("ÉCOLE", "ecole"), ("Straße", "strasse"),
        ("a__b", "a_b"), ("_x_", "x"), ("x" * 40, "x" * MAX_KEY_CHARS), ("abc " * 10, "abc_abc_abc_abc_abc_abc_abc_abc"),
    ])
    def test_examples(self, text, key):
        """Case folded, accents and apostrophes dropped, separators one '_', a digit first prefixed, cut."""
        assert normalise_key(text) == key and is_key(key)

    @pytest.mark.parametrize("text", ["", "!!!", "東京", "''"])
    def test_nothing_left(self, text):
        """Text without a letter or digit a-z/0-9 is refused in one line naming the text."""
        with pytest.raises(FormError) as info:
            normalise_key(text)
        assert str(info.value) == (f"key: {text!r} holds no letter or digit a-z/0-9 to make a key of "
                                   "(a key is lower-case ASCII words joined by '_')")

    def test_not_text(self):
        """A non-string is a FormError (a UserError: the CLI prints one line)."""
        with pytest.raises(UserError, match=r"^key: expected text, got int$"):
            normalise_key(7)

    @PROPERTY
    @given(unicode_text(40) | _keyish)
    def test_idempotent_and_in_form(self, text):
        """Whatever the text, its key is in normal form and is its own key."""
        key = _lenient(normalise_key, text)
        if key is not None:
            assert is_key(key) and normalise_key(key) == key

    @PROPERTY
    @given(alphabet_text("ab_9Z", 36))
    def test_keys_are_fixed_points(self, text):
        """A key in normal form normalises to itself, and only such a key does."""
        assert is_key(text) == (_lenient(normalise_key, text) == text)

    @PROPERTY
    @given(alphabet_text("ab_9Z", 36))
    def test_grammar_token_is_the_key_form(self, text):
        """The grammar's KEY token (two regexes intersected) matches exactly the keys in normal form."""
        parts = re.findall(r"/([^/]+)/", KEY_TOKEN)
        assert len(parts) == 2
        assert all(re.fullmatch(p, text) for p in parts) == is_key(text)

    def test_catalogue_keys_are_keys(self):
        """Every key of the built-in catalogue is in normal form (the closed benchmark is an open
        ledger whose form allows only those keys)."""
        from clerk.evaluate.runner import catalogue_keys

        keys = catalogue_keys(None)
        assert len(keys) == 28 and all(is_key(k) and normalise_key(k) == k for k in keys)


class TestWhen:
    def test_every_day_of_every_year(self):
        """A YYYY-MM-DD is a when exactly when the date exists (years 1000-2999, leap years
        included): the regex against the calendar over every day number 0-32 of every month 0-13."""
        bad = []
        for year in range(990, 3010):
            for month in range(14):
                for day in (0, 1, 28, 29, 30, 31, 32):
                    text = f"{year:04d}-{month:02d}-{day:02d}"
                    try:
                        exists = 1000 <= year <= 2999 and bool(datetime.date(year, month, day))
                    except ValueError:
                        exists = False
                    if is_when(text) != exists:
                        bad.append(text)
        assert bad == []

    def test_leap_days(self):
        """29 February is a when in leap years only (1600, 2000, 2024 yes; 1900, 2023, 2100 no)."""
        assert [y for y in range(1000, 3000) if is_when(f"{y}-02-29")] == [y for y in range(1000, 3000) if calendar.isleap(y)]

    @pytest.mark.parametrize(("text", "ok"), [
        ("2023", True), ("2023-05", True), ("2023-00", False), ("2023-13", False), ("0999", False), ("3000", False),
        ("2023-5", False), ("2023-05-7", False), ("23-05-07", False), (" 2023", False), ("2023-05-07T10:00", False),
        (2023, False), (None, False),
    ])
    def test_precisions(self, text, ok):
        """Year, month and day precision, zero-padded, nothing around."""
        assert is_when(text) == ok

    @pytest.mark.parametrize(("text", "when"), [
        ("2023-05-07", "2023-05-07"), ("2023/5/7", "2023-05-07"), ("2023.05", "2023-05"), ("2023", "2023"),
        ("7 May 2023", "2023-05-07"), ("7 May, 2023", "2023-05-07"), ("May 7, 2023", "2023-05-07"),
        ("may 2023", "2023-05"), ("Sept 2023", "2023-09"), ("1:56 pm on 8 May, 2023", "2023-05-08"),
        ("10:37 am on 27 June, 2023", "2023-06-27"), ("29 Feb 2024", "2024-02-29"),
    ])
    def test_normalise_examples(self, text, when):
        """The usual spellings (and LoCoMo's session stamps) read as ISO dates."""
        assert normalise_when(text) == when

    @pytest.mark.parametrize(("text", "message"), [
        ("29 Feb 2023", "when: '29 Feb 2023' is not a date that exists in years 1000-2999"),
        ("2023-13-01", "when: '2023-13-01' is not a date that exists in years 1000-2999"),
        ("last Tuesday", "when: 'last Tuesday' is not a date (write YYYY, YYYY-MM or YYYY-MM-DD)"),
        ("May June 2023", "when: 'May June 2023' is not a date (write YYYY, YYYY-MM or YYYY-MM-DD)"),
    ])
    def test_normalise_refuses(self, text, message):
        """A date that does not exist, or text that is no date, is refused naming the text."""
        with pytest.raises(FormError) as info:
            normalise_when(text)
        assert str(info.value) == message

    @PROPERTY
    @given(st.dates(datetime.date(1000, 1, 1), datetime.date(2999, 12, 31)), st.integers(0, 5))
    def test_normalise_idempotent(self, date, spelling):
        """Every spelling of a real date reads as that date, whose normal form is its own."""
        month = calendar.month_name[date.month]
        text = [date.isoformat(), f"{date.year}/{date.month}/{date.day}", f"{date.day} {month}, {date.year}",
                f"{month} {date.day}, {date.year}", f"{month[:3]} {date.year}", f"{date.year}"][spelling]
        when = normalise_when(text)
        assert is_when(when) and normalise_when(when) == when
        assert when == date.isoformat()[: {4: 7, 5: 4}.get(spelling, 10)]

    def test_regex_is_plain(self):
        """The when regex uses only syntax Python and the grammar's Rust regex share (no lookaround)."""
        assert "(?=" not in WHEN_REGEX and "(?<" not in WHEN_REGEX and re.compile(WHEN_REGEX)


class TestValuesAndSubjects:
    @PROPERTY
    @given(unicode_text(80))
    def test_value_normaliser(self, text):
        """A normalised value is on one line within the cap, and its own normal form."""
        value = _lenient(normalise_value, text)
        if value is not None:
            assert is_value(value) and normalise_value(value) == value
        else:
            assert not text.split()

    @PROPERTY
    @given(unicode_text(50))
    def test_subject_normaliser(self, text):
        """A normalised subject is a subject name and its own normal form."""
        name = _lenient(normalise_subject, text)
        if name is not None:
            assert is_subject(name) and normalise_subject(name) == name

    @pytest.mark.parametrize(("value", "ok"), [("a b", True), ("x" * 60, True), ("x" * 61, False), ("a\x0bb", False),
                                               ("a\tb", True), ("\u00a0a", False), ("", False), (3, False)])
    def test_value_form(self, value, ok):
        """One line, no outer whitespace, 1-60 characters."""
        assert is_value(value) == ok


class TestLedgerForm:
    def test_fact_problems(self):
        """Each part of a fact is checked, and the reason names the part, the value and the rule."""
        form = LedgerForm(("Jo", "Al"), keys=("job", "pet"), max_value_chars=5)
        assert form.fact_problem("Jo", "job", "chef") is None and form.fact_problem("Al", "pet", "cat", "2023") is None
        assert form.fact_problem("Bo", "job", "chef") == "subject 'Bo' is not one of the ledger's subjects ('Jo', 'Al')"
        assert form.fact_problem("Jo", "Job", "chef").startswith("key 'Job' is not in normal form")
        assert form.fact_problem("Jo", "car", "Fiat") == "key 'car' is not one of the form's 2 allowed keys"
        assert form.fact_problem("Jo", "job", "pastry chef") == (
            "value 'pastry chef' is not one line of 1-5 characters without outer whitespace")
        assert form.fact_problem("Jo", "job", "chef", "2023-02-29") == (
            "when '2023-02-29' is not a date YYYY, YYYY-MM or YYYY-MM-DD that exists (years 1000-2999)")

    @pytest.mark.parametrize(("args", "message"), [
        (((),), "form.subjects: expected a non-empty list of names, got ()"),
        ((("Jo", "Mary Ann"),), "form.subjects: 'Mary Ann' is not a subject name (1-40 printable characters without whitespace, '\"' or '@')"),
        ((("Jo", "Jo"),), "form.subjects: a name repeats in ['Jo', 'Jo']"),
        ((("Jo",), ("job", "Pet")), "form.keys: 'Pet' is not a key in normal form (normalise_key)"),
        ((("Jo",), None, 0), "form.max_value_chars: expected an int >= 1, got 0"),
    ])
    def test_refused(self, args, message):
        """A bad form is refused in one line naming the field."""
        with pytest.raises(FormError) as info:
            LedgerForm(*args)
        assert str(info.value) == message

    def test_json_round_trip(self):
        """A form survives its JSON form."""
        for form in (LedgerForm(("Jo",)), LedgerForm(("Jo", "Al"), ("job",), 80)):
            assert LedgerForm.from_json(json.loads(json.dumps(form.to_json()))) == form
        with pytest.raises(FormError, match=r"^form: expected an object with subjects, keys and max_value_chars"):
            LedgerForm.from_json({"subjects": ["Jo"]})


class TestTimelineFormats:
    def test_format_one_has_no_form(self):
        """A timeline without 'format' (every file written before the open ledger) is format 1."""
        assert timeline_form({"name": "Ari"}) is None and timeline_form({"format": 1}) is None

    @pytest.mark.parametrize(("timeline", "message"), [
        ({"format": 3}, "field 'format' is 3: this clerk reads timeline formats 1 and 2 (a newer clerk wrote the file?)"),
        ({"format": "2"}, "field 'format' is '2': this clerk reads timeline formats 1 and 2 (a newer clerk wrote the file?)"),
        ({"format": 2}, "a format-2 timeline lacks field 'form' (its subjects, keys and max_value_chars)"),
        ({"form": {}}, "field 'form' needs 'format': 2 (a format-1 timeline has no form)"),
    ])
    def test_refused(self, timeline, message):
        """An unknown format, or a form that does not match the format, is refused in one line."""
        with pytest.raises(FormError) as info:
            timeline_form(timeline)
        assert str(info.value) == message

    def test_loader_refuses_a_newer_file_in_one_line(self, tmp_path):
        """``load_timelines`` names the file, the line and the format it cannot read."""
        path = tmp_path / "t.jsonl"
        path.write_text(json.dumps({"format": 9, "name": "Ari", "sessions": []}) + "\n", encoding="utf-8")
        with pytest.raises(UserError) as info:
            load_timelines(path, "--timelines")
        assert str(info.value) == (f"--timelines {str(path)!r}: line 1: field 'format' is 9: this clerk reads "
                                   "timeline formats 1 and 2 (a newer clerk wrote the file?)")
