"""Tests of clerk/prompts.py: the ChatML template (rendered without a tokenizer), the message
builders, and their agreement with the ledger's formats.

    python -m pytest tests/test_prompts.py -q -x
"""

from __future__ import annotations

import doctest
import re

import jinja2
import pytest
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

import clerk.prompts
from clerk import ledger as L
from clerk.prompts import (
    ANSWER_SYSTEM,
    CHAT_TEMPLATE,
    CONSOLIDATE_SYSTEM,
    END_OF_TURN,
    NEGATED_ANSWER,
    SPECIAL_TOKENS,
    UNKNOWN_ANSWER,
    answer_messages,
    consolidate_messages,
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


class TestConsolidateMessages:
    def test_prompt_only(self):
        """Without a program: system + user, the user turn holding session, ledger and transcript."""
        messages = consolidate_messages("[0]\n[1]", 4, "user: Hi")
        assert messages == [
            {"role": "system", "content": CONSOLIDATE_SYSTEM},
            {"role": "user", "content": "Session 4.\nLedger:\n[0]\n[1]\nTranscript:\nuser: Hi"},
        ]

    def test_with_program(self):
        """With a program the assistant turn is that exact text, even the empty program."""
        assert consolidate_messages("[0]", 1, "", "[]")[-1] == {"role": "assistant", "content": "[]"}
        assert len(consolidate_messages("[0]", 1, "", "")) == 3

    def test_system_prompt_matches_reducer_schema(self):
        """The op syntax the system prompt teaches names exactly the fields the reducer requires."""
        taught = {kind: re.findall(r'"(\w+)":\.\.', fields)
                  for kind, fields in re.findall(r'\{"op":"(\w+)"((?:,"\w+":\.\.)*)\}', CONSOLIDATE_SYSTEM)}
        assert taught == {"ADD": ["s", "p", "o"], "UPDATE": ["i", "s", "p", "o"], "TOMBSTONE": ["i"], "EVICT": ["i"]}
        for kind, fields in taught.items():
            op = {"op": kind, **{f: 0 if f == "i" else "x" for f in fields}}
            reason = L.check_op([{"i": 0}], op)
            assert reason is None or not reason.startswith(("missing", "unexpected", "field", "unknown")), reason

    def test_system_prompt_describes_serialization(self):
        """The slot legend lists the nine serialized fields in order."""
        legend = re.search(r"\[(i,[a-z_,]+)\]", CONSOLIDATE_SYSTEM).group(1).split(",")
        assert len(legend) == len(L.SLOT_FIELDS)
        assert legend[0] == "i" and legend[-1] == "uses"


class TestAnswerMessages:
    def test_prompt_only(self):
        """Without an answer: system + user with the memory view and the question."""
        assert answer_messages("[0]", "Where?") == [
            {"role": "system", "content": ANSWER_SYSTEM},
            {"role": "user", "content": "Memory:\n[0]\nQuestion: Where?"},
        ]

    def test_with_answer(self):
        """With an answer the assistant turn is exactly the answer."""
        assert answer_messages("m", "q", UNKNOWN_ANSWER)[-1] == {"role": "assistant", "content": UNKNOWN_ANSWER}

    def test_system_names_fixed_answers(self):
        """The answer instructions quote the fixed unknown and negated phrases verbatim."""
        assert f'"{UNKNOWN_ANSWER}"' in ANSWER_SYSTEM and f'"{NEGATED_ANSWER}"' in ANSWER_SYSTEM


class TestDoctests:
    def test_module_doctests(self):
        """The examples in clerk.prompts' docstrings run and pass."""
        result = doctest.testmod(clerk.prompts)
        assert result.attempted > 0 and result.failed == 0
