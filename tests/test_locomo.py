"""Tests for clerk.locomo: both LoCoMo formats, category correction, MC building, subsets, missing data.

The fixtures in tests/fixtures/locomo/ are invented conversations in the two public schemas (the
real data is CC BY-NC 4.0 and never committed). Nothing here touches the network.
"""

from __future__ import annotations

import dataclasses
import doctest
import json
import random
from pathlib import Path

import pytest

import clerk.locomo as locomo
from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.locomo import (
    CATEGORIES,
    NOT_MENTIONED,
    SOURCE_LOCAL,
    SOURCE_PERCENA,
    Question,
    build_mc_options,
    category_from_number,
    category_from_percena,
    conv_id_from_question_id,
    load_locomo,
    load_locomo10,
    load_percena,
    resolve_locomo_path,
    stratified_subset,
    summarize,
)

FIXTURES = Path(__file__).parent / "fixtures" / "locomo"
PERCENA = FIXTURES / "locomo_mc10_mini.json"
LOCOMO10 = FIXTURES / "locomo10_mini.json"

MISSING_TAIL = (
    ". Get data/locomo_mc10.json from the Hugging Face dataset Percena/locomo-mc10 "
    "(https://huggingface.co/datasets/Percena/locomo-mc10) or locomo10.json from the original repo "
    "https://github.com/snap-research/locomo (licence CC BY-NC 4.0: never commit it), then set locomo.path "
    "(clerk locomo --data FILE) to that file, or set locomo.download: true (clerk locomo --download) where the "
    "network allows"
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """Every test runs offline with a private, empty Hugging Face home."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))


def _dump(conversations) -> str:
    return json.dumps([dataclasses.asdict(c) for c in conversations], sort_keys=True)


def test_doctests():
    """The module's >>> examples hold."""
    assert doctest.testmod(locomo).failed == 0


class TestLoadPercena:
    def test_deduplicates_by_conversation(self):
        """Ten question lines repeating two conversations load as two conversations with their own sessions."""
        convs = load_percena(PERCENA)
        assert [c.conv_id for c in convs] == ["conv-903", "conv-904"]
        assert [len(c.sessions) for c in convs] == [3, 2]
        assert [len(c.questions) for c in convs] == [6, 4]

    def test_sessions_in_given_order(self):
        """Sessions keep the file's order, with their ids, dates, summaries and 0-based indices."""
        conv = load_percena(PERCENA)[0]
        assert [s.session_id for s in conv.sessions] == ["session_1", "session_2", "session_3"]
        assert [s.index for s in conv.sessions] == [0, 1, 2]
        assert conv.sessions[1].date == "2023-02-12T18:30:00"
        assert conv.sessions[2].summary == "Lea's team came second."
        assert conv.sessions[1].turns[0] == {"speaker": "assistant", "text": "I started violin lessons on Mondays."}

    def test_speaker_names_when_present(self):
        """The ``name`` field (the _with_name variant) becomes the speaker; roles otherwise."""
        a, b = load_percena(PERCENA)
        assert a.speakers == ("user", "assistant")
        assert b.speakers == ("Noor", "Kai")
        assert b.sessions[1].turns[0] == {"speaker": "Kai", "text": "I adopted a parrot called Mango."}

    def test_questions_keep_given_options(self):
        """Choices and the correct index are taken as given; the source is the Percena set."""
        conv = load_percena(PERCENA)[0]
        q = conv.questions[0]
        assert (q.question_id, q.conv_id, q.raw_label) == ("conv-903_q0", "conv-903", "open_domain")
        assert len(q.options) == 10 and q.options[q.correct] == q.answer == "At the tram museum"
        assert q.evidence == []
        assert conv.source == SOURCE_PERCENA

    def test_disagreeing_copies_rejected(self, tmp_path):
        """A later line of a conversation with other session dates is an error, not a silent pick."""
        lines = PERCENA.read_text(encoding="utf-8").splitlines()
        bad = json.loads(lines[1])
        bad["haystack_session_datetimes"][0] = "2024-01-01T00:00:00"
        path = tmp_path / "bad.json"
        path.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n", encoding="utf-8")
        with pytest.raises(UserError, match="conversation 'conv-903' expected the same 3 sessions and dates"):
            load_percena(path)

    def test_wrong_option_count_rejected(self, tmp_path):
        """A line without exactly ten choices names the field and the count."""
        rec = json.loads(PERCENA.read_text(encoding="utf-8").splitlines()[0])
        rec["choices"] = rec["choices"][:9]
        path = tmp_path / "nine.json"
        path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
        with pytest.raises(UserError) as err:
            load_percena(path)
        assert str(err.value) == f"{path}:1: field 'choices' expected 10 strings, got 9 items"


class TestConvIdFromQuestionId:
    def test_split_at_last_q(self):
        """Everything before the last ``_q<number>`` is the conversation id."""
        assert conv_id_from_question_id("conv-26_q0") == "conv-26"
        assert conv_id_from_question_id("my_quiz_q12") == "my_quiz"

    def test_no_suffix_rejected(self):
        """An id without the suffix is a user error naming the field."""
        with pytest.raises(UserError) as err:
            conv_id_from_question_id("conv-26")
        assert str(err.value) == "question_id: expected '<conversation>_q<number>', got 'conv-26'"


class TestCategoryNames:
    def test_percena_labels_corrected(self):
        """Percena's mis-mapped labels get LoCoMo's real category names."""
        assert {label: category_from_percena(label) for label in
                ("open_domain", "multi_hop", "temporal_reasoning", "single_hop", "adversarial")} == {
            "open_domain": "single-hop",
            "multi_hop": "temporal",
            "temporal_reasoning": "open-domain",
            "single_hop": "multi-hop",
            "adversarial": "adversarial",
        }

    def test_numeric_categories(self):
        """locomo10.json numbers map to 4 single-hop, 1 multi-hop, 2 temporal, 3 open-domain, 5 adversarial."""
        assert [category_from_number(n) for n in (4, 1, 2, 3, 5)] == list(CATEGORIES)

    def test_fixture_questions_carry_corrected_names(self):
        """A "When …" question labelled multi_hop by Percena loads as temporal."""
        q = next(q for q in load_percena(PERCENA)[0].questions if q.raw_label == "multi_hop")
        assert q.question.startswith("When") and q.category == "temporal"

    def test_unknown_labels_rejected(self):
        """Unknown Percena labels and numbers outside 1-5 are user errors with the expected values."""
        with pytest.raises(UserError) as err:
            category_from_percena("temporal")
        assert str(err.value) == (
            "question_type: expected one of ['adversarial', 'multi_hop', 'open_domain', 'single_hop', "
            "'temporal_reasoning'], got 'temporal'"
        )
        with pytest.raises(UserError, match=r"qa.category: expected an integer 1-5, got 6"):
            category_from_number(6)


class TestLoadLocomo10:
    def test_sessions_ordered_numerically_and_skipped(self):
        """Only existing sessions load, by number: session_10 after session_9, session_4/12 (date only) skipped."""
        conv = load_locomo10(LOCOMO10)[0]
        assert [s.session_id for s in conv.sessions] == [
            "session_1", "session_2", "session_3", "session_5", "session_6",
            "session_7", "session_8", "session_9", "session_10", "session_11",
        ]
        assert [s.index for s in conv.sessions] == list(range(10))
        assert conv.sessions[8].date == "12:40 pm on 17 September, 2023"
        assert conv.sessions[8].summary == "Session 10: Marisol and Teodor catch up."

    def test_photo_caption_in_text(self):
        """A shared photo's BLIP caption is spelled out in the turn text."""
        conv = load_locomo10(LOCOMO10)[0]
        assert conv.sessions[2].turns[1] == {
            "speaker": "Teodor", "text": "Look! [shares a photo: a photo of a red kayak on a lake]",
        }

    def test_labelled_local_with_speakers(self):
        """The built set is labelled LoCoMo-MC10-local, never as Percena's, with both speakers."""
        convs = load_locomo10(LOCOMO10)
        assert {c.source for c in convs} == {SOURCE_LOCAL}
        assert [c.speakers for c in convs] == [("Marisol", "Teodor"), ("Ines", "Bram")]
        assert [q.question_id for q in convs[1].questions] == [f"conv-902_q{k}" for k in range(5)]

    def test_ten_distinct_options_with_gold(self):
        """Every question has ten distinct options, the gold at ``correct``, numbers as text."""
        for q in (q for c in load_locomo10(LOCOMO10) for q in c.questions):
            assert len(q.options) == 10 and len({o.casefold() for o in q.options}) == 10
            assert q.options[q.correct] == q.answer
        q = load_locomo10(LOCOMO10)[0].questions[6]
        assert (q.category, q.answer, q.raw_label) == ("temporal", "2019", "2")

    def test_adversarial_gold_is_not_mentioned(self):
        """Adversarial questions have the not-mentioned gold and their tempting answer as a distractor."""
        q = load_locomo10(LOCOMO10)[0].questions[11]
        assert q.adversarial and q.category == "adversarial"
        assert q.answer == NOT_MENTIONED == q.options[q.correct]
        assert "October 2023" in q.options

    def test_not_mentioned_offered_to_every_question(self):
        """Non-adversarial questions also offer the not-mentioned option, so it gives nothing away."""
        qs = [q for c in load_locomo10(LOCOMO10) for q in c.questions if not q.adversarial]
        assert all(NOT_MENTIONED in q.options and q.answer != NOT_MENTIONED for q in qs)

    def test_short_conversation_borrows_other_conversations(self):
        """A conversation with fewer than ten answers draws the rest from the other conversation."""
        q = load_locomo10(LOCOMO10)[1].questions[0]
        mine = {"Cello", "A blue bowl", "Before 11 February 2023", "Yes", NOT_MENTIONED}
        assert len(set(q.options) - mine) >= 5

    def test_missing_answer_rejected(self, tmp_path):
        """A non-adversarial question without an answer names the sample, question and field."""
        data = json.loads(LOCOMO10.read_text(encoding="utf-8"))
        del data[1]["qa"][0]["answer"]
        path = tmp_path / "locomo10.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(UserError) as err:
            load_locomo10(path)
        assert str(err.value) == f"{path}: sample[1].qa[0]: missing field 'answer'"


class TestMcConstruction:
    def test_byte_identical_across_runs(self):
        """Two loads with the same seed give byte-identical questions."""
        assert _dump(load_locomo10(LOCOMO10, mc_seed=7)) == _dump(load_locomo10(LOCOMO10, mc_seed=7))

    def test_seed_changes_options(self):
        """Another seed gives other option orders."""
        assert _dump(load_locomo10(LOCOMO10, mc_seed=7)) != _dump(load_locomo10(LOCOMO10, mc_seed=8))

    def test_pool_priority(self):
        """The first pool is used before the second."""
        opts, k = build_mc_options("q", [list("abcdefghi"), list("xyz")], random.Random(3))
        assert sorted(opts) == sorted("abcdefghiq") and opts[k] == "q"
        opts, k = build_mc_options("q", [list("abcdq"), list("vwxyz")], random.Random(3))
        assert sorted(opts) == sorted("abcdvwxyzq") and opts[k] == "q"

    def test_too_few_distractors(self):
        """Fewer than nine distinct distractors (duplicates and the gold do not count) is a user error."""
        with pytest.raises(UserError) as err:
            build_mc_options("Oslo", [["oslo", "Bergen", "bergen ", "Tromsø"]], random.Random(0))
        assert str(err.value) == (
            "cannot build 10 options for gold 'Oslo': only 2 distinct distractors in the data (expected 9)"
        )


class TestAdversarialApart:
    def test_flag_matches_category(self):
        """In both formats exactly the adversarial category is flagged."""
        for path in (PERCENA, LOCOMO10):
            for q in (q for c in load_locomo(path) for q in c.questions):
                assert q.adversarial == (q.category == "adversarial")

    def test_summary_counts_apart(self):
        """The summary reports adversarial questions and per-category counts in paper order."""
        s = summarize(load_locomo(PERCENA))
        assert s["adversarial"] == 2
        assert s["per_category"] == {
            "single-hop": 3, "multi-hop": 2, "temporal": 2, "open-domain": 1, "adversarial": 2,
        }
        assert (s["conversations"], s["sessions"], s["turns"], s["questions"]) == (2, 5, 11, 10)


def _pool(sizes: dict[str, int]) -> list[Question]:
    """Questions with the given number per category, interleaved."""
    out = []
    for cat, n in sizes.items():
        for k in range(n):
            out.append(Question(f"c_q{len(out)}", "c", f"{cat} {k}?", cat, [str(i) for i in range(10)],
                                0, cat == "adversarial", [], "0", cat))
    random.Random(0).shuffle(out)
    return out


class TestStratifiedSubset:
    SIZES = {"single-hop": 84, "multi-hop": 28, "temporal": 32, "open-domain": 10, "adversarial": 45}

    def test_deterministic(self):
        """The same seed picks the same questions; another seed picks others."""
        pool = _pool(self.SIZES)
        a = [q.question_id for q in stratified_subset(pool, 40, seed=5)]
        assert a == [q.question_id for q in stratified_subset(pool, 40, seed=5)]
        assert a != [q.question_id for q in stratified_subset(pool, 40, seed=6)]

    def test_stratified_by_category(self):
        """Category shares follow the pool's (largest remainder), every category present, input order kept."""
        pool = _pool(self.SIZES)
        sub = stratified_subset(pool, 40, seed=5)
        counts = {c: sum(q.category == c for q in sub) for c in self.SIZES}
        assert counts == {"single-hop": 17, "multi-hop": 6, "temporal": 6, "open-domain": 2, "adversarial": 9}
        positions = [pool.index(q) for q in sub]
        assert positions == sorted(positions)

    def test_small_budget_still_covers_categories(self):
        """With five questions for five categories, each category gets one."""
        sub = stratified_subset(_pool(self.SIZES), 5, seed=0)
        assert sorted(q.category for q in sub) == sorted(self.SIZES)

    def test_zero_or_large_keeps_all(self):
        """0 and any size above the pool keep every question in order."""
        pool = _pool(self.SIZES)
        assert stratified_subset(pool, 0, seed=1) == pool
        assert stratified_subset(pool, 10_000, seed=1) == pool

    def test_negative_rejected(self):
        """A negative size is a user error naming the field."""
        with pytest.raises(UserError) as err:
            stratified_subset(_pool(self.SIZES), -1, seed=0)
        assert str(err.value) == "max_questions: expected an integer >= 0 (0 = all), got -1"


class TestResolveLocomoPath:
    def test_configured_path_wins(self):
        """An existing configured file is returned even when download is allowed."""
        assert resolve_locomo_path(str(PERCENA), download=True) == PERCENA

    def test_nothing_configured(self):
        """No path and no download: one message naming the dataset, the original repo and the config keys."""
        with pytest.raises(UserError) as err:
            resolve_locomo_path(None, download=False)
        assert str(err.value) == (
            "LoCoMo data not found: locomo.path is not set and locomo.download is false" + MISSING_TAIL
        )

    def test_missing_path(self, tmp_path):
        """A configured path that does not exist is named in the message."""
        missing = tmp_path / "nope.json"
        with pytest.raises(UserError) as err:
            resolve_locomo_path(str(missing), download=False)
        assert str(err.value) == (
            f"LoCoMo data not found: locomo.path '{missing}' does not exist and locomo.download is false"
            + MISSING_TAIL
        )

    def test_offline_download_writes_nothing(self, tmp_path):
        """With HF_HUB_OFFLINE set the download is skipped, said so, and nothing is written."""
        with pytest.raises(UserError) as err:
            resolve_locomo_path(None, download=True)
        assert str(err.value) == (
            "LoCoMo data not found: locomo.path is not set and the download was skipped because "
            "HF_HUB_OFFLINE is set" + MISSING_TAIL
        )
        assert list(tmp_path.iterdir()) == []


class TestDetectFormat:
    def test_both_formats(self):
        """JSON lines are Percena's format, a JSON list is locomo10.json."""
        assert locomo.detect_format(PERCENA) == locomo.FORMAT_PERCENA
        assert locomo.detect_format(LOCOMO10) == locomo.FORMAT_LOCOMO10

    def test_other_files_rejected(self, tmp_path):
        """Anything else is a user error quoting the start of the file."""
        path = tmp_path / "x.csv"
        path.write_text("a,b\n", encoding="utf-8")
        with pytest.raises(UserError) as err:
            locomo.detect_format(path)
        assert str(err.value) == (
            f"{path}: expected Percena JSON lines (starting with '{{') or locomo10.json (starting with '['), "
            "got b'a,b\\n'"
        )


class TestCli:
    def test_missing_data_exits_2_without_output(self, tmp_path, capsys):
        """``clerk locomo`` without data exits 2 with the message and creates no output directory."""
        out = tmp_path / "out"
        for extra in ([], ["--download"]):
            with pytest.raises(SystemExit) as exc:
                clerk_main(["locomo", "--model", str(tmp_path / "model"), "--systems", "clerk",
                            "--out", str(out), *extra])
            assert exc.value.code == 2
            err = capsys.readouterr().err
            assert err.startswith("clerk locomo: error: LoCoMo data not found: locomo.path is not set")
            assert err.rstrip("\n").endswith(MISSING_TAIL) and err.count("\n") == 1
            assert not out.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == []

    def test_selection_written(self, tmp_path, capsys):
        """With data, the stratified selection is recorded for the evaluation step."""
        model = tmp_path / "model"
        model.mkdir()
        out = tmp_path / "out"
        clerk_main(["locomo", "--data", str(LOCOMO10), "--model", str(model), "--out", str(out),
                    "--max-questions", "5", "--seed", "3"])
        sel = json.loads((out / "selection.json").read_text(encoding="utf-8"))
        assert sel["questions"] == 5 and sel["sources"] == [SOURCE_LOCAL]
        assert sel["per_category"] == {c: 1 for c in CATEGORIES}
        assert sel["config"]["systems"] == list(locomo.LOCOMO_SYSTEMS)
        assert "evaluation is not wired yet" in capsys.readouterr().err

    def test_unknown_system_rejected(self, tmp_path, capsys):
        """An unknown system name is refused by the parser with exit 2."""
        with pytest.raises(SystemExit) as exc:
            clerk_main(["locomo", "--model", "m", "--out", str(tmp_path / "o"), "--systems", "rag"])
        assert exc.value.code == 2
        assert "invalid choice: 'rag'" in capsys.readouterr().err

    def test_inspect_text(self, capsys):
        """``clerk locomo-inspect`` prints totals and per-category counts under corrected names."""
        clerk_main(["locomo-inspect", "--data", str(LOCOMO10)])
        text = capsys.readouterr().out
        assert "source: LoCoMo-MC10-local" in text
        assert "conversations: 2  sessions: 13  turns: 27  questions: 17 (adversarial: 4)" in text
        assert "  single-hop   4\n  multi-hop    3\n  temporal     3\n  open-domain  3\n  adversarial  4" in text
        assert "  conv-901  speakers=Marisol/Teodor  sessions=10  turns=21  questions=12" in text

    def test_inspect_json(self, capsys):
        """``--json`` prints the same counts as JSON."""
        clerk_main(["locomo-inspect", "--data", str(PERCENA), "--json"])
        data = json.loads(capsys.readouterr().out)
        assert data == summarize(load_locomo(PERCENA))
