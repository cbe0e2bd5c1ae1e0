"""Shared machinery of the ledger systems (clerk, oracle, prompted-ledger).

A ledger system's memory is a ledger of the persona's budget. Its view is the reader's rendering
of the ledger (``prompts.reader_ledger``, the text the ANSWER training data shows for ledgers).
Its writer *proposes* a program per persona; this base class applies it with the lenient
reducer, so no output can break the budget. A model writer reads the exact serialization
(``ledger.serialize``) and the session's user lines, and writes the program language of
``clerk.program`` (compiled to SPEC ops against its own ledger); with ``constrained`` decoding
its output is held to that language's grammar for its ledger (``clerk.models.constrained``).

A timeline of format 2 carries its ledger's form (``clerk.form.timeline_form``, SPEC §1.7): the
reducer then checks every fact against it, and a model writer compiles and is constrained in the
open language of that form. Format-1 timelines (the closed benchmark) go exactly as before.

Question-time bookkeeping (a simulation choice, documented here once): when a question about
(persona, pred) is answered, ``uses`` of that slot in the system's *own* ledger is incremented
(``ledger.record_use``), exactly as the generator does for the gold ledger. All of a session's
questions are recorded before the views are built, so the oracle's view equals the gold
``ledger_before`` byte for byte, and every ledger system gets the same salience evidence.

    python -c "from clerk.memory import get_memory; print(get_memory('oracle').version)"
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass
from typing import Any

from clerk import ledger as L
from clerk import prompts
from clerk.form import timeline_form
from clerk.memory.base import MemorySystem, View, WriteResult
from clerk.memory.forgetting import free_predicate, free_values


@dataclass
class Proposal:
    """A writer's output for one persona: raw text (None for non-model writers), the parsed
    program, whether parsing failed, and the generated tokens."""

    text: str | None
    program: Any
    parse_failed: bool = False
    write_tokens: int = 0


class LedgerSystem(MemorySystem):
    """A system whose memory is a ledger; subclasses implement :meth:`propose`."""

    is_ledger = True

    def init_state(self, timeline: dict) -> list:
        return L.empty_ledger(timeline["budget"])

    def on_questions(self, state: list, timeline: dict, session: dict) -> list:
        for question in session.get("questions", []):  # an open ledger's question names its subject
            state = L.record_use(state, question.get("subject", timeline["name"]), question["pred"])
        return state

    def view(self, state: list, timeline: dict, session: dict, question: dict) -> View:
        return View(prompts.reader_ledger(state, timeline_form(timeline)))

    def ledger(self, state: list) -> list:
        return state

    @abc.abstractmethod
    def propose(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[Proposal]:
        """One program proposal per persona, written against ``states[j]``."""

    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        start = time.perf_counter()
        proposals = self.propose(states, timelines, sessions)
        assert len(proposals) == len(states)
        results = []
        for state, timeline, session, prop in zip(states, timelines, sessions, proposals):
            new_state, report = L.reduce(state, prop.program, session["index"], strict=False,
                                         form=timeline_form(timeline))
            n_ops = len(prop.program) if isinstance(prop.program, list) else 1
            assert len(new_state) == len(state)  # the budget never changes
            results.append(WriteResult(
                state=new_state,
                program=prop.program if isinstance(prop.program, list) else [prop.program],
                parse_failed=prop.parse_failed,
                n_invalid=len(report.invalid),
                write_tokens=prop.write_tokens,
                invalid=[(pos, reason) for pos, _, reason in report.invalid],
                verdicts=report.verdicts(n_ops),
                text=prop.text,
            ))
            assert results[-1].n_invalid <= n_ops
        per = (time.perf_counter() - start) / max(1, len(states))
        for result in results:
            result.seconds = per
        return results

    forget_action = "free-slot"

    def forget(self, state: list, timeline: dict, pred: str, values: list[str]) -> list:
        """Free every slot of ``pred`` (value and ``prev`` go with it; :mod:`clerk.memory.forgetting`),
        and every copy of a forgotten value the writer filed under another predicate."""
        return free_values(free_predicate(state, pred), values)


class ModelLedgerSystem(LedgerSystem):
    """A ledger system whose programs are generated greedily by a model (``writer_kind``)."""

    #: which model writes: "base" or "adapter".
    writer_kind: str = "base"
    #: decode under the program grammar: None = as the run's config says (``constrained``).
    constrained: bool | None = None

    def messages(self, state: list, session: dict) -> list[dict]:
        """The writer's prompt for one persona (the trained policy's by default)."""
        return prompts.consolidate_messages(L.serialize(state), prompts.policy_transcript(session["turns"]))

    def shared_prefix(self, tokenizer) -> str | None:
        """Text every prompt of this writer starts with (encoded once by the decoder), or None."""
        return None

    def propose(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[Proposal]:
        from clerk.models.decoding import greedy_generate
        from clerk.models.loading import chat_prompt
        from clerk.program import compile_program, program_grammar

        model, tok = self.rt.model(self.writer_kind)
        texts = [chat_prompt(tok, self.messages(state, session)) for state, session in zip(states, sessions)]
        # Who writes: the persona's name (closed language) or the timeline's form (open language).
        writers = [timeline_form(tl) or tl["name"] for tl in timelines]
        grammars = None
        if self.rt.config.constrained if self.constrained is None else self.constrained:
            grammars = [program_grammar(state, who, self.rt.predicates) for state, who in zip(states, writers)]
        outputs = greedy_generate(model, tok, texts, max_new_tokens=self.rt.config.max_new_tokens,
                                  batch_size=self.rt.config.batch_size, grammars=grammars,
                                  shared_prefix=self.shared_prefix(tok))
        proposals = []
        for out, state, who, session in zip(outputs, states, writers, sessions):
            compiled = compile_program(out, state, who, session["index"])
            proposals.append(Proposal(out, compiled.program, compiled.parse_failed, self.rt.count_tokens(out)))
        return proposals
