"""Loading: a materialised model (optionally with a merged LoRA adapter) for inference; chat prompts.

    python -c "from clerk.models.loading import load_model; print(load_model('resources/models/smollm2-135m')[0].config)"
"""

from __future__ import annotations

import json
from pathlib import Path

from clerk.errors import UserError
from clerk.models.device import pick_device, resolve_inference_dtype
from clerk.prompts import CHAT_TEMPLATE


def check_model_dir(model_dir: str | Path) -> Path:
    """A materialised model directory: config.json, a JSON object, beside safetensors weights.

    Raises:
        UserError: naming ``--model`` and what is missing or wrong (before transformers reads it).
    """
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file() or not any(model_dir.glob("*.safetensors")):
        raise UserError(f"--model must be a materialised model directory (config.json + safetensors), got {str(model_dir)!r}")
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"--model {str(model_dir)!r}: config.json is not JSON text ({err})") from None
    if not isinstance(config, dict):
        raise UserError(f"--model {str(model_dir)!r}: config.json must hold a JSON object, got {type(config).__name__}")
    return model_dir


def load_model(model_dir: str | Path, adapter_dir: str | Path | None = None, device: str | None = None,
               dtype: str | None = None):
    """Load a materialised model (and optionally merge a LoRA adapter) for inference.

    Args:
        model_dir: a directory made by :func:`materialize`.
        adapter_dir: a LoRA adapter written by ``clerk train`` (``adapter_model.safetensors``);
            it is merged into this freshly loaded copy, so the result is a plain model.
        device: ``"cuda"``/``"cpu"``; default :func:`pick_device`.
        dtype: ``"float32"``/``"bfloat16"``; default (or ``"auto"``) bf16 where the device has bf16
            units (CUDA with bf16; AMX / AVX512-BF16 CPUs), fp32 elsewhere
            (:func:`clerk.models.device.resolve_inference_dtype`).

    Returns:
        ``(model, tokenizer)``: the model in eval mode on ``device``; the tokenizer pads on the left.

    Raises:
        UserError: the directory is not a CLERK model directory or the adapter is missing.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = check_model_dir(model_dir)
    device = device or pick_device()
    dtype = resolve_inference_dtype(dtype, device)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.chat_template != CHAT_TEMPLATE:
        raise UserError(f"{model_dir} does not carry CLERK's chat template; rematerialise it with `clerk materialize-model`")
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype), use_safetensors=True)
    if adapter_dir is not None:
        from peft import PeftModel

        adapter_dir = Path(adapter_dir)
        if not (adapter_dir / "adapter_model.safetensors").is_file():
            raise UserError(f"--adapter must hold adapter_model.safetensors, got {str(adapter_dir)!r}")
        model = PeftModel.from_pretrained(model, adapter_dir, is_trainable=False)
        model = model.merge_and_unload()  # mutates the copy we just loaded; nothing else holds it
    model.to(device).eval()
    return model, tokenizer


def chat_prompt(tokenizer, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """Render messages with the tokenizer's (CLERK) chat template as one prompt string."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
