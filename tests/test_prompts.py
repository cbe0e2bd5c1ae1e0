"""Tests of clerk/prompts.py: the ChatML template (rendered without a tokenizer), the message
builders (no instructions for the trained tasks, the prompted baseline's few-shot frame), the
reader's ledger view, and their agreement with the ledger's and the program language's formats.

    python -m pytest tests/test_prompts.py -q -x
"""

from __future__ import annotations

import doctest
import re

import jinja2
import pytest
from hypothesis import given, settings
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment
from strategies import ledgers

import clerk.prompts
from clerk import ledger as L
from clerk.program import compile_program
from clerk.prompts import (
    CHAT_TEMPLATE,
    EMPTY_MEMORY,
    END_OF_TURN,
    PROMPTED_EXAMPLES,
    PROMPTED_SYSTEM,
    QUESTION_MARK,
    SPECIAL_TOKENS,
    UNKNOWN_ANSWER,
    answer_messages,
    consolidate_messages,
    policy_transcript,
    prompted_messages,
    reader_ledger,
    render_turns,
)

START, STOP = "\x02", "\x03"


class GenerationMarks(Extension):
    """Our own handler for ``{% generation %}``: wraps the block's output in STX/ETX so a test can
    see exactly which characters the template marks as trainable."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_mark"), [], [], body).set_lineno(lineno)

    def _mark(self, caller):
        return START + caller() + STOP


def render(messages, add_generation_prompt=False) -> tuple[str, list[str]]:
    """(rendered text, the generation-marked pieces), with transformers' environment flags."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationMarks])
    marked = env.from_string(CHAT_TEMPLATE).render(messages=messages, add_generation_prompt=add_generation_prompt)
    return marked.replace(START, "").replace(STOP, ""), re.findall(f"{START}(.*?){STOP}", marked, flags=re.S)


CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi\nthere"},
    {"role": "assistant", "content": '[{"op":"EVICT","i":0}]'},
]


class TestChatTemplate:
    def test_has_generation_markers(self):
        """The template marks assistant content once with {% generation %} ... {% endgeneration %}."""
        assert CHAT_TEMPLATE.count("{% generation %}") == 1
        assert CHAT_TEMPLATE.count("{% endgeneration %}") == 1

    def test_plain_jinja_needs_the_extension(self):
        """Without a generation handler jinja2 rejects the tag (so TRL's tracker is really required)."""
        with pytest.raises(jinja2.TemplateSyntaxError):
            jinja2.Environment().from_string(CHAT_TEMPLATE)

    def test_renders_chatml(self):
        """Rendering gives the exact ChatML text: one <|im_start|>role ... <|im_end|> block per message."""
        text, _ = render(CHAT)
        assert text == (
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi\nthere<|im_end|>\n"
            '<|im_start|>assistant\n[{"op":"EVICT","i":0}]<|im_end|>\n'
        )

    def test_marks_only_assistant_content_and_end_of_turn(self):
        """The trainable span is each assistant content plus <|im_end|>: no header, no newline."""
        chat = CHAT + [{"role": "user", "content": "more"}, {"role": "assistant", "content": "[]"}]
        _, marked = render(chat)
        assert marked == ['[{"op":"EVICT","i":0}]' + END_OF_TURN, "[]" + END_OF_TURN]

    def test_generation_prompt(self):
        """add_generation_prompt appends an open assistant header and marks nothing."""
        text, marked = render(CHAT[:2], add_generation_prompt=True)
        assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
        assert marked == []

    def test_prompt_is_a_prefix_of_the_training_text(self):
        """The inference prompt (no answer, generation prompt) is a prefix of the SFT text, so
        training and evaluation condition on the same tokens."""
        full, _ = render(answer_messages("[0]", "Where?", "Oslo"))
        prompt, _ = render(answer_messages("[0]", "Where?"), add_generation_prompt=True)
        assert full == prompt + "Oslo" + END_OF_TURN + "\n"

    def test_transformers_tracker_agrees(self):
        """transformers' own renderer (used by TRL's assistant-only loss) marks the same spans."""
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, indices = render_jinja_template([CHAT], chat_template=CHAT_TEMPLATE, return_assistant_tokens_mask=True)
        text, marked = render(CHAT)
        assert rendered == [text]
        assert [text[a:b] for a, b in indices[0]] == marked

    def test_special_tokens(self):
        """Every special token the template writes is listed in SPECIAL_TOKENS."""
        used = set(re.findall(r"<\|\w+\|>", CHAT_TEMPLATE))
        assert used <= set(SPECIAL_TOKENS)
        assert END_OF_TURN in SPECIAL_TOKENS


class TestRenderTurns:
    def test_lines(self):
        """One 'role: content' line per turn, in order."""
        turns = [{"role": "user", "content": "I moved."}, {"role": "assistant", "content": "Noted."}]
        assert render_turns(turns) == "user: I moved.\nassistant: Noted."

    def test_date(self):
        """A date, when given, is the first line."""
        assert render_turns([{"role": "user", "content": "Hi"}], date="2023-05-08") == "date: 2023-05-08\nuser: Hi"

    def test_empty(self):
        """No turns and no date render as the empty string."""
        assert render_turns([]) == ""


TURNS = [{"role": "user", "content": "Hi, Ari here."}, {"role": "assistant", "content": "Hello!"},
         {"role": "user", "content": "I moved to Oslo."}, {"role": "assistant", "content": "Noted."}]


class TestPolicyTranscript:
    def test_user_lines_only(self):
        """The policy reads the user's lines, one per line, in order; the acknowledgements are left out."""
        assert policy_transcript(TURNS) == "Hi, Ari here.\nI moved to Oslo."

    def test_empty(self):
        """No turns (or no user turn) is the empty transcript."""
        assert policy_transcript([]) == "" and policy_transcript(TURNS[1:2]) == ""


class TestConsolidateMessages:
    def test_prompt_only(self):
        """Without a program: one user turn, no instructions: the ledger, a --- line, the user lines."""
        assert consolidate_messages("subject: Ari\nfree 1: 0", "I live in Oslo.") == [
            {"role": "user", "content": "subject: Ari\nfree 1: 0\n---\nI live in Oslo."}]

    def test_no_system_prompt(self):
        """The trained policy gets no instructions (no system turn, nothing but ledger and lines)."""
        messages = consolidate_messages("free 0:", "x", "ADD job chef")
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[0]["content"] == "free 0:\n---\nx"

    def test_with_program(self):
        """With a program the assistant turn is that exact text, even the empty program."""
        assert consolidate_messages("free 1: 0", "", "ADD job chef")[-1] == {"role": "assistant", "content": "ADD job chef"}
        assert consolidate_messages("free 1: 0", "", "") == [{"role": "user", "content": "free 1: 0\n---\n"},
                                                            {"role": "assistant", "content": ""}]


class TestPromptedMessages:
    def test_frame(self):
        """Instructions, then each worked example as a user/assistant pair, then the policy's own user turn."""
        messages = prompted_messages("subject: Ari\nfree 1: 0", "I live in Oslo.")
        assert messages[0] == {"role": "system", "content": PROMPTED_SYSTEM}
        assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * len(PROMPTED_EXAMPLES) + ["user"]
        assert messages[-1:] == consolidate_messages("subject: Ari\nfree 1: 0", "I live in Oslo.")
        for (memory, lines, program), (user, assistant) in zip(PROMPTED_EXAMPLES, zip(messages[1:-1:2], messages[2:-1:2])):
            assert user["content"] == consolidate_messages(memory, lines)[0]["content"]
            assert assistant["content"] == program

    def test_frame_is_shared(self):
        """Everything before the last user turn is the same for every write (the decoder encodes it once)."""
        a, _ = render(prompted_messages("free 1: 0", "a"), add_generation_prompt=True)
        b, _ = render(prompted_messages("subject: Bo\n0 u0 t0 b0 job=chef\nfree 0:", "b\nc"), add_generation_prompt=True)
        cut = a.rindex("<|im_start|>user")
        assert cut == b.rindex("<|im_start|>user") and a[:cut] == b[:cut]

    def test_examples_are_exact_serializations(self):
        """Each worked example's memory is the exact serialization of a ledger (``ledger.serialize``),
        the format the baseline then reads."""
        for memory, _, _ in PROMPTED_EXAMPLES:
            assert L.serialize(L.deserialize(memory)) == memory

    def test_example_programs_compile_and_apply(self):
        """Each worked example's program is in the program language and applies strictly to its memory."""
        for memory, _, program in PROMPTED_EXAMPLES:
            ledger = L.deserialize(memory)
            subject = memory.split("\n")[0].removeprefix("subject: ")
            compiled = compile_program(program, ledger, subject, now=5)
            assert compiled.errors == [] and len(compiled.program) == len(program.splitlines())
            L.reduce(ledger, compiled.program, 5, strict=True)

    def test_instructions_teach_the_program_language(self):
        """The instructions show exactly the four line forms of clerk.program, each of which compiles."""
        taught = dict(re.findall(r"^(ADD|UPDATE|TOMBSTONE|EVICT)((?: <\w+>)+)", PROMPTED_SYSTEM, re.M))
        assert taught == {"ADD": " <fact> <value>", "UPDATE": " <fact> <value>", "TOMBSTONE": " <fact>", "EVICT": " <fact>"}
        ledger = [{"i": 0, "s": "Ari", "p": "job", "o": "nurse", "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}, {"i": 1}]
        for kind, fields in taught.items():
            line = kind + fields.replace("<fact>", "job").replace("<value>", "chef")
            assert compile_program(line, ledger, "Ari", 1).errors == [], line


class TestReaderLedger:
    SLOT = {"i": 0, "s": "Ari", "p": "job", "o": "chef", "prev": None, "v": 1, "born": 0, "t": 1, "uses": 0}

    def test_example(self):
        """The docstring's example: a superseded, tombstoned fact and a free slot."""
        assert reader_ledger([{**self.SLOT, "prev": "nurse", "v": 0}, {"i": 1}]) == "job: no longer (was chef; before: nurse)"
        assert reader_ledger([{**self.SLOT, "p": "work_project", "prev": "the app"}]) == "work project: chef (before: the app)"

    def test_empty_ledger(self):
        """A ledger with no occupied slot reads as the empty-memory text."""
        assert reader_ledger(L.empty_ledger(3)) == EMPTY_MEMORY

    @settings(max_examples=300, deadline=None)
    @given(ledgers())
    def test_every_fact_appears_free_slots_do_not(self, ledger):
        """Every occupied slot's predicate (in words), value (and previous value) is in the view; free
        slots add nothing."""
        text = reader_ledger(ledger)
        for slot in L.occupied(ledger):
            assert f"{slot['p'].replace('_', ' ')}: " in text and slot["o"] in text
            if slot["prev"] is not None:
                assert slot["prev"] in text
        padded = [dict(slot) for slot in ledger] + [{"i": len(ledger) + k} for k in range(3)]
        assert reader_ledger(padded) == text
        if not L.occupied(ledger):
            assert text == EMPTY_MEMORY

    @settings(max_examples=300, deadline=None)
    @given(ledgers())
    def test_tombstoned_and_superseded_are_marked(self, ledger):
        """Flipping a slot's tombstone or dropping its previous value changes the view: both are marked."""
        for slot in L.occupied(ledger):
            k = slot["i"]
            flipped = [dict(x) for x in ledger]
            flipped[k]["v"] = 1 - slot["v"]
            assert reader_ledger(flipped) != reader_ledger(ledger)
            if slot["prev"] is not None:
                fresh = [dict(x) for x in ledger]
                fresh[k]["prev"] = None
                assert reader_ledger(fresh) != reader_ledger(ledger)

    def test_marks_differ(self):
        """A tombstoned fact and a superseded one are marked differently."""
        assert reader_ledger([{**self.SLOT, "v": 0}]) != reader_ledger([{**self.SLOT, "prev": "chef2"}]).replace("chef2", "")

    def test_shorter_than_the_serialization(self):
        """The reader's view of a ledger is shorter than the policy's exact serialization (it is the read cost)."""
        ledger = [{**self.SLOT, "prev": "nurse"}, {**self.SLOT, "i": 1, "p": "city", "o": "Oslo", "v": 0}, {"i": 2}]
        assert len(reader_ledger(ledger)) < len(L.serialize(ledger))


class TestAnswerMessages:
    def test_prompt_only(self):
        """Without an answer: one user turn, no instructions: the memory view, then Q: and the question."""
        assert answer_messages("job=chef", "Where?") == [{"role": "user", "content": f"job=chef\n{QUESTION_MARK}Where?"}]
        assert QUESTION_MARK == "Q: "

    def test_empty_memory(self):
        """An empty view reads as the empty-memory text, so the prompt never starts with a bare newline."""
        assert answer_messages("", "Where?")[0]["content"] == f"{EMPTY_MEMORY}\nQ: Where?"

    def test_with_answer(self):
        """With an answer the assistant turn is exactly the answer."""
        assert answer_messages("m", "q", UNKNOWN_ANSWER)[-1] == {"role": "assistant", "content": UNKNOWN_ANSWER}

    def test_question_line_is_last(self):
        """The question starts after the view's last newline, so the reader can split view from question."""
        content = answer_messages("a\nQ: looks like a question\nb", "Where?")[0]["content"]
        assert content[content.rindex("\n" + QUESTION_MARK) + 1:] == "Q: Where?"


class TestDoctests:
    def test_module_doctests(self):
        """The examples in clerk.prompts' docstrings run and pass."""
        result = doctest.testmod(clerk.prompts)
        assert result.attempted > 0 and result.failed == 0


class TestPolicyTranscriptOfSpeakers:
    def test_named_speakers_are_read_whole(self):
        """A LoCoMo session (speakers' names as roles, a date pseudo-turn) reaches the ledger writers
        with every speaker's line and the date: with only role 'user' kept, as for the closed
        benchmark, the writer read an empty transcript on LoCoMo."""
        from clerk.locomo.data import Session
        from clerk.locomo.evaluation import session_record
        from clerk.memory.ledger_system import ModelLedgerSystem
        from clerk.prompts import policy_transcript

        session = Session(0, "8 May 2023", [{"speaker": "Ana", "text": "I adopted a beagle."},
                                            {"speaker": "Ben", "text": "I moved to Oslo."}], "", "session_1")
        turns = session_record(session)["turns"]
        assert policy_transcript(turns) == "date: 8 May 2023\nAna: I adopted a beagle.\nBen: I moved to Oslo."
        prompt = ModelLedgerSystem.messages(None, L.empty_ledger(2), {"turns": turns})
        assert "Ben: I moved to Oslo." in prompt[-1]["content"]

    def test_user_assistant_sessions_keep_the_user_lines(self):
        from clerk.prompts import policy_transcript

        turns = [{"role": "user", "content": "I moved to Oslo."}, {"role": "assistant", "content": "Noted."}]
        assert policy_transcript(turns) == "I moved to Oslo."
