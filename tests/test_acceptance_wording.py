"""The acceptance wording set (clerk/phrasing/acceptance.yaml): a held-out catalogue that words a
test_ood-style split once, at acceptance. These tests hold it to what makes it worth having: it
loads as a catalogue of the same facts, and none of its lines is close to any other wording set
(the tests print numbers and names, never the file's lines).

    python -m pytest tests/test_acceptance_wording.py -q
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clerk.generator.catalogue import BUILTIN_PHRASINGS, PHRASING_DIR, load_catalogue
from clerk.generator.timelines import generate
from clerk.generator.wordings import READER_QUESTIONS, listed_templates, overlap_report

ROOT = Path(__file__).resolve().parents[1]
ACCEPTANCE = PHRASING_DIR / "acceptance.yaml"
STATEMENTS = ("add", "update", "tombstone")
QUESTIONS = ("current", "temporal")
TOP = ("greetings", "welcomes", "chatter", "acknowledgements")
#: Every other wording set and the kinds it shares with the acceptance set.
OTHERS = {
    "catalogue": (BUILTIN_PHRASINGS["train"], STATEMENTS + QUESTIONS + TOP),
    "ood": (BUILTIN_PHRASINGS["test_ood"], STATEMENTS + QUESTIONS + TOP),
    "val": (BUILTIN_PHRASINGS["val_ood"], STATEMENTS + QUESTIONS + TOP),
    "train_rewrites": (PHRASING_DIR / "train_rewrites.yaml", STATEMENTS + ("chatter",)),
    "reader_questions": (READER_QUESTIONS, QUESTIONS),
}


class TestAcceptanceWording:
    def test_it_states_the_catalogue_facts(self):
        """Same predicates in the same order, the same phrases and value pools: only the wording
        differs, so gold programs and answer options mean the same things."""
        mine = load_catalogue(ACCEPTANCE, split="test_ood").predicates
        base = load_catalogue(BUILTIN_PHRASINGS["train"]).predicates
        assert [(p.key, p.phrase, p.values) for p in mine] == [(p.key, p.phrase, p.values) for p in base]
        assert all(p.add and p.update and p.tombstone and p.current and p.temporal for p in mine)

    @pytest.mark.parametrize("other", sorted(OTHERS))
    def test_no_line_is_close_to_another_wording_set(self, other):
        path, kinds = OTHERS[other]
        for kind in kinds:
            found = overlap_report(ACCEPTANCE, against=(path,), kinds=(kind,))
            assert found["templates"], f"no {kind} templates in the acceptance set"
            near = found[path.name]
            assert near["at_or_above_max"] == 0 and near["exact_repeats"] == 0, (kind, near)

    def test_the_check_is_live(self, tmp_path):
        """A set holding one catalogue question is caught by the same measure."""
        copied = listed_templates(BUILTIN_PHRASINGS["train"], ("current",))[0]
        (tmp_path / "a.yaml").write_text(json.dumps({"predicates": [{"key": "job", "current": [copied]}]}),
                                         encoding="utf-8")
        found = overlap_report(tmp_path / "a.yaml", against=(BUILTIN_PHRASINGS["train"],), kinds=("current",))
        assert found["catalogue.yaml"]["at_or_above_max"] == 1 and found["catalogue.yaml"]["exact_repeats"] == 1

    def test_small_talk_names_no_value(self):
        values = {v.lower() for p in load_catalogue(BUILTIN_PHRASINGS["train"]).predicates for v in p.values}
        chatter = [t.lower() for t in listed_templates(ACCEPTANCE, ("chatter",))]
        hits = sum(1 for line in chatter for v in values
                   if re.search(r"(?<![a-z])" + re.escape(v) + r"(?![a-z])", line))
        assert chatter and hits == 0

    def test_it_words_a_held_out_split(self):
        """A test_ood split worded by it, with the test names, differs from the built-in one."""
        own = generate(7, "test_ood", personas=2, sessions=3, catalogue=load_catalogue(ACCEPTANCE, split="test_ood"))
        builtin = generate(7, "test_ood", personas=2, sessions=3)
        lines = [t["content"] for p in own for s in p["sessions"] for t in s["turns"]]
        assert lines and lines != [t["content"] for p in builtin for s in p["sessions"] for t in s["turns"]]
        assert [p["name"] for p in own] == [p["name"] for p in builtin]

    def test_no_rule_reads_it(self):
        """Only by hand, at acceptance: the workflow's phrasing inputs leave it out, so adding or
        editing it reruns nothing."""
        common = (ROOT / "workflow/rules/common.smk").read_text(encoding="utf-8")
        assert f'ACCEPTANCE_PHRASINGS = "{ACCEPTANCE.relative_to(ROOT)}"' in common
        assert "not in (TRAIN_REWRITES, READER_QUESTIONS, ACCEPTANCE_PHRASINGS)" in common
