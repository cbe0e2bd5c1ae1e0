"""Tree-packed multiple-choice scoring: every question over one view, every option, one forward.

A view is encoded once (:class:`~clerk.models.prefix.PrefixCache`). Its questions and their
options form a tree on top of it: each question's suffix (the question and the answer frame)
hangs off the view, each option hangs off its question. :func:`score_tree` packs the whole tree
into ONE sequence fed on the view's KV cache, with

* position ids that restart after the view for every question (a question sits right after the
  view, as if asked alone) and continue from its suffix for each of its options;
* a 4-D attention mask in which a token sees the view, its own suffix and (for option tokens) the
  earlier tokens of its own option: nothing of another question or option.

So every option is scored exactly as in its own forward over view + question + option (up to
floating-point summation order: the tests check agreement with :func:`clerk.scoring.mc.score_options`
to 1e-4 in fp32), while the tokens fed are only the suffixes and the option bodies (a token is
fed once, not padded to the longest option as a batch would). Option k's first token is scored
from the logits at its suffix's last position, token j >= 1 from the logits at token j - 1.
The score of an option is the mean log-probability of its tokens (:func:`clerk.scoring.mc.mean_logprob`).

    python -m pytest tests/test_scoring.py -q -k tree
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clerk.models.prefix import PrefixCache, _cache_kwarg, _fork_cache


@dataclass(frozen=True)
class Query:
    """One question over a view: the suffix ids fed after the view, and each option's ids."""

    suffix_ids: tuple[int, ...]
    option_ids: tuple[tuple[int, ...], ...]


@dataclass
class _Layout:
    """The packed sequence: ids, positions, the rows each token may see, and where to read logits."""

    ids: list[int]
    positions: list[int]
    visible: list[list[tuple[int, int]]]  # per token: (start, stop) ranges of packed tokens it sees
    first: list[int]  # per query: packed index of the suffix's last token
    bodies: list[list[tuple[int, int]]]  # per query, per option: (start, stop) of its fed tokens


def _layout(prefix_len: int, queries: Sequence[Query]) -> _Layout:
    ids: list[int] = []
    positions: list[int] = []
    visible: list[list[tuple[int, int]]] = []
    first, bodies = [], []
    for q in queries:
        if not q.suffix_ids:
            raise ValueError("score_tree: every query needs a non-empty suffix (the question frame)")
        s0 = len(ids)
        for j, tok in enumerate(q.suffix_ids):
            ids.append(tok)
            positions.append(prefix_len + j)
            visible.append([(s0, s0 + j + 1)])
        s1 = len(ids)
        first.append(s1 - 1)
        spans = []
        for option in q.option_ids:
            if not option:
                raise ValueError("score_tree: every option needs at least one token")
            o0 = len(ids)
            for j, tok in enumerate(option[:-1]):
                ids.append(tok)
                positions.append(prefix_len + (s1 - s0) + j)
                visible.append([(s0, s1), (o0, o0 + j + 1)])
            spans.append((o0, len(ids)))
        bodies.append(spans)
    return _Layout(ids, positions, visible, first, bodies)


def score_tree(model: Any, prefix: PrefixCache, queries: Sequence[Query]) -> list[list[float]]:
    """Mean log-probability of every option of every query, in one forward on ``prefix``.

    Args:
        model: the model that encoded ``prefix``, in eval mode, with full-attention layers and an
            attention implementation that takes a 4-D mask (sdpa: boolean; eager: additive).
        prefix: the encoded view (not changed).
        queries: the questions over it.

    Returns:
        One list of option scores per query, in order.
    """
    import torch

    from clerk.scoring.mc import mean_logprob

    if not queries:
        return []
    lay = _layout(len(prefix), queries)
    device = model.device
    n, p = len(lay.ids), len(prefix)
    mask = torch.zeros((1, 1, n, p + n), dtype=torch.bool, device=device)
    mask[..., :p] = True
    for row, ranges in enumerate(lay.visible):
        for start, stop in ranges:
            mask[0, 0, row, p + start : p + stop] = True
    if getattr(model.config, "_attn_implementation", None) == "eager":
        # Eager attention adds the mask to the scores: a boolean one would add 1/0 and hide
        # nothing, so give it the additive form (0 = visible, the dtype's min = hidden).
        mask = torch.zeros(mask.shape, dtype=model.dtype, device=device).masked_fill(~mask, torch.finfo(model.dtype).min)
    feed = torch.tensor([lay.ids], dtype=torch.long, device=device)
    positions = torch.tensor([lay.positions], dtype=torch.long, device=device)
    with torch.inference_mode():
        out = model(input_ids=feed, position_ids=positions, attention_mask=mask, use_cache=True,
                    **{_cache_kwarg(model): _fork_cache(prefix.cache, 1)})
    logprobs = out.logits[0].float().log_softmax(-1)  # (n, vocab)
    scores = []
    for q, first, spans in zip(queries, lay.first, lay.bodies):
        row = []
        for option, (start, stop) in zip(q.option_ids, spans):
            lps = [float(logprobs[first, option[0]])]
            lps += [float(logprobs[start + j, option[j + 1]]) for j in range(stop - start)]
            row.append(mean_logprob(lps))
        scores.append(row)
    return scores
