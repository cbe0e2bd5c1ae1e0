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
from clerk.models.device import BF16_MODES, PRECISIONS
from clerk.settings import setting

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LOSS_HEADS = ("auto", "full", "fused")


_TRAIN = ("train",)


@dataclass
class TrainSection:
    """The LoRA recipe of the policy (and of the separate reader, block ``reader``): ``train``."""

    lr: float = setting(1e-3, help="AdamW peak learning rate of the LoRA weights (cosine decay after warm-up)",
                        exclusive_minimum=0, verbs=_TRAIN)
    max_steps: int = setting(1200, help="optimizer steps; -1 = run `epochs` full epochs", minimum=-1,
                             schema={"not": {"const": 0}}, verbs=_TRAIN)
    epochs: float = setting(1.0, help="epochs over train, used when max_steps is -1", exclusive_minimum=0,
                            verbs=_TRAIN)
    batch_size: int = setting(1, help="examples per device step", minimum=1, verbs=_TRAIN)
    grad_accum: int = setting(1, help="steps accumulated per optimizer step", minimum=1, verbs=_TRAIN)
    max_length: int = setting(1024, help="longest tokenised example kept (tokens); longer ones are truncated",
                              minimum=32, verbs=_TRAIN)
    lora_r: int = setting(16, help="LoRA rank", minimum=1, verbs=_TRAIN)
    lora_alpha: int = setting(32, help="LoRA alpha; scale = alpha / r", minimum=1, verbs=_TRAIN)
    lora_dropout: float = setting(0.0, help="dropout on the LoRA input, in [0, 1)", minimum=0,
                                  exclusive_maximum=1, verbs=_TRAIN)
    lora_targets: tuple[str, ...] = setting(
        list(DEFAULT_TARGETS), help="module names to adapt (a comma list as a flag)",
        items={"$ref": "#/$defs/module_name"}, min_items=1, unique=True, verbs=_TRAIN,
        flag_type=lambda text: _csv_tuple(text), metavar="A,B,...")
    modules_to_save: tuple[str, ...] = setting(
        [], help="modules trained in full and saved with the adapter, e.g. embed_tokens,lm_head (scratch models)",
        items={"$ref": "#/$defs/module_name"}, unique=True, verbs=_TRAIN, flag_type=lambda text: _csv_tuple(text),
        metavar="A,B,...")
    lora_layers: int = setting(0, help="LoRA on the top N decoder layers only (backward stops below them); "
                               "0 = every layer", minimum=0, verbs=_TRAIN)
    precision: str = setting(
        "auto", help="precision of the frozen base weights: fp32, or bf16-frozen (base weights bf16, LoRA adapters, "
        "optimizer state and loss fp32); auto = bf16-frozen where the device has bf16 units, fp32 elsewhere",
        choices="precision", verbs=_TRAIN)
    bf16: str = setting("off", help="bf16 autocast on top of precision (and bf16 weights on CUDA); auto = where "
                        "the hardware has it", choices="bf16_mode", verbs=_TRAIN)
    save_steps: int = setting(20, help="checkpoint every N optimizer steps, so an interrupted run resumes",
                              minimum=1, verbs=_TRAIN)
    snapshot_steps: int = setting(400, help="adapter snapshots every N steps into OUT/snapshots (the first seed's "
                                  "run: the learning curve); 0 = only the final adapter", minimum=0, verbs=_TRAIN)
    curve_sessions: int = setting(40, help="validation sessions scored per learning-curve point; 0 = all",
                                  minimum=0, verbs=("learning-curve",))
    validation_loss: bool = setting(False, help="loss on the validation split after training", verbs=_TRAIN)


@dataclass
class ReaderSection:
    """The separate reader adapter (``reader``), trained when evaluate.reader_model is `reader`: the
    `train` recipe on ANSWER examples only, once, on the training personas of its own seed, and
    shared by every experiment seed."""

    seed: int = setting(31, help="the reader's own seed: its training personas; not one of `seeds`", minimum=0)
    personas: int = setting(100, help="training personas of the reader's seed (its train split; data.train.personas "
                            "sizes the policies')", minimum=1)
    answer_ratio: float = setting(2.0, help="ANSWER examples per CONSOLIDATE example of the same split",
                                  exclusive_minimum=0, verbs=("build-sft",))
    max_steps: int = setting(1200, help="training steps of the reader adapter", minimum=1, verbs=_TRAIN)
    precision: str = setting("fp32", help="the reader's training precision (the train section's is the policy's)",
                             choices="precision", verbs=_TRAIN)


def _csv_tuple(text: str) -> tuple[str, ...]:
    """Comma list -> tuple, empty items dropped.

    >>> _csv_tuple("q_proj, v_proj,")
    ('q_proj', 'v_proj')
    """
    return tuple(part.strip() for part in text.split(",") if part.strip())


#: The verb's defaults of the section's settings are the section's.
_D = TrainSection


@dataclass
class TrainConfig:
    """Every knob of one LoRA SFT run (CLI flags map 1:1; written to ``train_config.json``)."""

    sft: str
    model: str
    out: str
    seed: int = 137
    # optimisation
    lr: float = _D.lr  # peak learning rate
    epochs: float = _D.epochs  # used when max_steps == -1
    max_steps: int = _D.max_steps  # optimizer steps; -1 = run `epochs`
    batch_size: int = _D.batch_size  # examples per device step
    grad_accum: int = _D.grad_accum  # steps accumulated per optimizer step
    max_length: int = _D.max_length  # tokens; longer examples are truncated at the end
    warmup: float = 0.05  # < 1: fraction of steps; >= 1: steps
    scheduler: str = "cosine"
    weight_decay: float = 0.0
    # LoRA
    lora_r: int = _D.lora_r
    lora_alpha: int = _D.lora_alpha
    lora_dropout: float = _D.lora_dropout
    lora_targets: tuple[str, ...] = DEFAULT_TARGETS  # = TrainSection's
    modules_to_save: tuple[str, ...] = ()  # fully trained extra modules, e.g. embed_tokens,lm_head (scratch)
    # LoRA on the top N decoder layers only (0 = every layer): backward then stops at the lowest
    # adapted layer, so a step costs a full forward and a backward through N layers
    lora_layers: int = _D.lora_layers
    # bookkeeping
    save_steps: int = _D.save_steps  # checkpoint every N optimizer steps; 0 = never (no resume)
    logging_steps: int = 5
    validation_loss: bool = _D.validation_loss  # once at the end, when a validation split exists
    # auto | fp32 | bf16-frozen (frozen base weights bf16, LoRA adapters and optimizer state fp32);
    # auto = bf16-frozen where the device has bf16 units, fp32 elsewhere (clerk.models.device)
    precision: str = _D.precision
    bf16: str = _D.bf16  # autocast on top (and bf16 weights on CUDA); auto = where the hardware has bf16
    loss_head: str = "auto"  # full | fused (TRL's chunked LM head) | auto = fused on CUDA, full on CPU
    device: str = "auto"  # auto | cpu | cuda
    threads: int = 0  # torch intra-op threads; 0 = torch's default
    keep_checkpoints: bool = False
    checkpoint_dir: str = ""  # checkpoints for resumption; "" = OUT/checkpoints
    snapshot_steps: int = _D.snapshot_steps  # adapter snapshots every N optimizer steps (learning curve); 0 = none

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
