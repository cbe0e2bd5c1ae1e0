"""Tests for clerk.locomo: both LoCoMo formats, category correction, MC building, subsets, missing data.

The fixtures in tests/fixtures/locomo/ are invented conversations in the two public schemas (the
real data is CC BY-NC 4.0 and never committed). Nothing here touches the network.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import json
import pkgutil
import random
import subprocess
from pathlib import Path

import pytest
import yaml

import clerk.locomo
from clerk import prompts
from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.locomo.bench import bench_prefix
from clerk.locomo.data import (
    CATEGORIES,
    Question,
    as_chat_turns,
    category_from_number,
    category_from_percena,
)
from clerk.locomo.evaluation import (
    LOCOMO_SCHEMAS,
    LocomoEvalConfig,
    conversation_timeline,
    evaluate_locomo,
    question_time,
    session_record,
)
from clerk.locomo.files import FORMAT_LOCOMO10, FORMAT_PERCENA, detect_format, load_locomo, resolve_locomo_path
from clerk.locomo.locomo10 import NOT_MENTIONED, SOURCE_LOCAL, build_mc_options, load_locomo10
from clerk.locomo.percena import SOURCE_PERCENA, conv_id_from_question_id, load_percena
from clerk.locomo.subsets import stratified_subset, summarize
from clerk.memory import MEMORY_REGISTRY, Runtime
from clerk.memory.evidence import EvidenceMemory
from clerk.memory.registry import LOCOMO
from clerk.memory.summary_rag import SummaryRagMemory
from clerk.memory.text import session_lines
from clerk.report.locomo import table2
from clerk.report.tabular import read_csv

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "locomo"
PERCENA = FIXTURES / "locomo_mc10_mini.json"
LOCOMO10 = FIXTURES / "locomo10_mini.json"
FLAT = FIXTURES / "locomo10_flat_summaries.json"
ONE_SAMPLE = FIXTURES / "locomo10_conv-901.json"

MISSING_TAIL = (
    ". Get data/locomo_mc10.json from the Hugging Face dataset Percena/locomo-mc10 "
    "(https://huggingface.co/datasets/Percena/locomo-mc10) or locomo10.json from the original repo "
    "https://github.com/snap-research/locomo (licence CC BY-NC 4.0: never commit it), then set locomo.path "
    "(clerk locomo --data FILE) to that file, or set locomo.download: true (clerk locomo --download) where the "
    "network allows"
)

#: Every system LoCoMo serves, from the registry (the one list of system names).
ALL_LOCOMO = MEMORY_REGISTRY.in_order(LOCOMO)
#: What the Percena fixture can serve: its turns carry no dialogue ids, so not the evidence oracle.
PERCENA_SYSTEMS = [name for name in ALL_LOCOMO if name != EvidenceMemory.name]


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """Every test runs offline with a private, empty Hugging Face home."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))


def _dump(conversations) -> str:
    return json.dumps([dataclasses.asdict(c) for c in conversations], sort_keys=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A tiny scratch model (tokenizer trained on a few synthetic personas) and a non-zero LoRA adapter."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from clerk.generator.files import write_timelines
    from clerk.generator.timelines import generate
    from clerk.models.materialize import materialize
    from clerk.models.spec import ModelSpec

    root = tmp_path_factory.mktemp("locomo")
    write_timelines(root / "train.jsonl", generate(5, "train", personas=2, sessions=3, budget=6))
    materialize(ModelSpec(kind="scratch", timelines=str(root / "train.jsonl"), vocab_size=400, hidden=32, layers=1,
                          heads=2, intermediate=64, max_positions=2048, seed=0), root / "model")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(root / "model")
    # init_lora_weights=False: a non-zero adapter, so the clerk system really differs from the base model.
    get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"],
                                     init_lora_weights=False)).save_pretrained(root / "adapter")
    return root


@pytest.fixture(scope="module")
def run(workdir) -> Path:
    """One `clerk locomo` over the Percena fixture with every LoCoMo system it can serve (clerk with the adapter)."""
    out = workdir / "run"
    clerk_main(["locomo", "--data", str(PERCENA), "--model", str(workdir / "model"), "--adapter",
                str(workdir / "adapter"), "--out", str(out), "--max-new-tokens", "4", "--batch-size", "2",
                "--seed", "7", "--systems", *PERCENA_SYSTEMS, "--quiet"])
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", sorted(m.name for m in pkgutil.iter_modules(clerk.locomo.__path__)))
def test_doctests(name):
    """Every clerk.locomo module's >>> examples hold."""
    assert doctest.testmod(importlib.import_module(f"clerk.locomo.{name}")).failed == 0


def test_summary_rag_doctests():
    """The summary-rag module's >>> examples hold."""
    import clerk.memory.summary_rag as summary_rag

    assert doctest.testmod(summary_rag).failed == 0


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
            "speaker": "Teodor", "text": "Look! [shares a photo: a photo of a red kayak on a lake]", "dia_id": "D3:2",
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


class TestSummaryLayouts:
    def test_top_level_summaries_read_like_the_block(self):
        """Samples whose summaries are top-level session_N_summary keys load exactly like the block layout."""
        assert _dump(load_locomo(FLAT)) == _dump(load_locomo(LOCOMO10))
        assert load_locomo(FLAT)[0].sessions[8].summary == "Session 10: Marisol and Teodor catch up."

    def test_one_sample_object(self):
        """A per-conversation file (one sample object) is the locomo10.json format, with its sessions."""
        assert detect_format(ONE_SAMPLE) == FORMAT_LOCOMO10
        conv = load_locomo(ONE_SAMPLE)
        assert [c.conv_id for c in conv] == ["conv-901"]
        assert conv[0].sessions == load_locomo(LOCOMO10)[0].sessions

    def test_bad_summary_block_names_the_field(self, tmp_path):
        """A session_summary that is not an object is refused naming the field."""
        data = json.loads(LOCOMO10.read_text(encoding="utf-8"))
        data[0]["session_summary"] = ["x"]
        path = tmp_path / "locomo10.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(UserError, match=r"sample\[0\]: field 'session_summary' expected an object"):
            load_locomo(path)

    @pytest.mark.parametrize("fixture", [LOCOMO10, FLAT, PERCENA], ids=["block", "top-level", "percena"])
    def test_summary_rag_without_summaries_fails_naming_the_field(self, workdir, tmp_path, capsys, fixture):
        """summary-rag over data without summaries fails before any model loads, naming the file's
        field, instead of reading an empty memory; nothing is written."""
        path = tmp_path / fixture.name
        if fixture == PERCENA:
            lines = [json.loads(line) for line in fixture.read_text(encoding="utf-8").splitlines() if line]
            for line in lines:
                line.pop("haystack_session_summaries")
            path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            field, total = "'haystack_session_summaries' (Percena/locomo-mc10)", 5
        else:
            data = json.loads(fixture.read_text(encoding="utf-8"))
            for sample in data:
                sample.pop("session_summary", None)
                for key in [k for k in sample if k.endswith("_summary") and k.startswith("session_")]:
                    del sample[key]
            path.write_text(json.dumps(data), encoding="utf-8")
            field, total = "'session_summary' (a block of 'session_N_summary' keys) or top-level 'session_N_summary' keys (LoCoMo-MC10-local)", 13
        out = tmp_path / "out"
        with pytest.raises(SystemExit) as exc:
            clerk_main(["locomo", "--data", str(path), "--model", str(workdir / "model"), "--out", str(out),
                        "--systems", "full", "summary-rag", "--reader-model", "base", "--quiet"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert f"clerk locomo: error: summary-rag reads each session's summary, but {total} of {total} sessions " in err
        assert f"expected field {field}; use a file that has them or leave summary-rag out of --systems" in err
        assert not out.exists()

    def test_partly_missing_summaries_fail_too(self, tmp_path):
        """One session without its summary is enough to refuse (its memory would silently lack it)."""
        from clerk.locomo.evaluation import check_system_inputs

        data = json.loads(FLAT.read_text(encoding="utf-8"))
        del data[1]["session_2_summary"]
        path = tmp_path / "flat.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(UserError, match=r"but 1 of 13 sessions have none \(conv-902 session_2\)"):
            check_system_inputs(load_locomo(path), {"summary-rag": SummaryRagMemory})
        check_system_inputs(load_locomo(FLAT), {"summary-rag": SummaryRagMemory})  # all there: no error


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
        assert detect_format(PERCENA) == FORMAT_PERCENA
        assert detect_format(LOCOMO10) == FORMAT_LOCOMO10

    def test_other_files_rejected(self, tmp_path):
        """Anything else is a user error quoting the start of the file."""
        path = tmp_path / "x.csv"
        path.write_text("a,b\n", encoding="utf-8")
        with pytest.raises(UserError) as err:
            detect_format(path)
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

    def test_selection_written(self, workdir, tmp_path):
        """With data, the stratified selection is recorded next to the results; a data file outside the
        working directory is named by its file name only (no folder of this machine in the results)."""
        out, data = tmp_path / "out", tmp_path / "elsewhere" / LOCOMO10.name
        data.parent.mkdir()
        data.write_bytes(LOCOMO10.read_bytes())
        clerk_main(["locomo", "--data", str(data), "--model", str(workdir / "model"), "--out", str(out),
                    "--max-questions", "5", "--seed", "3", "--systems", "summary-rag", "--reader-model", "base", "--quiet"])
        sel = json.loads((out / "selection.json").read_text(encoding="utf-8"))
        metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
        assert sel["data_file"] == sel["config"]["path"] == metrics["input"]["path"] == LOCOMO10.name
        assert str(tmp_path) not in (out / "selection.json").read_text() + (out / "metrics.json").read_text()
        assert sel["questions"] == 5 and sel["sources"] == [SOURCE_LOCAL]
        assert sel["per_category"] == {c: 1 for c in CATEGORIES}
        assert sel["config"]["systems"] == ["summary-rag"]
        rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
        assert [r["question_id"] for r in rows] == sel["question_ids"]

    def test_missing_adapter_exits_2_without_output(self, workdir, tmp_path, capsys):
        """The clerk system without --adapter is refused before any model loads; nothing is written."""
        out = tmp_path / "out"
        with pytest.raises(SystemExit) as exc:
            clerk_main(["locomo", "--data", str(PERCENA), "--model", str(workdir / "model"), "--out", str(out),
                        "--systems", "clerk", "full"])
        assert exc.value.code == 2
        assert capsys.readouterr().err == (
            "clerk locomo: error: --adapter is required for system 'clerk' (it reads or writes with the trained "
            "adapter)\n")
        assert not out.exists()

    def test_bad_budget(self, workdir, tmp_path, capsys):
        """A budget below one is refused naming the field."""
        with pytest.raises(SystemExit) as exc:
            clerk_main(["locomo", "--data", str(PERCENA), "--model", str(workdir / "model"), "--out",
                        str(tmp_path / "o"), "--systems", "full", "--budget", "0"])
        assert exc.value.code == 2
        assert capsys.readouterr().err == "clerk locomo: error: argument --budget: must be >= 1, got 0\n"

    def test_unknown_system_rejected(self, tmp_path, capsys):
        """An unknown system name is refused with exit 2 and one line naming it and the allowed names."""
        with pytest.raises(SystemExit) as exc:
            clerk_main(["locomo", "--model", "m", "--out", str(tmp_path / "o"), "--systems", "rag"])
        assert exc.value.code == 2
        assert f"locomo.systems: expected names from {list(ALL_LOCOMO)}, got ['rag']" \
            in capsys.readouterr().err

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


# --- evaluation ----------------------------------------------------------------------------


class TestSessionRecord:
    def test_speakers_and_date(self):
        """Speakers become roles and the date heads the rendered transcript, as render_turns(date=) does."""
        conv = load_locomo(LOCOMO10)[0]
        for session in conv.sessions:
            text = prompts.render_turns(session_record(session)["turns"])
            assert text == prompts.render_turns(as_chat_turns(session), date=session.date)
            assert text.startswith(f"date: {session.date}\n")
        roles = {t["role"] for s in conv.sessions for t in session_record(s)["turns"]}
        assert roles == {"date", "Marisol", "Teodor"}

    def test_timeline_has_budget_and_no_questions(self):
        """A conversation becomes one persona record of the given budget whose sessions hold no questions."""
        conv = load_locomo(PERCENA)[1]
        tl = conversation_timeline(conv, 9)
        assert (tl["name"], tl["budget"], tl["speakers"]) == ("conv-904", 9, ["Noor", "Kai"])
        assert [s["index"] for s in tl["sessions"]] == [0, 1]
        assert all(s["questions"] == [] for s in tl["sessions"])


    def test_open_ledger_has_the_speakers_as_subjects(self):
        """With the open ledger a conversation is a format-2 record whose form names both speakers
        (the ledger systems then compile and reduce under it); the closed ledger has no form."""
        from clerk.form import timeline_form

        conv = load_locomo(PERCENA)[1]
        form = timeline_form(conversation_timeline(conv, 24, "open"))
        assert (form.subjects, form.keys) == (("Noor", "Kai"), None)
        assert timeline_form(conversation_timeline(conv, 24, "closed")) is None


class TestLocomoEvalConfig:
    def test_defaults(self):
        """The LoCoMo budget defaults to the synthetic budget, the ledger is closed, the reader MC."""
        cfg = LocomoEvalConfig()
        assert (cfg.budget, cfg.ledger, cfg.summary_k, cfg.reader) == (12, "closed", 3, "mc")

    def test_rejects(self):
        """Bad budgets, k and the rule reader are refused with the field named."""
        with pytest.raises(UserError, match=r"^summary_k must be an int >= 1, got 0$"):
            LocomoEvalConfig(summary_k=0)
        with pytest.raises(UserError, match=r"^reader must be 'mc' on LoCoMo"):
            LocomoEvalConfig(reader="rule")
        with pytest.raises(UserError, match=r"^ledger must be one of open, closed, got 'catalogue'$"):
            LocomoEvalConfig(ledger="catalogue")


class TestSummaryRag:
    def _runtime(self, workdir, k: int, context: int = 4096) -> Runtime:
        from transformers import AutoTokenizer

        return Runtime(LocomoEvalConfig(summary_k=k), tokenizer=AutoTokenizer.from_pretrained(workdir / "model"),
                       context_tokens=context)

    def _state(self, system, conv):
        tl = conversation_timeline(conv, 12)
        state = system.init_state(tl)
        for session in tl["sessions"]:
            state = system.write([state], [tl], [session])[0].state
        return tl, state

    def test_returns_k_summaries(self, workdir):
        """With more sessions than k, the view holds exactly k dated summaries in chronological order."""
        conv = load_locomo(LOCOMO10)[0]
        system = SummaryRagMemory(self._runtime(workdir, 3))
        tl, state = self._state(system, conv)
        view = system.view(state, tl, question_time(conv), {"question": "Which pets does Marisol have?"})
        blocks = [b for b in view.text.split("\n") if b.startswith("[session ")]
        assert len(blocks) == 3 and not view.truncated
        indices = [int(b.split("]")[0].removeprefix("[session ")) for b in blocks]
        assert indices == sorted(indices)
        assert all(" date: " in b for b in blocks)

    def test_bm25_picks_the_matching_summary(self, workdir):
        """With k = 1 the summary sharing the question's words is the one shown."""
        conv = load_locomo(PERCENA)[0]
        system = SummaryRagMemory(self._runtime(workdir, 1))
        tl, state = self._state(system, conv)
        view = system.view(state, tl, question_time(conv), {"question": "Which lessons did Yusuf take up?"})
        assert view.text == "[session 1] date: 2023-02-12T18:30:00\nYusuf takes violin; Lea rows."

    def test_fewer_sessions_than_k_and_empty(self, workdir):
        """Fewer summaries than k shows them all; no summaries (synthetic sessions) gives an empty view."""
        conv = load_locomo(PERCENA)[1]
        system = SummaryRagMemory(self._runtime(workdir, 5))
        tl, state = self._state(system, conv)
        assert system.view(state, tl, question_time(conv), {"question": "parrot?"}).text.count("[session ") == 2
        bare = system.write([system.init_state(tl)], [tl], [{"index": 0, "turns": []}])[0].state
        assert system.view(bare, tl, {}, {"question": "parrot?"}).text == ""

    def test_truncated_to_budget(self, workdir):
        """Summaries beyond the reader's view budget are dropped oldest first and the view says so."""
        conv = load_locomo(LOCOMO10)[0]
        question = {"question": "Which pets does Marisol have?"}
        system = SummaryRagMemory(self._runtime(workdir, 3))
        tl, state = self._state(system, conv)
        whole = system.view(state, tl, question_time(conv), question)
        newest = whole.text[whole.text.rindex("[session "):]
        budget = system.rt.count_tokens(newest)
        small = SummaryRagMemory(self._runtime(workdir, 3, context=Runtime.PROMPT_RESERVE + budget))
        view = small.view(state, tl, question_time(conv), question)
        assert view.truncated and view.text == newest


class TestEvaluateLocomo:
    def test_outputs_follow_schema(self, run):
        """predictions.jsonl and metrics.json exist and every record has exactly the documented fields."""
        from clerk.evaluate.schemas import validate_record

        rows = _jsonl(run / "predictions.jsonl")
        assert len(rows) == 10 * len(PERCENA_SYSTEMS)
        for row in rows:
            validate_record("predictions", row, LOCOMO_SCHEMAS)
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        validate_record("metrics", metrics, LOCOMO_SCHEMAS)
        assert list(metrics["systems"]) == PERCENA_SYSTEMS
        for record in metrics["systems"].values():
            validate_record("metrics.system", record, LOCOMO_SCHEMAS)

    def test_data_provenance(self, run):
        """Metrics name the data source label, the file's sha256, the subset size and seed, and the budget."""
        import hashlib

        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        sha = hashlib.sha256(PERCENA.read_bytes()).hexdigest()
        assert (metrics["input"]["source"], metrics["input"]["sha256"]) == (SOURCE_PERCENA, sha)
        assert (metrics["seed"], metrics["subset"]["size"], metrics["config"]["budget"]) == (7, 10, 12)
        for s in metrics["systems"].values():
            assert (s["source"], s["data_sha256"], s["subset_size"], s["subset_seed"]) == (SOURCE_PERCENA, sha, 10, 7)

    def test_readers(self, run):
        """Every system is read by the one reader, the trained adapter by default."""
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        readers = {n: s["reader"] for n, s in metrics["systems"].items()}
        assert readers == {name: {"method": "mc", "model": "adapter"} for name in PERCENA_SYSTEMS}
        assert metrics["config"]["reader_model"] == "adapter"

    def test_adversarial_kept_apart(self, run):
        """accuracy is over non-adversarial questions only; adversarial accuracy is reported separately."""
        rows = _jsonl(run / "predictions.jsonl")
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        for name, s in metrics["systems"].items():
            mine = [r for r in rows if r["system"] == name]
            plain = [r["correct"] for r in mine if not r["adversarial"]]
            adv = [r["correct"] for r in mine if r["adversarial"]]
            assert (s["n"], s["n_adversarial"], s["n_questions"]) == (8, 2, 10)
            assert s["accuracy"] == pytest.approx(sum(plain) / len(plain))
            assert s["adversarial_accuracy"] == pytest.approx(sum(adv) / len(adv))
            assert s["n_by_category"] == {"single-hop": 3, "multi-hop": 2, "temporal": 2, "open-domain": 1}
            assert "adversarial" not in s["accuracy_by_category"]
        assert {r["category"] for r in rows if r["adversarial"]} == {"adversarial"}

    def test_correct_is_chosen_equals_gold(self, run):
        """Each prediction's correct flag is its chosen option against the question's gold index."""
        gold = {q.question_id: q.correct for c in load_locomo(PERCENA) for q in c.questions}
        for row in _jsonl(run / "predictions.jsonl"):
            assert row["correct_index"] == gold[row["question_id"]]
            assert row["correct"] == (row["chosen"] == gold[row["question_id"]])
            assert 0 <= row["chosen"] < 10

    def test_full_reads_whole_conversation(self, run):
        """Untruncated, full reads the whole transcript: its read tokens equal the conversation's token count."""
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        tokens = {c["conv_id"]: c["transcript_tokens"] for c in metrics["input"]["conversations"]}
        for row in _jsonl(run / "predictions.jsonl"):
            if row["system"] == "full":
                assert row["read_tokens"] == tokens[row["conversation"]] and not row["truncated"]

    def test_ledger_write_stats(self, run):
        """Ledger systems report write-side health over every conversation-session; others report none."""
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        for name, s in metrics["systems"].items():
            assert s["n_writes"] == 5
            if MEMORY_REGISTRY.info(name).writer_kind:
                assert s["parse_failure_rate"] is not None and 0 <= s["occupied_mean"] <= 12
            else:
                assert s["parse_failure_rate"] is None and s["n_ops"] is None

    def test_programs_file(self, run):
        """programs.jsonl.gz holds one line per conversation-session of each model writer (clerk,
        prompted-ledger), whose verdicts count the invalid ops of metrics.json; metrics.json gains
        only counts by rejection code."""
        from clerk import ledger as L
        from clerk.evaluate.programs import PROGRAMS_FILE, read_programs
        from clerk.evaluate.schemas import validate_record

        rows = read_programs(run / PROGRAMS_FILE)
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["systems"]
        sessions = {(c.conv_id, s.index) for c in load_locomo(PERCENA) for s in c.sessions}
        assert len(sessions) == 5
        for name in ("clerk", "prompted-ledger"):
            mine = [r for r in rows if r["system"] == name]
            assert {(r["persona"], r["session"]) for r in mine} == sessions and len(mine) == 5
            for row in mine:
                validate_record("programs", row)
                assert not row["teacher_forced"] and len(row["ops"]) == len(row["verdicts"])
                assert len(L.deserialize(row["ledger"])) == 12
            rejected = [v for r in mine for v in r["verdicts"] if v != "applied"]
            s = metrics[name]
            assert sum(s["invalid_reasons"].values()) == len(rejected) and set(s["invalid_reasons"]) <= set(L.REJECTION_CODES)
            assert s["invalid_op_rate"] == (len(rejected) / s["n_ops"] if s["n_ops"] else 0.0)
            assert all(type(n) is int for n in s["invalid_reasons"].values())
        assert {r["system"] for r in rows} == {"clerk", "clerk-repair", "prompted-ledger"}
        assert metrics["full"]["invalid_reasons"] is None and metrics["summary-rag"]["invalid_reasons"] is None

    def test_rejections_counted_by_code(self, workdir):
        """A writer whose lines the reducer rejects: each rejection is in its record as its code, and
        metrics counts them by code."""
        from clerk.memory import Proposal, Registry
        from clerk.memory.ledger_system import ModelLedgerSystem
        from clerk.memory.registry import LOCOMO
        from clerk.program import compile_program

        class Repeating(ModelLedgerSystem):
            version = "test"
            writer_kind = "base"

            def propose(self, states, timelines, sessions):
                text = "ADD hobby violin\nUPDATE pet_name Rex\nADD hobby violin\nnote to self"
                return [Proposal(text, compile_program(text, state, tl["name"], session["index"]).program)
                        for state, tl, session in zip(states, timelines, sessions)]

        local = Registry()
        local.register("repeating", order=1, benchmarks=(LOCOMO,))(Repeating)
        runtime = Runtime(LocomoEvalConfig(reader_model="base"), model_dir=str(workdir / "model"))
        conversations = load_locomo(PERCENA)
        _, summary, programs = evaluate_locomo(conversations, ["repeating"], runtime, registry=local, progress=False)
        first = {c.conv_id: c.sessions[0].index for c in conversations}
        for record in programs:
            held = record["session"] != first[record["persona"]]
            assert record["verdicts"] == ["key_held" if held else "applied", "unknown_key", "key_held", "unparsed_line"]
        n = len(programs)
        assert summary["repeating"]["invalid_reasons"] == {
            "unparsed_line": n, "unknown_key": n, "key_held": 2 * n - len(first)}
        assert summary["repeating"]["invalid_op_rate"] == (4 * n - len(first)) / (4 * n)

    def test_full_truncation_recorded(self, workdir):
        """A view budget below the conversation's length truncates the full view and records it."""
        runtime = Runtime(LocomoEvalConfig(max_read_tokens=40, reader_model="base"), model_dir=str(workdir / "model"))
        rows, summary, _ = evaluate_locomo(load_locomo(PERCENA), ["full"], runtime, progress=False)
        assert all(r["truncated"] and 0 < r["read_tokens"] <= 40 for r in rows)
        assert summary["full"]["truncated_rate"] == 1.0


class TestPrefixReuse:
    def test_same_choices_fewer_prefill_tokens(self, workdir):
        """Encoding the conversation once and reusing it picks the same options as prefilling each prompt."""
        r = bench_prefix(PERCENA, workdir / "model", progress=False)
        assert r["same_choices"] and r["choices_reuse"] == r["choices_no_reuse"]
        assert r["questions"] == 6
        assert r["prefill_tokens_per_question_reuse"] < r["prefill_tokens_per_question_no_reuse"]
        assert r["prefill_tokens_per_question_no_reuse"] == r["prefix_tokens"] + r["suffix_tokens_mean"]

    def test_evaluation_path_matches_plain_scoring(self, workdir):
        """The runner's full-system choices (one encoded prefix per conversation) equal scoring every
        question's whole prompt on its own."""
        from clerk.models.loading import chat_prompt
        from clerk.scoring import mc as scoring

        runtime = Runtime(LocomoEvalConfig(reader_model="base", reader_pmi=0.0), model_dir=str(workdir / "model"))
        conversations = load_locomo(PERCENA)
        rows, _, _ = evaluate_locomo(conversations, ["full"], runtime, progress=False)
        model, tok = runtime.model("base")
        chosen = {r["question_id"]: r["chosen"] for r in rows}
        for conv in conversations:
            text = "\n".join(line for s in conv.sessions for line in session_lines(session_record(s)))
            for q in conv.questions:
                prompt = chat_prompt(tok, prompts.answer_messages(text, q.question))
                assert chosen[q.question_id] == scoring.pick(scoring.score_options(model, tok, prompt, q.options))

    def test_tile_and_unknown_conversation(self, workdir):
        """Tiling repeats the sessions; an unknown conversation id is refused with the known ids."""
        r = bench_prefix(PERCENA, workdir / "model", conversation="conv-904", tile=3, progress=False)
        assert (r["conversation"], r["sessions"], r["same_choices"]) == ("conv-904", 6, True)
        with pytest.raises(UserError, match=r"^--conversation: expected one of \['conv-903', 'conv-904'\], got 'x'$"):
            bench_prefix(PERCENA, workdir / "model", conversation="x")


class TestTableLocomo:
    def _metrics(self, run, tmp_path, seed: int, shift: float, sha: str | None = None) -> Path:
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        metrics["seed"] = seed
        if sha:
            metrics["input"]["sha256"] = sha
        for s in metrics["systems"].values():
            s["accuracy"] = 0.5 + shift
        path = tmp_path / str(seed) / "metrics.json"
        path.parent.mkdir()
        path.write_text(json.dumps(metrics), encoding="utf-8")
        return path

    def test_aggregates_over_seeds(self, run, tmp_path):
        """Two seeds give one row per system with n, mean and sd of accuracy, and a compact Markdown table."""
        files = [self._metrics(run, tmp_path, 1, 0.0), self._metrics(run, tmp_path, 2, 0.2)]
        out, md = tmp_path / "table2.csv", tmp_path / "table2.md"
        clerk_main(["table-locomo", "--metrics", *map(str, files), "--out", str(out), "--markdown", str(md)])

        df = read_csv(out, "table", ("system",))
        n = len(PERCENA_SYSTEMS)
        assert sorted(df["system"]) == sorted(PERCENA_SYSTEMS)
        assert set(df["source"]) == {SOURCE_PERCENA} and set(df["seeds"]) == {"1;2"}
        assert df["accuracy_mean"].tolist() == pytest.approx([0.6] * n)
        assert df["accuracy_sd"].tolist() == pytest.approx([0.141421] * n, abs=1e-6)
        lines = md.read_text(encoding="utf-8").splitlines()
        assert lines[0] == ("| system | reader | seeds | questions | accuracy | single-hop | multi-hop | temporal | "
                            "open-domain | adversarial | abstained when answerable | read tokens | truncated | "
                            "invalid ops |")
        assert [line.split(" | ")[0][2:] for line in lines[2:2 + n]] == PERCENA_SYSTEMS
        assert lines[2].split(" | ")[4] == "0.600 ± 1.271"
        # the paragraph under it: clerk's invalid-op rate per seed and its read cost, from the same files
        (para,) = [line for line in lines if line.startswith("**Reading table 2.**")]
        clerk = df[df["system"] == "clerk"].iloc[0]
        assert f"rejected {clerk['invalid_op_rate_mean']:.3f} of the edits" in para
        assert f"It reads {clerk['read_tokens_mean']:.0f} tokens per question" in para

    def test_byte_stable(self, run, tmp_path):
        """The same metrics give the same CSV bytes whatever the file order."""
        files = [str(self._metrics(run, tmp_path, s, s / 10)) for s in (1, 2)]
        clerk_main(["table-locomo", "--metrics", *files, "--out", str(tmp_path / "a.csv")])
        clerk_main(["table-locomo", "--metrics", *files[::-1], "--out", str(tmp_path / "b.csv")])
        assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()

    def test_mixed_data_rejected(self, run, tmp_path):
        """Metrics from different data files cannot be aggregated together."""
        files = [self._metrics(run, tmp_path, 1, 0.0), self._metrics(run, tmp_path, 2, 0.0, sha="0" * 64)]
        with pytest.raises(UserError, match=r"^--metrics: every file must come from the same data"):
            table2(files)

    def test_not_locomo_metrics(self, tmp_path):
        """A metrics file of another stage is refused naming the expected schema."""
        path = tmp_path / "m.json"
        path.write_text(json.dumps({"schema": "clerk.evaluate.metrics/1"}))
        with pytest.raises(UserError, match=r"expected schema 'clerk.locomo.metrics/1' in .* got 'clerk.evaluate"):
            table2([path])


class TestWorkflow:
    @staticmethod
    def _jobs(*config: str) -> dict[str, int]:
        """Job counts of a quiet dry run of the whole default DAG (the 'Job stats' table); forced, so
        shipped results in the checkout do not hide jobs."""
        cmd = ["snakemake", "-n", "--forceall", "--cores", "1", "--nolock", "--quiet", "rules"]
        if config:
            cmd += ["--config", *config]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        text = proc.stdout + proc.stderr
        table = text[text.index("Job stats:"):].splitlines()[3:]
        jobs = {}
        for line in table:
            parts = line.split()
            if len(parts) != 2 or parts[0] == "total":
                break
            jobs[parts[0]] = int(parts[1])
        return jobs

    def test_locomo_jobs_only_with_data(self):
        """With locomo.path set the DAG holds one locomo job per seed and table 2; without it neither."""
        seeds = len(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["seeds"])
        without = self._jobs()
        assert "locomo" not in without and "table_locomo" not in without
        with_data = self._jobs(f"locomo={{path: {LOCOMO10.relative_to(ROOT)}}}")
        assert with_data["locomo"] == seeds and with_data["table_locomo"] == 1


class TestBoundsAndAbstention:
    """The floor (null: the question alone), the ceiling (evidence: the annotated turns) and the
    abstention option worded as the reader abstains."""

    def test_abstention_is_the_readers_own_answer(self):
        """Adversarial questions' gold and an option of every question is the reader's `unknown`,
        in both file formats."""
        for conv in [*load_locomo10(LOCOMO10), *load_percena(PERCENA)]:
            for q in conv.questions:
                assert prompts.UNKNOWN_ANSWER in q.options and "Not mentioned in the conversation" not in q.options
                assert (q.answer == prompts.UNKNOWN_ANSWER) == q.adversarial or not q.adversarial

    def test_evidence_view_is_the_annotated_turns_and_their_dates(self, workdir):
        """Each question's view holds its evidence turns under their sessions' headers and date lines,
        no other turn; null's view is empty."""
        from transformers import AutoTokenizer

        from clerk.memory.null import NullMemory

        runtime = Runtime(LocomoEvalConfig(), tokenizer=AutoTokenizer.from_pretrained(workdir / "model"),
                          context_tokens=4096)
        conv = load_locomo10(LOCOMO10)[0]
        tl = conversation_timeline(conv, 12)
        system, null = EvidenceMemory(runtime), NullMemory(runtime)
        state = system.init_state(tl)
        for session in tl["sessions"]:
            state = system.write([state], [tl], [session])[0].state
        asked = question_time(conv)
        turns = {t["dia_id"]: (s, t) for s in conv.sessions for t in s.turns}
        shown = 0
        for q, record in zip(conv.questions, asked["questions"]):
            text = system.view(state, tl, asked, record).text
            assert null.view(None, tl, asked, record).text == ""
            lines = [line for line in text.split("\n") if line and not line.startswith("[session")]
            expected = []
            for session in sorted({turns[e][0].index for e in q.evidence if e in turns}):
                s = conv.sessions[session]
                expected += [f"date: {s.date}"] + [f"{t['speaker']}: {t['text']}" for t in s.turns if t["dia_id"] in q.evidence]
            assert lines == expected, q.question_id
            shown += bool(expected)
        assert shown >= 3

    def test_evidence_needs_turn_ids(self, workdir, tmp_path, capsys):
        """The Percena format carries no turn ids: the evidence oracle is refused before any write,
        naming the system and the field."""
        with pytest.raises(SystemExit):
            clerk_main(["locomo", "--data", str(PERCENA), "--model", str(workdir / "model"), "--out",
                        str(tmp_path / "o"), "--systems", "full", "evidence", "--reader-model", "base", "--quiet"])
        err = capsys.readouterr().err
        assert "evidence reads each session's turn_ids" in err and not (tmp_path / "o").exists()

    def test_floor_and_ceiling_on_locomo10(self, workdir, tmp_path):
        """Both bounds run on the original format; every prediction says whether the reader abstained,
        and metrics.json counts the abstentions on answerable questions."""
        out = tmp_path / "run"
        clerk_main(["locomo", "--data", str(LOCOMO10), "--model", str(workdir / "model"), "--out", str(out),
                    "--systems", "null", "evidence", "--reader-model", "base", "--seed", "1", "--quiet"])
        rows = _jsonl(out / "predictions.jsonl")
        assert {r["system"] for r in rows} == {"null", "evidence"}
        metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["systems"]
        for name, m in metrics.items():
            mine = [r for r in rows if r["system"] == name and not r["adversarial"]]
            assert m["abstention_rate"] == pytest.approx(sum(r["abstained"] for r in mine) / len(mine))
        assert metrics["evidence"]["read_tokens_mean"] > metrics["null"]["read_tokens_mean"] == 0


class TestPairedLocomo:
    """clerk minus each other system on the same non-adversarial LoCoMo questions (clerk.report.locomo_paired)."""

    @staticmethod
    def _job(root, name, seed, answers):
        job = root / name
        job.mkdir()
        (job / "metrics.json").write_text(json.dumps({"seed": seed}), encoding="utf-8")
        lines = [json.dumps({"question_id": q, "conversation": f"conv-{int(q[1:]) % 3}", "system": system,
                             "adversarial": q.endswith("0"), "correct": ok})
                 for system, by_q in answers.items() for q, ok in by_q.items()]
        (job / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return job / "predictions.jsonl"

    def test_shared_systems_pair_with_every_seed_and_adversarial_questions_do_not_count(self, tmp_path):
        from clerk.report.locomo_paired import locomo_paired_rows

        qs = [f"q{i}" for i in range(1, 31)]
        files = [self._job(tmp_path, "137", 137, {"clerk": {q: True for q in qs}}),
                 self._job(tmp_path, "991", 991, {"clerk": {q: q != "q1" for q in qs}}),
                 # full is right only on the adversarial questions (q10, q20, q30): they must not count
                 self._job(tmp_path, "shared", 0, {"full": {q: q.endswith("0") for q in qs}})]
        (row,) = locomo_paired_rows(files, n_boot=200)
        assert row["system"] == "full" and row["n_seeds"] == 2 and row["units"] == 6
        assert row["n_questions"] == 2 * 27
        assert row["delta"] == pytest.approx((27 + 26) / 54)
        assert row["conclusive"] and row["boot_low"] > 0

    def test_the_bounds_pair_once_not_once_per_seed(self, tmp_path):
        """evidence − null is one more row, over the conversations once: both run once per run, so
        pairing them inside every seed's units would count each answer once per seed."""
        from clerk.report.locomo_paired import locomo_paired_rows

        qs = [f"q{i}" for i in range(1, 31)]
        files = [self._job(tmp_path, "137", 137, {"clerk": {q: True for q in qs}}),
                 self._job(tmp_path, "991", 991, {"clerk": {q: q != "q1" for q in qs}}),
                 self._job(tmp_path, "shared", 0, {"null": {q: q in ("q1", "q2") for q in qs},
                                                   "evidence": {q: True for q in qs}})]
        rows = locomo_paired_rows(files, n_boot=200)
        assert [(r["reference"], r["system"]) for r in rows] == [("clerk", "null"), ("clerk", "evidence"),
                                                                 ("evidence", "null")]
        bound = rows[-1]
        assert bound["units"] == 3 and bound["n_seeds"] == 1 and bound["n_questions"] == 27
        assert bound["delta"] == pytest.approx(25 / 27)

    def test_input_order_does_not_move_the_interval(self, tmp_path):
        """The bootstrap draws index the units, so they are sorted: the file order must not matter
        (the shipped run's table 2 moved in the third decimal when the same files came in glob order)."""
        from clerk.report.locomo_paired import locomo_paired_rows

        qs = [f"q{i}" for i in range(1, 31)]
        files = [self._job(tmp_path, "137", 137, {"clerk": {q: int(q[1:]) % 2 == 0 for q in qs}}),
                 self._job(tmp_path, "991", 991, {"clerk": {q: int(q[1:]) % 3 != 0 for q in qs}}),
                 self._job(tmp_path, "shared", 0, {"full": {q: int(q[1:]) % 5 == 1 for q in qs}})]
        assert locomo_paired_rows(files, n_boot=500) == locomo_paired_rows(files[::-1], n_boot=500)

    def test_a_machine_margin_makes_a_small_lead_inconclusive(self, tmp_path):
        """With paper/tolerances.yaml the interval must clear zero by the declared LoCoMo spread."""
        from clerk.report.locomo_paired import PAIRED_TABLE, locomo_paired_rows
        from clerk.report.paired import machine_margin

        margin = machine_margin(str(ROOT / "paper" / "tolerances.yaml"), PAIRED_TABLE)
        assert margin > 0  # the LoCoMo family is declared, not the catch-all's 0
        qs = [f"q{i}" for i in range(1, 301)]  # 3 conversations of 90 non-adversarial questions
        files = [self._job(tmp_path, "137", 137, {"clerk": {q: True for q in qs}}),
                 self._job(tmp_path, "shared", 0, {"full": {q: q not in ("q1", "q2", "q3") for q in qs}})]
        (free,) = locomo_paired_rows(files, n_boot=200)  # clerk leads by 1/90 in every conversation
        (fenced,) = locomo_paired_rows(files, n_boot=200, margin=margin)
        assert free["conclusive"] and 0 < free["boot_low"] < margin and not fenced["conclusive"]

    def test_table_needs_predictions_and_paired_out_together(self, tmp_path):
        from types import SimpleNamespace

        from clerk.report.locomo import main_table

        with pytest.raises(UserError, match="--predictions and --paired-out go together"):
            main_table(SimpleNamespace(metrics=[], out="o.csv", markdown=None, predictions=["p"], paired_out=None))
