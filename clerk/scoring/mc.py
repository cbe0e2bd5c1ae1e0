"""Multiple-choice log-likelihood scoring with shared-prefix KV reuse: the public API (SPEC §6).

The reader answers a question by scoring each of its options as a continuation of the answer
prompt: the score is the **mean log-probability per option token** (length-normalised), the
highest score wins and ties go to the lower index (:func:`pick`). Chance is 1 / len(options).

Scoring is exact and cheap because all options share the prompt:

1. the prompt is run through the model once; its KV cache and the log-probabilities at its last
   position are kept (:class:`PrefixCache`);
2. the options are scored in one batched forward pass on top of that cache, expanded (a view,
   not a copy) to the batch of options; options are right-padded and the padding is masked.

:func:`score_options_naive` is the reference (one full forward per option); the tests check the
two agree to 1e-4 in fp32. A long shared prefix (a whole conversation, or one memory view asked
several questions) is encoded once with :func:`encode_prefix` and reused by
:func:`score_with_prefix` for any number of (suffix + options) queries.

Tokenization boundaries (both paths use the identical ids, so they agree exactly):

* prompt ids = ``tokenizer(prompt, add_special_tokens=False)``; option ids =
  ``tokenizer(option, add_special_tokens=False)``; the scored sequence is prompt ids + option ids.
  An option is therefore tokenized as if it started a fresh text. That is the natural choice after
  the answer prompt, which ends with ``<|im_start|>assistant\\n`` (a special token and a newline),
  and it gives every system the same option ids.
* with a prefix, the sequence is prefix ids + suffix ids + option ids, each tokenized on its own.
  This equals tokenizing ``prefix + suffix`` only when the split falls on a pre-tokenizer
  boundary (for example just before a special token such as ``<|im_end|>``, or before a newline
  that follows a non-space character); :func:`split_is_exact` checks a split.

Batching across prompts does not pay on CPU: a SmolLM2-135M forward over 450-token prompts took
1.14-1.46 s per prompt at batch 1 and 1.17-1.20 s per prompt at batch 4 (one thread), before any
padding waste from unequal prompt lengths. So :func:`score_batch` scores prompts one after
another, each with its options batched on the shared prefix: 9.4x faster than the naive path on
SmolLM2-135M, with the same picks (``clerk bench-scoring``, :mod:`clerk.scoring.bench`).

    python -m pytest tests/test_scoring.py -q -k "naive or prefix"
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from clerk.models.prefix import PrefixCache, _fork_cache, encode_text, extend_prefix, forward, token_ids

#: Most (cached + fed) token rows one option forward may hold. The forked cache is materialised
#: as batch x (prefix + width) keys and values per layer (SmolLM2-135M: 46 KB per token row, so
#: 16384 rows ~ 0.75 GB); past this, options are scored in several forwards. At ~500-token
#: prompts and 10 options every option still goes in one forward.
MAX_BATCH_TOKENS = 16384


def check_eval_mode(model: Any) -> None:
    """Scores must not depend on dropout, so the model has to be in eval mode."""
    if model.training:
        raise ValueError("model: expected eval mode (call model.eval()), got training mode")


def continuation_logprobs(model: Any, state: PrefixCache, option_ids: Sequence[Sequence[int]]) -> list[list[float]]:
    """Log-probs of tokens 1..n-1 of each option (all with n >= 2) in ONE forward on ``state``."""
    import torch

    device = model.device
    n, p = len(option_ids), len(state)
    width = max(len(ids) - 1 for ids in option_ids)
    # Right padding: pad positions come after every real token, so causality alone keeps them out
    # of real tokens' attention; the mask says so explicitly. Pad id 0 is any valid id (its outputs
    # are never read). Position ids default to p + column, right for every row.
    feed = torch.zeros((n, width), dtype=torch.long, device=device)
    mask = torch.zeros((n, p + width), dtype=torch.long, device=device)
    mask[:, :p] = 1
    for r, ids in enumerate(option_ids):
        feed[r, : len(ids) - 1] = torch.tensor(ids[:-1], dtype=torch.long, device=device)
        mask[r, p : p + len(ids) - 1] = 1
    logits, _ = forward(model, feed, cache=_fork_cache(state.cache, n), attention_mask=mask)
    out = []
    for r, ids in enumerate(option_ids):
        logprobs = logits[r, : len(ids) - 1].float().log_softmax(-1)  # (n_r - 1, vocab)
        targets = torch.tensor(ids[1:], dtype=torch.long, device=device)
        out.append(logprobs.gather(-1, targets[:, None])[:, 0].tolist())
    return out


def pick(scores: Sequence[float]) -> int:
    """Index of the highest score; ties go to the lower index.

    Args:
        scores: one score per option.

    Returns:
        The winning index.

    Raises:
        ValueError: ``scores`` is empty.

    >>> pick([-1.0, -0.5, -0.5, -2.0])
    1
    >>> pick([0.0])
    0
    """
    if len(scores) == 0:
        raise ValueError("scores: expected at least one score, got an empty list")
    best = 0
    for i, score in enumerate(scores):
        # Strict > keeps the first of equal scores.
        if score > scores[best]:
            best = i
    return best


def mean_logprob(token_logprobs: Sequence[float]) -> float:
    """Length-normalised score: the mean log-probability per option token.

    >>> mean_logprob([-1.0, -3.0])
    -2.0
    """
    assert len(token_logprobs) > 0, "an option has at least one token"
    return math.fsum(token_logprobs) / len(token_logprobs)


def split_is_exact(tokenizer: Any, prefix_text: str, suffix_text: str) -> bool:
    """Whether prefix ids + suffix ids equal the ids of the concatenated text.

    When true, :func:`score_with_prefix` scores exactly what :func:`score_options` would score
    for ``prefix_text + suffix_text``.

    Args:
        tokenizer: the model's tokenizer.
        prefix_text: the shared prefix.
        suffix_text: the query-specific rest.

    Returns:
        True when the split falls on a token boundary.
    """
    joined = token_ids(tokenizer, prefix_text + suffix_text)
    return token_ids(tokenizer, prefix_text) + token_ids(tokenizer, suffix_text) == joined


def _option_ids(tokenizer: Any, options: Sequence[str]) -> list[list[int]]:
    """Token ids of every option; an option that tokenizes to nothing cannot be scored.

    Raises:
        ValueError: an option has no tokens (names its index).
    """
    out = []
    for k, option in enumerate(options):
        ids = token_ids(tokenizer, option)
        if not ids:
            raise ValueError(f"options[{k}]: expected text with at least one token, got {option!r}")
        out.append(ids)
    return out


def _score_after(model: Any, state: PrefixCache, option_ids: Sequence[Sequence[int]]) -> list[float]:
    """Mean log-prob of each option as a continuation of ``state``, in batched forwards.

    Option k with ids o_0..o_{n-1}: log p(o_0) comes from ``state.last_logprobs``; log p(o_j) for
    j >= 1 from the logits at o_{j-1}. So only o_0..o_{n-2} are fed: one-token options need no
    forward at all, and the batch holds only options with >= 2 tokens. Normally that is one
    forward; a very long prefix is split into several (see ``MAX_BATCH_TOKENS``).
    """
    token_lps: list[list[float]] = [[float(state.last_logprobs[ids[0]])] for ids in option_ids]
    rows = [k for k, ids in enumerate(option_ids) if len(ids) > 1]
    if rows:
        width = max(len(option_ids[k]) - 1 for k in rows)
        per_forward = max(1, MAX_BATCH_TOKENS // (len(state) + width))
        for start in range(0, len(rows), per_forward):
            chunk = rows[start : start + per_forward]
            for k, lps in zip(chunk, continuation_logprobs(model, state, [option_ids[k] for k in chunk])):
                token_lps[k].extend(lps)
    return [mean_logprob(lps) for lps in token_lps]


def encode_prefix(model: Any, tokenizer: Any, prefix_text: str) -> PrefixCache:
    """Encode a shared prefix once, for any number of later :func:`score_with_prefix` calls.

    Args:
        model: a causal LM in eval mode with full-attention layers (Llama, Qwen2, ...).
        tokenizer: its tokenizer.
        prefix_text: the shared text; tokenized with ``add_special_tokens=False``.

    Returns:
        The :class:`PrefixCache` (ids, KV cache, next-token log-probs).

    Raises:
        ValueError: the model is in training mode, or ``prefix_text`` has no tokens.
    """
    check_eval_mode(model)
    return encode_text(model, tokenizer, prefix_text, "prefix_text")


def score_with_prefix(
    model: Any, tokenizer: Any, prefix: PrefixCache, suffix_text: str, options: Sequence[str]
) -> list[float]:
    """Score options after ``prefix`` + ``suffix_text``, reusing the prefix's cache.

    The scored sequence is prefix ids + ``tokenizer(suffix_text)`` ids + option ids (see the
    module docstring for when this equals tokenizing the concatenated text). ``prefix`` is not
    changed, so it can serve any number of queries.

    Args:
        model: the model that encoded ``prefix``, in eval mode.
        tokenizer: its tokenizer.
        prefix: from :func:`encode_prefix`.
        suffix_text: the query-specific rest of the prompt; may be empty.
        options: the answer options.

    Returns:
        One length-normalised log-probability per option (``[]`` for no options).

    Raises:
        ValueError: the model is in training mode, or an option has no tokens.
    """
    import torch

    check_eval_mode(model)
    option_ids = _option_ids(tokenizer, options)
    if not option_ids:
        return []
    suffix_ids = token_ids(tokenizer, suffix_text)
    with torch.inference_mode():
        state = extend_prefix(model, prefix, suffix_ids) if suffix_ids else prefix
        return _score_after(model, state, option_ids)


def score_options(model: Any, tokenizer: Any, prompt: str, options: Sequence[str]) -> list[float]:
    """Score each option as a continuation of ``prompt``: one prompt pass + one batched option pass.

    Args:
        model: a causal LM in eval mode with full-attention layers.
        tokenizer: its tokenizer.
        prompt: the rendered answer prompt; tokenized with ``add_special_tokens=False``.
        options: the answer options.

    Returns:
        One length-normalised log-probability per option, same order (``[]`` for no options).

    Raises:
        ValueError: the model is in training mode, ``prompt`` has no tokens, or an option has none.
    """
    check_eval_mode(model)
    option_ids = _option_ids(tokenizer, options)
    if not option_ids:
        return []
    import torch

    prefix = encode_text(model, tokenizer, prompt, "prompt")
    with torch.inference_mode():
        return _score_after(model, prefix, option_ids)


def score_options_naive(model: Any, tokenizer: Any, prompt: str, options: Sequence[str]) -> list[float]:
    """Reference scorer: one full forward over prompt + option ids per option, no cache reuse.

    Same arguments, result and errors as :func:`score_options`.
    """
    import torch

    check_eval_mode(model)
    option_ids = _option_ids(tokenizer, options)
    if not option_ids:
        return []
    prompt_ids = token_ids(tokenizer, prompt)
    if not prompt_ids:
        raise ValueError(f"prompt: expected text with at least one token, got {prompt!r}")
    scores = []
    with torch.inference_mode():
        for ids in option_ids:
            seq = torch.tensor([prompt_ids + ids], dtype=torch.long, device=model.device)
            # Logits at the last n+1 positions: those predicting the n option tokens, plus the
            # final one (unused). Same numbers as full logits, without the LM head elsewhere.
            n = len(ids)
            logits, _ = forward(model, seq, logits_to_keep=n + 1)
            logprobs = logits[0, :n].float().log_softmax(-1)
            targets = torch.tensor(ids, dtype=torch.long, device=model.device)
            scores.append(mean_logprob(logprobs.gather(-1, targets[:, None])[:, 0].tolist()))
    return scores


def score_batch(
    model: Any,
    tokenizer: Any,
    items: Sequence[tuple[str, Sequence[str]]],
    *,
    prefix: PrefixCache | None = None,
    progress: bool = True,
    desc: str = "scoring",
) -> list[list[float]]:
    """Score many (prompt, options) items, with a tqdm bar on stderr.

    Items run one after another: batching several prompts into one forward does not pay on CPU
    (module docstring), while each item still scores its options in one batched pass. With
    ``prefix``, every prompt is a suffix scored after it (:func:`score_with_prefix`).

    Args:
        model: a causal LM in eval mode.
        tokenizer: its tokenizer.
        items: (prompt or suffix text, options) pairs.
        prefix: an optional shared prefix from :func:`encode_prefix`.
        progress: show the progress bar.
        desc: the progress bar's label.

    Returns:
        One score list per item, in order.

    Raises:
        ValueError: as :func:`score_options` / :func:`score_with_prefix`.
    """
    from tqdm import tqdm

    out = []
    for text, options in tqdm(items, desc=desc, disable=not progress, unit="q"):
        if prefix is None:
            out.append(score_options(model, tokenizer, text, options))
        else:
            out.append(score_with_prefix(model, tokenizer, prefix, text, options))
    return out
