"""Prefix KV caches: encoding a prompt once and continuing from its cache without changing it.

The model plumbing that the reader's scoring (:mod:`clerk.scoring.mc`, :mod:`clerk.scoring.tree`)
and the writers' decoding (:mod:`clerk.models.decoding`, a shared few-shot frame) both build on.
A :class:`PrefixCache` holds a prompt's ids, its ``DynamicCache`` (batch 1) and the next-token
log-probabilities after it. A continuation forks the cache (:func:`_fork_cache`: views expanded
to the batch of continuations, never a copy of the source) and runs one forward on the fork. The
forward's cache argument is ``cache`` from transformers 5.24 on and ``past_key_values`` before
(:func:`_cache_kwarg`). Only full-attention layers can be forked exactly.

    python -m pytest tests/test_scoring.py -q -k "peft or mutated"
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class PrefixCache:
    """An encoded prompt prefix that can be scored against many times without being changed.

    Attributes:
        ids: the prefix token ids, length P.
        cache: the model's ``DynamicCache`` for those ids (batch 1; per layer keys and values of
            shape (1, kv_heads, P, head_dim)). Scoring never passes it to the model: it forks it.
        last_logprobs: float32 log-probabilities of the next token after the prefix, shape (vocab,).
    """

    ids: tuple[int, ...]
    cache: Any
    last_logprobs: Any

    def __len__(self) -> int:
        return len(self.ids)


def token_ids(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` without BOS/EOS (the boundary rule of :mod:`clerk.scoring.mc`)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _cache_kwarg(model: Any) -> str:
    """Name of the forward argument that takes a KV cache: ``cache`` (transformers 5.24) or
    the older ``past_key_values``. PEFT wrappers forward ``**kwargs``, so look at the base model."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def forward(model: Any, ids: Any, *, cache: Any = None, attention_mask: Any = None, logits_to_keep: int = 0):
    """One forward pass; returns (logits (B, T_kept, V), the updated cache)."""
    kwargs = {_cache_kwarg(model): cache, "use_cache": True, "logits_to_keep": logits_to_keep}
    if attention_mask is not None:
        kwargs["attention_mask"] = attention_mask
    out = model(input_ids=ids, **kwargs)
    new_cache = getattr(out, "cache", None)
    if new_cache is None:
        new_cache = out.past_key_values
    return out.logits, new_cache


def _fork_cache(cache: Any, batch: int) -> Any:
    """A new ``DynamicCache`` whose layers view ``cache``'s tensors expanded to ``batch`` rows.

    The source is never mutated: ``DynamicLayer.update`` concatenates into new tensors and
    assigns them to the fork's own layer objects. ``expand`` makes no copy; the only copy of the
    (batch, kv_heads, P, head_dim) keys/values happens once, inside the forward's concatenation.

    Raises:
        ValueError: a layer is not a plain full-attention layer (sliding-window or recurrent caches
            drop or summarise past tokens, so a forked prefix would not be exact).
    """
    from transformers.cache_utils import DynamicCache, DynamicLayer

    fork = DynamicCache()
    for layer in cache.layers:
        if type(layer) is not DynamicLayer:
            raise ValueError(f"model: expected full-attention cache layers (DynamicLayer), got {type(layer).__name__}")
        new = DynamicLayer()
        new.lazy_initialization(layer.keys, layer.values)
        # (1, kv_heads, P, head_dim) -> (batch, kv_heads, P, head_dim), a view.
        new.keys = layer.keys.expand(batch, -1, -1, -1)
        new.values = layer.values.expand(batch, -1, -1, -1)
        fork.layers.append(new)
    return fork


def extend_prefix(model: Any, state: PrefixCache | None, ids: Sequence[int]) -> PrefixCache:
    """Encode ``ids`` after ``state`` (or from scratch) and return the longer prefix."""
    import torch

    assert len(ids) > 0
    device = model.device
    input_ids = torch.tensor([list(ids)], dtype=torch.long, device=device)
    past = None if state is None else _fork_cache(state.cache, 1)
    # Only the last position's logits are needed: skip the LM head (vocab x hidden) elsewhere.
    logits, cache = forward(model, input_ids, cache=past, logits_to_keep=1)
    last = logits[0, -1].float().log_softmax(-1)
    before = () if state is None else state.ids
    return PrefixCache(ids=tuple(before) + tuple(ids), cache=cache, last_logprobs=last)


def encode_text(model: Any, tokenizer: Any, text: str, field: str) -> PrefixCache:
    """Tokenize and encode ``text`` from scratch; ``field`` names it in the error."""
    import torch

    ids = token_ids(tokenizer, text)
    if not ids:
        raise ValueError(f"{field}: expected text with at least one token, got {text!r}")
    with torch.inference_mode():
        return extend_prefix(model, None, ids)
