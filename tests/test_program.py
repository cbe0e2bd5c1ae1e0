"""Tests of clerk/program.py (the policy's program language: render, compile, grammar) and of
grammar-constrained greedy decoding (clerk/models/constrained.py) on a random tiny model.

    python -m pytest tests/test_program.py -q -x
"""

from __future__ import annotations

import doctest
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clerk.program
from clerk import ledger as L
from clerk.evaluate.runner import catalogue_keys
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.program import MAX_VALUE_CHARS, Compiled, compile_program, program_grammar, render_program

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def slot(i: int, p: str, o: str, prev: str | None = None, v: int = 1, s: str = "Ari") -> dict:
    return {"i": i, "s": s, "p": p, "o": o, "prev": prev, "v": v, "born": 0, "t": 0, "uses": 0}


#: Budget 3: job held, city tombstoned, one free slot.
LEDGER = [slot(0, "job", "nurse"), slot(1, "city", "Oslo", v=0), {"i": 2}]
#: Budget 2, both slots taken.
FULL = [slot(0, "job", "nurse"), slot(1, "city", "Oslo")]


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """A generated training split under eviction pressure (budget 5), written to a file."""
    timelines = generate(seed=137, split="train", personas=10, sessions=8, budget=5)
    path = tmp_path_factory.mktemp("program") / "train.jsonl"
    write_timelines(path, timelines)
    return {"timelines": timelines, "path": path}


def sessions(split) -> list[tuple[dict, dict]]:
    return [(tl, s) for tl in split["timelines"] for s in tl["sessions"]]


@pytest.fixture(scope="module")
def tokenizer(split):
    """The scratch tokenizer (clerk.models.tokenizer) trained on the split's texts, with CLERK's template."""
    from clerk.models.tokenizer import timeline_texts, train_tokenizer
    from clerk.prompts import CHAT_TEMPLATE

    tok = train_tokenizer(timeline_texts(split["path"]), 500)
    tok.chat_template = CHAT_TEMPLATE
    return tok


@pytest.fixture(scope="module")
def lltok(tokenizer):
    from clerk.models.constrained import ll_tokenizer
    from clerk.models.decoding import stop_token_ids

    return ll_tokenizer(tokenizer, stop_token_ids(tokenizer))


def accepts(lltok, tokenizer, grammar: str, text: str) -> bool:
    """Whether ``grammar`` accepts ``text`` as a whole program (an llguidance matcher over its tokens)."""
    import llguidance

    matcher = llguidance.LLMatcher(lltok, llguidance.LLMatcher.grammar_from_lark(grammar))
    assert not matcher.is_error(), matcher.get_error()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return matcher.validate_tokens(ids) == len(ids) and matcher.consume_tokens(ids) and matcher.is_accepting()


def test_doctests():
    """The >>> examples of clerk.program hold."""
    result = doctest.testmod(clerk.program)
    assert result.attempted > 0 and result.failed == 0


class TestRenderProgram:
    def test_round_trip_on_gold_programs(self, split):
        """Every session's gold program renders to text that compiles back to exactly its gold_ops."""
        n_evict = 0
        for tl, s in sessions(split):
            text = render_program(s["ledger_before"], s["gold_ops"], s["index"])
            assert compile_program(text, s["ledger_before"], tl["name"], s["index"]) == Compiled(s["gold_ops"], [], False)
            assert len(text.splitlines()) == len(s["gold_ops"])
            n_evict += any(op["op"] == "EVICT" for op in s["gold_ops"])
        assert n_evict > 5  # the split really exercises eviction

    def test_lines_name_the_slot_at_that_point(self):
        """Index ops are named by the predicate of the slot they touch after the program's earlier ops."""
        program = [{"op": "EVICT", "i": 0}, {"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"},
                   {"op": "UPDATE", "i": 0, "s": "Ari", "p": "car", "o": "Volvo"}, {"op": "TOMBSTONE", "i": 0},
                   {"op": "EVICT", "i": 1}]
        assert render_program(FULL, program, 3) == "EVICT job\nADD car Fiat\nUPDATE car Volvo\nTOMBSTONE car\nEVICT city"

    def test_empty_program(self):
        """The empty program is the empty text, which compiles to the empty program (not a failure)."""
        assert render_program(LEDGER, []) == ""
        assert compile_program("", LEDGER, "Ari", 1) == Compiled([], [], False)

    def test_invalid_program_raises(self):
        """A program that does not apply strictly is refused with the reducer's error."""
        with pytest.raises(L.InvalidOpError, match="slot 2 is free"):
            render_program(LEDGER, [{"op": "EVICT", "i": 2}])


class TestCompileProgram:
    def test_four_forms(self):
        """Each line form compiles to its SPEC op; the subject is the persona's name."""
        got = compile_program("UPDATE job chef\nTOMBSTONE job\nADD pet a small cat\nEVICT city", LEDGER, "Ari", 2)
        assert got == Compiled([
            {"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}, {"op": "TOMBSTONE", "i": 0},
            {"op": "ADD", "s": "Ari", "p": "pet", "o": "a small cat"}, {"op": "EVICT", "i": 1}], [], False)

    def test_unknown_key_is_index_minus_one(self):
        """A key that names no slot compiles to index -1, which the reducer rejects as out of range."""
        got = compile_program("UPDATE car Fiat\nTOMBSTONE car\nEVICT car", LEDGER, "Ari", 2)
        assert [op["i"] for op in got.program] == [-1, -1, -1] and got.errors == [] and not got.parse_failed
        after, report = L.reduce(LEDGER, got.program, 2, strict=False)
        assert after == LEDGER and [pos for pos, _, _ in report.invalid] == [0, 1, 2]
        assert all("out of range" in reason for _, _, reason in report.invalid)

    def test_keys_of_another_subject_do_not_resolve(self):
        """Keys are looked up for the persona's own subject only."""
        assert compile_program("EVICT job", LEDGER, "Bo", 2).program == [{"op": "EVICT", "i": -1}]

    def test_keys_resolve_against_the_program_so_far(self):
        """A key resolves in the ledger with the earlier ops applied: a slot ADDed is found, an EVICTed one is not."""
        got = compile_program("ADD car Fiat\nUPDATE car Volvo\nEVICT job\nUPDATE job chef", LEDGER, "Ari", 2).program
        assert got[1] == {"op": "UPDATE", "i": 2, "s": "Ari", "p": "car", "o": "Volvo"}
        assert got[2] == {"op": "EVICT", "i": 0} and got[3]["i"] == -1

    def test_malformed_lines_are_kept_as_invalid_ops(self):
        """A line of no form stays in the program as its raw text, with an error naming the line;
        the reducer records it as invalid and applies the rest."""
        got = compile_program("ADD job\n\n  UPDATE job chef  \nhello there", LEDGER, "Ari", 2)
        assert got.program == ["ADD job", {"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}, "hello there"]
        assert not got.parse_failed and len(got.errors) == 2
        assert got.errors[0] == "line 1: 'ADD job' is not ADD/UPDATE <pred> <value> or TOMBSTONE/EVICT <pred>"
        assert got.errors[1].startswith("line 4: 'hello there' ")
        after, report = L.reduce(LEDGER, got.program, 2, strict=False)
        assert after[0]["o"] == "chef" and [pos for pos, _, _ in report.invalid] == [0, 2]

    @pytest.mark.parametrize("text", ["I don't know what to do.", '[{"op":"ADD","s":"Ari","p":"car","o":"Fiat"}]',
                                      "add car Fiat", "ADD Car Fiat", "EVICT job now", "```\nADD car\n```"])
    def test_garbage_is_a_parse_failure(self, text):
        """Text in which no line compiles is a parse failure with an empty program (SPEC §1)."""
        got = compile_program(text, LEDGER, "Ari", 2)
        assert got.program == [] and got.parse_failed and got.errors

    def test_blank_text_is_the_empty_program(self):
        """Whitespace only is an empty program, not a parse failure."""
        assert compile_program(" \n\n\t", LEDGER, "Ari", 2) == Compiled([], [], False)

    def test_bytes_and_non_text(self):
        """Bytes are decoded (invalid UTF-8 replaced); anything else is a parse failure naming its type."""
        assert compile_program(b"ADD car Fiat", LEDGER, "Ari", 2).program == [{"op": "ADD", "s": "Ari", "p": "car", "o": "Fiat"}]
        assert compile_program(bytes(range(256)), LEDGER, "Ari", 2).parse_failed
        for junk in (None, 7, ["ADD car Fiat"], {"op": "ADD"}):
            got = compile_program(junk, LEDGER, "Ari", 2)
            assert got == Compiled([], [f"expected text, got {type(junk).__name__}"], True)

    @settings(max_examples=200, deadline=None)
    @given(st.one_of(st.text(), st.binary(),
                     st.lists(st.sampled_from(["ADD job chef", "ADD car Fiat", "UPDATE job x", "TOMBSTONE job",
                                               "EVICT job", "EVICT city", "ADD", "UPDATE car", "\u0000", ""]))
                     .map("\n".join)))
    def test_never_raises_and_never_mutates(self, text):
        """Any text or bytes compile without raising, leave the ledger untouched, and apply within the budget."""
        before = [dict(s) for s in LEDGER]
        got = compile_program(text, LEDGER, "Ari", 3)
        assert LEDGER == before
        assert got.parse_failed == (bool(got.errors) and got.program == [])
        after, _ = L.reduce(LEDGER, got.program, 3, strict=False)
        assert len(after) == len(LEDGER)


class TestProgramGrammar:
    @pytest.mark.parametrize("with_catalogue", [False, True], ids=["any-key", "catalogue"])
    def test_accepts_every_gold_program(self, split, tokenizer, lltok, with_catalogue):
        """The grammar of each session's ledger accepts the text of its gold program (evictions,
        a key ADDed and EVICTed in one program, an evicted fact ADDed back included)."""
        predicates = catalogue_keys(None) if with_catalogue else None
        rejected = []
        for tl, s in sessions(split):
            text = render_program(s["ledger_before"], s["gold_ops"], s["index"])
            if not accepts(lltok, tokenizer, program_grammar(s["ledger_before"], tl["name"], predicates), text):
                rejected.append(text)
        assert rejected == []

    def test_split_holds_programs_that_touch_a_key_twice(self, split):
        """The split used above has gold programs that EVICT a key ADDed earlier in the same program
        and that ADD back a key held before it (so the acceptance test covers them)."""
        evict_added = add_back = 0
        for _tl, s in sessions(split):
            held = {x["p"] for x in L.occupied(s["ledger_before"])}
            lines = render_program(s["ledger_before"], s["gold_ops"], s["index"]).splitlines()
            added = {line.split()[1] for line in lines if line.startswith("ADD ")}
            evict_added += any(line.startswith("EVICT ") and line.split()[1] in added - held for line in lines)
            add_back += bool(added & held)
        assert evict_added > 0 and add_back > 0

    def test_grammar_compiles(self, split):
        """llguidance validates every session's grammar without error."""
        import llguidance

        for tl, s in sessions(split)[:10]:
            lark = program_grammar(s["ledger_before"], tl["name"], catalogue_keys(None))
            assert llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(lark)) == ""

    @pytest.mark.parametrize("text", ["", "UPDATE job chef", "EVICT job\nADD car Fiat", "EVICT job\nEVICT city\nADD car Fiat\nADD pet cat",
                                      "UPDATE job chef\nUPDATE city Rome\nUPDATE job pilot", "TOMBSTONE city"])
    def test_accepts_well_formed_programs_on_a_full_ledger(self, tokenizer, lltok, text):
        """On a full ledger: edits, and an ADD once an EVICT has freed a slot."""
        assert accepts(lltok, tokenizer, program_grammar(FULL, "Ari", catalogue_keys(None)), text)

    @pytest.mark.parametrize("text, why", [
        ("ADD car Fiat", "an ADD into a full ledger"),
        ("EVICT job\nADD car Fiat\nADD pet cat", "a second ADD after one EVICT"),
        ("UPDATE car Fiat", "an UPDATE of an absent key"),
        ("TOMBSTONE car", "a TOMBSTONE of an absent key"),
        ("EVICT car", "an EVICT of an absent key"),
        ("ADD job chef", "an ADD of a held key"),
        ("EVICT job\nADD zebra_stripes Fiat", "a key outside the catalogue"),
        ("UPDATE job ", "an empty value"),
        ("UPDATE job " + "x" * (MAX_VALUE_CHARS + 1), "a value over the length cap"),
        ("UPDATE job chef\n", "a trailing newline"),
        ("UPDATE job a\x0bb", "a line boundary of str.splitlines inside a value"),
        ("UPDATE job a\u2028b", "a Unicode line separator inside a value"),
        ("UPDATE job chef\u00a0", "whitespace at the end of a value"),
        ("UPDATE job \x1fchef", "a separator str.strip removes at the start of a value"),
        ("update job chef", "a lower-case keyword"),
    ])
    def test_rejects_on_a_full_ledger(self, tokenizer, lltok, text, why):
        """The grammar of a full ledger refuses what cannot be a well-formed program."""
        assert not accepts(lltok, tokenizer, program_grammar(FULL, "Ari", catalogue_keys(None)), text), why

    @settings(max_examples=150, deadline=None)
    @given(st.text(min_size=1, max_size=12))
    def test_accepted_values_compile_exactly(self, tokenizer, lltok, value):
        """Whatever value the grammar lets through compiles back as that exact value (the grammar's
        value is one line as the compiler splits and strips lines)."""
        text = f"UPDATE job {value}"
        if accepts(lltok, tokenizer, program_grammar(FULL, "Ari"), text):
            assert compile_program(text, FULL, "Ari", 1) == Compiled(
                [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": value}], [], False)

    def test_values_may_hold_inner_spaces_and_tabs(self, tokenizer, lltok):
        """Inside a value, spaces, tabs and any other character but a line boundary are allowed."""
        assert accepts(lltok, tokenizer, program_grammar(FULL, "Ari"), "UPDATE job a\tb c\x1fd =<é>")

    def test_counts_free_slots(self, tokenizer, lltok):
        """With one free slot one ADD fits, a second needs an EVICT first; a tombstoned fact cannot be tombstoned."""
        grammar = program_grammar(LEDGER, "Ari", catalogue_keys(None))
        assert accepts(lltok, tokenizer, grammar, "ADD car Fiat")
        assert not accepts(lltok, tokenizer, grammar, "ADD car Fiat\nADD pet cat")
        assert accepts(lltok, tokenizer, grammar, "ADD car Fiat\nEVICT city\nADD pet cat")
        assert not accepts(lltok, tokenizer, grammar, "TOMBSTONE city")
        assert accepts(lltok, tokenizer, grammar, "TOMBSTONE job")

    def test_any_key_without_a_catalogue(self, tokenizer, lltok):
        """Without a catalogue an ADD may name any snake_case key; the budget still holds."""
        grammar = program_grammar(LEDGER, "Ari")
        assert accepts(lltok, tokenizer, grammar, "ADD zebra_stripes many")
        assert not accepts(lltok, tokenizer, grammar, "ADD zebra_stripes many\nADD horse one")

    def test_empty_ledger_of_another_subject(self, tokenizer, lltok):
        """Slots of another subject are not the persona's keys: nothing to UPDATE, ADD fills the free slots."""
        other = [slot(0, "job", "nurse", s="Bo"), {"i": 1}]
        grammar = program_grammar(other, "Ari", catalogue_keys(None))
        assert not accepts(lltok, tokenizer, grammar, "UPDATE job chef")
        assert accepts(lltok, tokenizer, grammar, "ADD job chef")


# ---- constrained decoding ----------------------------------------------------------------------

def test_mask_logits_matches_llguidance_kernel():
    """The eager bitmask application gives exactly llguidance's own kernel's logits (run uncompiled
    here), for random words (sign bit included), an all-allowed and an all-forbidden row, and a
    vocabulary that is not a multiple of 32; and it masks exactly the zero bits."""
    import llguidance.torch as lt

    from clerk.models.constrained import mask_logits

    g = torch.Generator().manual_seed(7)
    mask = torch.randint(-(2**31), 2**31 - 1, (4, 10), generator=g, dtype=torch.int64).to(torch.int32)
    mask[1] = -1
    mask[2] = 0
    logits = torch.randn(4, 300, generator=g)
    ours, theirs = logits.clone(), logits.clone()
    mask_logits(ours, mask)
    with torch._dynamo.config.patch(disable=True):
        lt.apply_token_bitmask_inplace(theirs, mask)
    assert torch.equal(ours, theirs)
    words = mask.tolist()
    expected = [[(words[r][t // 32] >> (t % 32)) & 1 == 0 for t in range(300)] for r in range(4)]
    assert torch.isinf(ours).tolist() == expected
    assert not torch.isinf(ours[1]).any() and torch.isinf(ours[2]).all()


@pytest.fixture(scope="module")
def tiny(tokenizer):
    """A random tiny Llama over the scratch tokenizer (fp32, eval mode, weights drawn at a large
    scale so greedy choices differ from prompt to prompt)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         initializer_range=0.5, tie_word_embeddings=False)
    return LlamaForCausalLM(config).eval()


def _prompts(tokenizer, split, n: int) -> tuple[list[tuple[dict, dict]], list[str]]:
    from clerk import prompts
    from clerk.models.loading import chat_prompt

    chosen = sessions(split)[:n]
    texts = [chat_prompt(tokenizer, prompts.consolidate_messages(L.serialize(s["ledger_before"]),
                                                                 prompts.policy_transcript(s["turns"])))
             for _, s in chosen]
    return chosen, texts


class TestConstrainedDecoding:
    def test_output_always_compiles(self, tiny, tokenizer, split):
        """Constrained greedy output of a random model compiles without error against its own ledger
        and fits the budget (it ends where the grammar allows, well inside the cap); unconstrained,
        the same model writes no program."""
        from clerk.models.decoding import greedy_generate

        chosen, texts = _prompts(tokenizer, split, 8)
        keys = catalogue_keys(None)
        grammars = [program_grammar(s["ledger_before"], tl["name"], keys) for tl, s in chosen]
        outs = greedy_generate(tiny, tokenizer, texts, max_new_tokens=160, batch_size=4, grammars=grammars)
        n_ops = 0
        for (tl, s), out in zip(chosen, outs):
            got = compile_program(out, s["ledger_before"], tl["name"], s["index"])
            assert got.errors == [] and not got.parse_failed, out
            free = sum(L.is_free(x) for x in s["ledger_before"])
            adds = sum(op["op"] == "ADD" for op in got.program) - sum(op["op"] == "EVICT" for op in got.program)
            assert adds <= free, out
            n_ops += len(got.program)
        assert n_ops >= len(outs) // 2  # real programs, not only empty ones
        plain = greedy_generate(tiny, tokenizer, texts[:4], max_new_tokens=30, batch_size=4)
        assert all(compile_program(out, s["ledger_before"], tl["name"], 1).parse_failed
                   for (tl, s), out in zip(chosen, plain))

    def test_batched_equals_unbatched(self, tiny, tokenizer, split):
        """Per-row matchers: a constrained batch gives each row's output alone."""
        from clerk.models.decoding import greedy_generate

        chosen, texts = _prompts(tokenizer, split, 4)
        grammars = [program_grammar(s["ledger_before"], tl["name"]) for tl, s in chosen]
        batched = greedy_generate(tiny, tokenizer, texts, max_new_tokens=16, batch_size=4, grammars=grammars)
        single = [greedy_generate(tiny, tokenizer, [t], max_new_tokens=16, grammars=[g])[0]
                  for t, g in zip(texts, grammars)]
        assert batched == single

    def test_unconstrained_rows_mix(self, tiny, tokenizer, lltok, split):
        """A None grammar leaves its row unconstrained (it decodes exactly as without grammars); the
        constrained row stays inside its grammar."""
        import llguidance

        from clerk.models.decoding import greedy_generate

        chosen, texts = _prompts(tokenizer, split, 2)
        grammar = program_grammar(chosen[1][1]["ledger_before"], chosen[1][0]["name"])
        free = greedy_generate(tiny, tokenizer, texts, max_new_tokens=10)
        mixed = greedy_generate(tiny, tokenizer, texts, max_new_tokens=10, grammars=[None, grammar])
        assert mixed[0] == free[0] and mixed[1] != free[1]
        matcher = llguidance.LLMatcher(lltok, llguidance.LLMatcher.grammar_from_lark(grammar))
        ids = tokenizer(mixed[1], add_special_tokens=False)["input_ids"]
        assert matcher.validate_tokens(ids) == len(ids)  # a prefix of a program of the grammar

    def test_bad_grammar_names_the_row(self, tokenizer):
        """A grammar that does not compile is a ValueError naming its row."""
        from clerk.models.constrained import GrammarConstraint

        with pytest.raises(ValueError, match=r"^grammar of row 1 does not compile: "):
            GrammarConstraint(tokenizer, [None, "start: undefined_rule\n"], [0])

    def test_grammars_must_match_prompts(self, tiny, tokenizer):
        """One grammar per prompt, or a ValueError saying how many were expected."""
        from clerk.models.decoding import greedy_generate

        with pytest.raises(ValueError, match=r"^grammars: expected one per prompt \(2\), got 1$"):
            greedy_generate(tiny, tokenizer, ["a", "b"], 4, grammars=[None])


def test_random_programs_round_trip():
    """Random valid programs on random ledgers render and compile back to themselves (beyond gold)."""
    rng = random.Random(5)
    keys = ["job", "city", "pet", "car", "hobby", "gym"]
    for _ in range(200):
        ledger, program = L.empty_ledger(rng.randint(1, 4)), []
        work = ledger
        for _ in range(rng.randint(0, 6)):
            held = [x for x in L.occupied(work)]
            choices = []
            if any(L.is_free(x) for x in work):
                fresh = [k for k in keys if L.find(work, "Ari", k) is None]
                choices.append({"op": "ADD", "s": "Ari", "p": rng.choice(fresh), "o": rng.choice(["a", "b c", "d"])})
            if held:
                x = rng.choice(held)
                choices.append({"op": "EVICT", "i": x["i"]})
                if x["o"] != "z":
                    choices.append({"op": "UPDATE", "i": x["i"], "s": "Ari", "p": x["p"], "o": "z"})
                if x["v"]:
                    choices.append({"op": "TOMBSTONE", "i": x["i"]})
            if not choices:
                break
            op = rng.choice(choices)
            work, _ = L.reduce(work, [op], 1)
            program.append(op)
        text = render_program(ledger, program, 1)
        assert compile_program(text, ledger, "Ari", 1) == Compiled(program, [], False), text
