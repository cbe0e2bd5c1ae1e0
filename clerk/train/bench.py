"""Benchmarks of ``clerk bench-train``: fp32 vs bf16-autocast training throughput, and greedy
consolidation quality (parse rate, op precision/recall/F1) of an adapter on held-out sessions.

    clerk bench-train --model resources/models/smollm2-135m --sft results/sft/137 --steps 5
    clerk bench-train --consolidation --model resources/models/smollm2-135m --adapter results/adapters/137 \\
        --timelines results/data/137/test.jsonl --sessions 40
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.train.config import TrainConfig
from clerk.train.trainer import run_training


def bench_throughput(model: str, sft: str, steps: int, batch_size: int = 4, max_length: int = 1024,
                     seed: int = 0, threads: int = 0) -> dict[str, Any]:
    """Train ``steps`` LoRA steps in fp32 and again with bf16 autocast on the same batches.

    Each mode runs ``steps + 1`` optimizer steps from the same seed (so identical batches); the
    first step (allocation, oneDNN kernel selection) is excluded from the timing. Throughput is
    non-padding input tokens per second of step wall time, and also per CPU-second of this
    process (``time.process_time``): on a shared machine other jobs stretch wall time, while CPU
    time with one thread (``threads=1``) counts only this process's own work.

    Returns:
        ``{"fp32": {...}, "bf16": {...}, "ratio": bf16_tok_s / fp32_tok_s, "steps", "batch_size", ...}``.
    """
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[tuple[float, float, int]] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.marks.append((time.perf_counter(), time.process_time(), int(state.num_input_tokens_seen)))

    result: dict[str, Any] = {"steps": steps, "batch_size": batch_size, "max_length": max_length, "seed": seed}
    with tempfile.TemporaryDirectory(prefix="clerk-bench-") as tmp:
        for name, mode in (("fp32", "off"), ("bf16", "on")):
            timer = StepTimer()
            cfg = TrainConfig(sft=sft, model=model, out=str(Path(tmp) / name), seed=seed, max_steps=steps + 1,
                              batch_size=batch_size, max_length=max_length, bf16=mode, save_steps=0,
                              logging_steps=1, eval=False, threads=threads, lora_dropout=0.0)
            print(f"clerk bench-train: {name} ({steps} timed steps + 1 warm-up)", file=sys.stderr)
            run_training(cfg, extra_callbacks=[timer])
            (t0, c0, n0), (t1, c1, n1) = timer.marks[0], timer.marks[-1]
            result[name] = {"tokens": n1 - n0, "seconds": round(t1 - t0, 3), "tok_per_s": (n1 - n0) / (t1 - t0),
                            "cpu_seconds": round(c1 - c0, 3), "tok_per_cpu_s": (n1 - n0) / (c1 - c0)}
    result["ratio"] = result["bf16"]["tok_per_s"] / result["fp32"]["tok_per_s"]
    result["cpu_ratio"] = result["bf16"]["tok_per_cpu_s"] / result["fp32"]["tok_per_cpu_s"]
    import torch

    result["threads"] = torch.get_num_threads()
    return result


def _held_out_sessions(path: str | Path, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` sessions of a timelines file, in file then session order."""
    sessions = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"--timelines must be a readable timelines file, got {str(path)!r} ({err.strerror})") from None
    for line in lines:
        if line.strip():
            sessions += json.loads(line)["sessions"]
        if len(sessions) >= limit:
            break
    return sessions[:limit]


def bench_consolidation(model: str, adapter: str | None, timelines: str, sessions: int,
                        max_new_tokens: int = 256, batch_size: int = 8, threads: int = 0) -> dict[str, Any]:
    """Greedy consolidation quality on held-out sessions: parse rate and op precision/recall/F1.

    The prompt is the SFT CONSOLIDATE prompt (serialized ``ledger_before``, session index,
    transcript without a date line). Op scores come from :func:`clerk.metrics.op_scores` and are
    micro-averaged over sessions (summed tp/fp/fn); an unparseable output is an empty program.

    Returns:
        ``{"sessions", "parse_rate", "precision", "recall", "f1", "tp", "fp", "fn", "n_invalid",
        "generate_seconds"}``.

    Raises:
        UserError: unreadable timelines or a bad model/adapter directory.
    """
    import torch

    from clerk.ledger import parse_program, serialize
    from clerk.metrics import op_scores
    from clerk.models.decoding import greedy_generate
    from clerk.models.loading import chat_prompt, load_model
    from clerk.prompts import consolidate_messages, render_turns

    if threads:
        torch.set_num_threads(threads)
    chosen = _held_out_sessions(timelines, sessions)
    lm, tokenizer = load_model(model, adapter)
    prompts = [chat_prompt(tokenizer, consolidate_messages(serialize(s["ledger_before"]), s["index"],
                                                           render_turns(s["turns"]))) for s in chosen]
    start = time.perf_counter()
    texts = greedy_generate(lm, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    seconds = time.perf_counter() - start
    parsed = [parse_program(t) for t in texts]
    scores = [op_scores(s["ledger_before"], p.program, s["gold_ops"], s["index"]) for s, p in zip(chosen, parsed)]
    tp, fp, fn, invalid = (sum(s[k] for s in scores) for k in ("tp", "fp", "fn", "n_invalid"))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "sessions": len(chosen),
        "parse_rate": sum(not p.failed for p in parsed) / len(chosen),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "tp": tp, "fp": fp, "fn": fn, "n_invalid": invalid,
        "generate_seconds": round(seconds, 2),
    }
