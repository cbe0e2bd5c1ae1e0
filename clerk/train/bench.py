"""Benchmark of ``clerk bench-train``: training throughput of each precision mode on the same batches.
(Greedy consolidation quality of adapters is ``clerk learning-curve``, on validation personas.)

Modes (:data:`MODES`): ``fp32``; ``bf16-frozen`` (frozen base weights bf16, LoRA adapters fp32);
``bf16-autocast`` (fp32 weights under CPU bf16 autocast: every frozen weight, the tied
LM head included, is cast at every step); any of them with ``-topN``: LoRA on the top N layers only.

    clerk bench-train --model resources/models/smollm2-135m --sft results/sft/137 --steps 5
"""

from __future__ import annotations

import csv
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.train.config import TrainConfig
from clerk.train.data import load_sft
from clerk.train.trainer import check_model_dir, run_training

#: Benchmarked mode -> (``TrainConfig.precision``, ``TrainConfig.bf16``).
MODES: dict[str, tuple[str, str]] = {
    "fp32": ("fp32", "off"),
    "bf16-frozen": ("bf16-frozen", "off"),
    "bf16-autocast": ("fp32", "on"),
}


def mode_settings(name: str) -> tuple[str, str, int]:
    """A benchmarked mode's ``(precision, bf16, lora_layers)``: a name of :data:`MODES`, optionally
    with ``-topN`` for LoRA on the top N layers only (``TrainConfig.lora_layers``).

    >>> mode_settings("bf16-frozen-top15"), mode_settings("fp32")
    (('bf16-frozen', 'off', 15), ('fp32', 'off', 0))
    """
    base, _, top = name.rpartition("-top")
    if base in MODES and top.isdigit() and int(top) > 0:
        return (*MODES[base], int(top))
    if name in MODES:
        return (*MODES[name], 0)
    raise UserError(f"--modes: unknown {name!r}; known: {', '.join(MODES)}, each optionally with -topN (N >= 1)")


def bench_throughput(model: str, sft: str, steps: int, batch_size: int = 4, max_length: int = 1024,
                     seed: int = 0, threads: int = 0, modes: tuple[str, ...] = tuple(MODES),
                     rounds: int = 1) -> dict[str, Any]:
    """Train ``steps`` LoRA steps in each of ``modes`` on the same batches, ``rounds`` times.

    Each run trains ``steps + 1`` optimizer steps from the same seed (so identical batches); the
    first step (allocation, oneDNN kernel selection) is excluded from the timing. The modes are
    interleaved (A, B, A, B with ``rounds`` 2), so that load from other jobs on a shared machine
    falls on all of them alike; a mode's figures sum its rounds. Throughput is non-padding input
    tokens per second of step wall time, and also per CPU-second of this process
    (``time.process_time``): on a shared machine other jobs stretch wall time, while CPU time with
    one thread (``threads=1``) counts only this process's own work.

    Returns:
        ``{mode: {"tokens", "seconds", "tok_per_s", "cpu_seconds", "tok_per_cpu_s", "losses"}, ...,
        "ratio": {mode: tok_per_s / fp32's}, "cpu_ratio": {...}, "loss_diff": {mode: {"mean",
        "mean_abs", "max_abs"}} (per-step training loss minus fp32's, first round),
        "steps", "batch_size", ...}``; ratios and loss differences only when ``fp32`` is a mode.
    """
    import torch
    from transformers import TrainerCallback

    for flag, value, low in (("--steps", steps, 1), ("--batch-size", batch_size, 1), ("--max-length", max_length, 1),
                             ("--rounds", rounds, 1), ("--threads", threads, 0)):
        if value < low:
            raise UserError(f"{flag} must be a whole number >= {low}, got {value}")
    if not modes:
        raise UserError(f"--modes must name at least one mode of {', '.join(MODES)}, got none")
    settings = {m: mode_settings(m) for m in modes}  # unknown names fail here, before any training
    load_sft(sft)  # bad inputs fail here, in one line, before the first round's progress line
    check_model_dir(model)

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[tuple[float, float, int]] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.marks.append((time.perf_counter(), time.process_time(), int(state.num_input_tokens_seen)))

    result: dict[str, Any] = {"steps": steps, "batch_size": batch_size, "max_length": max_length, "seed": seed,
                              "rounds": rounds, "modes": list(modes)}
    totals = {m: [0, 0.0, 0.0] for m in modes}
    losses: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="clerk-bench-") as tmp:
        for r in range(rounds):
            for name in modes:
                precision, bf16, top = settings[name]
                timer = StepTimer()
                cfg = TrainConfig(sft=sft, model=model, out=str(Path(tmp) / f"{name}-{r}"), seed=seed,
                                  max_steps=steps + 1, batch_size=batch_size, max_length=max_length,
                                  precision=precision, bf16=bf16, save_steps=0, logging_steps=1, validation_loss=False,
                                  threads=threads, lora_dropout=0.0, lora_layers=top, snapshot_steps=0)
                print(f"clerk bench-train: {name}, round {r + 1}/{rounds} ({steps} timed steps + 1 warm-up)",
                      file=sys.stderr)
                run_training(cfg, extra_callbacks=[timer])
                (t0, c0, n0), (t1, c1, n1) = timer.marks[0], timer.marks[-1]
                totals[name][0] += n1 - n0
                totals[name][1] += t1 - t0
                totals[name][2] += c1 - c0
                if r == 0:
                    with (Path(cfg.out) / "train_log.csv").open(newline="") as handle:
                        losses[name] = [float(row["loss"]) for row in csv.DictReader(handle)]
    for name, (tokens, seconds, cpu) in totals.items():
        result[name] = {"tokens": tokens, "seconds": round(seconds, 3), "tok_per_s": tokens / seconds,
                        "cpu_seconds": round(cpu, 3), "tok_per_cpu_s": tokens / cpu, "losses": losses[name]}
    if "fp32" in modes:
        base = result["fp32"]
        result["ratio"] = {m: result[m]["tok_per_s"] / base["tok_per_s"] for m in modes}
        result["cpu_ratio"] = {m: result[m]["tok_per_cpu_s"] / base["tok_per_cpu_s"] for m in modes}
        result["loss_diff"] = {}
        for m in modes:
            diffs = [a - b for a, b in zip(result[m]["losses"], base["losses"])]
            result["loss_diff"][m] = {"mean": statistics.fmean(diffs), "mean_abs": statistics.fmean(map(abs, diffs)),
                                      "max_abs": max(map(abs, diffs))}
    result["threads"] = torch.get_num_threads()
    return result
