"""The knobs of one LoRA SFT run (:class:`TrainConfig`) and how device and precision are resolved.

CLI flags of ``clerk train`` map 1:1 onto :class:`TrainConfig` fields; the resolved config is
written to ``OUT/train_config.json``. ``auto`` device, precision and bf16 modes are resolved here
against the hardware (CUDA when present; bf16 frozen weights where the device has bf16 units).

    python -c "from clerk.train.config import TrainConfig; print(TrainConfig(sft='s', model='m', out='o').resolved())"
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from clerk.errors import UserError
from clerk.models.device import PRECISIONS

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BF16_MODES = ("auto", "on", "off")
LOSS_HEADS = ("auto", "full", "fused")


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
    # LoRA on the top N decoder layers only (0 = every layer): backward then stops at the lowest
    # adapted layer, so a step costs a full forward and a backward through N layers
    lora_layers: int = 0
    # bookkeeping
    save_steps: int = 50  # checkpoint every N optimizer steps; 0 = never (no resume)
    logging_steps: int = 5
    eval: bool = True  # validation loss once at the end, when a validation split exists
    # auto | fp32 | bf16-frozen (frozen base weights bf16, LoRA adapters and optimizer state fp32);
    # auto = bf16-frozen where the device has bf16 units, fp32 elsewhere (clerk.models.device)
    precision: str = "auto"
    bf16: str = "off"  # autocast on top (and bf16 weights on CUDA); auto = where the hardware has bf16
    loss_head: str = "auto"  # full | fused (TRL's chunked LM head) | auto = fused on CUDA, full on CPU
    device: str = "auto"  # auto | cpu | cuda
    threads: int = 0  # torch intra-op threads; 0 = torch's default
    keep_checkpoints: bool = False
    checkpoint_dir: str = ""  # checkpoints for resumption; "" = OUT/checkpoints
    snapshot_steps: int = 0  # adapter snapshots every N optimizer steps (learning curve); 0 = none

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
            ("lora_layers", self.lora_layers >= 0, ">= 0 (0 = every layer)"),
            ("save_steps", self.save_steps >= 0, ">= 0"),
            ("snapshot_steps", self.snapshot_steps >= 0, ">= 0"),
            ("logging_steps", self.logging_steps >= 1, ">= 1"),
            ("threads", self.threads >= 0, ">= 0"),
            ("max_steps", self.max_steps == -1 or self.max_steps >= 1, "-1 or >= 1"),
            ("epochs", self.max_steps != -1 or self.epochs > 0, "> 0 when max_steps is -1"),
            ("bf16", self.bf16 in BF16_MODES, f"one of {', '.join(BF16_MODES)}"),
            ("precision", self.precision in PRECISIONS, f"one of {', '.join(PRECISIONS)}"),
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


def resolve_train_precision(precision: str, device: str, modules_to_save: tuple[str, ...] = ()) -> str:
    """The precision a run trains in: :func:`clerk.models.device.resolve_precision`, except that
    ``auto`` stays ``fp32`` when whole modules are trained (``modules_to_save``: a bf16 copy of the
    tied embedding / LM head would be trained in bf16, whose updates round away).

    Raises:
        UserError: ``bf16-frozen`` asked for together with ``modules_to_save``.
    """
    from clerk.models.device import resolve_precision

    if modules_to_save:
        if precision == "bf16-frozen":
            raise UserError("--precision bf16-frozen trains LoRA adapters only; with --modules-to-save "
                            f"({', '.join(modules_to_save)}) use --precision fp32 (or auto)")
        return "fp32"
    return resolve_precision(precision, device)


def resolve_loss_head(loss_head: str, device: str) -> str:
    """``auto`` -> ``fused`` on CUDA, ``full`` elsewhere (see :func:`clerk.train.data.sft_trainer_class`).

    >>> resolve_loss_head("auto", "cpu"), resolve_loss_head("auto", "cuda"), resolve_loss_head("fused", "cpu")
    ('full', 'fused', 'fused')
    """
    return loss_head if loss_head != "auto" else ("fused" if device == "cuda" else "full")
