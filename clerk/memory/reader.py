"""Readers: multiple-choice log-likelihood over a view, and the exact rule reader for ledgers.

SPEC §6. The MC reader builds the one answer prompt (``prompts.answer_messages`` in the model's
chat format) and picks the option with the highest length-normalised log-probability
(``clerk.scoring``); chance is 10 %. When several questions share a view, the prompt up to the
question is encoded once and reused (the memory text dominates the prompt).

The rule reader answers from a ledger with ``generator.questions.reference_answer``, the function that
defines the gold answers, so the oracle ledger must score 100 % with it: an end-to-end check of
generator, reducer, bookkeeping and runner that needs no model.

    python -m doctest clerk/memory/reader.py -v
"""

from __future__ import annotations

from typing import Any

from clerk import prompts

#: Where the per-question suffix of the answer prompt starts (after the memory text's newline).
QUESTION_MARK = "\nQuestion: "


def split_prompt(prompt: str) -> tuple[str, str]:
    """Split an answer prompt into (shared prefix, question suffix) at the last question line.

    The cut falls just after a newline so that the token boundary is stable.

    >>> split_prompt("sys\\nMemory:\\nm\\nQuestion: Where?\\n")
    ('sys\\nMemory:\\nm\\n', 'Question: Where?\\n')
    """
    cut = prompt.rindex(QUESTION_MARK) + 1
    return prompt[:cut], prompt[cut:]


def mc_choices(model: Any, tokenizer: Any, view_text: str, questions: list[dict]) -> list[int]:
    """Chosen option index per question, all asked over the same ``view_text``.

    Args:
        model, tokenizer: the reader (from ``clerk.models.loading.load_model``).
        view_text: the memory view shown to the reader.
        questions: question dicts with ``question`` and ``options``.

    Returns:
        One chosen index (0..len(options)-1) per question.
    """
    from clerk.models.loading import chat_prompt
    from clerk.scoring.mc import encode_prefix, pick, score_options, score_with_prefix

    texts = [chat_prompt(tokenizer, prompts.answer_messages(view_text, q["question"])) for q in questions]
    if len(texts) == 1:
        return [pick(score_options(model, tokenizer, texts[0], questions[0]["options"]))]
    prefix_text, _ = split_prompt(texts[0])
    assert all(t.startswith(prefix_text) for t in texts)  # same view, same frame
    prefix = encode_prefix(model, tokenizer, prefix_text)
    return [
        pick(score_with_prefix(model, tokenizer, prefix, text[len(prefix_text):], q["options"]))
        for text, q in zip(texts, questions)
    ]


def rule_choice(ledger: list, subject: str, question: dict) -> int:
    """The option index of ``generator.questions.reference_answer`` on ``ledger``; -1 if it is not an option.

    Args:
        ledger: the system's ledger at question time.
        subject: the persona name.
        question: a question dict (``pred``, ``type``, ``options``).

    Returns:
        The chosen option index, or -1 (counted wrong).
    """
    from clerk.generator.questions import reference_answer

    answer = reference_answer(ledger, subject, question["pred"], question["type"] == "temporal")
    options = question["options"]
    return options.index(answer) if answer in options else -1
