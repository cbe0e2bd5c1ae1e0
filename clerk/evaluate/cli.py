"""The evaluation verbs: ``clerk evaluate`` (:mod:`clerk.evaluate.runner`), ``clerk erasure``
(:mod:`clerk.evaluate.erasure`) and ``clerk read-cost`` (:mod:`clerk.evaluate.read_cost`).

The flags of ``evaluate`` and ``erasure`` (and their ``--config`` JSON) become an
:class:`~clerk.evaluate.config.EvaluateConfig` / :class:`~clerk.evaluate.config.ErasureConfig`
here; the runners take that and never see ``argparse``.

    clerk evaluate --timelines T.jsonl --model M --systems oracle --reader rule --out /tmp/ev   # exact, no model calls
    clerk read-cost --timelines long.jsonl --tokenizer M --out results/read_cost.csv
"""

from __future__ import annotations

import argparse
from typing import Any

from clerk.evaluate.config import ErasureConfig, EvaluateConfig, ReadCostConfig
from clerk.evaluate.erasure import run_erasure
from clerk.evaluate.read_cost import run_read_cost
from clerk.evaluate.runner import run_evaluate, runtime_from_config
from clerk.memory import MEMORY_REGISTRY, EvalConfig
from clerk.memory.base import DTYPES, READER_MODELS


def _add_view_knobs(p: Any) -> None:
    """The view flags both verbs share (window and rag sizes) and ``--quiet``."""
    d = EvalConfig()
    p.add_argument("--window-k", dest="window_k", type=int, default=d.window_k,
                   help=f"sessions shown by the window view (default: {d.window_k})")
    p.add_argument("--rag-k", dest="rag_k", type=int, default=d.rag_k,
                   help=f"turns retrieved by BM25 for the rag view (default: {d.rag_k})")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def register_cli(sub: Any) -> None:
    """Add ``clerk evaluate``, ``clerk erasure`` and ``clerk read-cost``."""
    _add_evaluate_parser(sub)
    _add_erasure_parser(sub)
    _add_read_cost_parser(sub)


def add_run_args(p: Any, systems_help: str = "memory systems (registry keys)") -> None:
    """The flags every verb that replays timelines through memory systems shares (``clerk
    evaluate``, ``clerk erasure``): inputs, views, writers, the reader; read back by
    :func:`runtime_from_args`."""
    d = EvalConfig()
    # inputs and outputs
    p.add_argument("--timelines", required=True, help="timelines file (JSON lines, one persona per line)")
    p.add_argument("--model", required=True, help="base model directory (from clerk materialize-model)")
    p.add_argument("--adapter", default=None, help="LoRA adapter directory (from clerk train); needed by clerk")
    p.add_argument("--reader-adapter", dest="reader_adapter", default=None, metavar="DIR",
                   help="the separate reader's LoRA adapter (clerk train on ANSWER examples); "
                   "needed by --reader-model reader")
    p.add_argument("--systems", nargs="+", required=True, metavar="NAME", help=systems_help)
    p.add_argument("--out", required=True, help="output directory")
    # views
    _add_view_knobs(p)
    p.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=d.max_read_tokens,
                   help="cap on transcript-view tokens; -1 = reader context minus a prompt reserve (default: -1)")
    p.add_argument("--add-only-budget", dest="add_only_budget", type=int, default=d.add_only_budget,
                   help="add-only view budget in tokens; -1 = the gold ledger view's tokens at that session (default: -1)")
    # writers and readers
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=d.max_new_tokens,
                   help=f"generation cap for model writers, tokens (default: {d.max_new_tokens})")
    p.add_argument("--batch-size", dest="batch_size", type=int, default=d.batch_size,
                   help=f"prompts per generation batch (default: {d.batch_size})")
    p.add_argument("--reader", choices=("mc", "rule"), default=d.reader,
                   help="mc = multiple-choice log-likelihood; rule = exact rule reader, ledger systems only (default: mc)")
    p.add_argument("--reader-model", dest="reader_model", choices=READER_MODELS, default=d.reader_model,
                   help="the one model that reads every system: adapter = the policy's (--adapter), reader = "
                   f"a separate reader adapter (--reader-adapter), base = no adapter (default: {d.reader_model})")
    p.add_argument("--reader-pmi", dest="reader_pmi", type=float, default=d.reader_pmi, metavar="A",
                   help="contextual calibration of the MC reader: each option's mean log-probability minus A x "
                   f"its mean log-probability after the empty view, A in [0, 1] (default: {d.reader_pmi})")
    p.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=d.constrained,
                   help="hold model writers to the program grammar of their ledger (llguidance; default: on)")
    p.add_argument("--write-only", dest="write_only", nargs="*", default=[], metavar="NAME",
                   help="systems (of --systems) whose writes are scored but whose memory is not read (default: none)")
    p.add_argument("--teacher-forced", dest="teacher_forced", nargs="*", default=[], metavar="NAME",
                   help="model writers (of --systems) whose programs are also scored teacher-forced, each session "
                   "written from the gold ledger before it; clerk evaluate only (default: none)")
    p.add_argument("--phrasings", metavar="FILE", default=None,
                   help="phrasings catalogue whose predicate keys constrained writers may ADD (default: built-in)")
    p.add_argument("--dtype", choices=DTYPES, default=d.dtype,
                   help="inference dtype of readers and writers; auto = bf16 where the device has bf16 units (CUDA with bf16, AMX or AVX512-BF16 CPUs), fp32 elsewhere (default: auto)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch CPU threads; 0 = torch's default (default: 0)")


def runtime_from_args(args: Any) -> Any:
    """The :class:`~clerk.memory.Runtime` of the flags of :func:`add_run_args` (threads set first)."""
    return runtime_from_config(EvaluateConfig.from_values(vars(args)))


def _evaluate_main(args: Any) -> None:
    run_evaluate(EvaluateConfig.from_values(vars(args)))


def _erasure_main(args: Any) -> None:
    run_erasure(ErasureConfig.from_values(vars(args)))


def _read_cost_main(args: Any) -> None:
    run_read_cost(ReadCostConfig.from_values(vars(args)))


def _add_evaluate_parser(sub: Any) -> None:
    """``clerk evaluate``: inputs and outputs, views, writers and readers."""
    p = sub.add_parser(
        "evaluate", help="replay timelines through memory systems; write predictions, ledger metrics and a summary",
        description="Synthetic evaluation (SPEC §6): for every session, answer its questions from each system's "
        "memory, then consolidate. Writes predictions.jsonl, ledgers.jsonl, programs.jsonl.gz (the model writers' "
        "writes) and metrics.json to --out. "
        f"Systems: {', '.join(MEMORY_REGISTRY.names())}.")
    add_run_args(p)
    p.set_defaults(func=_evaluate_main)


def _add_erasure_parser(sub: Any) -> None:
    """``clerk erasure``: the flags of ``clerk evaluate`` and the systems run without forgetting."""
    p = sub.add_parser(
        "erasure", help="the erasure study: replay forget timelines; leak rate and forgotten-fact accuracy per system",
        description="Erasure study (SPEC §9): deliver each session's forget requests to every system, then check "
        "every later view for forgotten values and read the questions about forgotten facts. Writes views.jsonl "
        f"and metrics.json to --out. Systems: {', '.join(MEMORY_REGISTRY.names())}.")
    add_run_args(p, systems_help="memory systems (registry keys), forget requests delivered")
    p.add_argument("--ignore-forget", dest="ignore_forget", nargs="*", default=[], metavar="NAME",
                   help="systems also run with forget requests not delivered (the naive contrast; default: none)")
    p.set_defaults(func=_erasure_main)


def _add_read_cost_parser(sub: Any) -> None:
    """``clerk read-cost``: the probe's inputs, output and view flags."""
    p = sub.add_parser(
        "read-cost", help="read tokens per question by session index for each memory view (tokenizer only)",
        description="Read-cost probe: mean view tokens per question by session index for the oracle ledger "
        "(stand-in for clerk), full, window, rag and add-only views; no model calls. Writes a CSV "
        "(session, view, mean_read_tokens, n).")
    p.add_argument("--timelines", required=True, help="timelines file (JSON lines), e.g. a long-horizon set")
    p.add_argument("--tokenizer", required=True, help="model or tokenizer directory whose tokenizer counts tokens")
    p.add_argument("--out", required=True, help="output CSV path")
    _add_view_knobs(p)
    p.set_defaults(func=_read_cost_main)
