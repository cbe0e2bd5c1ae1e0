"""Greedy decoding: batched, left-padded, with a KV cache; stops at end of turn.

    python -m pytest tests/test_models.py -q -k greedy
"""

from __future__ import annotations

import inspect
import sys

from clerk.prompts import END_OF_TURN


def stop_token_ids(tokenizer) -> list[int]:
    """Ids that end a generated turn: ``<|im_end|>`` and the tokenizer's eos (deduplicated, sorted)."""
    ids = {tokenizer.convert_tokens_to_ids(END_OF_TURN), tokenizer.eos_token_id}
    return sorted(i for i in ids if i is not None and i != tokenizer.unk_token_id)


def _cache_kwarg(model) -> str:
    """Name of the KV-cache keyword of ``model.forward`` (renamed to ``cache`` in transformers 5.2x)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _preallocated_cache(capacity: int, prefix=None):
    """A ``DynamicCache`` whose layers write each step's keys/values into a buffer of ``capacity``
    positions instead of growing by concatenation (``aten::cat`` of the growing cache,
    the shared few-shot prefix included, was 74 % of the prompted-ledger decode's profiled time).

    Each layer's buffer is allocated at its first update, for that update's batch, and takes a
    copy of what the layer held before (the forked ``prefix``, expanded to every row: the one
    copy of the prefix per row); later updates copy only the new positions. ``keys``/``values``
    are views of the filled part, so attention sees the same tensors (values and shapes) as with
    concatenation. A layer that outgrows ``capacity`` doubles its buffer.
    """
    from transformers.cache_utils import DynamicCache, DynamicLayer

    class PreallocatedLayer(DynamicLayer):
        def __init__(self) -> None:
            super().__init__()
            self._buffers = None
            self._filled = 0

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, m = self.get_seq_length(), key_states.shape[-2]
            if self._buffers is None or n + m > self._buffers[0].shape[-2]:
                size = max(capacity, n + m) if self._buffers is None else 2 * (n + m)
                batch, heads, _, dim = key_states.shape
                buffers = tuple(x.new_empty((batch, heads, size, dim)) for x in (key_states, value_states))
                if n:
                    buffers[0][:, :, :n] = self.keys
                    buffers[1][:, :, :n] = self.values
                self._buffers = buffers
            keys, values = self._buffers
            keys[:, :, n:n + m] = key_states
            values[:, :, n:n + m] = value_states
            self.keys, self.values = keys[:, :, :n + m], values[:, :, :n + m]
            return self.keys, self.values

    cache = DynamicCache()
    for k in range(len(prefix.layers) if prefix is not None else 0):
        layer, src = PreallocatedLayer(), prefix.layers[k]
        if type(src) is not DynamicLayer:
            raise ValueError(f"model: expected full-attention cache layers (DynamicLayer), got {type(src).__name__}")
        layer.lazy_initialization(src.keys, src.values)
        layer.keys, layer.values = src.keys, src.values  # batch 1; broadcast into the buffer
        cache.layers.append(layer)
    if prefix is None:
        cache.layer_class_to_replicate = PreallocatedLayer
    return cache


def _greedy_batch(model, rows: list[list[int]], max_new_tokens: int, stop_ids: list[int], pad_id: int,
                  constraint=None, prefix=None) -> list[list[int]]:
    """Greedy-decode one left-padded batch with a KV cache; returns new ids per row, stop token excluded.

    ``constraint`` (a :class:`clerk.models.constrained.GrammarConstraint` over the same rows)
    masks each step's logits to the tokens the rows' grammars allow. ``prefix`` (a
    :class:`clerk.models.prefix.PrefixCache` of text every row continues) is encoded once: each
    row's cache starts as a view of it, and the row's own tokens follow it, left-padded after it.
    """
    import torch
    from transformers import DynamicCache

    device = model.device
    width = max(len(r) for r in rows)
    input_ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
    # Positions count real tokens only, so a left-padded row sees the same positions as unpadded.
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    capacity = width + max_new_tokens + (len(prefix) if prefix is not None else 0)
    if prefix is None:
        full = all(t == "full_attention" for t in getattr(model.config, "layer_types", None) or ["full_attention"])
        # A model with sliding-window (or other) layers keeps transformers' own cache layers.
        cache = _preallocated_cache(capacity) if full else DynamicCache(config=model.config)
    else:
        cache = _preallocated_cache(capacity, prefix.cache)
        mask = torch.cat([torch.ones((len(rows), len(prefix)), dtype=mask.dtype, device=device), mask], dim=1)
        positions = positions + len(prefix)
    cache_kw = _cache_kwarg(model)
    stops = torch.tensor(stop_ids, device=device)
    done = torch.zeros(len(rows), dtype=torch.bool, device=device)
    out: list[list[int]] = [[] for _ in rows]
    live = list(range(len(rows)))  # the batch row -> its row in ``rows`` (finished rows are dropped)
    for step in range(max_new_tokens):
        logits = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True,
                       logits_to_keep=1, **{cache_kw: cache}).logits[:, -1, :]
        if constraint is not None:
            constraint.apply(logits, done.tolist())
        token = logits.argmax(-1)  # (B,)
        if constraint is not None:
            constraint.consume(token.tolist(), done.tolist())
        is_stop = torch.isin(token, stops)
        for r, (t, s, d) in enumerate(zip(token.tolist(), is_stop.tolist(), done.tolist())):
            if not d and not s:
                out[live[r]].append(t)
        done |= is_stop
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        input_ids = torch.where(done, torch.full_like(token, pad_id), token)[:, None]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        positions = positions[:, -1:] + 1
        finished = int(done.sum())
        if finished and 4 * finished >= len(live) and _drop_rows(cache, ~done):
            keep = (~done).nonzero().squeeze(1)
            input_ids, mask, positions, done = input_ids[keep], mask[keep], positions[keep], done[keep]
            live = [live[k] for k in keep.tolist()]
            if constraint is not None:
                constraint.keep_rows(keep.tolist())
    return out


def _drop_rows(cache, keep) -> bool:
    """Keep only the rows ``keep`` (a bool mask over the batch) of a preallocated ``cache``, in place.

    A finished row costs a full row of every later decode step (its attention over its whole cache
    included) while its output is already fixed, so once a quarter of a batch has finished its rows
    are dropped. Each row's logits do not depend on the other rows of the batch (checked:
    ``benchmarks/decode_drop_check.py``). Returns False, changing nothing, for a cache that is not
    made of preallocated layers (a sliding-window model's), which is then decoded as before.
    """
    layers = getattr(cache, "layers", None)
    if not layers or not all(getattr(layer, "_buffers", None) is not None for layer in layers):
        return False
    index = keep.nonzero().squeeze(1)
    for layer in layers:
        n = layer.get_seq_length()
        layer._buffers = tuple(b.index_select(0, index) for b in layer._buffers)
        layer.keys, layer.values = layer._buffers[0][:, :, :n], layer._buffers[1][:, :, :n]
    return True


def greedy_generate(model, tokenizer, prompts: list[str], max_new_tokens: int, batch_size: int = 16,
                    grammars: list[str | None] | None = None, shared_prefix: str | None = None) -> list[str]:
    """Greedy continuations of many prompts, batched, left-padded, with a KV cache.

    Each row stops at ``<|im_end|>``/eos (not included) or after ``max_new_tokens``. Prompts are
    sorted by token length inside (longest first, ties by input position) so a batch pads little;
    results come back in input order. No sampling, so the output is a function of the inputs.

    Args:
        model: a causal LM (e.g. from :func:`load_model`).
        tokenizer: its tokenizer; prompts are already templated (:func:`chat_prompt`).
        prompts: prompt strings.
        max_new_tokens: cap on generated tokens per prompt.
        batch_size: prompts per forward pass.
        grammars: optional Lark grammar per prompt (None = unconstrained): decoding is then
            constrained to it (:mod:`clerk.models.constrained`, llguidance).
        shared_prefix: text that every prompt starts with (a few-shot frame): encoded once and
            reused by every batch; each prompt's remainder is tokenized on its own, so the cut
            should fall on a token boundary (e.g. just before a special token).

    Returns:
        The generated text per prompt (special tokens removed), in input order.

    Raises:
        ValueError: a prompt tokenizes to nothing, or ``max_new_tokens``/``batch_size`` < 1.
    """
    import torch
    from tqdm.auto import tqdm

    if max_new_tokens < 1 or batch_size < 1:
        raise ValueError(f"max_new_tokens and batch_size must be >= 1, got {max_new_tokens} and {batch_size}")
    prefix = None
    if shared_prefix is not None:
        if not all(p.startswith(shared_prefix) for p in prompts):
            raise ValueError("shared_prefix: every prompt must start with it")
        from clerk.models.prefix import encode_text

        prefix = encode_text(model, tokenizer, shared_prefix, "shared_prefix")
        prompts = [p[len(shared_prefix):] for p in prompts]
    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    if any(not ids for ids in encoded):
        raise ValueError("every prompt must tokenize to at least one token")
    if grammars is not None and len(grammars) != len(prompts):
        raise ValueError(f"grammars: expected one per prompt ({len(prompts)}), got {len(grammars)}")
    stop_ids = stop_token_ids(tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    order = sorted(range(len(encoded)), key=lambda k: (-len(encoded[k]), k))
    results: list[str | None] = [None] * len(encoded)
    batches = [order[s: s + batch_size] for s in range(0, len(order), batch_size)]
    with torch.inference_mode():
        for idx in tqdm(batches, desc="generate", unit="batch", file=sys.stderr, disable=len(batches) < 2):
            constraint = None
            if grammars is not None:
                from clerk.models.constrained import GrammarConstraint

                constraint = GrammarConstraint(tokenizer, [grammars[k] for k in idx], stop_ids)
            new = _greedy_batch(model, [encoded[k] for k in idx], max_new_tokens, stop_ids, pad_id, constraint, prefix)
            for k, ids in zip(idx, new):
                results[k] = tokenizer.decode(ids, skip_special_tokens=True)
    return results  # type: ignore[return-value]
