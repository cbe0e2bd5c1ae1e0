"""The read-cost probe (``clerk read-cost``): mean read tokens per question by session index per view.

Tokenizer only, no model calls: the oracle ledger stands in for clerk's ledger (same format, B
slots), and transcript views are not truncated, so the growth of an unbounded history shows.

    clerk read-cost --timelines long.jsonl --tokenizer M --out results/read_cost.csv
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from clerk.atomic import atomic_write, check_out_file
from clerk.errors import UserError
from clerk.evaluate.config import ReadCostConfig
from clerk.evaluate.runner import load_timelines_file, make_systems, replay
from clerk.evaluate.summary import mean_or_none
from clerk.memory import MEMORY_REGISTRY, EvalConfig, Runtime

#: Views measured by the probe, in system order: the systems that declare a ``read_cost_label`` in
#: the registry (the oracle ledger stands in for clerk's ledger: same format, B slots).
READ_COST_VIEWS = tuple(MEMORY_REGISTRY.read_cost_views())


def read_cost(timelines: list[dict], runtime: Runtime, views: tuple[str, ...] = READ_COST_VIEWS,
              progress: bool = True) -> list[dict]:
    """Mean read tokens per question by session index for each view; tokenizer only, no model.

    Transcript views are not truncated here (the runtime's context should be effectively
    unbounded) so the growth of an unbounded history is visible.

    Returns:
        Rows ``{"session", "view", "mean_read_tokens", "n"}`` sorted by session, then view order.
    """
    systems = make_systems(list(views), runtime)
    sums: dict[tuple[int, str], list[int]] = {}

    def answer(name, system, tl, session, state, views_):
        sums.setdefault((session["index"], name), []).extend(runtime.count_tokens(v.text) for v in views_)

    replay(timelines, systems, answer, progress=progress)
    order = {name: k for k, name in enumerate(views)}
    return [{"session": index, "view": name, "mean_read_tokens": mean_or_none([float(x) for x in counts]), "n": len(counts)}
            for (index, name), counts in sorted(sums.items(), key=lambda kv: (kv[0][0], order[kv[0][1]]))]


def run_read_cost(args: ReadCostConfig) -> None:
    """``clerk read-cost``: write the probe's CSV (see :func:`read_cost`)."""
    from transformers import AutoTokenizer

    check_out_file(args.out, "--out")
    if not Path(args.tokenizer).is_dir():
        raise UserError(f"--tokenizer must be a model or tokenizer directory, got {args.tokenizer!r}")
    cfg = EvalConfig(window_k=args.window_k, rag_k=args.rag_k, reader_model="base")  # counts tokens, reads nothing
    timelines = load_timelines_file(args.timelines)  # before the tokenizer loads: input errors first
    runtime = Runtime(cfg, tokenizer=AutoTokenizer.from_pretrained(args.tokenizer), context_tokens=10**12)
    rows = read_cost(timelines, runtime, progress=not args.quiet)
    with atomic_write(args.out, newline="") as fh:  # whole or absent
        writer = csv.DictWriter(fh, fieldnames=["session", "view", "mean_read_tokens", "n"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"clerk read-cost: {len(rows)} rows -> {args.out}", file=sys.stderr)
