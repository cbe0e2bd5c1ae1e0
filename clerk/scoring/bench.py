"""``clerk bench-scoring``: shared-prefix vs naive multiple-choice scoring on realistic answer prompts.

Both scorers (:mod:`clerk.scoring.mc`) score the same generated cases (a chat-template answer
prompt over a transcript view, 10 options); the benchmark reports seconds per case, the speed-up
and how often the two agree. On SmolLM2-135M (10 prompts of ~510 tokens, 10 options, one thread):
naive 18.1 s/case, shared-prefix 1.9 s/case, a 9.4x speed-up, same picks, max score gap 1.6e-5.

    clerk bench-scoring --model resources/models/smollm2-135m --cases 20
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.models.device import set_torch_threads
from clerk.models.loading import check_model_dir
from clerk.models.prefix import token_ids
from clerk.scoring.mc import pick, score_batch, score_options, score_options_naive


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
    while len(token_ids(tokenizer, render(turns, question))) < n_tokens:
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

    set_torch_threads(cfg.threads)
    check_model_dir(cfg.model)
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
        "prompt_tokens_mean": statistics.fmean(len(token_ids(tokenizer, p)) for p, _ in cases),
        "naive_s_per_case": (t1 - t0) / cfg.cases,
        "shared_s_per_case": (t2 - t1) / cfg.cases,
        "speedup": (t1 - t0) / (t2 - t1),
        "same_pick": statistics.fmean(pick(a) == pick(b) for a, b in zip(naive, shared)),
        "max_abs_diff": max(abs(x - y) for a, b in zip(naive, shared) for x, y in zip(a, b)),
    }


def bench_dtypes(model_dir: str, dtypes: tuple[str, ...] = ("float32", "bfloat16"), cases: int = 10,
                 options: int = 10, min_tokens: int = 300, max_tokens: int = 600, seed: int = 0, threads: int = 0,
                 rounds: int = 2, decode_prompts: int = 16, max_new_tokens: int = 32) -> dict[str, Any]:
    """Reading (MC scoring) and writing (greedy decoding) throughput of each inference dtype.

    The same cases as :func:`bench` are scored by the shared-prefix scorer
    (:func:`~clerk.scoring.mc.score_batch`) with one model per dtype, all loaded up front; the
    dtypes take turns (A, B, A, B with ``rounds`` 2) so that load from other jobs on a shared
    machine falls on each alike. Writing: ``decode_prompts`` of the case prompts (cut to their
    last ``min_tokens`` tokens' worth, one batch) greedy-decoded for up to ``max_new_tokens``
    tokens, as the writers decode (:func:`~clerk.models.decoding.greedy_generate`, unconstrained).

    Returns:
        ``{dtype: {"questions", "seconds", "questions_per_s", "decode_tokens", "decode_seconds",
        "decode_tok_per_s"}, "ratio": {dtype: questions/s over the first dtype's},
        "decode_ratio": {...}, "agreement": {dtype: {"same_pick", "max_abs_diff"}} (scores against
        the first dtype's), "prompt_tokens_mean", "torch_threads", ...}``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from clerk.models.decoding import greedy_generate

    set_torch_threads(threads)
    check_model_dir(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    models = {d: AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, d)).eval() for d in dtypes}
    rng = random.Random(seed)
    work = [_bench_case(rng, tokenizer, rng.randint(min_tokens, max_tokens), options) for _ in range(cases)]
    prompts = [p for p, _ in work][:decode_prompts]
    for model in models.values():  # warm-up (allocator, kernels)
        score_options(model, tokenizer, *work[0])
        if prompts:
            greedy_generate(model, tokenizer, prompts[:1], 2)
    totals = {d: {"questions": 0, "seconds": 0.0, "decode_tokens": 0, "decode_seconds": 0.0} for d in dtypes}
    scores: dict[str, list[list[float]]] = {}
    for _ in range(rounds):
        for d, model in models.items():
            t0 = time.perf_counter()
            scores[d] = score_batch(model, tokenizer, work, desc=f"score {d}")
            t1 = time.perf_counter()
            texts = greedy_generate(model, tokenizer, prompts, max_new_tokens, batch_size=max(1, len(prompts))) if prompts else []
            t2 = time.perf_counter()
            totals[d]["questions"] += len(work)
            totals[d]["seconds"] += t1 - t0
            totals[d]["decode_tokens"] += sum(min(max_new_tokens, len(token_ids(tokenizer, t)) + 1) for t in texts)
            totals[d]["decode_seconds"] += t2 - t1
    first = dtypes[0]
    result: dict[str, Any] = {
        "model": str(model_dir), "dtypes": list(dtypes), "cases": cases, "options": options, "rounds": rounds,
        "decode_prompts": len(prompts), "max_new_tokens": max_new_tokens, "torch_threads": torch.get_num_threads(),
        "prompt_tokens_mean": statistics.fmean(len(token_ids(tokenizer, p)) for p, _ in work),
    }
    for d, t in totals.items():
        result[d] = {**{k: round(v, 3) if isinstance(v, float) else v for k, v in t.items()},
                     "questions_per_s": t["questions"] / t["seconds"],
                     "decode_tok_per_s": t["decode_tokens"] / t["decode_seconds"] if t["decode_seconds"] else None}
    result["ratio"] = {d: result[d]["questions_per_s"] / result[first]["questions_per_s"] for d in dtypes}
    result["decode_ratio"] = {d: (result[d]["decode_tok_per_s"] / result[first]["decode_tok_per_s"]
                                  if result[first]["decode_tok_per_s"] else None) for d in dtypes}
    result["agreement"] = {d: {"same_pick": statistics.fmean(pick(a) == pick(b) for a, b in zip(scores[first], scores[d])),
                               "max_abs_diff": max(abs(x - y) for a, b in zip(scores[first], scores[d])
                                                   for x, y in zip(a, b))} for d in dtypes}
    return result


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
