"""The open ledger's form: what a fact may look like when its vocabulary is not fixed (SPEC §1.7).

A fact of the open ledger is (subject, key, value[, when]). Nothing here names a vocabulary: the
writer coins its keys. What is fixed is the *form* of each part, and the reducer, the program
language and the grammar all check the same form:

* **key**: lower-case ASCII words joined by single underscores, starting with a letter, at most
  :data:`MAX_KEY_CHARS` characters (``favourite_food``, ``went_to_support_group``). Any text is
  turned into one by :func:`normalise_key`.
* **subject**: one of the ledger's known subjects (:class:`LedgerForm`), a name of at most
  :data:`MAX_SUBJECT_CHARS` printable characters without whitespace, ``"`` or ``@``
  (:func:`normalise_subject` makes one from a speaker's name).
* **value**: one line of 1 .. ``max_value_chars`` characters with no whitespace at either end.
* **when** (optional): an ISO 8601 calendar date at year, month or day precision
  (``2023``, ``2023-05``, ``2023-05-07``), years 1000-2999, a date that exists
  (:func:`normalise_when` reads the usual spellings).

The catalogue of the synthetic benchmark becomes an optional restriction, ``LedgerForm.keys``.

    >>> form = LedgerForm(("Caroline", "Melanie"))
    >>> form.fact_problem("Caroline", normalise_key("Went to: support group!"), "LGBTQ group", normalise_when("7 May, 2023"))
    >>> form.fact_problem("Bob", "job", "chef")
    "subject 'Bob' is not one of the ledger's subjects ('Caroline', 'Melanie')"

    python -m pytest tests/test_form.py -q
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from clerk.errors import UserError

#: Longest key (characters).
MAX_KEY_CHARS = 32
#: Longest value a writer may emit by default (characters); the catalogue's longest value is 28.
MAX_VALUE_CHARS = 60
#: Longest subject name (characters).
MAX_SUBJECT_CHARS = 40
#: Codes of the ways a fact is out of form (:meth:`LedgerForm.fact_rejection`), in the order
#: checked: the reducer's rejection codes for facts (``clerk.ledger.REJECTION_CODES``).
FACT_CODES = ("subject_unknown", "key_not_normal", "key_not_allowed", "value_malformed", "when_malformed")
#: A key: lower-case ASCII words (letters, digits) joined by single underscores, a letter first.
KEY_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
#: The key form as an llguidance Lark token: two regexes intersected (``&``), one for the length
#: and the first letter, one for the underscores (Rust regex syntax).
KEY_TOKEN = f"/[a-z][a-z0-9_]{{0,{MAX_KEY_CHARS - 1}}}/ & /[a-z0-9]+(_[a-z0-9]+)*/"
#: A when (Rust and Python regex syntax alike): a year 1000-2999, optionally a month, optionally a
#: day that exists in that month (29 February in leap years only).
_YEAR = r"[12][0-9]{3}"
_LEAP = r"(?:[12][0-9](?:0[48]|[2468][048]|[13579][26])|(?:12|16|20|24|28)00)"
WHEN_REGEX = (rf"(?:{_YEAR}(?:-(?:0[1-9]|1[0-2]))?"
              rf"|{_YEAR}-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
              rf"|{_YEAR}-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
              rf"|{_YEAR}-02-(?:0[1-9]|1[0-9]|2[0-8])"
              rf"|{_LEAP}-02-29)")
_WHEN = re.compile(WHEN_REGEX)
#: Characters a subject name may not hold besides whitespace: the quote of JSON strings and the
#: ``@`` that marks a when in the program language.
_SUBJECT_BANNED = '"@'
#: Apostrophes are dropped, not turned into a word break ("mum's" -> "mums").
_APOSTROPHES = "'\u2019\u02bc"
_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): n for n, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9


class FormError(UserError, ValueError):
    """A subject, key, value, when or form that does not have the open ledger's form (one line:
    the field, the value received and what is allowed)."""


def _show(text: Any, limit: int = 60) -> str:
    """A bounded repr of a received value for an error message."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


# --------------------------------------------------------------------------- keys


def is_key(text: Any) -> bool:
    """True for a key in normal form.

    >>> is_key("favourite_food"), is_key("Favourite_food"), is_key("a__b"), is_key("2nd_job")
    (True, False, False, False)
    """
    return isinstance(text, str) and len(text) <= MAX_KEY_CHARS and KEY_PATTERN.fullmatch(text) is not None


def normalise_key(text: str) -> str:
    """The key in normal form that ``text`` names.

    Steps: case-fold; Unicode compatibility decomposition (NFKD) with the combining marks dropped
    (``é`` -> ``e``); apostrophes dropped; every run of characters other than ``a-z``/``0-9``
    becomes one ``_``; underscores trimmed at both ends; a key that would start with a digit gets
    the prefix ``k_``; cut to :data:`MAX_KEY_CHARS` characters (then trimmed again). Idempotent,
    and a key in normal form is its own normal form.

    >>> normalise_key("Favourite Food"), normalise_key("  went to -- Paris!"), normalise_key("Mum's café")
    ('favourite_food', 'went_to_paris', 'mums_cafe')
    >>> normalise_key("2nd job"), normalise_key("favourite_food")
    ('k_2nd_job', 'favourite_food')
    >>> normalise_key("東京")
    Traceback (most recent call last):
    ...
    clerk.form.FormError: key: '東京' holds no letter or digit a-z/0-9 to make a key of (a key is lower-case ASCII words joined by '_')

    Raises:
        FormError: ``text`` is not a string, or nothing of it is left.
    """
    if not isinstance(text, str):
        raise FormError(f"key: expected text, got {type(text).__name__}")
    folded = unicodedata.normalize("NFKD", text.casefold()).lower()
    kept = "".join(c for c in folded if not unicodedata.combining(c) and c not in _APOSTROPHES)
    key = re.sub(r"[^a-z0-9]+", "_", kept).strip("_")
    if not key:
        raise FormError(f"key: {_show(text)} holds no letter or digit a-z/0-9 to make a key of "
                        f"(a key is lower-case ASCII words joined by '_')")
    if key[0].isdigit():
        key = "k_" + key
    return key[:MAX_KEY_CHARS].rstrip("_")


# --------------------------------------------------------------------------- subjects and values


def is_subject(name: Any) -> bool:
    """True for a name that can be a known subject.

    >>> is_subject("Caroline"), is_subject("Mary Ann"), is_subject("@jo"), is_subject("")
    (True, False, False, False)
    """
    return (isinstance(name, str) and 0 < len(name) <= MAX_SUBJECT_CHARS and name.isprintable()
            and not any(c.isspace() or c in _SUBJECT_BANNED for c in name))


def normalise_subject(name: str) -> str:
    """A subject name from a speaker's name: NFC, whitespace runs -> ``_``, ``"`` and ``@`` dropped,
    cut to :data:`MAX_SUBJECT_CHARS`. Idempotent.

    >>> normalise_subject("  Mary  Ann "), normalise_subject("Caroline")
    ('Mary_Ann', 'Caroline')

    Raises:
        FormError: nothing printable is left.
    """
    if not isinstance(name, str):
        raise FormError(f"subject: expected text, got {type(name).__name__}")
    text = "".join(c for c in unicodedata.normalize("NFC", name) if c not in _SUBJECT_BANNED)
    text = "".join(c if c.isprintable() or c.isspace() else " " for c in text)
    out = "_".join(text.split())[:MAX_SUBJECT_CHARS].rstrip("_")
    if not is_subject(out):
        raise FormError(f"subject: {_show(name)} leaves no printable name (a subject is 1-{MAX_SUBJECT_CHARS} "
                        f"characters without whitespace, '\"' or '@')")
    return out


def is_value(text: Any, max_chars: int = MAX_VALUE_CHARS) -> bool:
    """True for a value on one line: 1 .. ``max_chars`` characters, no line boundary of
    ``str.splitlines`` inside, nothing ``str.strip`` removes at either end.

    >>> is_value("a small cat"), is_value(" cat"), is_value("a\\nb"), is_value(""), is_value("x" * 61)
    (True, False, False, False, False)
    """
    return (isinstance(text, str) and 0 < len(text) <= max_chars and text == text.strip()
            and text.splitlines() == [text])


def normalise_value(text: str, max_chars: int = MAX_VALUE_CHARS) -> str:
    """A value on one line from any text: whitespace runs (line breaks included) -> one space,
    trimmed, cut to ``max_chars`` (then trimmed again). Idempotent.

    >>> normalise_value("  a small\\n black   cat "), normalise_value("abcdef", 4)
    ('a small black cat', 'abcd')

    Raises:
        FormError: nothing is left.
    """
    if not isinstance(text, str):
        raise FormError(f"value: expected text, got {type(text).__name__}")
    out = " ".join(text.split())[:max_chars].strip()
    if not is_value(out, max_chars):  # e.g. only separators: split() keeps \x1c-\x1f out, strip() not
        raise FormError(f"value: {_show(text)} leaves no text on one line (a value is 1-{max_chars} characters)")
    return out


# --------------------------------------------------------------------------- when


def is_when(text: Any) -> bool:
    """True for a when in normal form: ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``, a date that exists.

    >>> is_when("2023-05-07"), is_when("2024-02-29"), is_when("2023-02-29"), is_when("2023-5-7")
    (True, True, False, False)
    """
    return isinstance(text, str) and _WHEN.fullmatch(text) is not None


def _iso(year: int, month: int | None, day: int | None, text: str) -> str:
    out = f"{year:04d}" + ("" if month is None else f"-{month:02d}") + ("" if day is None else f"-{day:02d}")
    if not is_when(out):
        raise FormError(f"when: {_show(text)} is not a date that exists in years 1000-2999")
    return out


def normalise_when(text: str) -> str:
    """The when in normal form (ISO 8601 at year, month or day precision) of a date as people
    write it. Read: ISO-like dates with ``-``, ``/`` or ``.`` and 1- or 2-digit month and day;
    ``7 May 2023``, ``7 May, 2023``, ``May 7, 2023``, ``May 2023`` (full or 3-letter month names,
    any case); a bare year; each optionally preceded by a clock time and ``on`` (LoCoMo's session
    stamps, ``1:56 pm on 8 May, 2023``). Idempotent.

    >>> normalise_when("1:56 pm on 8 May, 2023"), normalise_when("2023/5/7"), normalise_when("May 2023")
    ('2023-05-08', '2023-05-07', '2023-05')
    >>> normalise_when("31 June 2023")
    Traceback (most recent call last):
    ...
    clerk.form.FormError: when: '31 June 2023' is not a date that exists in years 1000-2999

    Raises:
        FormError: not a date of these forms, or not one that exists.
    """
    if not isinstance(text, str):
        raise FormError(f"when: expected text, got {type(text).__name__}")
    core = re.sub(r"^\d{1,2}[:.]\d{2}\s*(?:[ap]\.?m\.?)?\s+on\s+", "", text.strip(), flags=re.I).strip()
    core = core.replace(",", " ")
    if match := re.fullmatch(r"(\d{4})(?:[-/.](\d{1,2})(?:[-/.](\d{1,2}))?)?", core):
        year, month, day = match.groups()
        return _iso(int(year), month and int(month), day and int(day), text)
    words = core.lower().rstrip(".").split()
    month_at = [k for k, w in enumerate(words) if w.rstrip(".") in _MONTHS]
    if len(month_at) == 1 and 2 <= len(words) <= 3 and all(w.isdigit() for k, w in enumerate(words) if k != month_at[0]):
        month = _MONTHS[words[month_at[0]].rstrip(".")]
        numbers = [w for k, w in enumerate(words) if k != month_at[0]]
        if len(numbers) == 1 and len(numbers[0]) == 4 and month_at[0] == 0:
            return _iso(int(numbers[0]), month, None, text)
        if len(numbers) == 2 and len(numbers[1]) == 4 and len(numbers[0]) <= 2 and month_at[0] in (0, 1):
            return _iso(int(numbers[1]), month, int(numbers[0]), text)
    raise FormError(f"when: {_show(text)} is not a date (write YYYY, YYYY-MM or YYYY-MM-DD)")


# --------------------------------------------------------------------------- the form of a ledger


@dataclass(frozen=True)
class LedgerForm:
    """What the facts of one open ledger may be: its known subjects (the first is the one a
    single-subject program line means), the allowed keys (None: any key in normal form; a tuple:
    a closed catalogue), and the longest value.

    Raises:
        FormError: a subject or key is not of its form, or a subject repeats.
    """

    subjects: tuple[str, ...]
    keys: tuple[str, ...] | None = None
    max_value_chars: int = MAX_VALUE_CHARS

    def __post_init__(self) -> None:
        if not isinstance(self.subjects, tuple) or not self.subjects:
            raise FormError(f"form.subjects: expected a non-empty list of names, got {_show(self.subjects)}")
        for name in self.subjects:
            if not is_subject(name):
                raise FormError(f"form.subjects: {_show(name)} is not a subject name (1-{MAX_SUBJECT_CHARS} "
                                f"printable characters without whitespace, '\"' or '@')")
        if len(set(self.subjects)) != len(self.subjects):
            raise FormError(f"form.subjects: a name repeats in {_show(list(self.subjects))}")
        if self.keys is not None:
            if not isinstance(self.keys, tuple):
                raise FormError(f"form.keys: expected a list of keys or null, got {_show(self.keys)}")
            for key in self.keys:
                if not is_key(key):
                    raise FormError(f"form.keys: {_show(key)} is not a key in normal form ({normalise_key.__name__})")
        if type(self.max_value_chars) is not int or self.max_value_chars < 1:
            raise FormError(f"form.max_value_chars: expected an int >= 1, got {_show(self.max_value_chars)}")

    @property
    def multi(self) -> bool:
        """True when program lines name their subject (more than one known subject)."""
        return len(self.subjects) > 1

    def fact_problem(self, subject: Any, key: Any, value: Any, when: Any = None) -> str | None:
        """Why (subject, key, value, when) is not a fact of this form, or None (``when`` None = undated)."""
        found = self.fact_rejection(subject, key, value, when)
        return None if found is None else found[1]

    def fact_rejection(self, subject: Any, key: Any, value: Any, when: Any = None) -> tuple[str, str] | None:
        """``(code, message)`` of :meth:`fact_problem`, the code one of :data:`FACT_CODES`, or None.

        >>> LedgerForm(("Jo",)).fact_rejection("Jo", "job", "chef", "2023-02-30")[0]
        'when_malformed'
        """
        if subject not in self.subjects:
            names = ", ".join(repr(s) for s in self.subjects)
            return "subject_unknown", f"subject {_show(subject)} is not one of the ledger's subjects ({names})"
        if not is_key(key):
            return "key_not_normal", (f"key {_show(key)} is not in normal form (lower-case a-z/0-9 words joined "
                                      f"by '_', a letter first, <= {MAX_KEY_CHARS} characters)")
        if self.keys is not None and key not in self.keys:
            return "key_not_allowed", f"key {key!r} is not one of the form's {len(self.keys)} allowed keys"
        if not is_value(value, self.max_value_chars):
            return "value_malformed", (f"value {_show(value)} is not one line of 1-{self.max_value_chars} "
                                       "characters without outer whitespace")
        if when is not None and not is_when(when):
            return "when_malformed", (f"when {_show(when)} is not a date YYYY, YYYY-MM or YYYY-MM-DD that exists "
                                      "(years 1000-2999)")
        return None

    def to_json(self) -> dict[str, Any]:
        """The form as stored in a timeline of format 2 (:func:`timeline_form`)."""
        return {"subjects": list(self.subjects), "keys": None if self.keys is None else list(self.keys),
                "max_value_chars": self.max_value_chars}

    @classmethod
    def from_json(cls, obj: Any) -> LedgerForm:
        """Inverse of :meth:`to_json`. Raises FormError naming the field."""
        if not isinstance(obj, dict) or set(obj) != {"subjects", "keys", "max_value_chars"}:
            raise FormError(f"form: expected an object with subjects, keys and max_value_chars, got {_show(obj)}")
        if not isinstance(obj["subjects"], list):
            raise FormError(f"form.subjects: expected a list of names, got {_show(obj['subjects'])}")
        keys = obj["keys"]
        if keys is not None and not isinstance(keys, list):
            raise FormError(f"form.keys: expected a list of keys or null, got {_show(keys)}")
        return cls(tuple(obj["subjects"]), None if keys is None else tuple(keys), obj["max_value_chars"])


# --------------------------------------------------------------------------- timeline formats

#: Timeline formats this code reads. 1 (no ``format`` field): the closed benchmark, one subject
#: (the persona's ``name``), no form checks; 2: an open ledger, ``form`` holds its LedgerForm.
TIMELINE_FORMATS = (1, 2)


def timeline_form(timeline: dict[str, Any]) -> LedgerForm | None:
    """The form of a timeline's ledger: None for format 1 (the closed benchmark, checked as before
    the open ledger existed), the stored :class:`LedgerForm` for format 2.

    >>> timeline_form({"name": "Ari", "sessions": []}) is None
    True
    >>> timeline_form({"format": 2, "form": {"subjects": ["Jo", "Al"], "keys": None, "max_value_chars": 80}}).subjects
    ('Jo', 'Al')
    >>> timeline_form({"format": 3})
    Traceback (most recent call last):
    ...
    clerk.form.FormError: field 'format' is 3: this clerk reads timeline formats 1 and 2 (a newer clerk wrote the file?)

    Raises:
        FormError: an unknown format, or a format-2 timeline without a valid ``form``.
    """
    version = timeline.get("format", 1)
    if type(version) is not int or version not in TIMELINE_FORMATS:
        raise FormError(f"field 'format' is {_show(version)}: this clerk reads timeline formats "
                        f"{' and '.join(map(str, TIMELINE_FORMATS))} (a newer clerk wrote the file?)")
    if version == 1:
        if "form" in timeline:
            raise FormError("field 'form' needs 'format': 2 (a format-1 timeline has no form)")
        return None
    if "form" not in timeline:
        raise FormError("a format-2 timeline lacks field 'form' (its subjects, keys and max_value_chars)")
    return LedgerForm.from_json(timeline["form"])
