"""The reader's training-only question set (clerk/generator/wordings.py) and its use in the SFT build.

    python -m pytest tests/test_wordings.py -q
"""

from __future__ import annotations

import doctest
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from test_sft import as_asked_in_catalogue, personas

import clerk.generator.wordings as wordings
from clerk import prompts
from clerk.errors import UserError
from clerk.generator.catalogue import BUILTIN_PHRASINGS, load_catalogue
from clerk.generator.timelines import generate
from clerk.generator.wordings import KIND_OF_TYPE, MAX_JACCARD, load_question_set, overlap_report
from clerk.sft.examples import SFTDataConfig, build_rows

ROOT = Path(__file__).resolve().parents[1]


def _asked(rows) -> list[tuple[dict, str]]:
    """(row, question text) of every question an ANSWER row asks."""
    out = []
    for split_rows in rows.values():
        for row in split_rows:
            if row["task"] == "answer":
                out += [(row, m["content"].rpartition(prompts.QUESTION_MARK)[2])
                        for m in row["messages"] if m["role"] == "user"]
    return out


class TestQuestionSet:
    def test_covers_every_catalogue_predicate_and_kind(self):
        """Every catalogue predicate has current and temporal wordings; no key outside the catalogue."""
        keys = [p.key for p in load_catalogue(split="train").predicates]
        templates = load_question_set().templates
        assert sorted(templates) == sorted(keys)
        assert all(len(templates[k]["current"]) >= 8 and len(templates[k]["temporal"]) >= 6 for k in keys)

    def test_shares_no_template_with_any_split(self):
        """No template is within the overlap measure's threshold of a test_ood, val_ood or catalogue
        question template (the report never returns the held-out texts, only scores)."""
        report = overlap_report()
        for split in ("test_ood", "val_ood", "train"):
            assert report[split]["at_or_above_max"] == 0 and report[split]["exact_repeats"] == 0, report[split]
            assert report[split]["max_jaccard"] < MAX_JACCARD

    def test_the_overlap_check_catches_a_copied_template(self, tmp_path):
        """The check is live: a set holding one ood.yaml question template is reported."""
        ood = load_catalogue(BUILTIN_PHRASINGS["test_ood"], split="test_ood").predicates[0]
        text = {"predicates": [{"key": ood.key, "current": [ood.current[0]], "temporal": ["Before, what of {name}?"]}]}
        (tmp_path / "q.yaml").write_text(json.dumps(text), encoding="utf-8")  # JSON is YAML
        report = overlap_report(tmp_path / "q.yaml", against=("test_ood",))
        assert report["test_ood"]["exact_repeats"] == 1 and report["test_ood"]["at_or_above_max"] == 1

    @pytest.mark.parametrize(("body", "message"), [
        ("predicates: []", "expected a mapping with a non-empty 'predicates' list"),
        ("predicates:\n  - key: job\n    current: ['What is it?']\n    temporal: ['Before, {name}?']",
         "must contain {name}"),
        ("predicates:\n  - key: job\n    current: ['{name} {value}?']\n    temporal: ['Before, {name}?']",
         "uses placeholder {value}"),
        ("predicates:\n  - key: job\n    current: ['{name}?']\n    temporal: ['{name}?']\n"
         "  - key: job\n    current: ['{name}?']\n    temporal: ['{name}?']", "predicate key 'job' appears twice"),
    ])
    def test_bad_files_are_refused_naming_the_fault(self, tmp_path, body, message):
        path = tmp_path / "q.yaml"
        path.write_text(body, encoding="utf-8")
        with pytest.raises(UserError, match=message.replace("{", r"\{").replace("}", r"\}").replace("[", r"\[")):
            load_question_set(path)

    def test_reword_draws_the_share(self):
        """reword keeps the catalogue text at share 0, always rewords at 1, about half at 0.5; types
        outside the map (forgotten, when) and unknown predicates are never reworded."""
        qs = load_question_set()
        q = {"question": "What is Ari's job?", "type": "current", "pred": "job"}
        rng = random.Random(0)
        assert qs.reword(q, "Ari", 0.0, rng) == q["question"]
        assert qs.reword(q, "Ari", 1.0, rng) in {t.format(name="Ari") for t in qs.templates["job"]["current"]}
        half = Counter(qs.reword(q, "Ari", 0.5, rng) == q["question"] for _ in range(2000))
        assert 900 < half[True] < 1100
        for other in ({**q, "type": "forgotten"}, {**q, "type": "when"}, {**q, "pred": "went_to_concert"}):
            assert qs.reword(other, "Ari", 1.0, rng) == other["question"]

    def test_doctests(self):
        assert doctest.testmod(wordings).failed == 0


class TestRewordedSft:
    def test_share_one_rewords_every_question_and_nothing_else(self):
        """At share 1 every ANSWER question is a set wording of its own predicate and type for its
        persona; the answers, the views and the CONSOLIDATE rows are those of the catalogue build."""
        timelines = generate(5, "train", personas=6, sessions=4, budget=4)
        plain, _ = build_rows(timelines, SFTDataConfig(seed=5, answer_ratio=1.0, reworded_questions=0.0))
        worded, _ = build_rows(timelines, SFTDataConfig(seed=5, answer_ratio=1.0, reworded_questions=1.0))
        templates = load_question_set().templates
        sessions = {(tl["name"], s["index"]): s for tl in timelines for s in tl["sessions"]}
        for split in plain:
            assert [r for r in plain[split] if r["task"] == "consolidate"] == \
                   [r for r in worded[split] if r["task"] == "consolidate"]
            a = [r for r in plain[split] if r["task"] == "answer"]
            b = [r for r in worded[split] if r["task"] == "answer"]
            assert [(r["persona"], r["session"], r["view"]) for r in a] == [(r["persona"], r["session"], r["view"]) for r in b]
            for ra, rb in zip(a, b):
                session = sessions[(rb["persona"], rb["session"])]
                assert [m for m in ra["messages"] if m["role"] == "assistant"] == \
                       [m for m in rb["messages"] if m["role"] == "assistant"]
                assert as_asked_in_catalogue(rb["messages"], session, rb["persona"]) == ra["messages"]
                by_text = {q["question"]: q for q in session["questions"]}
                for m_a, m_b in zip(ra["messages"], rb["messages"]):
                    if m_a["role"] != "user":
                        continue
                    q = by_text[m_a["content"].rpartition(prompts.QUESTION_MARK)[2]]
                    asked = m_b["content"].rpartition(prompts.QUESTION_MARK)[2]
                    assert asked in {t.format(name=rb["persona"]) for t in templates[q["pred"]][KIND_OF_TYPE[q["type"]]]}

    def test_share_zero_is_the_catalogue_build_and_a_half_share_mixes(self):
        """Share 0 asks every question as the timeline does; 0.5 rewords a share near half, the
        same one on every build of the same seed."""
        timelines = personas(6)
        texts = {q["question"] for tl in timelines for s in tl["sessions"] for q in s["questions"]}
        zero, _ = build_rows(timelines, SFTDataConfig(seed=2, answer_ratio=3.0, reworded_questions=0.0))
        assert {text for _, text in _asked(zero)} <= texts
        half, _ = build_rows(timelines, SFTDataConfig(seed=2, answer_ratio=3.0, reworded_questions=0.5))
        again, _ = build_rows(timelines, SFTDataConfig(seed=2, answer_ratio=3.0, reworded_questions=0.5))
        assert half == again
        share = sum(text not in texts for _, text in _asked(half)) / len(_asked(half))
        assert 0.3 < share < 0.7

    def test_the_policy_rule_carries_no_wording_share(self):
        """With a separate reader the policy's SFT set has no question: its rule's config pins the
        share, so a new share reruns the reader's build only."""
        from clerk.config import load_and_validate
        from clerk.wiring import stage_config

        config = load_and_validate(ROOT / "config" / "config.yaml")
        assert stage_config(config, "build_sft", seed="137")["reworded_questions"] == 0.0
        changed = {**config, "sft": {**config["sft"], "reworded_questions": 0.25}}
        assert stage_config(changed, "build_sft", seed="137") == stage_config(config, "build_sft", seed="137")
        assert stage_config(changed, "build_sft_reader", seed="31")["reworded_questions"] == 0.25


class TestWorkflowInputs:
    def test_the_question_set_reruns_the_sft_builds_not_the_data(self):
        """The set is an input of both build-sft rules and left out of generate's phrasing files, so
        editing it reruns the SFT builds (and what follows), never the persona timelines."""
        common = (ROOT / "workflow/rules/common.smk").read_text(encoding="utf-8")
        data = (ROOT / "workflow/rules/data.smk").read_text(encoding="utf-8")
        assert f'READER_QUESTIONS = "{wordings.READER_QUESTIONS.relative_to(ROOT)}"' in common
        assert "not in (TRAIN_REWRITES, READER_QUESTIONS, ACCEPTANCE_PHRASINGS)" in common
        builds = [block for block in data.split("\nrule ") if block.startswith(("build_sft:", "build_sft_reader:"))]
        assert len(builds) == 2 and all("questions=READER_QUESTIONS" in block for block in builds)
