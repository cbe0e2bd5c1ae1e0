"""Tests of clerk/sft/ (SPEC §4): rows built from the shared prompts (the policy's program language,
the reader's views of every kind), persona-level validation split, mixture ratio and per-kind
shares, EVICT oversampling, seeds, and byte-identical ``save_to_disk`` output.

    python -m pytest tests/test_sft.py -q -x
"""

from __future__ import annotations

import copy
import doctest
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from timeline_kit import build_timeline

import clerk.generator.files
import clerk.generator.timelines
import clerk.sft.cli
import clerk.sft.dataset
import clerk.sft.examples
from clerk import ledger as L
from clerk import prompts
from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.memory import EvalConfig, Runtime
from clerk.memory.views import question_views
from clerk.program import compile_program, render_program
from clerk.sft.cli import parse_weights
from clerk.sft.dataset import build_sft, sft_stats, write_sft
from clerk.sft.examples import SFTDataConfig, build_rows, check_timelines, round_half_up, view_shares

COLUMNS = ["messages", "task", "view", "persona", "session"]
ALL_VIEWS = {"ledger": 3, "full": 1, "window": 1, "rag": 1, "add-only": 1}

# Two hand-made personas x 3 sessions, gold programs and ledgers computed by the real reducer
# (tests/timeline_kit.py): an UPDATE, a TOMBSTONE, an eviction (budget 3) and every common
# question type before consolidation.
SCRIPT_X = [
    {"events": [("ADD", "job", "nurse"), ("ADD", "city", "Oslo")]},
    {"events": [("UPDATE", "job", "chef"), ("ADD", "pet", "cat")], "questions": [("current", "city"), ("unknown", "car")]},
    {"events": [("TOMBSTONE", "city", None), ("ADD", "car", "Volvo")],
     "questions": [("superseded", "job"), ("current", "pet")]},
]
SCRIPT_Y = [
    {"events": [("ADD", "hobby", "chess")]},
    {"events": [("ADD", "pet", "dog")], "questions": [("current", "hobby")]},
    {"events": [("UPDATE", "hobby", "golf")], "questions": [("unknown", "car"), ("current", "pet")]},
]


def personas(n: int = 2) -> list[dict]:
    """``n`` hand-made training personas, alternating the two scripts."""
    return [build_timeline(f"P{k:02d}", SCRIPT_X if k % 2 == 0 else SCRIPT_Y) for k in range(n)]


def all_rows(dd) -> list[tuple[str, dict]]:
    return [(split, row) for split in ("train", "validation") for row in dd[split].to_list()]


def sessions_by_key(timelines) -> dict:
    return {(tl["name"], s["index"]): s for tl in timelines for s in tl["sessions"]}


def tree_bytes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runtime():
    """A runtime for the transcript view kinds: a small tokenizer trained on the scripted personas."""
    from clerk.models.tokenizer import train_tokenizer

    texts = [t["content"] for tl in personas(2) for s in tl["sessions"] for t in s["turns"]]
    return Runtime(EvalConfig(window_k=2, rag_k=3), tokenizer=train_tokenizer(texts, 300), context_tokens=10**9)


def build(timelines, runtime=None, **knobs):
    return build_sft(timelines, SFTDataConfig(**knobs), runtime)


def as_asked_in_catalogue(messages: list[dict], session: dict, persona: str) -> list[dict]:
    """An ANSWER row's messages with every question asked in a wording of the reader's question set
    (``sft.reworded_questions``) put back in its catalogue wording; UserError-free: a question that
    is neither stays as it is (and fails the caller's comparison)."""
    from clerk.generator.wordings import KIND_OF_TYPE, load_question_set

    templates = load_question_set().templates
    back = {t.format(name=persona): q["question"] for q in session["questions"]
            for t in templates.get(q["pred"], {}).get(KIND_OF_TYPE.get(q["type"], ""), ())}
    out = []
    for m in messages:
        head, mark, question = m["content"].rpartition(prompts.QUESTION_MARK)
        if m["role"] == "user" and mark and question in back:
            m = {**m, "content": head + mark + back[question]}
        out.append(m)
    return out


def assert_rows_match_timelines(dd, timelines, runtime=None) -> None:
    """Every row is exactly the prompt built from its session (its questions in the catalogue's
    wording or the reader set's); targets are the gold program (in the program language,
    compiling back to gold_ops) / the gold answer over the row's view."""
    sessions = sessions_by_key(timelines)
    kinds = sorted({row["view"] for _, row in all_rows(dd) if row["task"] == "answer"})
    views = {(k, tl["name"], s["index"], tuple(q["question"] for q in qs)): text
             for k, tl, s, text, qs in question_views(timelines, kinds, runtime)}
    for _, row in all_rows(dd):
        session = sessions[(row["persona"], row["session"])]
        messages = row["messages"]
        before = session["ledger_before"]
        if row["task"] == "consolidate":
            assert [m["role"] for m in messages] == ["user", "assistant"]
            assert row["view"] == ""
            program = render_program(before, session["gold_ops"], session["index"])
            assert messages == prompts.consolidate_messages(L.serialize(before), prompts.policy_transcript(session["turns"]),
                                                            program)
            assert compile_program(messages[-1]["content"], before, row["persona"], session["index"]).program == session["gold_ops"]
        else:
            assert row["task"] == "answer"
            messages = as_asked_in_catalogue(messages, session, row["persona"])
            # One view, the questions that see it asked in turn, each followed by its gold answer.
            matches = [(key, text) for key, text in views.items() if key[:3] == (row["view"], row["persona"], row["session"])
                       and messages == prompts.answer_turns(text, [
                           (q["question"], q["answer"]) for q in session["questions"] if q["question"] in key[3]])]
            assert len(matches) == 1, row
            assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2)
            if row["view"] == "ledger":
                assert messages[0]["content"].startswith(prompts.reader_ledger(before) + "\n")


class TestBuildSft:
    def test_splits_and_columns(self):
        """The result has train and validation splits with exactly the five documented columns."""
        dd = build(personas(), seed=0, val_fraction=0.5)
        assert list(dd) == ["train", "validation"]
        for split in dd.values():
            assert split.column_names == COLUMNS
            assert split.features["session"].dtype == "int64"

    def test_one_consolidate_example_per_session(self):
        """Without oversampling every session of every persona gives exactly one CONSOLIDATE example."""
        timelines = personas()
        dd = build(timelines, seed=0, val_fraction=0.5)
        got = Counter((r["persona"], r["session"]) for _, r in all_rows(dd) if r["task"] == "consolidate")
        assert got == Counter(list(sessions_by_key(timelines)))

    @pytest.mark.parametrize("weight", [2, 3])
    def test_evict_oversampling(self, weight):
        """evict_weight copies each CONSOLIDATE example whose gold program evicts; answers follow the larger count."""
        timelines = personas(4)
        rows, _ = build_rows(timelines, SFTDataConfig(seed=1, val_fraction=0.5, evict_weight=weight))
        evicts = {key: any(op["op"] == "EVICT" for op in s["gold_ops"]) for key, s in sessions_by_key(timelines).items()}
        assert any(evicts.values()) and not all(evicts.values())
        got = Counter((r["persona"], r["session"]) for split in rows.values() for r in split if r["task"] == "consolidate")
        assert got == {key: weight if evicts[key] else 1 for key in evicts}
        for examples in rows.values():
            tasks = Counter(r["task"] for r in examples)
            assert tasks["answer"] == round_half_up(0.5 * tasks["consolidate"])

    def test_rows_are_the_shared_prompts_with_gold_targets(self):
        """Consolidate targets compile back to the gold program; answer targets equal the gold answer."""
        timelines = personas()
        dd = build(timelines, seed=3, answer_ratio=1.0, val_fraction=0.5)
        assert_rows_match_timelines(dd, timelines)
        assert {r["view"] for _, r in all_rows(dd) if r["task"] == "answer"} == {"ledger"}

    def test_rows_over_every_view_kind(self, runtime):
        """With every view kind, each answer row is its question over the view its kind shows."""
        timelines = personas(4)
        dd = build(timelines, runtime, seed=3, answer_ratio=2.0, val_fraction=0.5, answer_views=ALL_VIEWS)
        assert_rows_match_timelines(dd, timelines, runtime)
        assert {r["view"] for _, r in all_rows(dd) if r["task"] == "answer"} == set(ALL_VIEWS)

    def test_view_shares_per_kind(self, runtime):
        """Each split's answers are shared out over the kinds by their weights (view_shares)."""
        timelines = personas(4)
        rows, info = build_rows(timelines, SFTDataConfig(seed=5, answer_ratio=1.5, val_fraction=0.5,
                                                         answer_views=ALL_VIEWS), runtime)
        for split, examples in rows.items():
            n_answer = sum(r["task"] == "answer" for r in examples)
            assert Counter(r["view"] for r in examples if r["task"] == "answer") == view_shares(n_answer, ALL_VIEWS)
            assert set(info["question_pool"][split]) == set(ALL_VIEWS)
            pools = info["question_pool"][split]
            # One group per session with questions for every kind but rag (a view per question).
            assert len({n for kind, n in pools.items() if kind != "rag"}) == 1 and pools["rag"] >= pools["ledger"]

    def test_transcript_kind_needs_a_runtime(self):
        """A transcript view kind without a runtime (tokenizer) is a UserError naming --tokenizer."""
        with pytest.raises(UserError) as info:
            build(personas(), seed=0, answer_views={"ledger": 1, "full": 1, "rag": 2})
        assert str(info.value) == ("answer view kinds ['full', 'rag'] are transcript views, cut to the reader's token "
                                   "budget: they need a tokenizer (--tokenizer DIR, a model directory)")

    def test_no_persona_in_both_splits(self, runtime):
        """The validation split is by persona: no persona has examples (of any task or view) in both splits."""
        dd = build(personas(10), runtime, seed=4, val_fraction=0.3, answer_views=ALL_VIEWS, evict_weight=2)
        train, val = set(dd["train"]["persona"]), set(dd["validation"]["persona"])
        assert train.isdisjoint(val)
        assert len(val) == 3 and len(train) == 7

    @pytest.mark.parametrize("ratio", [0.0, 0.5, 1.0, 1 / 3, 2.5])
    def test_mixture_ratio(self, ratio):
        """Each split holds round_half_up(ratio * consolidate) answer examples, repeating questions
        only in whole passes plus a remainder when the pool is too small."""
        timelines = personas(4)
        rows, info = build_rows(timelines, SFTDataConfig(seed=2, answer_ratio=ratio, val_fraction=0.5,
                                                         reworded_questions=0.0))  # a repeat is then the same text
        for split, examples in rows.items():
            tasks = Counter(r["task"] for r in examples)
            assert tasks["answer"] == round_half_up(ratio * tasks["consolidate"])
            uses = Counter((r["persona"], r["session"], r["messages"][0]["content"]) for r in examples
                           if r["task"] == "answer")
            passes = tasks["answer"] // info["question_pool"][split]["ledger"]  # pool = the split's sessions with questions
            assert set(uses.values()) <= {passes, passes + 1}

    def test_no_validation(self):
        """val_fraction 0 puts every persona in train and leaves an empty, typed validation split."""
        dd = build(personas(), seed=0, val_fraction=0.0)
        assert len(dd["validation"]) == 0
        assert dd["validation"].column_names == COLUMNS
        assert set(dd["train"]["persona"]) == {"P00", "P01"}

    def test_same_seed_same_rows(self):
        """Two builds with the same seed give equal rows in equal order."""
        a = build(personas(6), seed=11, val_fraction=0.3)
        b = build(personas(6), seed=11, val_fraction=0.3)
        assert all_rows(a) == all_rows(b)

    def test_same_bytes_with_every_kind(self, runtime, tmp_path):
        """Two builds over every view kind with EVICT oversampling save byte-identical directories."""
        for k in (1, 2):
            dd = build(personas(6), runtime, seed=11, val_fraction=0.3, answer_views=ALL_VIEWS, evict_weight=2)
            write_sft(dd, tmp_path / f"out{k}", {})
        assert tree_bytes(tmp_path / "out1") == tree_bytes(tmp_path / "out2")

    def test_different_seeds_give_different_splits(self):
        """The persona split and the example order change with the seed (same rows, without answers)."""
        held_out = {tuple(sorted(set(build(personas(10), seed=s, val_fraction=0.3)["validation"]["persona"])))
                    for s in range(5)}
        assert len(held_out) > 1
        a = build(personas(10), seed=0, answer_ratio=0.0, val_fraction=0.0)["train"]
        b = build(personas(10), seed=1, answer_ratio=0.0, val_fraction=0.0)["train"]
        assert sorted(map(json.dumps, a.to_list())) == sorted(map(json.dumps, b.to_list()))
        assert a.to_list() != b.to_list()

    def test_does_not_mutate_timelines(self, runtime):
        """The builder leaves its input timelines untouched."""
        timelines = personas()
        before = copy.deepcopy(timelines)
        build(timelines, runtime, seed=0, answer_views=ALL_VIEWS)
        assert timelines == before


class TestViewShares:
    @pytest.mark.parametrize("n", [0, 1, 7, 10, 101])
    def test_sums_and_proportions(self, n):
        """The shares sum to n and each is within one of its exact proportion."""
        shares = view_shares(n, ALL_VIEWS)
        assert sum(shares.values()) == n and list(shares) == list(ALL_VIEWS)
        total = sum(ALL_VIEWS.values())
        assert all(abs(shares[k] - n * w / total) < 1 for k, w in ALL_VIEWS.items())

    def test_ties_follow_the_order_of_the_weights(self):
        """Equal remainders go to the kinds listed first."""
        assert view_shares(2, {"full": 1, "window": 1, "rag": 1}) == {"full": 1, "window": 1, "rag": 0}
        assert view_shares(2, {"rag": 1, "window": 1, "full": 1}) == {"rag": 1, "window": 1, "full": 0}


class TestParseWeights:
    def test_pairs_in_order(self):
        """kind=weight pairs keep their order; blanks between commas are skipped."""
        assert parse_weights("full=1,ledger=2.5,,") == {"full": 1.0, "ledger": 2.5}

    def test_bad_pair(self):
        """A part without a numeric weight names the part."""
        with pytest.raises(UserError, match=r"^--answer-views: expected kind=weight pairs, got 'ledger'$"):
            parse_weights("ledger")
        with pytest.raises(UserError, match=r"^--answer-views: expected kind=weight pairs, got 'full=x'$"):
            parse_weights("ledger=1,full=x")


class TestCheckTimelines:
    def test_rejects_test_split(self):
        """Timelines from a test split are refused, so test personas never reach training."""
        with pytest.raises(UserError) as info:
            check_timelines([build_timeline("Ari", SCRIPT_Y, split="test_ood")])
        assert str(info.value) == "persona 'Ari': split must be 'train' (SFT uses training timelines only), got 'test_ood'"

    def test_rejects_repeated_name(self):
        """Two personas with one name would break the persona-level split."""
        with pytest.raises(UserError, match=r"^persona 'Ari': name repeated \(the validation split is by persona\)$"):
            check_timelines([build_timeline("Ari", SCRIPT_Y), build_timeline("Ari", SCRIPT_X)])

    def test_rejects_invalid_gold_program(self):
        """A gold program that does not apply strictly is reported with persona, session and op."""
        tl = build_timeline("Ari", SCRIPT_Y)
        tl["sessions"][1]["gold_ops"].append({"op": "EVICT", "i": 2})
        with pytest.raises(UserError) as info:
            check_timelines([tl])
        assert str(info.value) == "persona 'Ari' session 1: op 1 {\"op\":\"EVICT\",\"i\":2} is invalid: slot 2 is free"

    def test_rejects_wrong_ledger_after(self):
        """ledger_after must be the strict reduce of ledger_before with gold_ops."""
        tl = build_timeline("Ari", SCRIPT_Y)
        tl["sessions"][0]["ledger_after"] = L.empty_ledger(3)
        with pytest.raises(UserError, match="^persona 'Ari' session 0: ledger_after is not the strict reduce"):
            check_timelines([tl])

    def test_rejects_missing_field(self):
        """A session without turns is named in the error."""
        tl = build_timeline("Ari", SCRIPT_Y)
        del tl["sessions"][2]["turns"]
        with pytest.raises(UserError, match="^persona 'Ari' session 2: missing field 'turns'$"):
            check_timelines([tl])

    def test_rejects_empty(self):
        """No personas at all is an error, not an empty dataset."""
        with pytest.raises(UserError, match="^timelines: expected a non-empty list of personas, got none$"):
            check_timelines([])


class TestSFTDataConfig:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"seed": "1"}, "seed must be an int, got '1'"),
            ({"seed": 1, "answer_ratio": -0.5}, "answer_ratio must be a finite number >= 0, got -0.5"),
            ({"seed": 1, "answer_ratio": float("inf")}, "answer_ratio must be a finite number >= 0, got inf"),
            ({"seed": 1, "val_fraction": 1.0}, "val_fraction must be a number in [0, 1), got 1.0"),
            ({"seed": 1, "val_fraction": True}, "val_fraction must be a number in [0, 1), got True"),
            ({"seed": 1, "answer_views": {}}, "answer_views must map view kinds (ledger, full, window, rag, add-only) "
                                              "to weights, got {}"),
            ({"seed": 1, "answer_views": {"ledger": 1, "transcript": 1}},
             "answer_views must map view kinds (ledger, full, window, rag, add-only) to weights, "
             "got {'ledger': 1, 'transcript': 1}"),
            ({"seed": 1, "answer_views": {"ledger": 0}}, "answer_views weights must be numbers > 0, got {'ledger': 0}"),
            ({"seed": 1, "answer_views": {"ledger": True}}, "answer_views weights must be numbers > 0, got {'ledger': True}"),
            ({"seed": 1, "evict_weight": 0}, "evict_weight must be an int >= 1, got 0"),
            ({"seed": 1, "evict_weight": 2.0}, "evict_weight must be an int >= 1, got 2.0"),
        ],
    )
    def test_rejects(self, kwargs, message):
        """Bad knobs raise UserError naming the field, the expected range and the value."""
        with pytest.raises(UserError) as info:
            SFTDataConfig(**kwargs)
        assert str(info.value) == message


class TestWriteSft:
    def test_stats(self, tmp_path, runtime):
        """sft_stats.json holds the config and the counts and mean characters per split and task, answers per
        view kind and the question pools."""
        timelines = personas(4)
        config = SFTDataConfig(seed=1, answer_ratio=0.5, val_fraction=0.25, answer_views={"ledger": 2, "full": 1},
                               evict_weight=2)
        rows, info = build_rows(timelines, config, runtime)
        dd = clerk.sft.dataset.to_dataset_dict(rows)
        write_sft(dd, tmp_path / "sft", sft_stats(dd, config, info["question_pool"]))
        stats = json.loads((tmp_path / "sft" / "sft_stats.json").read_text())
        assert stats["config"] == {"seed": 1, "answer_ratio": 0.5, "val_fraction": 0.25,
                                   "answer_views": {"ledger": 2, "full": 1}, "evict_weight": 2,
                                   "reworded_questions": 0.5}
        for split in ("train", "validation"):
            rows = dd[split].to_list()
            entry = stats["splits"][split]
            assert entry["examples"] == len(rows)
            assert entry["personas"] == sorted({r["persona"] for r in rows})
            for task in ("consolidate", "answer"):
                mine = [sum(len(m["content"]) for m in r["messages"]) for r in rows if r["task"] == task]
                got = {k: v for k, v in entry["tasks"][task].items() if k in ("examples", "mean_chars")}
                assert got == {"examples": len(mine), "mean_chars": round(sum(mine) / len(mine), 2)}
            answers = [r["view"] for r in rows if r["task"] == "answer"]
            assert entry["tasks"]["answer"]["views"] == {v: answers.count(v) for v in sorted(set(answers))}
            assert entry["tasks"]["answer"]["question_pool"] == info["question_pool"][split]

    def test_load_from_disk(self, tmp_path):
        """The saved directory loads back with datasets.load_from_disk to the same rows."""
        from datasets import load_from_disk

        dd = build(personas(), seed=0, val_fraction=0.5)
        write_sft(dd, tmp_path / "sft", {})
        loaded = load_from_disk(str(tmp_path / "sft"))
        assert all_rows(loaded) == all_rows(dd)

    def test_replaces_earlier_output(self, tmp_path):
        """Writing over an earlier dataset directory replaces it, leaving no stale files."""
        out = tmp_path / "sft"
        write_sft(build(personas(), seed=0, val_fraction=0.5), out, {})
        (out / "stale.txt").write_text("x")
        write_sft(build(personas(), seed=0, val_fraction=0.0), out, {})
        assert not (out / "stale.txt").exists()

    def test_refuses_unrelated_directory(self, tmp_path):
        """A non-empty directory that is not a dataset is never wiped."""
        (tmp_path / "notes.txt").write_text("keep me")
        with pytest.raises(UserError) as info:
            write_sft(build(personas(), seed=0), tmp_path, {})
        assert str(info.value) == f"--out {tmp_path}: exists and is not a dataset directory; expected a new or earlier --out path"
        assert (tmp_path / "notes.txt").read_text() == "keep me"


class TestCli:
    def test_byte_identical_across_runs(self, tmp_path):
        """Two `clerk build-sft` processes (different hash seeds) write byte-identical directories."""
        timelines = tmp_path / "train.jsonl"
        clerk.generator.files.write_timelines(timelines, personas(4))
        for k in (1, 2):
            env = dict(os.environ, PYTHONHASHSEED=str(k))
            subprocess.run([sys.executable, "-m", "clerk.cli", "build-sft", "--timelines", str(timelines), "--seed", "7",
                            "--out", str(tmp_path / f"out{k}"), "--val-fraction", "0.25"],
                           check=True, env=env, capture_output=True)
        first, second = tree_bytes(tmp_path / "out1"), tree_bytes(tmp_path / "out2")
        assert first == second
        assert {"dataset_dict.json", "sft_stats.json", "train/state.json", "train/dataset_info.json",
                "validation/state.json"} <= set(first)
        assert any(name.endswith(".arrow") for name in first)
        stats = json.loads((tmp_path / "out1" / "sft_stats.json").read_text())
        assert stats["timelines_sha256"] == hashlib.sha256(timelines.read_bytes()).hexdigest()

    def test_user_error(self, tmp_path, capsys):
        """A bad --answer-ratio exits with status 2 and a one-line message."""
        timelines = tmp_path / "train.jsonl"
        clerk.generator.files.write_timelines(timelines, personas())
        with pytest.raises(SystemExit) as info:
            clerk_main(["build-sft", "--timelines", str(timelines), "--seed", "1", "--out", str(tmp_path / "o"),
                        "--answer-ratio", "-1"])
        assert info.value.code == 2
        assert capsys.readouterr().err == "clerk build-sft: error: argument --answer-ratio: must be >= 0, got -1.0\n"


    def test_view_flags(self, tmp_path, runtime):
        """--tokenizer, --answer-views, --evict-weight, --window-k and --rag-k reach the builder: the stats
        record them and the rows equal an in-process build with the same knobs."""
        from transformers import LlamaConfig

        timelines = tmp_path / "train.jsonl"
        clerk.generator.files.write_timelines(timelines, personas(4))
        model_dir = tmp_path / "tok"
        runtime.tokenizer.save_pretrained(model_dir)
        LlamaConfig(vocab_size=len(runtime.tokenizer), max_position_embeddings=10**9).save_pretrained(model_dir)
        clerk_main(["build-sft", "--timelines", str(timelines), "--seed", "3", "--out", str(tmp_path / "o"),
                    "--val-fraction", "0.25", "--tokenizer", str(model_dir), "--answer-views", "ledger=2,full=1,rag=1",
                    "--evict-weight", "3", "--window-k", "2", "--rag-k", "3"])
        stats = json.loads((tmp_path / "o" / "sft_stats.json").read_text())
        assert stats["config"]["answer_views"] == {"ledger": 2.0, "full": 1.0, "rag": 1.0} and stats["config"]["evict_weight"] == 3
        from datasets import load_from_disk

        expected = build(personas(4), runtime, seed=3, val_fraction=0.25, answer_views={"ledger": 2.0, "full": 1.0, "rag": 1.0},
                         evict_weight=3)
        assert all_rows(load_from_disk(str(tmp_path / "o"))) == all_rows(expected)

    def test_tasks_flag_splits_the_mixture(self, tmp_path):
        """--tasks consolidate / answer keep exactly the mixture's rows of that task (the same persona
        split and sampled questions as --tasks both), and the stats say which were kept."""
        from datasets import load_from_disk

        timelines = tmp_path / "train.jsonl"
        clerk.generator.files.write_timelines(timelines, personas(4))
        rows = {}
        for tasks in ("both", "consolidate", "answer"):
            clerk_main(["build-sft", "--timelines", str(timelines), "--seed", "3", "--out", str(tmp_path / tasks),
                        "--val-fraction", "0.25", "--answer-ratio", "1.0", "--tasks", tasks])
            rows[tasks] = all_rows(load_from_disk(str(tmp_path / tasks)))
            stats = json.loads((tmp_path / tasks / "sft_stats.json").read_text())
            assert stats["tasks_kept"] == tasks
        for task in ("consolidate", "answer"):
            kept = [(split, row) for split, row in rows["both"] if row["task"] == task]
            assert rows[task] == kept and {split for split, _ in kept} == {"train", "validation"}

    def test_transcript_views_need_the_tokenizer_flag(self, tmp_path, capsys):
        """Transcript view kinds without --tokenizer exit 2 naming the flag."""
        timelines = tmp_path / "train.jsonl"
        clerk.generator.files.write_timelines(timelines, personas())
        with pytest.raises(SystemExit) as info:
            clerk_main(["build-sft", "--timelines", str(timelines), "--seed", "1", "--out", str(tmp_path / "o"),
                        "--answer-views", "ledger=1,window=1"])
        assert info.value.code == 2
        assert "they need a tokenizer (--tokenizer DIR, a model directory)" in capsys.readouterr().err
        assert not (tmp_path / "o").exists()


class TestWithGenerator:
    def test_generated_timelines(self):
        """On generator output the rows match the gold programs and answers and the split is by persona."""
        timelines = clerk.generator.timelines.generate(5, "train", personas=6, sessions=4, budget=4)
        dd = build(timelines, seed=5, answer_ratio=0.5, val_fraction=0.34)
        assert_rows_match_timelines(dd, timelines)
        assert set(dd["train"]["persona"]).isdisjoint(dd["validation"]["persona"])
        assert len(set(dd["validation"]["persona"])) == 2
        for split in dd.values():
            tasks = Counter(split["task"])
            assert tasks["consolidate"] == len(set(zip(split["persona"], split["session"])))
            assert tasks["answer"] == round_half_up(0.5 * tasks["consolidate"])


class TestDoctests:
    def test_module_doctests(self):
        """The examples in the clerk.sft modules' docstrings run and pass."""
        results = [doctest.testmod(module) for module in (clerk.sft.examples, clerk.sft.dataset, clerk.sft.cli)]
        assert sum(r.attempted for r in results) > 0 and sum(r.failed for r in results) == 0
