"""The reader: one instrument for every system: multiple-choice log-likelihood over a view.

SPEC §6. Every system of table 1 is read by the same model (``--reader-model``: the trained
adapter by default) with the same prompt (``prompts.answer_messages``) and the same scoring rule:
the option with the highest mean log-probability per token as the answer's continuation wins
(chance = 10 %). What differs between rows is the memory. With ``pmi`` a > 0 (contextual
calibration, ``--reader-pmi``) each option's score is its mean log-probability after the view
minus a times its mean log-probability after the empty view (``prompts.EMPTY_MEMORY``): an answer
the reader would give without any memory is discounted. The empty view's scores depend only on
the question and its options, so they are computed once per question for every system.

Cost (reading is most of an evaluation's time) is paid once per distinct piece of text:

1. **Tree-packed questions.** A view is encoded once; all its questions and all their options are
   then scored in ONE forward on its cache (``clerk.scoring.tree``).
2. **Growing views.** A view that extends the previous view of the same (system, persona) (the
   ``full`` transcript gains a session at a time) is encoded from the previous cache on, when
   the token ids of the longer text start with the shorter text's ids (checked, else encoded
   afresh; the numbers are the same either way up to float summation order).
3. **Repeated questions.** The same view text, question and options read by another system (a
   clerk ledger equal to the oracle's) reuse the chosen option: the reader is deterministic,
   so this is a cache, not an approximation.
4. **The empty view is the calibration's.** With ``pmi`` > 0 a view that is empty (the ``null``
   system; a ledger that holds nothing) is scored once per question for both terms: its
   calibration scores are its scores (LoCoMo's ``null`` row over every question otherwise paid a
   second pass over all of them).

The rule reader answers from a ledger with ``generator.reference_answer``, the function that
defines the gold answers, so the oracle ledger must score 100 % with it: an end-to-end check of
generator, reducer, bookkeeping and runner that needs no model.

    python -m pytest tests/test_memory.py -q -k reader
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from clerk import prompts


def split_prompt(prompt: str) -> tuple[str, str]:
    """Split an answer prompt into (view prefix, question suffix) just before the question line.

    The cut falls just after a newline, so the token boundary is stable.

    >>> split_prompt("<|im_start|>user\\nm\\nQ: Where?<|im_end|>\\n")
    ('<|im_start|>user\\nm\\n', 'Q: Where?<|im_end|>\\n')
    """
    cut = prompt.rindex("\n" + prompts.QUESTION_MARK) + 1
    return prompt[:cut], prompt[cut:]


class Reader:
    """The MC reader over one model, with the three caches of the module docstring.

    Args:
        model, tokenizer: the reading model (eval mode) and its tokenizer.
        pmi: weight of the empty-view score subtracted from each option's score (0 = plain mean
            log-probability).

    Attributes:
        stats: counters of what was encoded and reused (``encoded_tokens``, ``extended``,
            ``memo_hits``, ``questions``), for the throughput benchmark.
    """

    def __init__(self, model: Any, tokenizer: Any, pmi: float = 0.0) -> None:
        self.model, self.tokenizer, self.pmi = model, tokenizer, float(pmi)
        self._memo: dict[tuple, int] = {}
        self._empty: dict[tuple, list[float]] = {}
        self._last: dict[Hashable, tuple[str, Any]] = {}
        self._empty_prefix: str | None = None
        self.stats = {"questions": 0, "memo_hits": 0, "encoded_tokens": 0, "extended": 0}

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _prefix(self, key: Hashable, text: str) -> Any:
        """The encoded ``text``, extended from the last prefix of ``key`` when that is exact."""
        from clerk.models.prefix import encode_text, extend_prefix

        last = self._last.get(key)
        if last is not None and last[0] == text:
            return last[1]
        state = None
        if last is not None and text.startswith(last[0]):
            old_text, old = last
            rest = self._ids(text[len(old_text):])
            if rest and list(old.ids) + rest == self._ids(text):
                state = extend_prefix(self.model, old, rest)
                self.stats["extended"] += 1
                self.stats["encoded_tokens"] += len(rest)
        if state is None:
            state = encode_text(self.model, self.tokenizer, text, "view")
            self.stats["encoded_tokens"] += len(state)
        self._last[key] = (text, state)
        return state

    def choose(self, key: Hashable, view_text: str, questions: list[dict]) -> list[int]:
        """The chosen option index of each question, all asked over ``view_text``.

        Args:
            key: who is reading (e.g. (system, persona)): views of one key may grow (point 2).
            view_text: the memory view.
            questions: question dicts with ``question`` and ``options``.
        """
        import torch

        from clerk.models.loading import chat_prompt
        from clerk.scoring.mc import pick
        from clerk.scoring.tree import Query, score_tree

        parts = [split_prompt(chat_prompt(self.tokenizer, prompts.answer_messages(view_text, q["question"])))
                 for q in questions]
        prefix_text = parts[0][0]
        assert all(p == prefix_text for p, _ in parts)  # one view, one frame
        memo_keys = [(prefix_text, suffix, tuple(q["options"])) for (_, suffix), q in zip(parts, questions)]
        todo = [k for k, mk in enumerate(memo_keys) if mk not in self._memo]
        self.stats["questions"] += len(questions)
        self.stats["memo_hits"] += len(questions) - len(todo)
        if todo:
            with torch.inference_mode():
                empty = self._empty_scores([questions[k] for k in todo]) if self.pmi else None
                if empty is not None and prefix_text == self._empty_prefix_text():
                    # The empty view (no memory: the null system, an empty ledger) is the calibration's
                    # own view: its scores are the calibration's (point 4).
                    scored = empty
                else:
                    prefix = self._prefix(key, prefix_text)
                    queries = [Query(tuple(self._ids(parts[k][1])), tuple(tuple(self._ids(o)) for o in questions[k]["options"]))
                               for k in todo]
                    scored = score_tree(self.model, prefix, queries)
                if empty is not None:
                    scored = [[s - self.pmi * e for s, e in zip(row, base)] for row, base in zip(scored, empty)]
                for k, scores in zip(todo, scored):
                    self._memo[memo_keys[k]] = pick(scores)
        return [self._memo[mk] for mk in memo_keys]

    def _empty_prefix_text(self) -> str:
        """The view prefix of an answer prompt over the empty view (the same for every question)."""
        from clerk.models.loading import chat_prompt

        if self._empty_prefix is None:
            self._empty_prefix = split_prompt(chat_prompt(self.tokenizer, prompts.answer_messages("", "?")))[0]
        return self._empty_prefix

    def _empty_scores(self, questions: list[dict]) -> list[list[float]]:
        """Mean log-probability of every option after the empty view, once per (question, options)."""
        from clerk.models.loading import chat_prompt
        from clerk.scoring.tree import Query, score_tree

        keys = [(q["question"], tuple(q["options"])) for q in questions]
        todo = list(dict.fromkeys(k for k in keys if k not in self._empty))
        if todo:
            parts = [split_prompt(chat_prompt(self.tokenizer, prompts.answer_messages("", question)))
                     for question, _ in todo]
            prefix = self._prefix(("<empty view>",), self._empty_prefix_text())
            queries = [Query(tuple(self._ids(suffix)), tuple(tuple(self._ids(o)) for o in options))
                       for (_, suffix), (_, options) in zip(parts, todo)]
            for key, scores in zip(todo, score_tree(self.model, prefix, queries)):
                self._empty[key] = scores
        return [self._empty[k] for k in keys]


def rule_choice(ledger: list, subject: str, question: dict) -> int:
    """The option index of ``generator.reference_answer`` on ``ledger``; -1 if it is not an option.

    Args:
        ledger: the system's ledger at question time.
        subject: the persona name (an open ledger's question names its own ``subject``).
        question: a question dict (``pred``, ``type``, ``options``); a ``when`` question (the
            open world, SPEC §2.9) is answered with the date ``w`` of the slot.

    Returns:
        The chosen option index, or -1 (counted wrong).
    """
    from clerk.generator.questions import reference_answer, when_answer

    subject = question.get("subject", subject)
    if question["type"] == "when":
        answer = when_answer(ledger, subject, question["pred"])
    else:
        answer = reference_answer(ledger, subject, question["pred"], question["type"] == "temporal")
    options = question["options"]
    return options.index(answer) if answer in options else -1
