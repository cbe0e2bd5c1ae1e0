"""Forget matches what a reader sees (SPEC §9): invisible characters, case and normal forms do not
hide a value, and text outside the match keeps its bytes.

    python -m pytest tests/test_store_fold.py -q
"""

from __future__ import annotations

import doctest
import json
import unicodedata

import pg_kit
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from clerk import fold as fold_module
from clerk.cli import main as clerk_main
from clerk.fold import IGNORABLE, fold, folded, ignorable
from clerk.scrub import REDACTED, redact, value_pattern
from clerk.store import open_store

pg_server = pytest.fixture(scope="module")(pg_kit.serve)

#: Default-ignorable code points of every kind: zero-width space, non-joiner, joiner, LRM, RLM,
#: soft hyphen, word joiner, invisible times, LRI/PDI, LRE/PDF, BOM, variation selectors 1 and 16,
#: Mongolian free variation selector, combining grapheme joiner, Arabic letter mark, a tag character,
#: Hangul filler.
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u00ad", "\u2060", "\u2062", "\u2066", "\u2069",
             "\u202a", "\u202c", "\ufeff", "\ufe00", "\ufe0f", "\u180b", "\u034f", "\u061c", "\U000e0041",
             "\u3164")
#: Letters of several scripts whose case variants all fold alike (Latin with ß and İ, Greek with
#: final sigma, Cyrillic, Armenian, Cherokee), and caseless ones (CJK, Hangul, Arabic, Devanagari).
LETTERS = "abcxyzéüßøİĳǆσςλωжщяաբᏣᏥ東京漢한국سلامकखग"
#: Characters no value is made of: the text around a value (digits, punctuation, spaces).
AROUND = "0123456789 .,;:!?()[]-/#\n"

#: The five forms a hostile user wrote that survived a forget of "Oslo" / "izmir".
HOSTILE = ("Os\u200dlo", "Os\u200blo", "Os\u00adlo", "Os\u200flo", "\u0130zmir")


def case_variant(value: str, draw_case) -> str:
    return "".join(draw_case(ch) for ch in value)


@st.composite
def hidden(draw):
    """(value, the same value as written in a text): each character in some case (and the
    written form in NFC or NFD), with invisible characters inserted between characters."""
    value = draw(st.text(alphabet=LETTERS, min_size=1, max_size=8))
    written = []
    for k, ch in enumerate(value):
        variant = draw(st.sampled_from((ch, ch.upper(), ch.lower(), ch.title())))
        written.append(unicodedata.normalize(draw(st.sampled_from(("NFC", "NFD", "NFKC"))), variant))
        if k < len(value) - 1:
            written += draw(st.lists(st.sampled_from(INVISIBLE), max_size=2))
    return value, "".join(written)


class TestFold:
    def test_the_ignorable_set_is_unicodes_property(self):
        """Spot checks of Default_Ignorable_Code_Point (DerivedCoreProperties.txt): in and out."""
        assert all(ignorable(ch) for ch in INVISIBLE)
        visible = ("a", " ", "\u00a0", "\t", "\u0301", "\u0307", "\u3000", "\u2028", "東", "\U0001F600")
        assert not any(ignorable(ch) for ch in visible)
        assert IGNORABLE.pattern == r"\p{Default_Ignorable_Code_Point}"

    @pytest.mark.parametrize("written", HOSTILE[:4] + ("O\u034fslo", "OS\u2060LO", "Ｏｓｌｏ"))
    def test_invisible_characters_do_not_hide_a_value(self, written):
        assert fold(written) == "oslo"
        assert redact(f"I live in {written}.", value_pattern(["Oslo"])) == f"I live in {REDACTED}."
        assert redact("I live in Oslo.", value_pattern([written])) == f"I live in {REDACTED}."

    @pytest.mark.parametrize("a,b", [("\u0130zmir", "izmir"), ("\u0130ZM\u0130R", "İzmir"), ("I\u0307zmir", "izmir"),
                                     ("Straße", "STRASSE"), ("\ufb01le", "FILE"), ("ΣΟΦΊΑ", "σοφία"), ("ǅ", "dž")])
    def test_case_variants_in_every_script_meet(self, a, b):
        assert fold(a) == fold(b)
        assert redact(f"to {a}!", value_pattern([b])) == f"to {REDACTED}!"
        assert redact(f"to {b}!", value_pattern([a])) == f"to {REDACTED}!"

    def test_offsets_map_back_when_folding_changes_the_length(self):
        """ß -> ss, the ligature ﬁ -> fi, İ -> i: the match covers whole original characters only."""
        assert folded("aßb") == ("assb", [0, 1, 1, 2], [1, 2, 2, 3])
        assert redact("Maß, Masse", value_pattern(["ss"])) == f"Ma{REDACTED}, Ma{REDACTED}e"
        assert redact("\ufb01ne fish", value_pattern(["fi"])) == f"{REDACTED}ne {REDACTED}sh"
        assert redact("\u0130zmir'de", value_pattern(["izmir"])) == f"{REDACTED}'de"
        # invisible characters at the edges are outside the match, inside they go with it
        assert redact("\u200bOs\u200dlo\u200b", value_pattern(["oslo"])) == f"\u200b{REDACTED}\u200b"

    def test_a_value_of_invisible_characters_only_matches_nothing(self):
        assert value_pattern(["\u200b\u200d", "\u00ad"]) is None

    @settings(max_examples=400, deadline=None)
    @given(hidden(), st.text(alphabet=AROUND, max_size=12), st.text(alphabet=AROUND, max_size=12))
    def test_any_hidden_form_is_forgotten_and_the_rest_kept_byte_for_byte(self, pair, before, after):
        value, written = pair
        text = before + written + after
        assert redact(text, value_pattern([value])) == before + REDACTED + after
        assert redact(before + value + after, value_pattern([written])) == before + REDACTED + after

    @settings(max_examples=300, deadline=None)
    @given(st.text(max_size=30), st.text(alphabet=LETTERS, min_size=2, max_size=6))
    def test_unrelated_text_is_kept_byte_for_byte(self, text, value):
        assume(fold(value) not in fold(text))
        assert redact(text, value_pattern([value])) == text

    def test_doctests(self):
        assert doctest.testmod(fold_module).failed == 0


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/m.db"
    return request.getfixturevalue("pg_server").new_store_url()


class TestStoreForget:
    def _fill(self, url):
        """The hostile history: the ledger's city holds a joined "Oslo", every turn and note one form."""
        with open_store(url, budget=4) as store:
            with store.consolidation("Ari") as c:
                turns = [{"role": "user", "content": f"I live in {form} now."} for form in HOSTILE + ("Oslo",)]
                c.publish([{"op": "ADD", "s": "Ari", "p": "city", "o": HOSTILE[0]},
                           {"op": "ADD", "s": "Ari", "p": "job", "o": "chef"}],
                          turns, derived={"note": [t["content"] for t in turns]})

    def test_clerk_forget_value_erases_every_hidden_form(self, url, capsys):
        self._fill(url)
        clerk_main(["forget", "--store", url, "--subject", "Ari", "--predicate", "city",
                    "--value", "izmir", "--value", "O\u200dslo"])
        report = json.loads(capsys.readouterr().out)
        assert (report["slots"], report["turns"], report["derived"]) == (1, 6, 6), report
        with open_store(url) as store:
            snap = store.read("Ari")
        left = "\n".join(snap.texts())
        assert "oslo" not in fold(left) and "izmir" not in fold(left), left
        assert [t["content"] for t in snap.transcripts[0]["turns"]] == [f"I live in {REDACTED} now."] * 6
        assert [s["o"] for s in snap.ledger if "o" in s] == ["chef"]

    def test_no_byte_of_a_hidden_form_is_left_in_the_sqlite_file(self, tmp_path):
        path = tmp_path / "m.db"
        self._fill(f"sqlite:///{path}")
        pieces = [form.encode() for form in HOSTILE] + [b"Os" + ch.encode() for ch in INVISIBLE[:6]]
        assert any(p in path.read_bytes() for p in pieces)  # the control
        with open_store(f"sqlite:///{path}") as store:
            store.forget("Ari", "city", values=["izmir"])
        raw = path.read_bytes()
        assert not [p for p in pieces if p in raw]
        assert b"chef" in raw
