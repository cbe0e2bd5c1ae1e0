"""Tests for clerk.memory: registry, config, the systems' writers and views, every kind of view over
timelines (clerk.memory.views), and the one reader (clerk.memory.reader: tree-packed MC scoring,
growing views, memo of repeated questions) on a random tiny model."""

from __future__ import annotations

import doctest

import pytest
import torch
from timeline_kit import two_personas

import clerk.memory.rag as rag_module
import clerk.memory.reader as reader_module
import clerk.memory.text as text_module
from clerk import ledger as L
from clerk import prompts
from clerk.errors import UserError
from clerk.evaluate.runner import mc_choose, replay
from clerk.memory import MEMORY_REGISTRY, EvalConfig, LedgerSystem, MemorySystem, Proposal, Registry, Runtime, View
from clerk.memory.base import WriteResult
from clerk.memory.reader import Reader, split_prompt
from clerk.memory.registry import SYNTHETIC
from clerk.memory.text import fit_newest
from clerk.memory.views import question_views

ALL = ["add-only", "clerk", "clerk-repair", "clerk-unconstrained", "evidence", "full", "null", "oracle", "prompted-ledger", "rag",
       "summary-rag", "window"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
        """The global registry holds exactly the nine systems, each with its own version."""
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

        @reg.register("toy", order=1, benchmarks=(SYNTHETIC,))
        class Toy(MemorySystem):
            version = "1"

        with pytest.raises(KeyError) as err:
            reg.register("toy", order=2, benchmarks=(SYNTHETIC,))(type("Other", (Toy,), {"version": "2"}))
        assert err.value.args[0] == "memory system 'toy' is already registered (TestRegistry.test_duplicate_raises.<locals>.Toy)"
        assert reg.names() == ["toy"] and "toy" not in MEMORY_REGISTRY.names()

    def test_version_required(self):
        """A system without its own version string is refused, even if its parent has one."""
        reg = Registry()
        with pytest.raises(TypeError, match="must define its own non-empty string 'version'"):
            reg.register("child", order=1, benchmarks=(SYNTHETIC,))(type("Child", (MEMORY_REGISTRY.get("full"),), {}))

    def test_abstract_contract(self):
        """MemorySystem cannot be instantiated without init_state/view/write."""
        with pytest.raises(TypeError):
            MemorySystem(None)  # type: ignore[abstract]


class TestEvalConfig:
    def test_defaults_valid(self):
        """The defaults pass validation and serialise to a plain dict: the MC reader over the trained
        adapter, constrained writers."""
        d = EvalConfig().to_dict()
        assert (d["reader"], d["reader_model"], d["constrained"]) == ("mc", "adapter", True)

    @pytest.mark.parametrize("knobs, message", [
        ({"window_k": 0}, "window_k must be an int >= 1, got 0"),
        ({"rag_k": "3"}, "rag_k must be an int >= 1, got '3'"),
        ({"max_read_tokens": 0}, "max_read_tokens must be an int >= 1 or -1, got 0"),
        ({"reader": "judge"}, "reader must be one of mc, rule, got 'judge'"),
        ({"reader_model": "big"}, "reader_model must be one of base, adapter, reader, got 'big'"),
        ({"reader_pmi": 1.5}, "reader_pmi must be a number in [0, 1], got 1.5"),
        ({"reader_pmi": "0.25"}, "reader_pmi must be a number in [0, 1], got '0.25'"),
        ({"constrained": "yes"}, "constrained must be true or false, got 'yes'"),
        ({"constrained": 1}, "constrained must be true or false, got 1"),
        ({"add_only_budget": -2}, "add_only_budget must be an int >= 1 or -1, got -2"),
        ({"dtype": "float16"}, "dtype must be one of auto, float32, bfloat16, got 'float16'"),
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
        """With question-time uses bookkeeping, the oracle's view is the reader's view of the gold ledger_before."""
        timelines = two_personas()
        views = _views("oracle", _runtime(tokenizer), timelines)
        for tl in timelines:
            for s in tl["sessions"][1:]:
                expected = prompts.reader_ledger(s["ledger_before"])
                assert [v.text for v in views[(tl["name"], s["index"])]] == [expected] * len(s["questions"])

    def test_oracle_ledger_is_gold_ledger_before(self, tokenizer):
        """The oracle's ledger at question time equals the gold ledger_before exactly (uses included)."""
        timelines = two_personas()
        seen = {}

        def answer(name, system, tl, session, state, views):
            seen[(tl["name"], session["index"])] = system.ledger(state)

        replay(timelines, {"oracle": MEMORY_REGISTRY.get("oracle")(_runtime(tokenizer))}, answer, progress=False)
        assert seen and all(seen[(tl["name"], s["index"])] == s["ledger_before"]
                            for tl in timelines for s in tl["sessions"] if s["questions"])

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
        """Every system is read by the run's one reader (reader_model), whatever writes it."""
        for reader_model in ("adapter", "base"):
            rt = _runtime(tokenizer, reader_model=reader_model)
            assert {MEMORY_REGISTRY.get(name)(rt).reader_model() for name in ALL} == {reader_model}

    def test_writers(self):
        """clerk writes with the adapter, prompted-ledger with the base model (only it has a shared prefix)."""
        assert MEMORY_REGISTRY.get("clerk").writer_kind == "adapter"
        assert MEMORY_REGISTRY.get("prompted-ledger").writer_kind == "base"
        assert MEMORY_REGISTRY.get("clerk")(None).shared_prefix(None) is None

    def test_model_writer_prompts(self, tokenizer):
        """clerk's writer reads the policy prompt (exact serialization + user lines); prompted-ledger the
        few-shot frame around the same user turn, whose shared prefix ends before that turn."""
        from clerk.models.loading import chat_prompt
        from clerk.prompts import CHAT_TEMPLATE

        tokenizer.chat_template = CHAT_TEMPLATE
        tl = two_personas()[0]
        state, session = tl["sessions"][2]["ledger_before"], tl["sessions"][2]
        policy = prompts.consolidate_messages(L.serialize(state), prompts.policy_transcript(session["turns"]))
        clerk_system, prompted = (MEMORY_REGISTRY.get(n)(_runtime(tokenizer)) for n in ("clerk", "prompted-ledger"))
        assert clerk_system.messages(state, session) == policy
        few_shot = prompted.messages(state, session)
        assert few_shot == prompts.prompted_messages(L.serialize(state), prompts.policy_transcript(session["turns"]))
        assert few_shot[-1:] == policy
        prefix = prompted.shared_prefix(tokenizer)
        text = chat_prompt(tokenizer, few_shot)
        assert text.startswith(prefix) and text[len(prefix):].startswith("<|im_start|>user\n" + L.serialize(state))


class TestModelWriters:
    @pytest.mark.parametrize("constrained", [True, False])
    def test_propose_wires_grammar_prefix_and_compiler(self, tokenizer, monkeypatch, constrained):
        """A model writer hands the decoder one program grammar per persona (its ledger, the catalogue's
        keys) when constrained and none otherwise, prompted-ledger's shared prefix, and compiles each
        output against that persona's ledger."""
        import clerk.models.decoding as decoding
        from clerk.program import program_grammar
        from clerk.prompts import CHAT_TEMPLATE

        tokenizer.chat_template = CHAT_TEMPLATE
        calls = []

        def fake_generate(model, tok, texts, max_new_tokens, batch_size, grammars=None, shared_prefix=None):
            calls.append({"texts": texts, "grammars": grammars, "prefix": shared_prefix, "cap": max_new_tokens})
            return ["UPDATE job chef\nADD car Fiat", "not a program"][: len(texts)]

        monkeypatch.setattr(decoding, "greedy_generate", fake_generate)
        rt = _runtime(tokenizer, constrained=constrained, max_new_tokens=9)
        rt.predicates = ["job", "car", "city"]
        rt._models = {"base": ("model", tokenizer), "adapter": ("model", tokenizer)}  # the decoder is faked
        timelines = two_personas()
        states = [tl["sessions"][2]["ledger_before"] for tl in timelines]
        sessions = [tl["sessions"][2] for tl in timelines]
        for name in ("clerk", "prompted-ledger"):
            system = MEMORY_REGISTRY.get(name)(rt)
            proposals = system.propose(states, timelines, sessions)
            call = calls[-1]
            assert call["cap"] == 9 and len(call["texts"]) == 2
            if constrained:
                assert call["grammars"] == [program_grammar(st, tl["name"], rt.predicates) for st, tl in zip(states, timelines)]
            else:
                assert call["grammars"] is None
            assert (call["prefix"] is None) == (name == "clerk")
            assert all(text.startswith(call["prefix"] or "") for text in call["texts"])
            ari, bo = proposals
            assert ari.program == [{"op": "UPDATE", "i": L.find(states[0], "Ari", "job"), "s": "Ari", "p": "job", "o": "chef"},
                                   {"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"}]
            assert (ari.parse_failed, bo.parse_failed, bo.program) == (False, True, [])
            assert ari.write_tokens == rt.count_tokens("UPDATE job chef\nADD car Fiat")


class TestOpenLedgerTimelines:
    def test_format_two_timeline_goes_through_its_form(self, tokenizer, monkeypatch):
        """A format-2 timeline's form reaches every step of a ledger system: the writer gets the open
        grammar of that form and its output compiles in the open language, the reducer rejects facts
        out of form, questions record uses on their own subject, and the view names subject and date."""
        import clerk.models.decoding as decoding
        from clerk.form import LedgerForm
        from clerk.program import program_grammar
        from clerk.prompts import CHAT_TEMPLATE

        tokenizer.chat_template = CHAT_TEMPLATE
        form = LedgerForm(("Jo", "Al"))
        timeline = {**two_personas()[0], "format": 2, "form": form.to_json()}
        session = {**timeline["sessions"][1], "questions": [{"question": "?", "pred": "trip", "subject": "Al"}]}
        calls = []

        def fake_generate(model, tok, texts, max_new_tokens, batch_size, grammars=None, shared_prefix=None):
            calls.append(grammars)
            return ["ADD @2023-05-07 Al trip Paris\nADD Bo pet cat\nADD Jo Job_x y"]

        monkeypatch.setattr(decoding, "greedy_generate", fake_generate)
        rt = _runtime(tokenizer, constrained=True)
        rt.predicates = ["job"]  # the closed catalogue: not used for an open timeline
        rt._models = {"adapter": ("model", tokenizer)}
        system = MEMORY_REGISTRY.get("clerk")(rt)
        state = L.empty_ledger(3)
        [result] = system.write([state], [timeline], [session])
        assert calls == [[program_grammar(state, form)]]
        assert result.state[0] == {"i": 0, "s": "Al", "p": "trip", "o": "Paris", "w": "2023-05-07", "prev": None,
                                   "v": 1, "born": 1, "t": 1, "uses": 0}
        assert [pos for pos, _ in result.invalid] == [1, 2] and result.program[2] == "ADD Jo Job_x y"  # no key: raw text
        assert result.invalid[0][1] == "subject 'Bo' is not one of the ledger's subjects ('Jo', 'Al')"
        asked = system.on_questions(result.state, timeline, session)
        assert asked[0]["uses"] == 1
        assert system.view(asked, timeline, session, session["questions"][0]).text == "Al / trip: Paris (on 2023-05-07)"


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
        budget = rt.count_tokens(prompts.reader_ledger(timelines[0]["sessions"][4]["ledger_before"]))
        assert rt.count_tokens(view.text) <= budget
        assert view.truncated and rt.count_tokens(view.text) > budget // 2  # the budget binds, and is used
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
        """The split falls after the newline before the question: the prefix is the frame and the view."""
        from clerk.prompts import CHAT_TEMPLATE, answer_messages

        tokenizer.chat_template = CHAT_TEMPLATE
        text = tokenizer.apply_chat_template(answer_messages("[0]", "Where?"), tokenize=False, add_generation_prompt=True)
        prefix, suffix = split_prompt(text)
        assert prefix == "<|im_start|>user\n[0]\n" and suffix == "Q: Where?<|im_end|>\n<|im_start|>assistant\n"

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


class TestQuestionViews:
    KINDS = ["ledger", "full", "window", "rag", "add-only"]

    def test_every_question_every_kind_in_file_order(self, tokenizer):
        """Per session, each kind groups the questions that see one view (all of them but rag's,
        whose view depends on the question); sessions in file order, kinds in the order asked."""
        timelines = two_personas()
        got = list(question_views(timelines, self.KINDS, _runtime(tokenizer)))
        flat = [(kind, tl["name"], s["index"], q["question"]) for kind, tl, s, _, qs in got for q in qs]
        expected = [(kind, tl["name"], s["index"], q["question"]) for tl in timelines for s in tl["sessions"]
                    for kind in self.KINDS for q in s["questions"]]
        assert sorted(flat) == sorted(expected) and len(flat) == len(expected)
        for kind, _tl, s, _, qs in got:
            if kind != "rag":
                assert qs == s["questions"]  # one view for the whole session
        assert MEMORY_REGISTRY.view_kinds() == self.KINDS

    def test_views_are_the_systems_views(self, tokenizer):
        """The ledger kind is the reader's view of the gold ledger_before; every transcript kind is the
        view its system shows in the evaluation's replay."""
        timelines = two_personas()
        rt = _runtime(tokenizer, window_k=2, rag_k=3)
        got = {(k, tl["name"], s["index"], q["question"]): text
               for k, tl, s, text, qs in question_views(timelines, self.KINDS, rt) for q in qs}
        for tl in timelines:
            for s in tl["sessions"]:
                for q in s["questions"]:
                    assert got[("ledger", tl["name"], s["index"], q["question"])] == prompts.reader_ledger(s["ledger_before"])
        for kind in self.KINDS[1:]:
            replayed = _views(kind, _runtime(tokenizer, window_k=2, rag_k=3), timelines)
            for (name, index), views in replayed.items():
                session = next(tl for tl in timelines if tl["name"] == name)["sessions"][index]
                for q, view in zip(session["questions"], views):
                    assert got[(kind, name, index, q["question"])] == view.text, (kind, name, index)

    def test_ledger_only_needs_no_runtime(self):
        """The ledger kind needs no tokenizer or runtime: one group per session with questions."""
        got = list(question_views(two_personas(), ["ledger"], None))
        assert len(got) == sum(1 for tl in two_personas() for s in tl["sessions"] if s["questions"])

    def test_unknown_kind(self, tokenizer):
        """An unknown kind is a UserError listing the known ones."""
        with pytest.raises(UserError) as err:
            list(question_views(two_personas(), ["ledger", "transcript"], _runtime(tokenizer)))
        assert str(err.value) == ("answer view kinds ['transcript'] are unknown; expected some of "
                                  "ledger, full, window, rag, add-only")


# ---- the reader on a random tiny model ----------------------------------------------------------

@pytest.fixture(scope="module")
def reader_model(tokenizer):
    """A random tiny Llama over the module's tokenizer (fp32, eval), so options score differently."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from clerk.prompts import CHAT_TEMPLATE

    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(3)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         initializer_range=0.3, tie_word_embeddings=False)
    return LlamaForCausalLM(config).eval()


def _plain_choice(model, tokenizer, view_text: str, question: dict) -> int:
    """The reference: the whole answer prompt scored on its own (clerk.scoring.mc)."""
    from clerk.models.loading import chat_prompt
    from clerk.scoring.mc import pick, score_options

    prompt = chat_prompt(tokenizer, prompts.answer_messages(view_text, question["question"]))
    return pick(score_options(model, tokenizer, prompt, question["options"]))


def _full_views(tokenizer) -> list[tuple[str, list[dict]]]:
    """Ari's growing full-transcript views, session by session, with that session's questions."""
    tl = two_personas()[0]
    views = _views("full", _runtime(tokenizer), [tl])
    return [(views[("Ari", s["index"])][0].text, s["questions"]) for s in tl["sessions"] if s["questions"]]


class TestReader:
    def test_growing_view_is_extended_and_reads_as_fresh(self, reader_model, tokenizer):
        """A full view that grows session by session is encoded from the last one on (extension used),
        and every choice equals a fresh reader's and the plain whole-prompt scoring."""
        views = _full_views(tokenizer)
        grown, chosen = Reader(reader_model, tokenizer), []
        for text, questions in views:
            chosen += grown.choose(("full", "Ari"), text, questions)
        assert grown.stats["extended"] == len(views) - 1
        fresh = []
        for text, questions in views:
            fresh += Reader(reader_model, tokenizer).choose(("full", "Ari"), text, questions)
        plain = [_plain_choice(reader_model, tokenizer, text, q) for text, qs in views for q in qs]
        assert chosen == fresh == plain
        assert len(set(plain)) > 1  # the options really compete
        last = len(tokenizer(split_prompt(_prompt(tokenizer, views[-1][0]))[0], add_special_tokens=False)["input_ids"])
        assert grown.stats["encoded_tokens"] == last  # each view's new tokens once: the last view's length

    def test_pmi_calibration_is_view_minus_weighted_empty_view(self, reader_model, tokenizer):
        """With pmi a, the chosen option maximises (mean log-prob after the view) - a x (mean log-prob
        after the empty view), each scored as a whole prompt on its own; the empty view is scored
        once per question however many systems ask it, and a = 0 is the plain rule."""
        from clerk.models.loading import chat_prompt
        from clerk.scoring.mc import pick, score_options

        def scores(text, q):
            prompt = chat_prompt(tokenizer, prompts.answer_messages(text, q["question"]))
            return score_options(reader_model, tokenizer, prompt, q["options"])

        views = _full_views(tokenizer)
        reader, got, want, plain = Reader(reader_model, tokenizer, pmi=0.5), [], [], []
        for text, questions in views:
            got += reader.choose(("full", "Ari"), text, questions)
            for q in questions:
                view, empty = scores(text, q), scores("", q)
                want.append(pick([v - 0.5 * e for v, e in zip(view, empty)]))
                plain.append(pick(view))
        assert got == want and got != plain  # the calibration changes some choices here
        n_empty = len(reader._empty)
        reader.choose(("oracle", "Ari"), views[0][0] + " ", views[0][1])  # another view, the same questions
        assert len(reader._empty) == n_empty
        assert Reader(reader_model, tokenizer, pmi=0.0).choose(("x",), views[0][0], views[0][1]) == plain[:len(views[0][1])]

    def test_empty_view_is_scored_once_for_both_terms(self, reader_model, tokenizer):
        """With pmi, the empty view (the null system) is scored once: its calibration scores are its
        scores, so its prefix is encoded once, and it answers as the plain rule does (a view minus
        a fraction of itself ranks the options as the view does)."""
        questions = _full_views(tokenizer)[1][1]
        reader = Reader(reader_model, tokenizer, pmi=0.5)
        got = reader.choose(("null", "Ari"), "", questions)
        assert got == [_plain_choice(reader_model, tokenizer, "", q) for q in questions]
        empty = len(tokenizer(split_prompt(_prompt(tokenizer, ""))[0], add_special_tokens=False)["input_ids"])
        assert reader.stats["encoded_tokens"] == empty and len(reader._empty) == len(questions)

    def test_memo_of_repeated_questions(self, reader_model, tokenizer):
        """The same view, question and options read again (by another system) reuse the choice:
        a memo hit, nothing encoded; other options are scored anew."""
        reader = Reader(reader_model, tokenizer)
        text, questions = _full_views(tokenizer)[1]
        first = reader.choose(("oracle", "Ari"), text, questions)
        encoded = reader.stats["encoded_tokens"]
        again = reader.choose(("clerk", "Ari"), text, questions)
        assert again == first and reader.stats["memo_hits"] == len(questions)
        assert reader.stats["encoded_tokens"] == encoded and reader.stats["questions"] == 2 * len(questions)
        moved = [{**questions[0], "options": questions[0]["options"][::-1]}]
        reader.choose(("clerk", "Ari"), text, moved)
        assert reader.stats["memo_hits"] == len(questions)
        assert reader.choose(("x", "y"), text, moved) == [_plain_choice(reader_model, tokenizer, text, moved[0])]

    def test_view_that_does_not_extend_exactly_is_encoded_afresh(self, reader_model, tokenizer):
        """A longer view whose tokens do not start with the last view's tokens (a merge across the
        cut) is encoded from scratch, and reads as a fresh reader would."""
        from clerk.models.tokenizer import train_tokenizer
        from clerk.prompts import CHAT_TEMPLATE

        # A tokenizer that merges runs of newlines, so "...\n" + "\n\n\n..." is not additive.
        merging = train_tokenizer(["Nice weather\n\n\n\nNice weather\n\n"] * 20, 280)
        merging.chat_template = CHAT_TEMPLATE
        assert len(merging) <= reader_model.config.vocab_size
        q = two_personas()[0]["sessions"][1]["questions"]
        short, longer = "Nice weather", "Nice weather\n\n\n\nNice weather"
        a, b = (split_prompt(_prompt(merging, v))[0] for v in (short, longer))
        ids = lambda t: merging(t, add_special_tokens=False)["input_ids"]  # noqa: E731
        assert b.startswith(a) and ids(a) + ids(b[len(a):]) != ids(b)  # the precondition of this case
        reader = Reader(reader_model, merging)
        reader.choose("k", short, q)
        got = reader.choose("k", longer, q)
        assert reader.stats["extended"] == 0 and reader.stats["encoded_tokens"] == len(ids(a)) + len(ids(b))
        assert got == Reader(reader_model, merging).choose("k", longer, q)
        assert got == [_plain_choice(reader_model, merging, longer, x) for x in q]

    def test_unrelated_view_of_the_same_key(self, reader_model, tokenizer):
        """A view that is not a continuation (a window slid on) is encoded afresh."""
        reader = Reader(reader_model, tokenizer)
        reader.choose("k", "abc", two_personas()[0]["sessions"][1]["questions"])
        reader.choose("k", "xyz", two_personas()[0]["sessions"][1]["questions"])
        assert reader.stats["extended"] == 0

    def test_mc_choose_groups_questions_by_view(self, reader_model, tokenizer):
        """mc_choose reads questions that share a view together and returns one choice per question, in order."""
        views = _full_views(tokenizer)
        questions = views[0][1] + views[1][1] + views[0][1][:1]
        view_list = [View(views[0][0])] * len(views[0][1]) + [View(views[1][0])] * len(views[1][1]) + [View(views[0][0])]
        got = mc_choose(Reader(reader_model, tokenizer), ("full", "Ari"), questions, view_list)
        assert got == [_plain_choice(reader_model, tokenizer, v.text, q) for v, q in zip(view_list, questions)]

    def test_runtime_has_one_reader(self, reader_model, tokenizer):
        """Runtime.reader() is one Reader over the reader_model, shared by every system of the run."""
        rt = _runtime(tokenizer, reader_model="base")
        rt._models["base"] = (reader_model, tokenizer)  # stands in for a loaded model directory
        reader = rt.reader()
        assert isinstance(reader, Reader) and reader.model is reader_model and rt.reader() is reader


def _prompt(tokenizer, view_text: str) -> str:
    from clerk.models.loading import chat_prompt

    return chat_prompt(tokenizer, prompts.answer_messages(view_text, "Where?"))
