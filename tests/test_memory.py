"""Tests for clerk.memory: registry, config, the systems' writers and views, and the reader helpers."""

from __future__ import annotations

import doctest

import pytest

import clerk.memory.rag as rag_module
import clerk.memory.reader as reader_module
import clerk.memory.text as text_module
from clerk import ledger as L
from clerk.errors import UserError
from clerk.evaluate.runner import replay
from clerk.memory import MEMORY_REGISTRY, EvalConfig, LedgerSystem, MemorySystem, Proposal, Registry, Runtime, View
from clerk.memory.base import WriteResult
from clerk.memory.reader import split_prompt
from clerk.memory.text import fit_newest
from timeline_kit import two_personas

ALL = ["add-only", "clerk", "full", "null", "oracle", "prompted-ledger", "rag", "summary-rag", "window"]


@pytest.fixture(scope="module")
def tokenizer():
    """A small byte-level BPE tokenizer trained on the scripted timelines (real, offline, fast)."""
    from clerk.models.tokenizer import train_tokenizer

    texts = [turn["content"] for tl in two_personas() for s in tl["sessions"] for turn in s["turns"]]
    return train_tokenizer(texts + [L.serialize(s["ledger_after"]) for tl in two_personas() for s in tl["sessions"]], 300)


def _runtime(tokenizer, **knobs) -> Runtime:
    """A runtime with an effectively unbounded reader context and the given EvalConfig knobs."""
    return Runtime(EvalConfig(**knobs), tokenizer=tokenizer, context_tokens=10**9)


def _views(system_name: str, runtime: Runtime, timelines=None) -> dict[tuple[str, int], list[View]]:
    """(persona, session) -> views of the session's questions, from a replay of one system."""
    timelines = timelines or two_personas()
    seen: dict = {}

    def answer(name, system, tl, session, state, views):
        seen[(tl["name"], session["index"])] = views

    replay(timelines, {system_name: MEMORY_REGISTRY.get(system_name)(runtime)}, answer, progress=False)
    return seen


def test_doctests():
    """The >>> examples of the memory modules hold."""
    for module in (text_module, rag_module, reader_module):
        assert doctest.testmod(module).failed == 0


class TestRegistry:
    def test_global_names(self):
        """The global registry holds exactly the eight systems, each with its own version."""
        assert MEMORY_REGISTRY.names() == ALL
        for name in ALL:
            cls = MEMORY_REGISTRY.get(name)
            assert cls.name == name and cls.__dict__["version"]

    def test_unknown_name_lists_known(self):
        """An unknown name raises KeyError listing the registered names."""
        with pytest.raises(KeyError) as err:
            MEMORY_REGISTRY.get("mem0")
        assert err.value.args[0] == f"unknown memory system 'mem0'; known: {', '.join(ALL)}"

    def test_duplicate_raises(self):
        """Registering a name twice in a local registry raises."""
        reg = Registry()

        @reg.register("toy")
        class Toy(MemorySystem):
            version = "1"

        with pytest.raises(KeyError) as err:
            reg.register("toy")(type("Other", (Toy,), {"version": "2"}))
        assert err.value.args[0] == "memory system 'toy' is already registered (TestRegistry.test_duplicate_raises.<locals>.Toy)"
        assert reg.names() == ["toy"] and "toy" not in MEMORY_REGISTRY.names()

    def test_version_required(self):
        """A system without its own version string is refused, even if its parent has one."""
        reg = Registry()
        with pytest.raises(TypeError, match="must define its own non-empty string 'version'"):
            reg.register("child")(type("Child", (MEMORY_REGISTRY.get("full"),), {}))

    def test_abstract_contract(self):
        """MemorySystem cannot be instantiated without init_state/view/write."""
        with pytest.raises(TypeError):
            MemorySystem(None)  # type: ignore[abstract]


class TestEvalConfig:
    def test_defaults_valid(self):
        """The defaults pass validation and serialise to a plain dict."""
        assert EvalConfig().to_dict()["reader"] == "mc"

    @pytest.mark.parametrize("knobs, message", [
        ({"window_k": 0}, "window_k must be an int >= 1, got 0"),
        ({"rag_k": "3"}, "rag_k must be an int >= 1, got '3'"),
        ({"max_read_tokens": 0}, "max_read_tokens must be an int >= 1 or -1, got 0"),
        ({"reader": "judge"}, "reader must be one of mc, rule, got 'judge'"),
        ({"reader_model": "big"}, "reader_model must be one of base, adapter, got 'big'"),
    ])
    def test_bad_values(self, knobs, message):
        """Bad knobs raise UserError naming the field, the expectation and the value."""
        with pytest.raises(UserError) as err:
            EvalConfig(**knobs)
        assert str(err.value) == message


class TestFitNewest:
    def test_keeps_newest_within_budget(self, tokenizer):
        """The kept suffix fits the budget under the real tokenizer and is maximal."""
        rt = _runtime(tokenizer)
        lines = [f"user: line number {k} about things" for k in range(30)]
        for budget in (0, 7, 40, 100):
            kept, truncated = fit_newest(lines, budget, rt.line_tokens, rt.count_tokens)
            assert rt.count_tokens("\n".join(kept)) <= budget
            assert kept == lines[len(lines) - len(kept):]
            assert truncated == (len(kept) < len(lines))
            if truncated:  # one more line would not fit
                assert rt.count_tokens("\n".join(lines[len(lines) - len(kept) - 1:])) > budget


class TestLedgerSystems:
    def test_oracle_view_is_gold_ledger_before(self, tokenizer):
        """With question-time uses bookkeeping, the oracle's view equals the gold ledger_before."""
        timelines = two_personas()
        views = _views("oracle", _runtime(tokenizer), timelines)
        for tl in timelines:
            for s in tl["sessions"][1:]:
                assert [v.text for v in views[(tl["name"], s["index"])]] == [L.serialize(s["ledger_before"])] * len(s["questions"])

    def test_oracle_write_reaches_gold_after(self, tokenizer):
        """The oracle's ledger equals gold ledger_after after every session, with no invalid ops."""
        timelines = two_personas()
        got = []

        def wrote(name, system, tl, session, before, result):
            got.append((result.state == session["ledger_after"], result.n_invalid, result.parse_failed))

        replay(timelines, {"oracle": MEMORY_REGISTRY.get("oracle")(_runtime(tokenizer))}, lambda *a: None, wrote, False)
        assert got == [(True, 0, False)] * 10

    def test_garbage_program_never_breaks_budget(self, tokenizer):
        """Invalid ops, unhashable op kinds and 100 ADDs are skipped or stop at the budget."""

        class Garbage(LedgerSystem):
            version = "1"

            def propose(self, states, timelines, sessions):
                program = [{"op": ["ADD"]}, {"op": "EVICT", "i": 99}, "x"] + [
                    {"op": "ADD", "s": "Ari", "p": f"p{k}", "o": "v"} for k in range(100)]
                return [Proposal("junk", program, False, 5) for _ in states]

        system = Garbage(_runtime(tokenizer))
        [result] = system.write([L.empty_ledger(3)], [{"name": "Ari", "budget": 3}], [{"index": 1}])
        assert len(result.state) == 3 and len(L.occupied(result.state)) == 3
        assert result.n_invalid == 3 + 97 and len(result.program) == 103
        assert result.invalid[0] == (0, "unknown op ['ADD'] (expected one of ADD, UPDATE, TOMBSTONE, EVICT)")

    def test_readers(self, tokenizer):
        """clerk reads with the adapter; oracle with the adapter only when one is given; prompted-ledger with base."""
        plain, adapted = _runtime(tokenizer), Runtime(EvalConfig(), adapter_dir="somewhere", tokenizer=tokenizer)
        assert MEMORY_REGISTRY.get("clerk")(plain).reader_model() == "adapter"
        assert MEMORY_REGISTRY.get("oracle")(plain).reader_model() == "base"
        assert MEMORY_REGISTRY.get("oracle")(adapted).reader_model() == "adapter"
        assert MEMORY_REGISTRY.get("prompted-ledger")(adapted).reader_model() == "base"


class TestTranscriptViews:
    def test_full_shows_every_earlier_session(self, tokenizer):
        """The full view holds sessions 0..t-1 and never the current session."""
        views = _views("full", _runtime(tokenizer))
        text = views[("Ari", 4)][0].text
        assert [line for line in text.split("\n") if line.startswith("[session")] == [f"[session {k}]" for k in range(4)]
        assert "pilot" not in text and not views[("Ari", 4)][0].truncated

    def test_full_truncation_recorded(self, tokenizer):
        """A small token cap cuts the oldest lines, keeps the newest and marks the view truncated."""
        rt = _runtime(tokenizer, max_read_tokens=30)
        view = _views("full", rt)[("Ari", 4)][0]
        assert view.truncated and rt.count_tokens(view.text) <= 30
        assert view.text.endswith("assistant: Indeed.") and "[session 0]" not in view.text

    def test_window_keeps_last_k(self, tokenizer):
        """The window view shows exactly the k most recent earlier sessions."""
        views = _views("window", _runtime(tokenizer, window_k=2))
        headers = [ln for ln in views[("Ari", 4)][0].text.split("\n") if ln.startswith("[session")]
        assert headers == ["[session 2]", "[session 3]"]
        assert [ln for ln in views[("Ari", 1)][0].text.split("\n") if ln.startswith("[session")] == ["[session 0]"]

    def test_rag_returns_k_turns(self, tokenizer):
        """The rag view returns k turns (all when fewer are remembered), in chronological order."""
        views = _views("rag", _runtime(tokenizer, rag_k=3))
        lines = views[("Ari", 4)][0].text.split("\n")
        assert len(lines) == 3
        sessions = [int(ln.split("]")[0].split()[-1]) for ln in lines]
        assert sessions == sorted(sessions)
        assert len(_views("rag", _runtime(tokenizer, rag_k=50))[("Ari", 1)][0].text.split("\n")) == 6

    def test_rag_retrieves_matching_turn(self, tokenizer):
        """A question naming the predicate retrieves the turn that stated it."""
        views = _views("rag", _runtime(tokenizer, rag_k=1))
        assert views[("Ari", 4)][0].text == "[session 3] user: My car is now Volvo."

    def test_rag_empty_query_falls_back_to_newest(self, tokenizer):
        """A question with no searchable token gets the newest turns (deterministic tie-break)."""
        system = MEMORY_REGISTRY.get("rag")(_runtime(tokenizer, rag_k=2))
        [res] = system.write([system.init_state({})], [{}], [two_personas()[0]["sessions"][0]])
        view = system.view(res.state, {}, {}, {"question": "?"})
        assert view.text == "[session 0] user: Nice weather today.\n[session 0] assistant: Indeed."

    def test_add_only_newest_first_within_budget(self, tokenizer):
        """add-only lists user statements newest first, never edits, and fits the gold ledger's tokens."""
        rt = _runtime(tokenizer)
        timelines = two_personas()
        views = _views("add-only", rt, timelines)
        view = views[("Ari", 4)][0]
        budget = rt.count_tokens(L.serialize(timelines[0]["sessions"][4]["ledger_before"]))
        assert rt.count_tokens(view.text) <= budget
        lines = view.text.split("\n")
        sessions = [int(ln.split("]")[0].split()[-1]) for ln in lines]
        assert sessions == sorted(sessions, reverse=True) and lines[0].startswith("[session 3]")
        big = _views("add-only", _runtime(tokenizer, add_only_budget=10**6))[("Ari", 4)][0]
        assert not big.truncated and "[session 0] My job is now nurse." in big.text  # superseded, still there
        assert "assistant" not in big.text

    def test_null_is_empty(self, tokenizer):
        """The null view is always empty."""
        views = _views("null", _runtime(tokenizer))
        assert {v.text for vs in views.values() for v in vs} == {""}

    def test_views_deterministic(self, tokenizer):
        """Two replays give identical views for every transcript system."""
        for name in ("full", "window", "rag", "add-only"):
            assert _views(name, _runtime(tokenizer)) == _views(name, _runtime(tokenizer))


class TestReaderHelpers:
    def test_split_prompt_on_real_template(self, tokenizer):
        """The split falls after the newline before the question, and the prefix holds the memory."""
        from clerk.prompts import CHAT_TEMPLATE, answer_messages

        tokenizer.chat_template = CHAT_TEMPLATE
        text = tokenizer.apply_chat_template(answer_messages("[0]", "Where?"), tokenize=False, add_generation_prompt=True)
        prefix, suffix = split_prompt(text)
        assert prefix.endswith("Memory:\n[0]\n") and suffix.startswith("Question: Where?")

    def test_rule_choice_not_an_option(self):
        """When the reference answer is not among the options the rule reader returns -1."""
        from clerk.generator.questions import reference_answer

        ledger = L.empty_ledger(2)
        q = {"pred": "job", "type": "current", "options": ["a"] * 10}
        answer = reference_answer(ledger, "Ari", "job", False)
        assert answer not in q["options"]
        assert reader_module.rule_choice(ledger, "Ari", q) == -1


def test_write_results_keep_persona_order(tokenizer):
    """Batched writes return one result per persona, in order, for every system without a model."""
    timelines = two_personas()
    for name in ("oracle", "full", "window", "rag", "add-only", "null"):
        system = MEMORY_REGISTRY.get(name)(_runtime(tokenizer))
        states = [system.init_state(tl) for tl in timelines]
        results = system.write(states, timelines, [tl["sessions"][0] for tl in timelines])
        assert len(results) == 2 and all(isinstance(r, WriteResult) for r in results)
