"""``clerk train`` and ``clerk bench-train``: flags map 1:1 onto :class:`~clerk.train.config.TrainConfig`.

    clerk train --sft results/sft/137 --model resources/models/smollm2-135m --seed 137 --out results/adapters/137
    clerk bench-train --model resources/models/smollm2-135m --sft results/sft/137 --steps 5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from clerk.models.device import PRECISIONS
from clerk.train.bench import MODES, bench_throughput
from clerk.train.config import BF16_MODES, LOSS_HEADS, TrainConfig
from clerk.train.trainer import run_training


def _csv_tuple(text: str) -> tuple[str, ...]:
    """Comma list -> tuple, empty items dropped.

    >>> _csv_tuple("q_proj, v_proj,")
    ('q_proj', 'v_proj')
    """
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _train_main(args: argparse.Namespace) -> None:
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    cfg = TrainConfig(**{k: v for k, v in vars(args).items() if k in names})
    result = run_training(cfg)
    print(f"clerk train: wrote {result.out} after {result.steps} steps: "
          + ", ".join(f"{k}={v}" for k, v in result.metrics.items()), file=sys.stderr)


def _bench_main(args: argparse.Namespace) -> None:
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
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


def register_cli(sub) -> None:
    """Add ``clerk train`` and ``clerk bench-train``."""
    _add_train_parser(sub)
    _add_bench_parser(sub)


def _add_train_parser(sub) -> None:
    """``clerk train``: inputs and outputs here, then the optimisation, LoRA and runtime groups."""
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
    _add_optimisation_args(p.add_argument_group("optimisation"), d)
    _add_lora_args(p.add_argument_group("LoRA"), d)
    _add_runtime_args(p.add_argument_group("runtime"), d)
    p.set_defaults(func=_train_main)


def _add_optimisation_args(g, d: TrainConfig) -> None:
    """Learning rate, schedule, batch and length flags (defaults from ``d``)."""
    g.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate (default: {d.lr})")
    g.add_argument("--epochs", type=float, default=d.epochs, help=f"epochs over train, used when --max-steps is -1 (default: {d.epochs})")
    g.add_argument("--max-steps", dest="max_steps", type=int, default=d.max_steps, help="optimizer steps; -1 = use --epochs (default: -1)")
    g.add_argument("--batch-size", dest="batch_size", type=int, default=d.batch_size, help=f"examples per step (default: {d.batch_size})")
    g.add_argument("--grad-accum", dest="grad_accum", type=int, default=d.grad_accum, help=f"steps accumulated per optimizer step (default: {d.grad_accum})")
    g.add_argument("--max-length", dest="max_length", type=int, default=d.max_length, help=f"max tokens per example; longer ones are truncated (default: {d.max_length})")
    g.add_argument("--warmup", type=float, default=d.warmup, help=f"LR warm-up: < 1 = fraction of steps, >= 1 = steps (default: {d.warmup})")
    g.add_argument("--scheduler", default=d.scheduler, help=f"transformers LR scheduler name (default: {d.scheduler})")
    g.add_argument("--weight-decay", dest="weight_decay", type=float, default=d.weight_decay, help=f"AdamW weight decay (default: {d.weight_decay})")


def _add_lora_args(g, d: TrainConfig) -> None:
    """LoRA rank, alpha, dropout and the adapted / fully trained modules."""
    g.add_argument("--lora-r", dest="lora_r", type=int, default=d.lora_r, help=f"LoRA rank (default: {d.lora_r})")
    g.add_argument("--lora-alpha", dest="lora_alpha", type=int, default=d.lora_alpha, help=f"LoRA alpha; scale = alpha / r (default: {d.lora_alpha})")
    g.add_argument("--lora-dropout", dest="lora_dropout", type=float, default=d.lora_dropout, help=f"dropout on the LoRA input (default: {d.lora_dropout})")
    g.add_argument("--lora-layers", dest="lora_layers", type=int, default=d.lora_layers,
                   help="adapt the top N decoder layers only; backward stops below them (default: 0 = every layer)")
    g.add_argument("--lora-targets", dest="lora_targets", type=_csv_tuple, default=d.lora_targets,
                   help=f"comma list of module names to adapt (default: {','.join(d.lora_targets)})")
    g.add_argument("--modules-to-save", dest="modules_to_save", type=_csv_tuple, default=d.modules_to_save,
                   help="comma list of modules trained in full and saved with the adapter, e.g. embed_tokens,lm_head "
                   "for scratch models (default: none)")


def _add_runtime_args(g, d: TrainConfig) -> None:
    """Checkpointing, logging, evaluation, precision, device and threads."""
    g.add_argument("--save-steps", dest="save_steps", type=int, default=d.save_steps, help=f"checkpoint every N steps; 0 = never, no resume (default: {d.save_steps})")
    g.add_argument("--logging-steps", dest="logging_steps", type=int, default=d.logging_steps, help=f"train_log.csv row every N steps (default: {d.logging_steps})")
    g.add_argument("--eval", action=argparse.BooleanOptionalAction, default=d.eval, help="validation loss at the end (default: on)")
    g.add_argument("--precision", choices=PRECISIONS, default=d.precision,
                   help="fp32, or bf16-frozen (frozen base weights bf16, LoRA adapters fp32); auto = bf16-frozen "
                   "where the device has bf16 units (AMX/AVX512-BF16 CPUs, CUDA), fp32 elsewhere (default: auto)")
    g.add_argument("--bf16", choices=BF16_MODES, default=d.bf16, help="bf16 autocast on top of --precision (and bf16 weights on CUDA); auto = where the hardware has it (default: off)")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device, help="training device (default: auto = cuda if available)")
    g.add_argument("--loss-head", dest="loss_head", choices=LOSS_HEADS, default=d.loss_head,
                   help="loss over full logits, or TRL's chunked fused LM head (less memory, slow on CPU); "
                   "auto = fused on CUDA, full on CPU (default: auto)")
    g.add_argument("--threads", type=int, default=d.threads, help="torch CPU threads; 0 = torch default (default: 0)")
    g.add_argument("--checkpoint-dir", dest="checkpoint_dir", default=d.checkpoint_dir, metavar="DIR",
                   help="where checkpoints go and a rerun resumes from; keep it outside a workflow's declared "
                   "outputs, which Snakemake deletes when it reruns an interrupted job (default: --out/checkpoints)")
    g.add_argument("--keep-checkpoints", dest="keep_checkpoints", action="store_true", help="keep the checkpoints after success (default: delete)")
    g.add_argument("--snapshot-steps", dest="snapshot_steps", type=int, default=d.snapshot_steps, metavar="N",
                   help="save the adapter every N steps into OUT/snapshots/step-N (a learning curve); 0 = none "
                   f"(default: {d.snapshot_steps})")


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
