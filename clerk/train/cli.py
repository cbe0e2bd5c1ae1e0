"""``clerk train`` and ``clerk bench-train``: flags map 1:1 onto :class:`~clerk.train.config.TrainConfig`.

    clerk train --sft results/sft/137 --model resources/models/smollm2-135m --seed 137 --out results/adapters/137
    clerk bench-train --model resources/models/smollm2-135m --sft results/sft/137 --steps 5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from clerk.atomic import check_out_file, write_text
from clerk.memory.choices import add_settings
from clerk.train.bench import MODES, bench_throughput
from clerk.train.config import LOSS_HEADS, TrainConfig, TrainSection, _csv_tuple
from clerk.train.trainer import run_training


def _train_main(args: argparse.Namespace) -> None:
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    cfg = TrainConfig(**{k: v for k, v in vars(args).items() if k in names})
    result = run_training(cfg)
    print(f"clerk train: wrote {result.out} after {result.steps} steps: "
          + ", ".join(f"{k}={v}" for k, v in result.metrics.items()), file=sys.stderr)


def _bench_main(args: argparse.Namespace) -> None:
    if args.json:
        check_out_file(args.json, "--json")
    result = bench_throughput(args.model, args.sft, args.steps, args.batch_size, args.max_length, args.seed,
                              args.threads, modes=args.modes, rounds=args.rounds)
    lines = ["| precision | tokens | wall s | tokens/s (wall) | CPU s | tokens/CPU-s | x fp32 (wall) | x fp32 (CPU) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in args.modes:
        r = result[name]
        ratio = (f"{result['ratio'][name]:.2f} | {result['cpu_ratio'][name]:.2f}" if "ratio" in result else "- | -")
        lines.append(f"| {name} | {r['tokens']} | {r['seconds']:.1f} | {r['tok_per_s']:.1f} | "
                     f"{r['cpu_seconds']:.1f} | {r['tok_per_cpu_s']:.1f} | {ratio} |")
    lines.append(f"\n{args.steps} steps x {args.rounds} round(s), batch {args.batch_size}, {result['threads']} threads")
    print("\n".join(lines))
    if args.json:
        write_text(args.json, json.dumps(result, indent=2) + "\n")


def register_cli(sub) -> None:
    """Add ``clerk train`` and ``clerk bench-train``."""
    _add_train_parser(sub)
    _add_bench_parser(sub)


def _add_train_parser(sub) -> None:
    """``clerk train``: inputs and outputs, the recipe (the ``train`` section's settings, derived
    from :class:`~clerk.train.config.TrainSection`), then the verb's own optimisation and runtime flags."""
    d = TrainConfig(sft="", model="", out="")
    p = sub.add_parser(
        "train",
        help="LoRA SFT (TRL SFTTrainer + PEFT) of a base model on the CLERK SFT dataset",
        description="Train a LoRA adapter with assistant-only loss. Writes adapter_model.safetensors, "
        "adapter_config.json, train_log.csv, metrics.json, train_config.json to --out; resumes from "
        "--checkpoint-dir (default --out/checkpoints) when rerun after an interruption; deletes checkpoints "
        "after success.",
    )
    # inputs / outputs
    p.add_argument("--sft", required=True, help="SFT DatasetDict directory (save_to_disk; train/validation, column messages)")
    p.add_argument("--model", required=True, help="materialised base-model directory (clerk materialize-model)")
    p.add_argument("--out", required=True, help="output directory for the adapter and its logs")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed for LoRA init, dropout and data order (default: {d.seed})")
    add_settings(p.add_argument_group("recipe (the config's train section)"), "train", TrainSection)
    _add_optimisation_args(p.add_argument_group("optimisation"), d)
    _add_runtime_args(p.add_argument_group("runtime"), d)
    p.set_defaults(func=_train_main)


def _add_optimisation_args(g, d: TrainConfig) -> None:
    """Warm-up, schedule and weight decay (defaults from ``d``)."""
    g.add_argument("--warmup", type=float, default=d.warmup, help=f"LR warm-up: < 1 = fraction of steps, >= 1 = steps (default: {d.warmup})")
    g.add_argument("--scheduler", default=d.scheduler, help=f"transformers LR scheduler name (default: {d.scheduler})")
    g.add_argument("--weight-decay", dest="weight_decay", type=float, default=d.weight_decay, help=f"AdamW weight decay (default: {d.weight_decay})")


def _add_runtime_args(g, d: TrainConfig) -> None:
    """Logging, device, loss head, threads and checkpoints."""
    g.add_argument("--logging-steps", dest="logging_steps", type=int, default=d.logging_steps, help=f"train_log.csv row every N steps (default: {d.logging_steps})")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device, help="training device (default: auto = cuda if available)")
    g.add_argument("--loss-head", dest="loss_head", choices=LOSS_HEADS, default=d.loss_head,
                   help="loss over full logits, or TRL's chunked fused LM head (less memory, slow on CPU); "
                   "auto = fused on CUDA, full on CPU (default: auto)")
    g.add_argument("--threads", type=int, default=d.threads, help="torch CPU threads; 0 = torch default (default: 0)")
    g.add_argument("--checkpoint-dir", dest="checkpoint_dir", default=d.checkpoint_dir, metavar="DIR",
                   help="where checkpoints go and a rerun resumes from; keep it outside a workflow's declared "
                   "outputs, which Snakemake deletes when it reruns an interrupted job (default: --out/checkpoints)")
    g.add_argument("--keep-checkpoints", dest="keep_checkpoints", action="store_true", help="keep the checkpoints after success (default: delete)")


def _add_bench_parser(sub) -> None:
    """``clerk bench-train``: training throughput per precision mode."""
    b = sub.add_parser(
        "bench-train",
        help="benchmark training throughput per precision mode (fp32, bf16-frozen, bf16-autocast)",
        description="Train --steps LoRA steps in each precision mode on the same batches and print "
        "tokens/s and the ratio to fp32 (consolidation quality of adapters: clerk learning-curve).",
    )
    b.add_argument("--model", required=True, help="materialised base-model directory")
    b.add_argument("--sft", required=True, help="SFT DatasetDict directory")
    b.add_argument("--steps", type=int, default=5, help="timed optimizer steps per precision, plus 1 warm-up (default: 5)")
    b.add_argument("--batch-size", dest="batch_size", type=int, default=4, help="examples per step (default: 4)")
    b.add_argument("--max-length", dest="max_length", type=int, default=1024, help="max tokens per example (default: 1024)")
    b.add_argument("--seed", type=int, default=0, help="seed, so both precisions see the same batches (default: 0)")
    b.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 = torch default (default: 0)")
    b.add_argument("--modes", type=_csv_tuple, default=tuple(MODES),
                   help=f"comma list of precision modes, each optionally with -topN (LoRA on the top N layers only), timed in turn (default: {','.join(MODES)})")
    b.add_argument("--rounds", type=int, default=1, help="rounds of the modes in turn, A B A B (default: 1)")
    b.add_argument("--json", help="also write the result as JSON to this file")
    b.set_defaults(func=_bench_main)
