"""Multiple-choice log-likelihood reader with shared-prefix KV reuse (SPEC §6).

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
another, each with its options batched on the shared prefix. Measured with
``clerk bench-scoring`` on SmolLM2-135M (10 prompts of ~510 tokens, 10 options, one thread):
naive 18.1 s/case, shared-prefix 1.9 s/case, a 9.4x speed-up, same picks, max score gap 1.6e-5.

    clerk bench-scoring --model resources/models/smollm2-135m --cases 20
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import random
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from clerk.errors import UserError

#: Most (cached + fed) token rows one option forward may hold. The forked cache is materialised
#: as batch x (prefix + width) keys and values per layer (SmolLM2-135M: 46 KB per token row, so
#: 16384 rows ~ 0.75 GB); past this, options are scored in several forwards. At ~500-token
#: prompts and 10 options every option still goes in one forward.
MAX_BATCH_TOKENS = 16384


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


# --------------------------------------------------------------------------- tokenization


def _ids(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` without BOS/EOS (the boundary rule in the module docstring)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


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
    return _ids(tokenizer, prefix_text) + _ids(tokenizer, suffix_text) == _ids(tokenizer, prefix_text + suffix_text)


def _option_ids(tokenizer: Any, options: Sequence[str]) -> list[list[int]]:
    """Token ids of every option; an option that tokenizes to nothing cannot be scored.

    Raises:
        ValueError: an option has no tokens (names its index).
    """
    out = []
    for k, option in enumerate(options):
        ids = _ids(tokenizer, option)
        if not ids:
            raise ValueError(f"options[{k}]: expected text with at least one token, got {option!r}")
        out.append(ids)
    return out


# --------------------------------------------------------------------------- model plumbing


def _check_model(model: Any) -> None:
    """Scores must not depend on dropout, so the model has to be in eval mode."""
    if model.training:
        raise ValueError("model: expected eval mode (call model.eval()), got training mode")


def _cache_kwarg(model: Any) -> str:
    """Name of the forward argument that takes a KV cache: ``cache`` (transformers 5.24) or
    the older ``past_key_values``. PEFT wrappers forward ``**kwargs``, so look at the base model."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _forward(model: Any, ids: Any, *, cache: Any = None, attention_mask: Any = None, logits_to_keep: int = 0):
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


def _extend(model: Any, state: PrefixCache | None, ids: Sequence[int]) -> PrefixCache:
    """Encode ``ids`` after ``state`` (or from scratch) and return the longer prefix."""
    import torch

    assert len(ids) > 0
    device = model.device
    input_ids = torch.tensor([list(ids)], dtype=torch.long, device=device)
    past = None if state is None else _fork_cache(state.cache, 1)
    # Only the last position's logits are needed: skip the LM head (vocab x hidden) elsewhere.
    logits, cache = _forward(model, input_ids, cache=past, logits_to_keep=1)
    last = logits[0, -1].float().log_softmax(-1)
    before = () if state is None else state.ids
    return PrefixCache(ids=tuple(before) + tuple(ids), cache=cache, last_logprobs=last)


def _encode(model: Any, tokenizer: Any, text: str, field: str) -> PrefixCache:
    """Tokenize and encode ``text`` from scratch; ``field`` names it in the error."""
    import torch

    ids = _ids(tokenizer, text)
    if not ids:
        raise ValueError(f"{field}: expected text with at least one token, got {text!r}")
    with torch.inference_mode():
        return _extend(model, None, ids)


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
            for k, lps in zip(chunk, _continuation_logprobs(model, state, [option_ids[k] for k in chunk])):
                token_lps[k].extend(lps)
    return [mean_logprob(lps) for lps in token_lps]


def _continuation_logprobs(model: Any, state: PrefixCache, option_ids: Sequence[Sequence[int]]) -> list[list[float]]:
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
    logits, _ = _forward(model, feed, cache=_fork_cache(state.cache, n), attention_mask=mask)
    out = []
    for r, ids in enumerate(option_ids):
        logprobs = logits[r, : len(ids) - 1].float().log_softmax(-1)  # (n_r - 1, vocab)
        targets = torch.tensor(ids[1:], dtype=torch.long, device=device)
        out.append(logprobs.gather(-1, targets[:, None])[:, 0].tolist())
    return out


# --------------------------------------------------------------------------- public API


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
    _check_model(model)
    return _encode(model, tokenizer, prefix_text, "prefix_text")


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

    _check_model(model)
    option_ids = _option_ids(tokenizer, options)
    if not option_ids:
        return []
    suffix_ids = _ids(tokenizer, suffix_text)
    with torch.inference_mode():
        state = _extend(model, prefix, suffix_ids) if suffix_ids else prefix
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
    _check_model(model)
    option_ids = _option_ids(tokenizer, options)
    if not option_ids:
        return []
    import torch

    prefix = _encode(model, tokenizer, prompt, "prompt")
    with torch.inference_mode():
        return _score_after(model, prefix, option_ids)


def score_options_naive(model: Any, tokenizer: Any, prompt: str, options: Sequence[str]) -> list[float]:
    """Reference scorer: one full forward over prompt + option ids per option, no cache reuse.

    Same arguments, result and errors as :func:`score_options`.
    """
    import torch

    _check_model(model)
    option_ids = _option_ids(tokenizer, options)
    if not option_ids:
        return []
    prompt_ids = _ids(tokenizer, prompt)
    if not prompt_ids:
        raise ValueError(f"prompt: expected text with at least one token, got {prompt!r}")
    scores = []
    with torch.inference_mode():
        for ids in option_ids:
            seq = torch.tensor([prompt_ids + ids], dtype=torch.long, device=model.device)
            # Logits at the last n+1 positions: those predicting the n option tokens, plus the
            # final one (unused). Same numbers as full logits, without the LM head elsewhere.
            n = len(ids)
            logits, _ = _forward(model, seq, logits_to_keep=n + 1)
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


# --------------------------------------------------------------------------- benchmark


@dataclass
class BenchConfig:
    """Knobs of ``clerk bench-scoring`` (recorded in its JSON output)."""

    model: str
    #: number of (prompt, 10 options) cases timed with each scorer
    cases: int = 20
    #: options per case
    options: int = 10
    #: each prompt's length is drawn uniformly from [min_tokens, max_tokens] tokens
    min_tokens: int = 300
    max_tokens: int = 600
    #: seed of the case generator
    seed: int = 0
    #: torch CPU threads; 0 = torch's default
    threads: int = 0

    def __post_init__(self) -> None:
        if self.threads < 0:
            raise UserError(f"--threads: expected an integer >= 0, got {self.threads}")
        for name in ("cases", "options", "min_tokens"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')}: expected an integer >= 1, got {getattr(self, name)}")
        if self.max_tokens < self.min_tokens:
            raise UserError(f"--max-tokens: expected >= --min-tokens ({self.min_tokens}), got {self.max_tokens}")
        if not (Path(self.model) / "config.json").is_file():
            raise UserError(f"--model: expected a checkpoint directory containing config.json, got {self.model!r}")


# A toy fact world for realistic answer prompts: (statement, question, values).
_FACTS = (
    ("I work as {}.", "What is my job?", ("a chef", "a nurse", "a pilot", "an architect", "a teacher")),
    ("I live in {}.", "Where do I live?", ("Oslo", "Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn")),
    ("My pet is a {}.", "What pet do I have?", ("cat", "parrot", "beagle", "tortoise", "hamster")),
    ("I play the {}.", "Which instrument do I play?", ("cello", "banjo", "flute", "drums", "harp")),
    ("My gym is {}.", "Which gym do I go to?", ("IronWorks", "FitHub", "Pulse", "CoreZone", "Atlas Gym")),
    ("I am allergic to {}.", "What am I allergic to?", ("peanuts", "pollen", "shellfish", "latex")),
    ("I support {}.", "Which team do I support?", ("the Falcons", "the Rovers", "United", "the Tigers")),
)
_CHATTER = ("The weather was odd today.", "I watched a film last night.", "Work has been busy.", "Thanks!")


def _bench_case(rng: random.Random, tokenizer: Any, n_tokens: int, n_options: int) -> tuple[str, list[str]]:
    """One realistic answer prompt (chat template, transcript memory view) of about ``n_tokens``."""
    from clerk.prompts import CHAT_TEMPLATE, NEGATED_ANSWER, UNKNOWN_ANSWER, answer_messages, render_turns

    def render(turns: list[dict[str, str]], question: str) -> str:
        messages = answer_messages(render_turns(turns), question)
        return tokenizer.apply_chat_template(
            messages, chat_template=CHAT_TEMPLATE, tokenize=False, add_generation_prompt=True
        )

    _, question, values = rng.choice(_FACTS)
    turns: list[dict[str, str]] = []
    while len(_ids(tokenizer, render(turns, question))) < n_tokens:
        statement, _, vals = rng.choice(_FACTS)
        line = statement.format(rng.choice(vals)) if rng.random() < 0.8 else rng.choice(_CHATTER)
        turns += [{"role": "user", "content": line}, {"role": "assistant", "content": "Noted."}]
    pool = sorted({v for _, _, vals in _FACTS for v in vals} - set(values))
    options = list(values[:4]) + [UNKNOWN_ANSWER, NEGATED_ANSWER] + rng.sample(pool, max(0, n_options - 6))
    options = options[:n_options]
    rng.shuffle(options)
    return render(turns, question), options


def bench(cfg: BenchConfig) -> dict[str, Any]:
    """Time shared-prefix vs naive scoring on the same cases and compare their answers.

    Returns:
        A dict with the config, mean prompt tokens, seconds per case for each scorer, the
        speed-up, the fraction of cases where both pick the same option and the largest score gap.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32).eval()
    rng = random.Random(cfg.seed)
    cases = [
        _bench_case(rng, tokenizer, rng.randint(cfg.min_tokens, cfg.max_tokens), cfg.options) for _ in range(cfg.cases)
    ]
    score_options(model, tokenizer, *cases[0])  # warm-up (allocator, kernels) for both paths

    t0 = time.perf_counter()
    naive = [score_options_naive(model, tokenizer, p, o) for p, o in cases]
    t1 = time.perf_counter()
    shared = score_batch(model, tokenizer, cases, desc="shared-prefix")
    t2 = time.perf_counter()
    return {
        "config": asdict(cfg),
        "torch_threads": torch.get_num_threads(),
        "prompt_tokens_mean": statistics.fmean(len(_ids(tokenizer, p)) for p, _ in cases),
        "naive_s_per_case": (t1 - t0) / cfg.cases,
        "shared_s_per_case": (t2 - t1) / cfg.cases,
        "speedup": (t1 - t0) / (t2 - t1),
        "same_pick": statistics.fmean(pick(a) == pick(b) for a, b in zip(naive, shared)),
        "max_abs_diff": max(abs(x - y) for a, b in zip(naive, shared) for x, y in zip(a, b)),
    }


def bench_main(args: argparse.Namespace) -> None:
    """``clerk bench-scoring``: print (and optionally write) the shared-prefix speed-up."""
    cfg = BenchConfig(
        model=args.model,
        cases=args.cases,
        options=args.options,
        min_tokens=args.min_tokens,
        max_tokens=args.max_tokens,
        seed=args.seed,
        threads=args.threads,
    )
    result = bench(cfg)
    print(
        f"cases: {cfg.cases} x {cfg.options} options, prompt tokens (mean): {result['prompt_tokens_mean']:.0f}, "
        f"torch threads: {result['torch_threads']}"
    )
    print(f"naive: {result['naive_s_per_case']:.3f} s/case")
    print(f"shared-prefix: {result['shared_s_per_case']:.3f} s/case")
    print(f"speed-up: {result['speedup']:.2f}x")
    print(f"same pick: {result['same_pick']:.3f}, max |score diff|: {result['max_abs_diff']:.2e}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


def register_cli(sub: Any) -> None:
    """Add ``clerk bench-scoring``."""
    p = sub.add_parser(
        "bench-scoring",
        help="time shared-prefix vs naive multiple-choice scoring on a model",
        description="Score the same realistic answer prompts with the naive (one forward per option) "
        "and the shared-prefix scorer; print seconds per case, the speed-up and their agreement.",
    )
    # model
    p.add_argument("--model", required=True, help="Hugging Face checkpoint directory (config.json + tokenizer)")
    # workload
    p.add_argument("--cases", type=int, default=20, help="number of prompts timed per scorer (default 20)")
    p.add_argument("--options", type=int, default=10, help="options per prompt (default 10)")
    p.add_argument("--min-tokens", type=int, default=300, help="shortest prompt, in tokens (default 300)")
    p.add_argument("--max-tokens", type=int, default=600, help="longest prompt, in tokens (default 600)")
    p.add_argument("--seed", type=int, default=0, help="seed of the prompt generator (default 0)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default 0 = torch's default)")
    # output
    p.add_argument("--out", default=None, help="also write the numbers as JSON to this path (default: print only)")
    p.set_defaults(func=bench_main)
