"""Compositional wording (clerk.generator.compose): only the wording changes.

    python -m pytest tests/test_compose.py -q
"""

from __future__ import annotations

import json

import pytest

from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.generator import compose as C
from clerk.generator.config import GeneratorConfig
from clerk.generator.timelines import generate_from_config


def _run(seed: int, rate: float, **kw):
    return generate_from_config(GeneratorConfig(seed=seed, split="train", personas=6, evict_personas=2,
                                                compose=rate, **kw))


def _user_lines(session) -> list[str]:
    return [t["content"] for t in session["turns"] if t["role"] == "user"][1:]  # after the greeting


@pytest.fixture(scope="module", params=[137, 991])
def pair(request):
    return _run(request.param, 0.0), _run(request.param, 0.5)


class TestCompose:
    @pytest.mark.parametrize("seed", [137, 4242])
    def test_zero_is_byte_identical(self, seed):
        plain = generate_from_config(GeneratorConfig(seed=seed, split="train", personas=6, evict_personas=2))
        assert json.dumps(_run(seed, 0.0)) == json.dumps(plain)

    def test_same_facts_gold_and_questions(self, pair):
        """Personas, events (kind, predicate, value, order), gold programs, ledgers and questions
        equal the plain run's: composition changes the wording only."""
        plain, composed = pair
        assert [p["name"] for p in plain] == [p["name"] for p in composed]
        for a, b in zip(plain, composed, strict=True):
            for sa, sb in zip(a["sessions"], b["sessions"], strict=True):
                strip = [{k: e[k] for k in ("kind", "pred", "value")} for e in sa["events"]]
                assert strip == [{k: e[k] for k in ("kind", "pred", "value")} for e in sb["events"]]
                for key in ("gold_ops", "questions", "ledger_before", "ledger_after"):
                    assert sa[key] == sb[key], key

    def test_each_event_is_stated_in_its_line(self, pair):
        """Every event's text is a user line of its session and states the event's value (a
        correction names it last, after the wrong one)."""
        for persona in pair[1]:
            for session in persona["sessions"]:
                lines = _user_lines(session)
                for event in session["events"]:
                    assert event["text"] in lines
                    if event["kind"] != "TOMBSTONE":
                        assert event["value"] in event["text"]

    def test_every_rewrite_occurs(self, pair):
        """At rate 0.5 the run holds two-fact lines, corrections, openers and lines about
        someone else; lines about someone else state no event."""
        composed = pair[1]
        sessions = [s for p in composed for s in p["sessions"]]
        texts = [e["text"] for s in sessions for e in s["events"]]
        assert any(texts.count(t) == 2 for t in texts)  # two events, one line
        corrections = {c.split("{")[0] for c in C.CORRECTIONS}
        assert any(any(c in t for c in corrections) for t in texts)
        assert any(t.startswith(o + " ") for t in texts for o in C.OPENERS)
        others = [line for s in sessions for line in _user_lines(s) if any(f"my {r}" in line.lower() for r in C.RELATIONS)
                  and line not in {e["text"] for e in s["events"]}]
        assert others

    def test_deterministic_and_seeded(self):
        assert json.dumps(_run(137, 0.3)) == json.dumps(_run(137, 0.3))
        assert json.dumps(_run(137, 0.3)) != json.dumps(_run(991, 0.3))

    @pytest.mark.parametrize("bad", [-0.1, 1.5, "0.3", None])
    def test_rate_checked(self, bad):
        with pytest.raises(UserError, match=r"^compose must be a number from 0 to 1, got "):
            GeneratorConfig(seed=1, split="train", compose=bad)

    def test_cli_flag(self, tmp_path):
        out = tmp_path / "t.jsonl"
        clerk_main(["generate", "--seed", "137", "--split", "train", "--personas", "2", "--compose", "0.5",
                    "--out", str(out)])
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert json.dumps(rows) == json.dumps(generate_from_config(GeneratorConfig(seed=137, split="train", personas=2,
                                                                                   compose=0.5)))

    def test_lower_first_keeps_i_and_values(self):
        assert C._lower_first("I work as a nurse.", ()) == "I work as a nurse."
        assert C._lower_first("I'm a nurse.", ()) == "I'm a nurse."
        assert C._lower_first("My job is nursing.", ()) == "my job is nursing."
        assert C._lower_first("Oslo is home now.", ("Oslo",)) == "Oslo is home now."
