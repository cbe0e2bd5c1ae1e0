"""The learning curve: validation op-F1 per op kind against training examples seen.

``clerk train --snapshot-steps N`` saves the adapter every N steps of one run
(``OUT/snapshots/step-<n>``). This verb writes, for every snapshot and the final adapter, the
policy's greedy programs for the *validation* personas' sessions (held out by ``clerk build-sft``;
never a test split) against their gold ``ledger_before`` (teacher-forced ledgers: each session
is scored on its own, so an early mistake does not compound), through the same writer as the
evaluation (the ``clerk`` memory system: same prompt, program language and constrained
decoding), and scores them against the gold programs (``metrics.op_scores``, micro-averaged).
The final adapter is also decoded without the grammar (``constrained`` false): what the
constrained decoder adds, measured on validation personas.

    clerk learning-curve --timelines results/data/137/train.jsonl --sft results/sft/137 \\
        --model resources/models/smollm2-135m --adapter results/train/137 --out results/curve/137.csv
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.eval_sections import EvaluateSection
from clerk.train.config import TrainSection

COLUMNS = ("point", "step", "examples_seen", "constrained", "sessions", "op_f1", "add_f1", "update_f1", "tombstone_f1",
           "evict_f1", "parse_failure_rate")


def validation_sessions(timelines: list[dict], sft_dir: Path, limit: int) -> list[tuple[dict, dict]]:
    """(timeline, session) pairs of the validation personas recorded in ``sft_stats.json``, in
    file order, at most ``limit`` (0 = all)."""
    stats_path = sft_dir / "sft_stats.json"
    if not stats_path.is_file():
        raise UserError(f"--sft: expected {stats_path} (written by clerk build-sft)")
    names = set(json.loads(stats_path.read_text())["splits"]["validation"]["personas"])
    if not names:
        raise UserError(f"--sft {sft_dir}: the validation split has no personas (val_fraction 0?)")
    pairs = [(tl, s) for tl in timelines if tl["name"] in names for s in tl["sessions"]]
    return pairs[:limit] if limit else pairs


def score_adapter(model_dir: str, adapter_dir: Path, pairs: list[tuple[dict, dict]], eval_config: Any,
                  predicates: list[str] | None) -> dict[str, float]:
    """Micro op-F1 (overall and per kind) and the parse-failure rate of one adapter's programs."""
    from clerk.form import timeline_form
    from clerk.memory import Runtime
    from clerk.memory.clerk import ClerkMemory
    from clerk.metrics import micro_op_scores, op_scores

    runtime = Runtime(eval_config, model_dir=model_dir, adapter_dir=str(adapter_dir))
    runtime.predicates = predicates
    writer = ClerkMemory(runtime)  # the trained policy, decoded as the clerk system decodes
    timelines, sessions = [tl for tl, _ in pairs], [s for _, s in pairs]
    proposals = writer.propose([s["ledger_before"] for s in sessions], timelines, sessions)
    scores = [op_scores(s["ledger_before"], prop.program, s["gold_ops"], s["index"], form=timeline_form(tl))
              for tl, s, prop in zip(timelines, sessions, proposals)]
    micro = micro_op_scores(scores)
    row = {"sessions": len(pairs), "op_f1": micro["f1"],
           "parse_failure_rate": sum(p.parse_failed for p in proposals) / max(1, len(proposals))}
    row.update({f"{kind.lower()}_f1": micro["by_type"][kind]["f1"] for kind in ("ADD", "UPDATE", "TOMBSTONE", "EVICT")})
    return row


@dataclass
class CurveConfig:
    """One ``clerk learning-curve`` run (its flags and ``--config`` keys map 1:1)."""

    timelines: str
    sft: str
    model: str
    adapter: str
    out: str = ""
    # The settings' defaults are their sections' (clerk.settings): train.curve_sessions, evaluate's.
    curve_sessions: int = TrainSection.curve_sessions  # validation sessions scored; 0 = all
    max_new_tokens: int = EvaluateSection.max_new_tokens
    batch_size: int = EvaluateSection.batch_size
    phrasings: str | None = None
    dtype: str = EvaluateSection.dtype
    threads: int = 0

    def __post_init__(self) -> None:
        from clerk.memory.base import DTYPES

        checks = [("curve_sessions", type(self.curve_sessions) is int and self.curve_sessions >= 0, "an int >= 0"),
                  ("max_new_tokens", type(self.max_new_tokens) is int and self.max_new_tokens >= 1, "an int >= 1"),
                  ("batch_size", type(self.batch_size) is int and self.batch_size >= 1, "an int >= 1"),
                  ("threads", type(self.threads) is int and self.threads >= 0, "an int >= 0"),
                  ("dtype", self.dtype in DTYPES, f"one of {', '.join(DTYPES)}")]
        for name, ok, expected in checks:
            if not ok:
                raise UserError(f"{name} must be {expected}, got {getattr(self, name)!r}")


def learning_curve(args: CurveConfig) -> list[dict[str, Any]]:
    """One row per snapshot (by step) plus the final adapter; see the module docstring."""
    from clerk.evaluate.runner import catalogue_keys, load_timelines_file
    from clerk.memory import EvalConfig
    from clerk.models.device import set_torch_threads

    set_torch_threads(args.threads)
    adapter = Path(args.adapter)
    snapshots = sorted((adapter / "snapshots").glob("step-*"))
    final = json.loads((adapter / "metrics.json").read_text()) if (adapter / "metrics.json").is_file() else None
    if final is None:
        raise UserError(f"--adapter {adapter}: expected a finished clerk train output (metrics.json)")
    config = json.loads((adapter / "train_config.json").read_text())["config"]
    per_step = config["batch_size"] * config["grad_accum"]
    points = [(json.loads((d / "snapshot.json").read_text())["step"], d) for d in snapshots]
    if not points or points[-1][0] != final["steps"]:
        points.append((final["steps"], adapter))
    pairs = validation_sessions(load_timelines_file(args.timelines), Path(args.sft), args.curve_sessions)
    predicates = catalogue_keys(args.phrasings)
    # point: "snapshot" | "final" (the trained adapter) | "free" (the final adapter, no grammar).
    runs = [("snapshot", step, path, True) for step, path in points[:-1]]
    runs += [("final", points[-1][0], points[-1][1], True), ("free", points[-1][0], points[-1][1], False)]
    rows = []
    for point, step, path, constrained in runs:
        eval_config = EvalConfig(max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, dtype=args.dtype,
                                 constrained=constrained)
        row = {"point": point, "step": step, "examples_seen": step * per_step, "constrained": constrained,
               **score_adapter(args.model, path, pairs, eval_config, predicates)}
        print(f"clerk learning-curve: step {step} ({'constrained' if constrained else 'free'}): "
              f"op-F1 {row['op_f1']:.3f}", file=sys.stderr)
        rows.append(row)
    return rows


def main(args: Any) -> None:
    names = {f.name for f in dataclasses.fields(CurveConfig)}
    rows = learning_curve(CurveConfig(**{k: v for k, v in vars(args).items() if k in names}))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in row.items()})


def register_cli(sub: Any) -> None:
    """Add the ``learning-curve`` verb."""
    from clerk.generator.config import DataSection
    from clerk.memory.choices import add_settings

    p = sub.add_parser("learning-curve", help="validation op-F1 of a run's adapter snapshots (the learning curve)",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--timelines", required=True, metavar="FILE", help="the training timelines the SFT data came from")
    p.add_argument("--sft", required=True, metavar="DIR", help="the clerk build-sft output (names the validation personas)")
    p.add_argument("--model", required=True, metavar="DIR", help="base model directory")
    p.add_argument("--adapter", required=True, metavar="DIR", help="clerk train output with snapshots/")
    p.add_argument("--out", required=True, metavar="CSV", help="output CSV, one row per snapshot")
    # the settings of the train, evaluate and data sections this verb takes (clerk.settings)
    add_settings(p, "learning-curve", TrainSection, EvaluateSection, DataSection)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 = torch's default")
    p.set_defaults(func=main)
