"""The evaluation verbs: ``clerk evaluate`` (:mod:`clerk.evaluate.runner`), ``clerk erasure``
(:mod:`clerk.evaluate.erasure`) and ``clerk read-cost`` (:mod:`clerk.evaluate.read_cost`).

The flags of ``evaluate`` and ``erasure`` (and their ``--config`` JSON) become an
:class:`~clerk.evaluate.config.EvaluateConfig` / :class:`~clerk.evaluate.config.ErasureConfig`
here; the runners take that and never see ``argparse``.

    clerk evaluate --timelines T.jsonl --model M --systems oracle --reader rule --out /tmp/ev   # exact, no model calls
    clerk read-cost --timelines long.jsonl --tokenizer M --out results/read_cost.csv
"""

from __future__ import annotations

from typing import Any

from clerk.eval_sections import ErasureSection, EvaluateSection
from clerk.evaluate.config import ErasureConfig, EvaluateConfig, ReadCostConfig
from clerk.evaluate.erasure import run_erasure
from clerk.evaluate.read_cost import run_read_cost
from clerk.evaluate.runner import run_evaluate, runtime_from_config
from clerk.generator.config import DataSection
from clerk.memory import MEMORY_REGISTRY, EvalConfig
from clerk.memory.choices import add_settings


def register_cli(sub: Any) -> None:
    """Add ``clerk evaluate``, ``clerk erasure`` and ``clerk read-cost``."""
    _add_evaluate_parser(sub)
    _add_erasure_parser(sub)
    _add_read_cost_parser(sub)


def add_run_args(p: Any, verb: str = "evaluate") -> None:
    """The flags of a verb that replays timelines through memory systems (``clerk evaluate``,
    ``clerk erasure``): inputs, then the settings of the config's sections the verb takes (systems,
    views, writers, the reader: :class:`~clerk.evaluate.config.EvaluateSection`,
    :class:`~clerk.evaluate.config.ErasureSection`), then its own; read back by :func:`runtime_from_args`."""
    d = EvalConfig()
    # inputs and outputs
    p.add_argument("--timelines", required=True, help="timelines file (JSON lines, one persona per line)")
    p.add_argument("--model", required=True, help="base model directory (from clerk materialize-model)")
    p.add_argument("--adapter", default=None, help="LoRA adapter directory (from clerk train); needed by clerk")
    p.add_argument("--reader-adapter", dest="reader_adapter", default=None, metavar="DIR",
                   help="the separate reader's LoRA adapter (clerk train on ANSWER examples); "
                   "needed by --reader-model reader")
    p.add_argument("--out", required=True, help="output directory")
    # the settings of the evaluate (and erasure, data) sections; by hand, no writer is teacher-forced
    add_settings(p, verb, ErasureSection, EvaluateSection, DataSection, teacher_forced=[], reader_model=d.reader_model,
                 ignore_forget=[])
    # this verb's own
    p.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=d.max_read_tokens,
                   help="cap on transcript-view tokens; -1 = reader context minus a prompt reserve (default: -1)")
    p.add_argument("--add-only-budget", dest="add_only_budget", type=int, default=d.add_only_budget,
                   help="add-only view budget in tokens; -1 = the gold ledger view's tokens at that session (default: -1)")
    p.add_argument("--reader", choices=("mc", "rule"), default=d.reader,
                   help="mc = multiple-choice log-likelihood; rule = exact rule reader, ledger systems only (default: mc)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch CPU threads; 0 = torch's default (default: 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


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
        "memory, then consolidate. Writes predictions.jsonl, ledgers.jsonl and metrics.json to --out. "
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
    add_run_args(p, "erasure")
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
    add_settings(p, "read-cost", EvaluateSection)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_read_cost_main)
