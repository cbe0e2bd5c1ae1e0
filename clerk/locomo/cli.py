"""The LoCoMo verbs: ``clerk locomo`` (resolve, load, subset, evaluate, write) and the parsers of all three.

``clerk locomo`` is here; the other verbs' work lives with its concept: ``clerk locomo-inspect``
(:mod:`clerk.locomo.inspection`) and ``clerk bench-locomo-prefix`` (:mod:`clerk.locomo.bench`).
Table 2 (``clerk table-locomo``) is the report stage's: :mod:`clerk.report.locomo` reads the
``metrics.json`` files this stage writes.

    clerk locomo --help
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.eval_sections import EvaluateSection
from clerk.locomo.bench import main_bench
from clerk.locomo.config import LocomoSection
from clerk.locomo.data import Conversation, LocomoConfig, Question
from clerk.locomo.evaluation import (
    LOCOMO_METRICS_SCHEMA_ID,
    LOCOMO_SCHEMAS,
    LocomoEvalConfig,
    evaluate_locomo,
    transcript_tokens,
    write_jsonl,
)
from clerk.locomo.files import (
    detect_format,
    load_locomo,
    recorded_path,
    resolve_locomo_path,
    sha256_file,
)
from clerk.locomo.inspection import main_inspect
from clerk.locomo.subsets import all_questions, count_by_category, restrict, stratified_subset
from clerk.memory.base import DTYPES, Runtime
from clerk.memory.choices import add_settings

# --- clerk locomo ----------------------------------------------------------------------------


def _prepare(args: argparse.Namespace) -> tuple[LocomoConfig, Path, LocomoEvalConfig, Runtime]:
    """Resolve the data, then check directories, knobs and systems, all before any model loads."""
    from clerk.evaluate.runner import make_systems

    cfg = LocomoConfig(
        path=args.data, download=args.download, max_questions=args.max_questions,
        seed=args.seed, mc_seed=args.mc_seed, systems=tuple(args.systems), subset_seed=args.subset_seed,
    )
    data = resolve_locomo_path(cfg.path, cfg.download)
    if not Path(args.model).is_dir():
        raise UserError(f"--model: expected a model directory, got {args.model!r}")
    for flag, value in (("--adapter", args.adapter), ("--reader-adapter", args.reader_adapter)):
        if value is not None and not Path(value).is_dir():
            raise UserError(f"{flag}: expected an adapter directory, got {value!r}")
    ecfg = LocomoEvalConfig(budget=args.budget, ledger=args.ledger, summary_k=args.summary_k,
                            max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                            reader_model=args.reader_model, reader_pmi=args.reader_pmi,
                            max_read_tokens=args.max_read_tokens, dtype=args.dtype)
    runtime = Runtime(ecfg, model_dir=args.model, adapter_dir=args.adapter, reader_adapter_dir=args.reader_adapter)
    make_systems(list(cfg.systems), runtime)  # fail on names/adapter before loading
    return cfg, data, ecfg, runtime


def _selection(cfg: LocomoConfig, data: Path, sha: str, sources: list[str], chosen: list[Question],
               selected: list[Conversation]) -> dict[str, Any]:
    """``selection.json``: which questions, from which file."""
    return {
        "data_file": recorded_path(data),
        "data_sha256": sha,
        "format": detect_format(data),
        "sources": sources,
        "config": dataclasses.asdict(cfg) | {"path": recorded_path(data), "systems": list(cfg.systems)},
        "questions": len(chosen),
        "per_category": count_by_category(chosen),
        "adversarial": sum(q.adversarial for q in chosen),
        "conversations": [c.conv_id for c in selected],
        "question_ids": [q.question_id for q in chosen],
    }


def _input_record(data: Path, selection: dict, conversations: list[Conversation], selected: list[Conversation],
                  runtime: Runtime) -> dict[str, Any]:
    """The ``input`` field of ``metrics.json``: the data file, its sizes, per-conversation tokens."""
    return {
        "path": recorded_path(data), "format": selection["format"], "source": selection["sources"][0],
        "sha256": selection["data_sha256"],
        "n_conversations": len(conversations), "n_questions": len(all_questions(conversations)),
        "conversations": [
            {"conv_id": c.conv_id, "sessions": len(c.sessions), "questions": len(c.questions),
             "transcript_tokens": transcript_tokens(c, runtime)}
            for c in selected
        ],
    }


def _write_outputs(out: Path, selection: dict, predictions: list[dict], metrics: dict) -> None:
    """``selection.json``, ``predictions.jsonl`` and, last, ``metrics.json`` (its existence means the run completed)."""
    from clerk.atomic import start_outputs, write_text

    start_outputs(out, "--out", marker="metrics.json")
    write_text(out / "selection.json", json.dumps(selection, indent=1, sort_keys=True) + "\n")
    write_jsonl(out / "predictions.jsonl", "predictions", predictions)
    write_text(out / "metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")


def main_locomo(args: argparse.Namespace) -> None:
    """``clerk locomo``: resolve, load and subset the data, evaluate the systems, write the results.

    Data resolution comes first so a missing file leaves no output behind; then the arguments
    and systems are checked before any model loads. Writes ``selection.json`` (which questions,
    from which file), ``predictions.jsonl`` and, last, ``metrics.json`` to ``--out``.

    Raises:
        UserError: missing data, bad directories or knobs, unknown systems, a missing adapter.
    """
    import time

    from clerk import __version__
    from clerk.atomic import start_outputs
    from clerk.evaluate.schemas import validate_record
    from clerk.models.device import set_torch_threads

    start = time.perf_counter()
    start_outputs(args.out, "--out", marker="metrics.json")  # up front: no stale completion marker
    set_torch_threads(args.threads)
    cfg, data, ecfg, runtime = _prepare(args)
    conversations = load_locomo(data, mc_seed=cfg.mc_seed)
    chosen = stratified_subset(all_questions(conversations), cfg.max_questions, cfg.question_seed)
    selected = restrict(conversations, chosen)
    sha = sha256_file(data)
    sources = list(dict.fromkeys(c.source for c in conversations))
    selection = _selection(cfg, data, sha, sources, chosen, selected)

    predictions, summaries = evaluate_locomo(selected, list(cfg.systems), runtime, progress=not args.quiet)
    for summary in summaries.values():
        summary.update(source=sources[0], data_sha256=sha, subset_size=len(chosen), subset_seed=cfg.question_seed)
        validate_record("metrics.system", summary, LOCOMO_SCHEMAS)
    metrics = {
        "schema": LOCOMO_METRICS_SCHEMA_ID,
        "seed": cfg.seed,
        "input": _input_record(data, selection, conversations, selected, runtime),
        "subset": {"max_questions": cfg.max_questions, "seed": cfg.question_seed, "size": len(chosen),
                   "per_category": selection["per_category"], "adversarial": selection["adversarial"],
                   "mc_seed": cfg.mc_seed},
        "config": {"systems": list(cfg.systems), "model": args.model, "adapter": args.adapter,
                   "reader_adapter": args.reader_adapter, **ecfg.to_dict(),
                   "context_tokens": runtime.context_tokens, "view_budget_tokens": runtime.view_budget()},
        "versions": {"clerk": __version__, **{name: summaries[name]["version"] for name in cfg.systems}},
        "systems": summaries,
        "wall_seconds": float(time.perf_counter() - start),
    }
    validate_record("metrics", metrics, LOCOMO_SCHEMAS)
    out = Path(args.out)
    _write_outputs(out, selection, predictions, metrics)
    accs = ", ".join(f"{n}={s['accuracy']:.3f}" if s["accuracy"] is not None else f"{n}=n/a"
                     for n, s in summaries.items())
    print(f"clerk locomo: {len(chosen)} questions x {len(summaries)} systems from {len(selected)} conversations "
          f"({sources[0]}); accuracy (non-adversarial): {accs}; -> {out} in {metrics['wall_seconds']:.1f} s",
          file=sys.stderr)


# --- parsers ---------------------------------------------------------------------------------


def _add_locomo(sub: argparse._SubParsersAction) -> None:
    """``clerk locomo``: data, models and systems, memory and views, writers and readers, output."""
    d = LocomoEvalConfig()
    p = sub.add_parser(
        "locomo",
        help="LoCoMo-MC10 zero-shot transfer: load, subset and evaluate memory systems",
        description=(
            "Evaluate memory systems on LoCoMo (Percena/locomo-mc10 JSON lines or the original locomo10.json): "
            "each system's writer runs over every conversation's sessions in order, then every selected question "
            "is scored by the multiple-choice log-likelihood reader over the system's final memory. Writes "
            "selection.json, predictions.jsonl and metrics.json (last) to --out. Without data it exits with "
            "status 2 and says where to get it; it writes nothing then."
        ),
    )
    # data
    p.add_argument("--data", metavar="FILE", default=None,
                   help="LoCoMo file, either format (config locomo.path); default: none")
    # models and systems
    p.add_argument("--model", metavar="DIR", required=True, help="base model directory (safetensors + tokenizer)")
    p.add_argument("--adapter", metavar="DIR", default=None,
                   help="trained LoRA adapter directory (clerk train); needed by the clerk system; default: none")
    # memory and views
    p.add_argument("--summary-k", dest="summary_k", type=int, default=d.summary_k, metavar="K",
                   help=f"session summaries the summary-rag view retrieves per question; default: {d.summary_k}")
    p.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=d.max_read_tokens, metavar="N",
                   help="cap on transcript-view tokens; -1 = the reader's context minus a prompt reserve (default: -1)")
    # writers and readers
    p.add_argument("--reader-adapter", dest="reader_adapter", metavar="DIR", default=None,
                   help="the separate reader's LoRA adapter (clerk train on ANSWER examples); needed by "
                   "--reader-model reader, the synthetic evaluation's instrument; default: none")
    # output and sampling
    p.add_argument("--out", metavar="DIR", required=True, help="output directory (created only when data loads)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the run's seed (the workflow's {seed}, recorded in metrics.json); also the question subset's "
                   "seed unless --subset-seed is given; default: 0")
    p.add_argument("--mc-seed", type=int, default=0, metavar="S",
                   help="seed of the distractors built for locomo10.json (unused for Percena's file); default: 0")
    p.add_argument("--threads", type=int, default=0, metavar="N", help="torch CPU threads; 0 = torch's default")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    # the settings of the locomo section and the evaluation's reader (clerk.settings); by hand, the
    # question subset's seed is the run's --seed
    add_settings(p.add_argument_group("the config's locomo and evaluate sections"), "locomo", LocomoSection,
                 EvaluateSection, subset_seed=None, reader_model=d.reader_model, notes={"subset_seed": "--seed"})
    p.set_defaults(func=main_locomo)


def _add_inspect(sub: argparse._SubParsersAction) -> None:
    """``clerk locomo-inspect``."""
    q = sub.add_parser(
        "locomo-inspect",
        help="print conversations, sessions, turns and question counts per corrected category",
        description="Load a LoCoMo file (either format) and print what it holds, categories named correctly.",
    )
    q.add_argument("--data", metavar="FILE", required=True, help="LoCoMo file, either format")
    q.add_argument("--mc-seed", type=int, default=0, metavar="S",
                   help="seed of the distractors built for locomo10.json; default: 0")
    q.add_argument("--json", action="store_true", help="print the counts as JSON instead of text")
    q.set_defaults(func=main_inspect)


def _add_bench(sub: argparse._SubParsersAction) -> None:
    """``clerk bench-locomo-prefix``."""
    b = sub.add_parser(
        "bench-locomo-prefix",
        help="prefill tokens and seconds per question for full-context reading with and without prefix reuse",
        description="On one conversation, score every question over the full (context-truncated) conversation "
        "twice: prefilling each whole prompt, and encoding the conversation prefix once and reusing its KV cache "
        "(the path clerk locomo takes). Prints tokens, seconds per question, the speed-up and whether the "
        "choices agree.",
    )
    b.add_argument("--data", required=True, metavar="FILE", help="LoCoMo file, either format (e.g. a test fixture)")
    b.add_argument("--model", required=True, metavar="DIR", help="base model directory")
    b.add_argument("--conversation", default=None, metavar="ID", help="conversation id; default: the first")
    b.add_argument("--tile", type=int, default=1, metavar="N",
                   help="repeat the conversation's sessions N times to emulate a longer one; default: 1")
    b.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=-1, metavar="N",
                   help="cap on view tokens; -1 = the reader's context minus a prompt reserve (default: -1)")
    b.add_argument("--mc-seed", type=int, default=0, metavar="S", help="distractor seed for locomo10.json; default: 0")
    b.add_argument("--threads", type=int, default=0, metavar="N", help="torch CPU threads; 0 = torch's default")
    b.add_argument("--dtype", choices=DTYPES, default="auto",
                   help="inference dtype; auto = bf16 where the device has bf16 units (CUDA, AMX/AVX512-BF16 CPUs), else fp32 (default: auto)")
    b.add_argument("--out", default=None, metavar="JSON", help="also write the numbers as JSON here; default: none")
    b.set_defaults(func=main_bench)


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``clerk locomo``, ``clerk locomo-inspect`` and ``clerk bench-locomo-prefix``."""
    _add_locomo(sub)
    _add_inspect(sub)
    _add_bench(sub)
