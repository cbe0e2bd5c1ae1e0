"""LoCoMo question subsets (seeded, stratified by corrected category) and data summaries (SPEC §7).

``clerk locomo --max-questions N`` evaluates a stratified subset of N questions; every seed of
the workflow draws its own. :func:`summarize` counts what a data file holds
(``clerk locomo-inspect``).

    clerk locomo-inspect --data tests/fixtures/locomo/locomo10_mini.json
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from clerk.errors import UserError
from clerk.locomo.data import CATEGORIES, Conversation, Question, derived_seed


def all_questions(conversations: Iterable[Conversation]) -> list[Question]:
    """Every question, conversation by conversation, in file order."""
    return [q for conv in conversations for q in conv.questions]


def _allocate(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over groups in proportion to ``sizes`` (largest remainder, ties by name).

    When ``total`` allows, every non-empty group gets at least one: groups whose share is below
    one get exactly one and the rest is shared among the others in proportion to their sizes.

    >>> _allocate({"a": 6, "b": 3, "c": 1}, 5)
    {'a': 3, 'b': 1, 'c': 1}
    >>> _allocate({"a": 841, "b": 282, "c": 321, "d": 96, "e": 446}, 200)
    {'a': 85, 'b': 28, 'c': 32, 'd': 10, 'e': 45}
    """
    names = sorted(n for n, size in sizes.items() if size > 0)
    alloc = {n: 0 for n in sorted(sizes)}
    total = min(total, sum(sizes[n] for n in names))
    forced: list[str] = []
    if total >= len(names):
        # 1. Fix at one every group whose proportional share of what is left is below one.
        while True:
            free = [n for n in names if n not in forced]
            budget, n_free = total - len(forced), sum(sizes[n] for n in free)
            low = [n for n in free if budget * sizes[n] < n_free]
            if not low:
                break
            forced += low
    for n in forced:
        alloc[n] = 1
    # 2. Largest-remainder apportionment of the rest, never above a group's size.
    free = [n for n in names if n not in forced]
    budget, n_free = total - len(forced), sum(sizes[n] for n in free)
    if budget <= 0 or not free:
        return alloc
    quotas = {n: Fraction(budget * sizes[n], n_free) for n in free}
    for n in free:
        alloc[n] = min(int(quotas[n]), sizes[n])
    order = sorted(free, key=lambda n: (-(quotas[n] - int(quotas[n])), n))
    while sum(alloc.values()) < total:
        for n in order:
            if sum(alloc.values()) < total and alloc[n] < sizes[n]:
                alloc[n] += 1
    return alloc


def stratified_subset(questions: Sequence[Question], max_questions: int, seed: int) -> list[Question]:
    """A seeded subset of at most ``max_questions``, stratified by (corrected) category.

    1. Each category gets a share proportional to its size (largest remainder; at least one per
       category when the budget allows), see :func:`_allocate`.
    2. Within a category, questions are drawn by a generator seeded from ``seed`` and the
       category name.
    3. The chosen questions come back in their input order.

    Args:
        questions: the pool (e.g. :func:`all_questions`).
        max_questions: subset size; ``0`` or anything >= ``len(questions)`` keeps all.
        seed: subset seed.

    Returns:
        The chosen questions, in input order.

    Raises:
        UserError: when ``max_questions`` is negative.
    """
    if max_questions < 0:
        raise UserError(f"max_questions: expected an integer >= 0 (0 = all), got {max_questions}")
    if max_questions == 0 or max_questions >= len(questions):
        return list(questions)
    groups: dict[str, list[int]] = {}
    for pos, q in enumerate(questions):
        groups.setdefault(q.category, []).append(pos)
    alloc = _allocate({c: len(v) for c, v in groups.items()}, max_questions)
    chosen: list[int] = []
    for category in sorted(groups):
        rng = random.Random(derived_seed(seed, "locomo-subset", category))
        chosen += rng.sample(groups[category], alloc[category])
    return [questions[pos] for pos in sorted(chosen)]


def restrict(conversations: Iterable[Conversation], questions: Iterable[Question]) -> list[Conversation]:
    """Conversations holding only the given questions; conversations left without any are dropped."""
    keep = {q.question_id for q in questions}
    out = []
    for conv in conversations:
        qs = [q for q in conv.questions if q.question_id in keep]
        if qs:
            out.append(dataclasses.replace(conv, questions=qs))
    return out


def count_by_category(questions: Iterable[Question]) -> dict[str, int]:
    """Question counts per corrected category, in :data:`CATEGORIES` order (zeros included)."""
    counts = {c: 0 for c in CATEGORIES}
    for q in questions:
        counts[q.category] += 1
    return counts


def summarize(conversations: Sequence[Conversation]) -> dict[str, Any]:
    """Counts of conversations, sessions, turns and questions (per category), overall and per conversation."""
    qs = all_questions(conversations)
    return {
        "sources": list(dict.fromkeys(c.source for c in conversations)),
        "conversations": len(conversations),
        "sessions": sum(len(c.sessions) for c in conversations),
        "turns": sum(len(s.turns) for c in conversations for s in c.sessions),
        "questions": len(qs),
        "adversarial": sum(q.adversarial for q in qs),
        "per_category": count_by_category(qs),
        "per_conversation": [
            {
                "conv_id": c.conv_id,
                "speakers": list(c.speakers),
                "sessions": len(c.sessions),
                "turns": sum(len(s.turns) for s in c.sessions),
                "questions": len(c.questions),
                "per_category": count_by_category(c.questions),
            }
            for c in conversations
        ],
    }
