"""LoRA SFT of a base model on the CLERK chat dataset (TRL ``SFTTrainer`` + PEFT), and its benchmark.

SPEC §5. Loss on assistant tokens only (``assistant_only_loss``: the CLERK chat template marks the
assistant turn with ``{% generation %}``). Deterministic on CPU given ``--seed``; resumable from
its last checkpoint; the same code runs on CPU (fp32 weights, optional bf16 autocast) and CUDA
(bf16 weights, LoRA weights in fp32).

OUT gets ``adapter_model.safetensors``, ``adapter_config.json``, ``train_log.csv`` (one row per
logged step), ``metrics.json`` (final losses, steps, tokens, seconds, resumes) and
``train_config.json`` (the resolved config, device, precision and package versions).
Checkpoints go to ``OUT/checkpoints/checkpoint-<step>/`` (only the newest is kept) and are
deleted once training succeeds unless ``--keep-checkpoints``. A checkpoint holds the optimizer,
scheduler and RNG states that transformers writes with ``torch.save``; resuming reads them back
with ``torch.load(weights_only=True)`` (tensors and plain containers only, no arbitrary
unpickling), and only from files this command wrote itself. Weights are safetensors throughout.

Full size (default profile) and a tiny CPU run:

    clerk train --sft results/sft/137 --model resources/models/smollm2-135m --seed 137 --out results/adapters/137
    clerk train --sft results/sft/137 --model resources/models/scratch --seed 137 --out /tmp/adapter --max-steps 30 --bf16 off

Benchmarks (fp32 vs bf16 autocast throughput; greedy consolidation quality):

    clerk bench-train --model resources/models/smollm2-135m --sft results/sft/137 --steps 5
    clerk bench-train --consolidation --model resources/models/smollm2-135m --adapter results/adapters/137 \\
        --timelines results/data/137/test.jsonl --sessions 40
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clerk.errors import UserError

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BF16_MODES = ("auto", "on", "off")
LOSS_HEADS = ("auto", "full", "fused")
LOG_COLUMNS = ("step", "loss", "lr", "tokens_seen", "seconds")
#: Written into a checkpoint directory once the Trainer has finished saving it; only marked
#: checkpoints are resumed from, so a kill in the middle of a save is harmless.
_COMPLETE_MARKER = "clerk_complete"
#: Config keys that may change between a run and its resumption (they do not affect the result).
_RUNTIME_KEYS = ("threads", "keep_checkpoints", "out")


@dataclass
class TrainConfig:
    """Every knob of one LoRA SFT run (CLI flags map 1:1; written to ``train_config.json``)."""

    sft: str
    model: str
    out: str
    seed: int = 137
    # optimisation
    lr: float = 2e-4  # peak learning rate
    epochs: float = 1.0  # used when max_steps == -1
    max_steps: int = -1  # optimizer steps; -1 = run `epochs`
    batch_size: int = 4  # examples per device step
    grad_accum: int = 1  # steps accumulated per optimizer step
    max_length: int = 2048  # tokens; longer examples are truncated at the end
    warmup: float = 0.05  # < 1: fraction of steps; >= 1: steps
    scheduler: str = "cosine"
    weight_decay: float = 0.0
    # LoRA
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: tuple[str, ...] = DEFAULT_TARGETS
    modules_to_save: tuple[str, ...] = ()  # fully trained extra modules, e.g. embed_tokens,lm_head (scratch)
    # bookkeeping
    save_steps: int = 50  # checkpoint every N optimizer steps; 0 = never (no resume)
    logging_steps: int = 5
    eval: bool = True  # validation loss once at the end, when a validation split exists
    bf16: str = "auto"  # auto = on for CUDA with bf16 and CPUs with native bf16 (AVX512-BF16/AMX)
    loss_head: str = "auto"  # full | fused (TRL's chunked LM head) | auto = fused on CUDA, full on CPU
    device: str = "auto"  # auto | cpu | cuda
    threads: int = 0  # torch intra-op threads; 0 = torch's default
    keep_checkpoints: bool = False

    def __post_init__(self) -> None:
        self.lora_targets = tuple(self.lora_targets)
        self.modules_to_save = tuple(self.modules_to_save)
        checks = [
            ("lr", self.lr > 0, "> 0"),
            ("batch_size", self.batch_size >= 1, ">= 1"),
            ("grad_accum", self.grad_accum >= 1, ">= 1"),
            ("max_length", self.max_length >= 16, ">= 16"),
            ("warmup", self.warmup >= 0, ">= 0"),
            ("lora_r", self.lora_r >= 1, ">= 1"),
            ("lora_alpha", self.lora_alpha >= 1, ">= 1"),
            ("lora_dropout", 0 <= self.lora_dropout < 1, "in [0, 1)"),
            ("save_steps", self.save_steps >= 0, ">= 0"),
            ("logging_steps", self.logging_steps >= 1, ">= 1"),
            ("threads", self.threads >= 0, ">= 0"),
            ("max_steps", self.max_steps == -1 or self.max_steps >= 1, "-1 or >= 1"),
            ("epochs", self.max_steps != -1 or self.epochs > 0, "> 0 when max_steps is -1"),
            ("bf16", self.bf16 in BF16_MODES, f"one of {', '.join(BF16_MODES)}"),
            ("device", self.device in ("auto", "cpu", "cuda"), "one of auto, cpu, cuda"),
            ("loss_head", self.loss_head in LOSS_HEADS, f"one of {', '.join(LOSS_HEADS)}"),
            ("lora_targets", bool(self.lora_targets), "at least one module name"),
        ]
        for name, ok, expected in checks:
            if not ok:
                raise UserError(f"--{name.replace('_', '-')} must be {expected}, got {getattr(self, name)!r}")

    def resolved(self) -> dict[str, Any]:
        """The config as JSON-ready data (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


@dataclass
class TrainResult:
    """What :func:`run_training` produced. ``model`` is the trained PEFT model (in memory)."""

    out: Path
    steps: int
    metrics: dict[str, Any]
    resumed_from: int | None
    model: Any = field(repr=False, default=None)


# --------------------------------------------------------------------------- small helpers


def cpu_has_native_bf16() -> bool:
    """True when oneDNN reports native bf16 (AVX512-BF16 or AMX): autocast then speeds training up."""
    import torch

    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_device(device: str) -> str:
    """``auto`` -> :func:`clerk.models.device.pick_device`; ``cuda`` without CUDA is a UserError."""
    import torch

    from clerk.models.device import pick_device

    if device == "auto":
        return pick_device()
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda was requested but no CUDA device is available")
    return device


def resolve_bf16(mode: str, device: str) -> bool:
    """Whether to train with bf16 (weights on CUDA, autocast on CPU) for ``mode`` on ``device``."""
    import torch

    if mode == "off":
        return False
    supported = torch.cuda.is_bf16_supported() if device == "cuda" else cpu_has_native_bf16()
    if mode == "on" and device == "cuda" and not supported:
        raise UserError("--bf16 on was requested but this CUDA device has no bf16 support")
    # On a CPU without native bf16, "on" still works (emulated, slower); "auto" avoids it.
    return True if mode == "on" else supported


def supervised_lm_loss(model, inputs: dict, num_items_in_batch=None):
    """Next-token cross-entropy that runs the LM head only where a label is supervised.

    The same loss as the model's own cross-entropy over full logits (sum over supervised tokens,
    divided by ``num_items_in_batch`` when given, else by their count), but the vocabulary
    projection and the softmax are computed for the supervised positions only: with
    assistant-only loss that is about a tenth of the tokens of a CLERK example, and on CPU the
    full ``(batch, length, 49152)`` logits cost a quarter of the step and most of its memory.
    Uses the ``logits_to_keep`` boolean mask of transformers' causal LMs.
    """
    import torch
    import torch.nn.functional as F

    inputs = dict(inputs)
    labels = inputs.pop("labels")
    inputs.pop("num_items_in_batch", None)
    targets = labels[:, 1:]
    keep = torch.zeros_like(labels, dtype=torch.bool)
    keep[:, :-1] = targets != -100
    logits = model(**inputs, use_cache=False, logits_to_keep=keep).logits  # (n_supervised, vocab)
    loss = F.cross_entropy(logits.float(), targets[keep[:, :-1]], reduction="sum")
    denominator = num_items_in_batch if num_items_in_batch is not None else keep.sum().clamp(min=1)
    if isinstance(denominator, torch.Tensor):
        denominator = denominator.to(loss.device)
    return loss / denominator


def sft_trainer_class(loss_head: str):
    """The trainer class for a resolved ``loss_head`` (``full`` or ``fused``).

    TRL 1.x replaces the LM head by a chunked "fused" kernel that scores only the supervised
    positions without materialising the logits: a memory win on GPUs with large vocabularies,
    but on CPU its fp32 tiles cost more than the whole backbone step (SmolLM2, batch 4x400
    tokens: ~15 s of ~20 s per step) and cancel the bf16 speed-up. ``full`` keeps everything else
    of ``SFTTrainer`` (tokenisation, assistant masks, collator, loop) and takes the loss from the
    model's plain LM head, run at the supervised positions only (:func:`supervised_lm_loss`; the
    same value as the cross-entropy over full logits, computed under autocast, reduced in fp32).
    It skips TRL's entropy / token-accuracy metrics.
    """
    from trl import SFTTrainer

    if loss_head == "fused":
        return SFTTrainer

    class FullLogitsSFTTrainer(SFTTrainer):
        """SFTTrainer whose loss is the plain LM head's cross-entropy at supervised positions (see above)."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = supervised_lm_loss(model, inputs, num_items_in_batch)
            # Evaluation asks for outputs too; with prediction_loss_only only the loss is read.
            return (loss, {}) if return_outputs else loss

    return FullLogitsSFTTrainer


def complete_checkpoints(ckpt_dir: str | Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of every fully written checkpoint under ``ckpt_dir``, by step."""
    found = []
    for path in Path(ckpt_dir).glob("checkpoint-*"):
        step = path.name.split("-", 1)[1]
        if step.isdigit() and (path / _COMPLETE_MARKER).is_file() and (path / "trainer_state.json").is_file():
            found.append((int(step), path))
    return sorted(found)


def truncate_log(path: str | Path, last_step: int) -> float:
    """Drop ``train_log.csv`` rows after ``last_step`` (they are redone on resume).

    Returns:
        The ``seconds`` of the last kept row (0.0 if none), so the resumed run continues the clock.
    """
    path = Path(path)
    if not path.is_file():
        return 0.0
    with path.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if int(row["step"]) <= last_step]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LOG_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return float(rows[-1]["seconds"]) if rows else 0.0


def _versions() -> dict[str, str]:
    from clerk.models.materialize import _versions as model_versions

    return model_versions()


def load_sft(path: str | Path):
    """Load the SFT ``DatasetDict`` (in memory, so no cache files land in the input directory).

    Returns:
        ``(train, validation_or_None)``, each with only the ``messages`` column.

    Raises:
        UserError: not a saved DatasetDict, no ``train`` split, or no ``messages`` column.
    """
    import datasets

    try:
        data = datasets.load_from_disk(str(path), keep_in_memory=True)
    except (FileNotFoundError, ValueError) as err:
        raise UserError(f"--sft must be a DatasetDict saved with save_to_disk, got {str(path)!r} ({err})") from None
    if not isinstance(data, datasets.DatasetDict) or "train" not in data:
        raise UserError(f"--sft must hold a DatasetDict with a 'train' split, got {str(path)!r} ({type(data).__name__})")
    out = []
    for split in ("train", "validation"):
        if split not in data or len(data[split]) == 0:
            out.append(None)
            continue
        if "messages" not in data[split].column_names:
            raise UserError(f"--sft split {split!r} needs a 'messages' column, got {data[split].column_names}")
        out.append(data[split].select_columns(["messages"]))
    if out[0] is None:
        raise UserError(f"--sft split 'train' is empty in {str(path)!r}")
    return out[0], out[1]


# --------------------------------------------------------------------------- callbacks


def _callbacks(log_path: Path, seconds_offset: float, extra: list | None):
    """The CSV logger and the checkpoint-complete marker, as TrainerCallbacks."""
    from transformers import TrainerCallback

    class CsvLog(TrainerCallback):
        """Append one ``train_log.csv`` row per training log event (flushed, so a kill keeps them)."""

        def __init__(self) -> None:
            self.start = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            new = not log_path.is_file()
            with log_path.open("a", newline="") as handle:
                writer = csv.writer(handle)
                if new:
                    writer.writerow(LOG_COLUMNS)
                writer.writerow([
                    state.global_step, f"{logs['loss']:.6f}", f"{logs.get('learning_rate', 0.0):.6e}",
                    int(logs.get("num_input_tokens_seen", state.num_input_tokens_seen)),
                    f"{seconds_offset + time.perf_counter() - self.start:.2f}",
                ])

    class MarkComplete(TrainerCallback):
        """Mark a checkpoint as fully written (on_save runs after the Trainer finished saving it)."""

        def on_save(self, args, state, control, **kwargs):
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if ckpt.is_dir():
                (ckpt / _COMPLETE_MARKER).write_text(f"{state.global_step}\n")

    return [CsvLog(), MarkComplete(), *(extra or [])]


# --------------------------------------------------------------------------- training


def run_training(cfg: TrainConfig, extra_callbacks: list | None = None) -> TrainResult:
    """Train a LoRA adapter; resume from the newest complete checkpoint in ``OUT/checkpoints``.

    Steps: 1. resolve device/precision and check a resumable state matches this config;
    2. seed, load base model + tokenizer, wrap with LoRA; 3. SFTTrainer with every TRL default
    that matters set explicitly; 4. train (resuming if possible); 5. save adapter, metrics, config;
    6. drop checkpoints.

    Args:
        cfg: the run's config.
        extra_callbacks: more ``TrainerCallback`` objects (the benchmark's step timer).

    Returns:
        A :class:`TrainResult` (with the trained PEFT model in memory).

    Raises:
        UserError: bad inputs, or checkpoints in OUT that come from a different config.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig

    from clerk.prompts import CHAT_TEMPLATE

    out = Path(cfg.out)
    ckpt_dir = out / "checkpoints"
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    bf16 = resolve_bf16(cfg.bf16, device)
    train_ds, eval_ds = load_sft(cfg.sft)
    model_dir = Path(cfg.model)
    if not (model_dir / "config.json").is_file() or not any(model_dir.glob("*.safetensors")):
        raise UserError(f"--model must be a materialised model directory (config.json + safetensors), got {cfg.model!r}")

    # 1. A rerun resumes only a run with the same result-defining config.
    out.mkdir(parents=True, exist_ok=True)
    stamp = ckpt_dir / "clerk_train_config.json"
    defining = {k: v for k, v in cfg.resolved().items() if k not in _RUNTIME_KEYS}
    resume = complete_checkpoints(ckpt_dir)
    if resume:
        previous = json.loads(stamp.read_text()) if stamp.is_file() else None
        if previous != defining:
            raise UserError(
                f"{ckpt_dir} holds checkpoints of a run with a different config; rerun with the same flags "
                f"or delete {ckpt_dir} to start over"
            )
    else:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
        (out / "train_log.csv").unlink(missing_ok=True)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(defining, indent=2) + "\n")
    resume_step, resume_path = resume[-1] if resume else (None, None)
    seconds_offset = 0.0
    if resume_path is not None:
        print(f"clerk train: resuming from checkpoint {resume_path} (step {resume_step})", file=sys.stderr)
        seconds_offset = truncate_log(out / "train_log.csv", resume_step)

    # 2. Seed before anything random (LoRA A init, dropout), then build the PEFT model.
    set_seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.chat_template != CHAT_TEMPLATE:
        raise UserError(f"{model_dir} does not carry CLERK's chat template; rematerialise it with `clerk materialize-model`")
    weights_dtype = torch.bfloat16 if (bf16 and device == "cuda") else torch.float32
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=weights_dtype, use_safetensors=True)
    base.config.use_cache = False  # no KV cache while training
    lora_kwargs: dict[str, Any] = {}
    if cfg.modules_to_save and getattr(base.config, "tie_word_embeddings", False):
        lora_kwargs["ensure_weight_tying"] = True  # keep a tied lm_head/embedding pair tied
    lora = LoraConfig(
        r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_targets), modules_to_save=list(cfg.modules_to_save) or None,
        bias="none", task_type="CAUSAL_LM", **lora_kwargs,
    )
    with warnings.catch_warnings():
        # PEFT 0.21 reads the attribute transformers 5.2x renamed; harmless, and not ours to fix.
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        model = get_peft_model(base, lora)

    # 3. TRL 1.x defaults gradient checkpointing and bf16 to True: both are set explicitly.
    # transformers 5.2x renamed gradient_checkpointing to activation_checkpointing (old name warns).
    fields = {f.name for f in dataclasses.fields(SFTConfig)}
    checkpointing = "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"
    args = SFTConfig(
        **{checkpointing: False},
        output_dir=str(ckpt_dir),
        seed=cfg.seed,
        data_seed=cfg.seed,
        learning_rate=cfg.lr,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        warmup_steps=cfg.warmup,
        lr_scheduler_type=cfg.scheduler,
        weight_decay=cfg.weight_decay,
        max_length=cfg.max_length,
        assistant_only_loss=True,
        packing=False,
        bf16=bf16,
        fp16=False,
        use_cpu=device == "cpu",
        report_to="none",
        logging_strategy="steps",
        logging_steps=cfg.logging_steps,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        save_total_limit=1,
        eval_strategy="no",
        prediction_loss_only=True,  # the validation pass reads the loss only, never the logits
        include_num_input_tokens_seen="non_padding",
        dataloader_num_workers=0,
        disable_tqdm=False,
    )
    loss_head = cfg.loss_head if cfg.loss_head != "auto" else ("fused" if device == "cuda" else "full")
    trainer = sft_trainer_class(loss_head)(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds if cfg.eval else None,
        processing_class=tokenizer,
        callbacks=_callbacks(out / "train_log.csv", seconds_offset, extra_callbacks),
    )

    # 4. Train.
    start = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=str(resume_path) if resume_path else None)
    metrics: dict[str, Any] = {
        "train_loss": output.training_loss,
        "steps": trainer.state.global_step,
        "tokens_seen": int(trainer.state.num_input_tokens_seen),
        "seconds_this_run": round(time.perf_counter() - start, 2),
        "resumed_from_step": resume_step,
    }
    if cfg.eval and eval_ds is not None:
        metrics["eval_loss"] = trainer.evaluate()["eval_loss"]

    # 5. Adapter (safetensors), metrics, resolved config; the config sidecar is written last.
    trained = trainer.model
    trained.save_pretrained(out)
    (out / "README.md").unlink(missing_ok=True)  # PEFT's model-card stub, not ours
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    record = {
        "config": cfg.resolved(),
        "device": device,
        "bf16": bf16,
        "gradient_checkpointing": bool(trainer.args.gradient_checkpointing),
        "loss_head": loss_head,
        "weights_dtype": str(weights_dtype).removeprefix("torch."),
        "threads": torch.get_num_threads(),
        "trainable_params": sum(p.numel() for p in trained.parameters() if p.requires_grad),
        "base_model_source": _read_json(model_dir / "source.json"),
        "versions": _versions(),
    }
    (out / "train_config.json").write_text(json.dumps(record, indent=2) + "\n")

    # 6. Checkpoints only serve resumption.
    if not cfg.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return TrainResult(out=out, steps=trainer.state.global_step, metrics=metrics, resumed_from=resume_step,
                       model=trained)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


# --------------------------------------------------------------------------- benchmarks


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


# --------------------------------------------------------------------------- CLI


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
    if args.consolidation:
        if not args.timelines:
            raise UserError("bench-train --consolidation needs --timelines FILE (held-out test timelines)")
        result = bench_consolidation(args.model, args.adapter, args.timelines, args.sessions,
                                     args.max_new_tokens, args.gen_batch_size, args.threads)
        lines = [f"sessions: {result['sessions']}", f"parse rate: {result['parse_rate']:.3f}",
                 f"op precision/recall/F1 (micro, tp={result['tp']} fp={result['fp']} fn={result['fn']}): "
                 f"{result['precision']:.3f} / "
                 f"{result['recall']:.3f} / {result['f1']:.3f}", f"generation: {result['generate_seconds']} s"]
    else:
        if not args.sft:
            raise UserError("bench-train needs --sft DIR (an SFT DatasetDict) unless --consolidation is given")
        result = bench_throughput(args.model, args.sft, args.steps, args.batch_size, args.max_length,
                                  args.seed, args.threads)
        lines = ["| precision | tokens | wall s | tokens/s (wall) | CPU s | tokens/CPU-s |",
                 "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for name in ("fp32", "bf16"):
            r = result[name]
            lines.append(f"| {name} | {r['tokens']} | {r['seconds']:.1f} | {r['tok_per_s']:.1f} | "
                         f"{r['cpu_seconds']:.1f} | {r['tok_per_cpu_s']:.1f} |")
        lines.append(f"\nbf16 / fp32 throughput ratio: {result['ratio']:.2f}x wall, {result['cpu_ratio']:.2f}x CPU time "
                     f"({args.steps} steps, batch {args.batch_size}, {result['threads']} threads)")
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


def register_cli(sub) -> None:
    """Add ``clerk train`` and ``clerk bench-train``."""
    d = TrainConfig(sft="", model="", out="")
    p = sub.add_parser(
        "train",
        help="LoRA SFT (TRL SFTTrainer + PEFT) of a base model on the CLERK SFT dataset",
        description="Train a LoRA adapter with assistant-only loss. Writes adapter_model.safetensors, "
        "adapter_config.json, train_log.csv, metrics.json, train_config.json to --out; resumes from "
        "--out/checkpoints when rerun after an interruption; deletes checkpoints after success.",
    )
    # inputs / outputs
    p.add_argument("--sft", required=True, help="SFT DatasetDict directory (save_to_disk; train/validation, column messages)")
    p.add_argument("--model", required=True, help="materialised base-model directory (clerk materialize-model)")
    p.add_argument("--out", required=True, help="output directory for the adapter and its logs")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed for LoRA init, dropout and data order (default: {d.seed})")
    # optimisation
    g = p.add_argument_group("optimisation")
    g.add_argument("--lr", type=float, default=d.lr, help=f"peak learning rate (default: {d.lr})")
    g.add_argument("--epochs", type=float, default=d.epochs, help=f"epochs over train, used when --max-steps is -1 (default: {d.epochs})")
    g.add_argument("--max-steps", dest="max_steps", type=int, default=d.max_steps, help="optimizer steps; -1 = use --epochs (default: -1)")
    g.add_argument("--batch-size", dest="batch_size", type=int, default=d.batch_size, help=f"examples per step (default: {d.batch_size})")
    g.add_argument("--grad-accum", dest="grad_accum", type=int, default=d.grad_accum, help=f"steps accumulated per optimizer step (default: {d.grad_accum})")
    g.add_argument("--max-length", dest="max_length", type=int, default=d.max_length, help=f"max tokens per example; longer ones are truncated (default: {d.max_length})")
    g.add_argument("--warmup", type=float, default=d.warmup, help=f"LR warm-up: < 1 = fraction of steps, >= 1 = steps (default: {d.warmup})")
    g.add_argument("--scheduler", default=d.scheduler, help=f"transformers LR scheduler name (default: {d.scheduler})")
    g.add_argument("--weight-decay", dest="weight_decay", type=float, default=d.weight_decay, help=f"AdamW weight decay (default: {d.weight_decay})")
    # LoRA
    g = p.add_argument_group("LoRA")
    g.add_argument("--lora-r", dest="lora_r", type=int, default=d.lora_r, help=f"LoRA rank (default: {d.lora_r})")
    g.add_argument("--lora-alpha", dest="lora_alpha", type=int, default=d.lora_alpha, help=f"LoRA alpha; scale = alpha / r (default: {d.lora_alpha})")
    g.add_argument("--lora-dropout", dest="lora_dropout", type=float, default=d.lora_dropout, help=f"dropout on the LoRA input (default: {d.lora_dropout})")
    g.add_argument("--lora-targets", dest="lora_targets", type=_csv_tuple, default=d.lora_targets,
                   help=f"comma list of module names to adapt (default: {','.join(d.lora_targets)})")
    g.add_argument("--modules-to-save", dest="modules_to_save", type=_csv_tuple, default=d.modules_to_save,
                   help="comma list of modules trained in full and saved with the adapter, e.g. embed_tokens,lm_head "
                   "for scratch models (default: none)")
    # runtime and bookkeeping
    g = p.add_argument_group("runtime")
    g.add_argument("--save-steps", dest="save_steps", type=int, default=d.save_steps, help=f"checkpoint every N steps; 0 = never, no resume (default: {d.save_steps})")
    g.add_argument("--logging-steps", dest="logging_steps", type=int, default=d.logging_steps, help=f"train_log.csv row every N steps (default: {d.logging_steps})")
    g.add_argument("--eval", action=argparse.BooleanOptionalAction, default=d.eval, help="validation loss at the end (default: on)")
    g.add_argument("--bf16", choices=BF16_MODES, default=d.bf16, help="bf16: CUDA weights / CPU autocast; auto = where the hardware has it (default: auto)")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device, help="training device (default: auto = cuda if available)")
    g.add_argument("--loss-head", dest="loss_head", choices=LOSS_HEADS, default=d.loss_head,
                   help="loss over full logits, or TRL's chunked fused LM head (less memory, slow on CPU); "
                   "auto = fused on CUDA, full on CPU (default: auto)")
    g.add_argument("--threads", type=int, default=d.threads, help="torch CPU threads; 0 = torch default (default: 0)")
    g.add_argument("--keep-checkpoints", dest="keep_checkpoints", action="store_true", help="keep --out/checkpoints after success (default: delete)")
    p.set_defaults(func=_train_main)

    b = sub.add_parser(
        "bench-train",
        help="benchmark training throughput (fp32 vs bf16 autocast) or greedy consolidation quality",
        description="Default: train --steps LoRA steps in fp32 and with bf16 autocast on the same batches and print "
        "tokens/s and the ratio. With --consolidation: greedy-decode programs for held-out sessions and report "
        "parse rate and op precision/recall/F1.",
    )
    b.add_argument("--model", required=True, help="materialised base-model directory")
    b.add_argument("--sft", help="SFT DatasetDict directory (throughput mode)")
    b.add_argument("--steps", type=int, default=5, help="timed optimizer steps per precision, plus 1 warm-up (default: 5)")
    b.add_argument("--batch-size", dest="batch_size", type=int, default=4, help="examples per step (default: 4)")
    b.add_argument("--max-length", dest="max_length", type=int, default=1024, help="max tokens per example (default: 1024)")
    b.add_argument("--seed", type=int, default=0, help="seed, so both precisions see the same batches (default: 0)")
    b.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 = torch default (default: 0)")
    b.add_argument("--consolidation", action="store_true", help="measure consolidation quality instead of throughput")
    b.add_argument("--adapter", help="LoRA adapter directory (clerk train --out); none = the base model")
    b.add_argument("--timelines", help="held-out (test) timelines JSON lines (consolidation mode)")
    b.add_argument("--sessions", type=int, default=40, help="held-out sessions to decode, in file order (default: 40)")
    b.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=256, help="generation cap per session, tokens (default: 256)")
    b.add_argument("--gen-batch-size", dest="gen_batch_size", type=int, default=8, help="prompts per generation batch (default: 8)")
    b.add_argument("--json", help="also write the result as JSON to this file")
    b.set_defaults(func=_bench_main)
