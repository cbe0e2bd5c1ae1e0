"""The training run: checkpoints and resumption, and :func:`run_training` (callbacks: :mod:`clerk.train.callbacks`).

OUT gets ``adapter_model.safetensors``, ``adapter_config.json``, ``train_log.csv`` (one row per
logged step), ``metrics.json`` (final losses, steps, tokens, seconds, resumes) and
``train_config.json`` (the resolved config, device, precision and package versions).
Checkpoints go to ``CKPT/checkpoint-<step>/`` (``--checkpoint-dir``, default ``OUT/checkpoints``;
only the newest is kept) and are deleted once training succeeds unless ``--keep-checkpoints``.
The workflow keeps them outside the rule's output (``resources/checkpoints/train/<seed>``):
Snakemake deletes an incomplete output directory before it reruns a killed job, which would
otherwise start training over. Each checkpoint also carries a copy of ``train_log.csv``, so the
log survives a deleted OUT. A checkpoint holds the optimizer,
scheduler and RNG states that transformers writes with ``torch.save``; resuming reads them back
with ``torch.load(weights_only=True)`` (tensors and plain containers only, no arbitrary
unpickling), and only from files this command wrote itself. Weights are safetensors throughout.

    clerk train --sft results/sft/137 --model resources/models/scratch --seed 137 --out /tmp/adapter --max-steps 30 --bf16 off
"""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.models.device import set_torch_threads
from clerk.train.callbacks import _COMPLETE_MARKER, LOG_COLUMNS, _callbacks, _snapshot_callback, _sort_set_fields
from clerk.train.config import TrainConfig, resolve_bf16, resolve_device, resolve_loss_head, resolve_train_precision
from clerk.train.data import load_sft, sft_trainer_class

#: Config keys that may change between a run and its resumption (they do not affect the result).
_RUNTIME_KEYS = ("threads", "keep_checkpoints", "out", "checkpoint_dir")


@dataclass
class TrainResult:
    """What :func:`run_training` produced. ``model`` is the trained PEFT model (in memory)."""

    out: Path
    steps: int
    metrics: dict[str, Any]
    resumed_from: int | None
    model: Any = field(repr=False, default=None)


# --------------------------------------------------------------------------- checkpoints and the log


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


def _prepare_resume(cfg: TrainConfig, out: Path, ckpt_dir: Path,
                    precision: str | None = None) -> tuple[int | None, Path | None, float]:
    """Find the checkpoint to resume from, or start clean; stamp ``ckpt_dir`` with this config.

    A rerun resumes only a run with the same result-defining config (all but ``_RUNTIME_KEYS``),
    and the same resolved ``precision`` (``auto`` resolves per machine).

    Returns:
        ``(resume_step, resume_path, seconds_offset)``: ``(None, None, 0.0)`` for a fresh start;
        the offset continues the ``train_log.csv`` clock after the kept rows.

    Raises:
        UserError: ``ckpt_dir`` holds checkpoints of a run with a different config.
    """
    out.mkdir(parents=True, exist_ok=True)
    stamp = ckpt_dir / "clerk_train_config.json"
    defining = {k: v for k, v in cfg.resolved().items() if k not in _RUNTIME_KEYS}
    if precision is not None:
        defining["precision"] = precision
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
    if not resume:
        return None, None, 0.0
    resume_step, resume_path = resume[-1]
    print(f"clerk train: resuming from checkpoint {resume_path} (step {resume_step})", file=sys.stderr)
    # The checkpoint's copy of the log wins: OUT may have been deleted since (Snakemake removes an
    # interrupted job's output), or hold rows past the checkpoint (those are redone).
    if (resume_path / "train_log.csv").is_file():
        shutil.copyfile(resume_path / "train_log.csv", out / "train_log.csv")
    return resume_step, resume_path, truncate_log(out / "train_log.csv", resume_step)


# --------------------------------------------------------------------------- model and trainer


def check_model_dir(model: str) -> Path:
    """The materialised base-model directory (config.json + safetensors), or a UserError."""
    model_dir = Path(model)
    if not (model_dir / "config.json").is_file() or not any(model_dir.glob("*.safetensors")):
        raise UserError(f"--model must be a materialised model directory (config.json + safetensors), got {model!r}")
    return model_dir


def _matches(name: str, wanted: str) -> bool:
    """PEFT's rule: a module matches a target given as its full dotted name or its last parts.

    >>> _matches("model.layers.0.self_attn.q_proj", "q_proj"), _matches("model.layers.0.self_attn.q_proj", "proj")
    (True, False)
    """
    return name == wanted or name.endswith("." + wanted)


def check_module_names(model, lora_targets, modules_to_save, model_dir: Path | str = "the base model") -> None:
    """Every LoRA target names a layer LoRA can adapt, and every module to save a module, of ``model``.

    Raises:
        UserError: naming the flag (and its config key), the unknown names and the valid ones.
    """
    import torch.nn as nn
    from transformers.pytorch_utils import Conv1D

    adaptable = (nn.Linear, nn.Embedding, nn.Conv1d, nn.Conv2d, Conv1D)  # what PEFT's LoRA wraps
    names = {name: module for name, module in model.named_modules() if name}
    checks = (("--lora-targets", "train.lora_targets", lora_targets,
               [n for n, m in names.items() if isinstance(m, adaptable)], "LoRA can adapt"),
              ("--modules-to-save", "train.modules_to_save", modules_to_save, list(names), "modules"))
    for flag, key, wanted, pool, what in checks:
        unknown = [w for w in wanted if not any(_matches(n, w) for n in pool)]
        if unknown:
            short = sorted({n.rsplit(".", 1)[-1] for n in pool} - {str(i) for i in range(len(names))})
            raise UserError(f"{flag} (config {key}): {', '.join(map(repr, unknown))} not found in {model_dir}; "
                            f"{what}: {', '.join(short)}")


def _build_model(cfg: TrainConfig, model_dir: Path, device: str, bf16: bool, precision: str = "fp32"):
    """Seed, load the base model and its tokenizer, and wrap the model with LoRA.

    With ``precision`` ``bf16-frozen`` the base model is loaded in bf16 once (no per-step casts of
    frozen weights, the tied LM head included) and the LoRA A/B matrices are fp32 (PEFT's
    ``autocast_adapter_dtype``; checked below): PEFT's LoRA Linear runs the frozen layer on the
    bf16 activations, casts its input to the adapter's dtype for ``B(A(x))`` and the sum back to
    bf16. The optimizer, built over the trainable (fp32) parameters, keeps fp32 state.

    Returns:
        ``(peft_model, tokenizer, weights_dtype)``; frozen weights are bf16 with ``bf16-frozen``,
        and on CUDA with ``bf16``.

    Raises:
        UserError: the tokenizer does not carry CLERK's chat template, or a LoRA target or module
            to save is not a module of the base model.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    from clerk.prompts import CHAT_TEMPLATE

    # Seed before anything random (LoRA A init, dropout).
    set_seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.chat_template != CHAT_TEMPLATE:
        raise UserError(f"{model_dir} does not carry CLERK's chat template; rematerialise it with `clerk materialize-model`")
    weights_dtype = torch.bfloat16 if (precision == "bf16-frozen" or (bf16 and device == "cuda")) else torch.float32
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=weights_dtype, use_safetensors=True)
    base.config.use_cache = False  # no KV cache while training
    check_module_names(base, cfg.lora_targets, cfg.modules_to_save, model_dir)
    lora_kwargs: dict[str, Any] = {}
    if cfg.modules_to_save and getattr(base.config, "tie_word_embeddings", False):
        lora_kwargs["ensure_weight_tying"] = True  # keep a tied lm_head/embedding pair tied
    lora_kwargs |= _top_layers(base, cfg.lora_layers)
    lora = LoraConfig(
        r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_targets), modules_to_save=list(cfg.modules_to_save) or None,
        bias="none", task_type="CAUSAL_LM", **lora_kwargs,
    )
    with warnings.catch_warnings():
        # PEFT 0.21 reads the attribute transformers 5.2x renamed; harmless, and not ours to fix.
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        model = get_peft_model(base, lora, autocast_adapter_dtype=True)
    wrong = [n for n, p in model.named_parameters() if p.requires_grad and p.dtype != torch.float32]
    if wrong:  # PEFT upcasts bf16 adapters to fp32; a version that stopped doing so must not train in bf16
        raise RuntimeError(f"trainable parameters not in fp32: {wrong[:3]}")
    return model, tokenizer, weights_dtype


def _top_layers(base, n: int) -> dict[str, Any]:
    """LoraConfig arguments that adapt the top ``n`` decoder layers only ({} for 0 = every layer).

    Nothing below the lowest adapted layer then needs a gradient, so autograd stops there: the
    step costs a full forward and a backward through ``n`` layers (gradient checkpointing is off,
    so no input is made to require a gradient).

    Raises:
        UserError: ``n`` exceeds the model's decoder layers.
    """
    if not n:
        return {}
    total = base.config.num_hidden_layers
    if n > total:
        raise UserError(f"--lora-layers (config train.lora_layers): {n} exceeds the model's {total} decoder layers")
    return {"layers_to_transform": list(range(total - n, total))}


def _sft_args(cfg: TrainConfig, ckpt_dir: Path, device: str, bf16: bool):
    """The ``SFTConfig``, with every TRL default that matters set explicitly.

    TRL 1.x defaults gradient checkpointing and bf16 to True: both are set explicitly.
    transformers 5.2x renamed gradient_checkpointing to activation_checkpointing (old name warns).
    """
    from trl import SFTConfig

    fields = {f.name for f in dataclasses.fields(SFTConfig)}
    checkpointing = "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"
    return SFTConfig(
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


# --------------------------------------------------------------------------- training


def _train(trainer, resume_path: Path | None, resume_step: int | None, evaluate: bool) -> dict[str, Any]:
    """Train (resuming from ``resume_path`` if given), then the validation loss if ``evaluate``."""
    start = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=str(resume_path) if resume_path else None)
    metrics: dict[str, Any] = {
        "train_loss": output.training_loss,
        "steps": trainer.state.global_step,
        "tokens_seen": int(trainer.state.num_input_tokens_seen),
        "seconds_this_run": round(time.perf_counter() - start, 2),
        "resumed_from_step": resume_step,
    }
    if evaluate:
        metrics["eval_loss"] = trainer.evaluate()["eval_loss"]
    return metrics


def _save(out: Path, trained, metrics: dict[str, Any], record: dict[str, Any]) -> None:
    """Adapter (safetensors), ``metrics.json``, then ``train_config.json`` (the sidecar goes last)."""
    trained.save_pretrained(out)
    _sort_set_fields(out, trained)
    (out / "README.md").unlink(missing_ok=True)  # PEFT's model-card stub, not ours
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    (out / "train_config.json").write_text(json.dumps(record, indent=2) + "\n")


def _run_record(cfg: TrainConfig, trainer, device: str, bf16: bool, loss_head: str, weights_dtype,
                model_dir: Path, precision: str = "fp32") -> dict[str, Any]:
    """The ``train_config.json`` record: resolved config, device, precision, sizes, versions."""
    import torch

    from clerk.models.device import bf16_units, numerics_record
    from clerk.models.materialize import _versions
    from clerk.provenance.manifest import code_version

    return {
        "config": cfg.resolved(),
        "device": device,
        "precision": precision,  # resolved: fp32 | bf16-frozen
        "bf16_units": torch.cuda.is_bf16_supported() if device == "cuda" else bf16_units()["available"],
        "bf16": bf16,
        "gradient_checkpointing": bool(trainer.args.gradient_checkpointing),
        "loss_head": loss_head,
        "weights_dtype": str(weights_dtype).removeprefix("torch."),
        "threads": torch.get_num_threads(),
        "trainable_params": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
        "base_model_source": _read_json(model_dir / "source.json"),
        "versions": _versions(),
        "numerics": numerics_record(),  # the CPU kernel pins in force (docs/DECISIONS.md)
        "code": code_version(),  # clerk version and git commit that trained this adapter
    }


def run_training(cfg: TrainConfig, extra_callbacks: list | None = None) -> TrainResult:
    """Train a LoRA adapter; resume from the newest complete checkpoint in the checkpoint directory.

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
        UserError: bad inputs, or checkpoints that come from a different config.
    """

    out = Path(cfg.out)
    ckpt_dir = Path(cfg.checkpoint_dir) if cfg.checkpoint_dir else out / "checkpoints"
    # 1. Inputs, device and precision; resume only a run with the same result-defining config.
    set_torch_threads(cfg.threads)
    device = resolve_device(cfg.device)
    bf16 = resolve_bf16(cfg.bf16, device)
    precision = resolve_train_precision(cfg.precision, device, cfg.modules_to_save)
    train_ds, eval_ds = load_sft(cfg.sft)
    model_dir = check_model_dir(cfg.model)
    resume_step, resume_path, seconds_offset = _prepare_resume(cfg, out, ckpt_dir, precision)
    # 2. The PEFT model.
    model, tokenizer, weights_dtype = _build_model(cfg, model_dir, device, bf16, precision)
    # 3. The trainer.
    args = _sft_args(cfg, ckpt_dir, device, bf16)
    loss_head = resolve_loss_head(cfg.loss_head, device)
    trainer = sft_trainer_class(loss_head)(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds if cfg.validation_loss else None,
        processing_class=tokenizer,
        callbacks=_callbacks(out / "train_log.csv", seconds_offset, [
            *(extra_callbacks or []),
            _snapshot_callback(cfg.snapshot_steps, ckpt_dir / "snapshots", cfg.batch_size * cfg.grad_accum),
        ]),
    )
    # 4. Train.
    metrics = _train(trainer, resume_path, resume_step, cfg.validation_loss and eval_ds is not None)
    # 5. Adapter, metrics, resolved config.
    _save(out, trainer.model, metrics, _run_record(cfg, trainer, device, bf16, loss_head, weights_dtype, model_dir,
                                                               precision))
    # 6. Snapshots (the learning curve) move into OUT; checkpoints only serve resumption.
    if (ckpt_dir / "snapshots").is_dir():
        shutil.rmtree(out / "snapshots", ignore_errors=True)
        shutil.copytree(ckpt_dir / "snapshots", out / "snapshots")
    if not cfg.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return TrainResult(out=out, steps=trainer.state.global_step, metrics=metrics, resumed_from=resume_step,
                       model=trainer.model)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None
