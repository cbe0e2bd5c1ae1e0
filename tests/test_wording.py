"""The recipe's data side: the val_ood phrasing set and the eviction-pressure slice (SPEC §2).

    python -m pytest tests/test_wording.py -q
"""

from __future__ import annotations

import hashlib
import json
import re
from itertools import combinations

import pytest

from clerk.errors import UserError
from clerk.generator.catalogue import BUILTIN_PHRASINGS, load_catalogue
from clerk.generator.config import GeneratorConfig
from clerk.generator.timelines import generate, generate_from_config

SETS = ("train", "test_ood", "val_ood")  # catalogue.yaml, ood.yaml, val.yaml


def _sha(timelines) -> str:
    """sha256 of the JSON-lines bytes ``clerk generate`` writes for ``timelines``."""
    import tempfile
    from pathlib import Path

    from clerk.generator.files import write_timelines

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "t.jsonl"
        write_timelines(out, timelines)
        return hashlib.sha256(out.read_bytes()).hexdigest()


def _evicts(timelines) -> int:
    return sum(op["op"] == "EVICT" for tl in timelines for s in tl["sessions"] for op in s["gold_ops"])


class TestValidationPhrasings:
    def test_three_sets_pairwise_disjoint(self):
        """No template string is shared by any two of catalogue.yaml, ood.yaml and val.yaml."""
        cats = {split: load_catalogue(split=split) for split in SETS}
        assert BUILTIN_PHRASINGS["val_ood"].name == "val.yaml"
        for a, b in combinations(SETS, 2):
            assert set(cats[a].templates()).isdisjoint(cats[b].templates()), (a, b)

    def test_val_covers_the_same_predicates(self):
        """val.yaml has the catalogue's predicate keys, >= 2 phrasings per kind, and the test names."""
        cat, val = load_catalogue(split="test"), load_catalogue(split="val_ood")
        assert [p.key for p in val.predicates] == [p.key for p in cat.predicates]
        for pred in val.predicates:
            assert min(len(pred.add), len(pred.update), len(pred.tombstone), len(pred.current),
                       len(pred.temporal)) >= 2, pred.key
        assert val.names == cat.names

    def test_val_small_talk_and_rendering(self):
        """val.yaml small talk names no value; every template renders with no brace left."""
        val = load_catalogue(split="val_ood")
        lines = [*val.chatter, *val.acknowledgements, *val.welcomes, *val.greetings]
        for pred in val.predicates:
            for value in pred.values:
                pattern = re.compile(rf"\b{re.escape(value)}\b", re.IGNORECASE)
                assert not [line for line in lines if pattern.search(line)], value
            for line in [*pred.add, *pred.update, *pred.tombstone, *pred.current, *pred.temporal]:
                text = line.format(value=pred.values[0], old=pred.values[1], name="Ari")
                assert "{" not in text and "}" not in text

    @pytest.mark.parametrize("seed", (137, 991))
    def test_val_ood_timelines_use_only_val_phrasings(self, seed):
        """Every turn and question of a val_ood timeline renders a val.yaml template; none renders
        a catalogue.yaml or ood.yaml one."""
        cats = {split: load_catalogue(split=split) for split in SETS}
        val = cats["val_ood"]
        tls = generate(seed, "val_ood", personas=16, sessions=8)
        assert all(tl["split"] == "val_ood" for tl in tls)
        assert {tl["name"] for tl in tls} <= set(val.names["test"])

        def rendered(cat, name):
            out = {line.format(name=name) for line in cat.greetings}
            out |= set(cat.welcomes) | set(cat.chatter) | set(cat.acknowledgements)
            for pred in cat.predicates:
                out |= {line.format(name=name) for line in (*pred.current, *pred.temporal)}
                for v in pred.values:
                    out |= {line.format(value=v) for line in pred.add}
                    out |= {line.format(value=v) for line in pred.tombstone}
                    out |= {line.format(value=v, old=o) for line in pred.update for o in pred.values}
            return out

        for tl in tls:
            own = rendered(val, tl["name"])
            others = rendered(cats["train"], tl["name"]) | rendered(cats["test_ood"], tl["name"])
            texts = [t["content"] for s in tl["sessions"] for t in s["turns"]]
            texts += [q["question"] for s in tl["sessions"] for q in s["questions"]]
            assert set(texts) <= own
            assert set(texts).isdisjoint(others)


# sha256 of today's (pre-issue-46) default outputs at the config/config.yaml sizes: the new
# options must leave them byte-identical.
PINNED = {
    (137, "test"): "1d5b9cddca2c50529612547d1935f24248b13e74b460b697d3923c5a7ead211a",
    (991, "test_ood"): "d1ee49c04c409a4efa56f678cf3dc1841b6cfea74760737cebbe263e5c23767d",
}


class TestEvictionPressure:
    @pytest.mark.parametrize("seed, split", sorted(PINNED))
    def test_default_is_byte_identical(self, seed, split):
        """evict_personas = 0 (the default) reproduces the pinned pre-issue-46 bytes."""
        cfg = GeneratorConfig(seed=seed, split=split, personas=16, questions=(3, 3))
        assert _sha(generate_from_config(cfg)) == PINNED[seed, split]

    @pytest.mark.parametrize("split", ("test", "test_ood"))
    def test_slice_appends_and_reaches_150_evicts(self, split):
        """8 slice personas: the 16 regular personas are unchanged (same bytes), the slice personas
        come after them marked "slice": "evict" with no questions, unique names, and the split
        holds >= 150 gold EVICT ops."""
        base = GeneratorConfig(seed=137, split=split, personas=16, questions=(3, 3))
        plain = generate_from_config(base)
        more = generate_from_config(GeneratorConfig(seed=137, split=split, personas=16, questions=(3, 3),
                                                    evict_personas=8))
        assert len(more) == 24
        assert [json.dumps(tl) for tl in more[:16]] == [json.dumps(tl) for tl in plain]
        assert all("slice" not in tl for tl in more[:16])
        assert all(tl["slice"] == "evict" for tl in more[16:])
        assert all(not s["questions"] for tl in more[16:] for s in tl["sessions"])
        assert len({tl["name"] for tl in more}) == 24
        assert _evicts(plain) < 150 <= _evicts(more)
        for tl in more[16:]:  # slice personas add 3-4 facts per session until the catalogue runs out
            assert len(tl["sessions"]) == 8
            assert len(tl["sessions"][1]["events"]) >= 3

    def test_slice_arguments_checked(self):
        with pytest.raises(UserError, match=r"^evict_personas must be an int >= 0, got -1$"):
            GeneratorConfig(seed=1, split="test", evict_personas=-1)
        with pytest.raises(UserError, match=r"^evict_adds must be a range"):
            GeneratorConfig(seed=1, split="test", evict_adds=(4, 3))
        assert generate(5, "test", personas=2, sessions=3, evict_personas=1)[-1]["slice"] == "evict"
