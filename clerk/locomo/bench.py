"""The prefix-reuse benchmark: LoCoMo ``full`` reading with and without a reused KV cache (SPEC §7).

Every question of a conversation shares the prompt up to the question (the ``full`` view), so
``clerk locomo`` encodes it once and reuses its KV cache; this measures what that saves, on one
conversation (optionally repeated to emulate a longer one), and checks both paths choose alike.

    clerk bench-locomo-prefix --data tests/fixtures/locomo/locomo10_mini.json --model resources/models/smollm2-135m
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.locomo.data import Conversation
from clerk.locomo.evaluation import (
    DEFAULT_BUDGET,
    LocomoEvalConfig,
    conversation_timeline,
    mean_or_none,
    question_time,
)
from clerk.locomo.files import load_locomo
from clerk.memory.base import Runtime


def _conversation(data: str | Path, conversation: str | None, tile: int, mc_seed: int) -> Conversation:
    """The chosen conversation (default the first), its sessions repeated ``tile`` times."""
    conversations = load_locomo(data, mc_seed=mc_seed)
    if conversation is None:
        conv = conversations[0]
    else:
        by_id = {c.conv_id: c for c in conversations}
        if conversation not in by_id:
            raise UserError(f"--conversation: expected one of {sorted(by_id)}, got {conversation!r}")
        conv = by_id[conversation]
    if tile > 1:
        n = len(conv.sessions)
        sessions = [dataclasses.replace(s, index=r * n + s.index) for r in range(tile) for s in conv.sessions]
        conv = dataclasses.replace(conv, sessions=sessions)
    return conv


def _full_prompts(conv: Conversation, runtime: Runtime):
    """The ``full`` system over the conversation, then every question's answer prompt.

    Returns:
        ``(views, questions, prompts, shared prefix)``.
    """
    from clerk import prompts
    from clerk.evaluate.runner import make_systems
    from clerk.memory.full import FullMemory
    from clerk.memory.reader import split_prompt
    from clerk.models.loading import chat_prompt

    full = make_systems([FullMemory.name], runtime)[FullMemory.name]
    tl = conversation_timeline(conv, DEFAULT_BUDGET)
    state = full.init_state(tl)
    for session in tl["sessions"]:
        state = full.write([state], [tl], [session])[0].state
    asked = question_time(conv)
    qds = asked["questions"]
    views = [full.view(state, tl, asked, qd) for qd in qds]
    _, tok = runtime.model("base")
    texts = [chat_prompt(tok, prompts.answer_messages(v.text, qd["question"])) for v, qd in zip(views, qds)]
    prefix_text, _ = split_prompt(texts[0])
    return views, qds, texts, prefix_text


def _time_both(model, tok, texts: list[str], prefix_text: str, suffixes: list[str], qds: list[dict],
               progress: bool) -> tuple[list[int], list[int], float, float, float]:
    """Choices and seconds of both paths, interleaved question by question.

    Returns:
        ``(choices without reuse, choices with reuse, seconds without, seconds with, prefix encode seconds)``;
        the seconds with reuse include encoding the prefix once.
    """
    import time

    from tqdm.auto import tqdm

    from clerk.scoring import mc as scoring

    scoring.score_options(model, tok, texts[0], qds[0]["options"])  # warm-up: allocator, kernels
    # Interleave the two paths question by question so a shared machine's load hits both alike.
    start = time.perf_counter()
    prefix = scoring.encode_prefix(model, tok, prefix_text)
    encode_s = time.perf_counter() - start
    plain, reused, plain_s, reuse_s = [], [], 0.0, encode_s
    for text, suffix, qd in tqdm(list(zip(texts, suffixes, qds)), desc="questions", unit="q", file=sys.stderr,
                                 disable=not progress):
        t0 = time.perf_counter()
        plain.append(scoring.pick(scoring.score_options(model, tok, text, qd["options"])))
        t1 = time.perf_counter()
        reused.append(scoring.pick(scoring.score_with_prefix(model, tok, prefix, suffix, qd["options"])))
        t2 = time.perf_counter()
        plain_s, reuse_s = plain_s + (t1 - t0), reuse_s + (t2 - t1)
    return plain, reused, plain_s, reuse_s, encode_s


def bench_prefix(data: str | Path, model_dir: str | Path, conversation: str | None = None, tile: int = 1,
                 max_read_tokens: int = -1, mc_seed: int = 0, progress: bool = True,
                 dtype: str = "auto") -> dict[str, Any]:
    """Time the ``full`` system's questions on one conversation with and without prefix reuse.

    1. The conversation's sessions (repeated ``tile`` times, to emulate a longer conversation) go
       through the ``full`` system; its view is left-truncated to the reader's context exactly
       as in :func:`clerk.locomo.evaluation.evaluate_locomo`.
    2. *No reuse*: each question's whole answer prompt is prefilled and its options scored
       (``scoring.score_options``). *Reuse*: what the evaluation does for questions sharing a
       view (``clerk.evaluate.mc_choose`` -> ``reader.mc_choices``): the prompt up to the
       question is encoded once (``scoring.encode_prefix``, timed once and charged to the
       questions) and every question prefills only its own suffix (``scoring.score_with_prefix``).
       The two paths alternate question by question, so load on a shared machine hits both alike.

    Returns:
        Tokens (view, prefix, prompt and suffix per question, prefill per question both ways),
        seconds per question both ways, the speed-up and whether both pick the same options.

    Raises:
        UserError: bad data/model paths, an unknown conversation id or ``tile`` < 1.
    """
    if tile < 1:
        raise UserError(f"--tile: expected an integer >= 1, got {tile}")
    conv = _conversation(data, conversation, tile, mc_seed)
    # The benchmark reads with the base model (no adapter is taken).
    runtime = Runtime(LocomoEvalConfig(max_read_tokens=max_read_tokens, dtype=dtype, reader_model="base"),
                      model_dir=str(model_dir))
    views, qds, texts, prefix_text = _full_prompts(conv, runtime)
    model, tok = runtime.model("base")

    def n_tokens(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    suffixes = [t[len(prefix_text):] for t in texts]
    assert all(t.startswith(prefix_text) for t in texts)  # one view, one frame: the prefix is shared
    plain, reused, plain_s, reuse_s, encode_s = _time_both(model, tok, texts, prefix_text, suffixes, qds, progress)
    nq = len(qds)
    prompt_tokens = [n_tokens(t) for t in texts]
    suffix_tokens = [n_tokens(t) for t in suffixes]
    prefix_tokens = n_tokens(prefix_text)
    return {
        "conversation": conv.conv_id, "sessions": len(conv.sessions), "tile": tile, "questions": nq,
        "model": str(model_dir), "dtype": str(model.dtype).removeprefix("torch."), "torch_threads": _torch_threads(),
        "load_average_1min": os.getloadavg()[0],
        "view_tokens": runtime.count_tokens(views[0].text), "truncated": bool(views[0].truncated),
        "view_budget_tokens": runtime.view_budget(), "prefix_tokens": prefix_tokens,
        "prompt_tokens_mean": mean_or_none([float(x) for x in prompt_tokens]),
        "suffix_tokens_mean": mean_or_none([float(x) for x in suffix_tokens]),
        "prefill_tokens_per_question_no_reuse": mean_or_none([float(x) for x in prompt_tokens]),
        "prefill_tokens_per_question_reuse": (prefix_tokens + sum(suffix_tokens)) / nq,
        "prefix_encode_seconds": encode_s,
        "seconds_per_question_no_reuse": plain_s / nq,
        "seconds_per_question_reuse": reuse_s / nq,
        "speedup": plain_s / reuse_s,
        "same_choices": plain == reused,
        "choices_no_reuse": plain,
        "choices_reuse": reused,
    }


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def main_bench(args: argparse.Namespace) -> None:
    """``clerk bench-locomo-prefix``: print prefill tokens and seconds per question with and without reuse."""
    from clerk.models.device import set_torch_threads

    set_torch_threads(args.threads)
    r = bench_prefix(args.data, args.model, conversation=args.conversation, tile=args.tile,
                     max_read_tokens=args.max_read_tokens, mc_seed=args.mc_seed, dtype=args.dtype)
    print(f"conversation {r['conversation']}: {r['sessions']} sessions (tile {r['tile']}), {r['questions']} questions, "
          f"model {r['model']} ({r['dtype']}), torch threads {r['torch_threads']}, "
          f"load average {r['load_average_1min']:.1f}")
    print(f"full view: {r['view_tokens']} tokens (budget {r['view_budget_tokens']}, truncated: {r['truncated']}); "
          f"shared prefix {r['prefix_tokens']} tokens; per-question suffix {r['suffix_tokens_mean']:.1f} tokens (mean)")
    print(f"no reuse:     prefill {r['prefill_tokens_per_question_no_reuse']:.1f} tokens/question, "
          f"{r['seconds_per_question_no_reuse']:.3f} s/question")
    print(f"prefix reuse: prefill {r['prefill_tokens_per_question_reuse']:.1f} tokens/question (amortised), "
          f"{r['seconds_per_question_reuse']:.3f} s/question "
          f"(prefix encoded once in {r['prefix_encode_seconds']:.3f} s)")
    print(f"speed-up: {r['speedup']:.2f}x; same choices: {r['same_choices']}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(r, indent=2, sort_keys=True) + "\n", encoding="utf-8")
