"""The policy's training-only statement rewrites (clerk/generator/rewrites.py) and their one way in:
the train split's ``rewrites`` setting.

    python -m pytest tests/test_rewrites.py -q
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from clerk.errors import UserError
from clerk.generator.catalogue import BUILTIN_PHRASINGS, load_catalogue
from clerk.generator.config import GeneratorConfig
from clerk.generator.rewrites import STATEMENT_KINDS, TRAIN_REWRITES, load_rewrites, overlap, with_rewrites
from clerk.generator.timelines import generate_from_config
from clerk.generator.wordings import MAX_JACCARD, overlap_report

ROOT = Path(__file__).resolve().parents[1]


def _lines(timelines: list[dict]) -> list[str]:
    """Every user line of every session."""
    return [t["content"] for tl in timelines for s in tl["sessions"] for t in s["turns"] if t["role"] == "user"]


class TestRewritesFile:
    def test_covers_every_catalogue_predicate_and_kind(self):
        catalogue = load_catalogue(split="train")
        rewrites = load_rewrites().statements
        assert sorted(rewrites) == sorted(p.key for p in catalogue.predicates)
        assert all(len(rewrites[k][kind]) >= 3 for k in rewrites for kind in STATEMENT_KINDS)

    def test_no_rewrite_is_close_to_a_held_out_or_catalogue_statement(self):
        """Every rewrite stays under the overlap threshold of every add, update and tombstone
        template of ood.yaml, val.yaml and the catalogue (scores only; no held-out text returned)."""
        report = overlap()
        assert report["templates"] == sum(len(v) for k in load_rewrites().statements.values() for v in k.values())
        for split in ("test_ood", "val_ood", "train"):
            assert report[split]["at_or_above_max"] == 0 and report[split]["exact_repeats"] == 0, report[split]
            assert report[split]["max_jaccard"] < MAX_JACCARD

    def test_small_talk_names_no_value_and_is_far_from_held_out_small_talk(self):
        """The small talk holds no value of any phrasing file (a line with one would be a mention
        to write) and stays under the overlap threshold of every split's small talk."""
        chatter = load_rewrites().chatter
        assert len(chatter) >= 100 and len(set(chatter)) == len(chatter)
        values = {v.lower() for split in ("train", "test_ood", "val_ood")
                  for p in load_catalogue(BUILTIN_PHRASINGS[split], split=split).predicates for v in p.values}
        words = {line: set(re.findall(r"[a-z']+", line.lower())) for line in chatter}
        assert not [(line, v) for line in chatter for v in values
                    if re.search(r"(?<![a-z])" + re.escape(v) + r"(?![a-z])", line.lower())]
        assert all(words[line] for line in chatter)
        report = overlap(kinds=("chatter",))
        assert report["templates"] == len(chatter)
        for split in ("test_ood", "val_ood", "train"):
            assert report[split]["at_or_above_max"] == 0 and report[split]["exact_repeats"] == 0, report[split]

    def test_the_overlap_check_catches_a_copied_statement(self, tmp_path):
        """The check is live: a file holding one val.yaml retraction is reported."""
        held = load_catalogue(BUILTIN_PHRASINGS["val_ood"], split="val_ood").predicates[0]
        body = {"predicates": [{"key": held.key, "add": ["I got a {value}."], "update": ["Now {value}."],
                                "tombstone": [held.tombstone[0]]}]}
        (tmp_path / "r.yaml").write_text(json.dumps(body), encoding="utf-8")  # JSON is YAML
        report = overlap_report(tmp_path / "r.yaml", against=("val_ood",), kinds=STATEMENT_KINDS)
        assert report["val_ood"]["exact_repeats"] == 1 and report["val_ood"]["at_or_above_max"] == 1

    @pytest.mark.parametrize(("body", "message"), [
        ("predicates: []", "expected a mapping with a non-empty 'predicates' list"),
        ("chatter: []\npredicates:\n  - key: job\n    add: ['{value}']\n    update: ['{value}']\n    tombstone: ['x']",
         "key 'chatter' must be a list of at least 1 non-empty strings"),
        ("chatter: ['Hi {name}']\npredicates:\n  - key: job\n    add: ['{value}']\n    update: ['{value}']\n"
         "    tombstone: ['x']", "uses placeholder {name}; allowed: none"),
        ("predicates:\n  - key: job\n    add: ['I am one.']\n    update: ['{value}']\n    tombstone: ['no']",
         "key 'add' template 'I am one.' must contain {value}"),
        ("predicates:\n  - key: job\n    add: ['{value}, was {old}']\n    update: ['{value}']\n    tombstone: ['no']",
         "uses placeholder {old}"),
        ("predicates:\n  - key: job\n    add: ['{value}']\n    update: ['{value}']", "missing key 'tombstone'"),
        ("predicates:\n  - key: job\n    add: ['{value}']\n    update: ['{value}']\n    tombstone: ['x']\n"
         "  - key: job\n    add: ['{value}']\n    update: ['{value}']\n    tombstone: ['x']", "'job' appears twice"),
    ])
    def test_bad_files_are_refused_naming_the_fault(self, tmp_path, body, message):
        path = tmp_path / "r.yaml"
        path.write_text(body, encoding="utf-8")
        with pytest.raises(UserError, match=message.replace("{", r"\{").replace("}", r"\}")):
            load_rewrites(path)


class TestWithRewrites:
    def test_appends_the_named_kinds_only(self):
        catalogue = load_catalogue(split="train")
        rewrites = load_rewrites()
        plus = with_rewrites(catalogue, ("update",))
        for before, after in zip(catalogue.predicates, plus.predicates):
            assert after.update == before.update + rewrites.statements[before.key]["update"]
            assert (after.add, after.tombstone, after.current, after.values) == \
                   (before.add, before.tombstone, before.current, before.values)
        assert (plus.names, plus.chatter) == (catalogue.names, catalogue.chatter)
        talk = with_rewrites(catalogue, ("chatter",))
        assert talk.chatter == catalogue.chatter + rewrites.chatter and talk.predicates == catalogue.predicates

    def test_refuses_an_unknown_kind_and_a_file_for_other_predicates(self, tmp_path):
        catalogue = load_catalogue(split="train")
        with pytest.raises(UserError, match="'current' is not a kind of the rewrites"):
            with_rewrites(catalogue, ("current",))
        with pytest.raises(UserError, match="'add' is named twice"):
            GeneratorConfig(seed=7, split="train", rewrites=("add", "update", "add"))
        path = tmp_path / "r.yaml"
        path.write_text("chatter: ['Hm.']\npredicates:\n  - key: job\n    add: ['{value}']\n    update: ['{value}']\n"
                        "    tombstone: ['x']", encoding="utf-8")
        with pytest.raises(UserError, match="its predicates must be the catalogue's"):
            with_rewrites(catalogue, ("add",), path)


class TestGenerateWithRewrites:
    def test_is_the_catalogue_with_the_lists_appended(self, tmp_path):
        """The setting is the measured arm: the same bytes as ``--phrasings`` on the catalogue with
        every list of the rewrites appended, and different bytes from the catalogue alone."""
        cfg = GeneratorConfig(seed=7, split="train", personas=4, sessions=4)
        data = yaml.safe_load(BUILTIN_PHRASINGS["train"].read_text(encoding="utf-8"))
        rewrites = load_rewrites()
        for pred in data["predicates"]:
            for kind in STATEMENT_KINDS:
                pred[kind] = list(pred[kind]) + list(rewrites.statements[pred["key"]][kind])
        appended = tmp_path / "catalogue_plus.yaml"
        appended.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        worded = GeneratorConfig(seed=7, split="train", personas=4, sessions=4, rewrites=STATEMENT_KINDS)
        assert generate_from_config(worded) == generate_from_config(cfg, appended)
        assert generate_from_config(worded) != generate_from_config(cfg)
        lines = _lines(generate_from_config(worded))
        written = {t.split("{")[0] for k in rewrites.statements.values() for v in k.values() for t in v
                   if not t.startswith("{")}
        assert any(line.startswith(prefix) for line in lines for prefix in written if len(prefix) > 12)

    def test_small_talk_joins_the_training_personas(self):
        """With ``chatter`` the train split's small talk is drawn from the catalogue's and the file's."""
        talk = set(load_rewrites().chatter)
        lines = _lines(generate_from_config(GeneratorConfig(seed=7, split="train", personas=6, sessions=6,
                                                            rewrites=("chatter",))))
        assert talk & set(lines)
        assert not talk & set(_lines(generate_from_config(GeneratorConfig(seed=7, split="train", personas=6,
                                                                          sessions=6))))

    def test_empty_is_the_catalogue_build(self):
        assert generate_from_config(GeneratorConfig(seed=7, split="train", personas=3, sessions=3, rewrites=())) == \
               generate_from_config(GeneratorConfig(seed=7, split="train", personas=3, sessions=3))

    @pytest.mark.parametrize("split", ["test", "test_ood", "val_ood"])
    def test_other_splits_are_refused(self, split):
        with pytest.raises(UserError, match=f"the closed train split only, got split '{split}'"):
            GeneratorConfig(seed=7, split=split, rewrites=("add",))

    def test_a_user_catalogue_is_refused(self):
        cfg = GeneratorConfig(seed=7, split="train", personas=2, sessions=2, rewrites=("add",))
        with pytest.raises(UserError, match="rewrites extend the built-in catalogue"):
            generate_from_config(cfg, BUILTIN_PHRASINGS["train"])

    def test_the_workflow_gives_the_file_to_the_train_split_only(self):
        """The file is an input of a split's generate job only where its ``rewrites`` names a kind,
        and the kinds reach that job's --config (so a change reruns the train split alone)."""
        from clerk.config import load_and_validate
        from clerk.wiring import stage_config

        config = load_and_validate(ROOT / "config" / "config.yaml")
        config["data"]["train"]["rewrites"] = ["add", "update"]
        assert stage_config(config, "generate", split="train")["rewrites"] == ["add", "update"]
        assert stage_config(config, "generate", split="test")["rewrites"] == []
        common = (ROOT / "workflow/rules/common.smk").read_text(encoding="utf-8")
        assert f'TRAIN_REWRITES = "{TRAIN_REWRITES.relative_to(ROOT)}"' in common
