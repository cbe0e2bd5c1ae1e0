"""Benchmark of ``clerk bench-train``: fp32 vs bf16-autocast training throughput on the same batches.
(Greedy consolidation quality of adapters is ``clerk learning-curve``, on validation personas.)

    clerk bench-train --model resources/models/smollm2-135m --sft results/sft/137 --steps 5
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
