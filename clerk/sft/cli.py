"""The ``clerk build-sft`` verb: training timelines -> the SFT dataset and its stats.

    clerk build-sft --timelines results/data/137/train.jsonl --tokenizer resources/models/smollm2-135m \\
        --seed 137 --out results/sft/137
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from clerk.eval_sections import EvaluateSection
from clerk.memory.choices import add_settings
from clerk.sft.config import TASKS, SFTSection, parse_weights
from clerk.sft.dataset import sft_stats, to_dataset_dict, write_sft
from clerk.sft.examples import SFTDataConfig, build_rows


def main(args: Any) -> None:
    """``clerk build-sft``: read timelines, build the dataset, save it and its stats."""
    from clerk.generator.files import load_timelines
    from clerk.memory import EvalConfig, Runtime

    config = SFTDataConfig(seed=args.seed, answer_ratio=args.answer_ratio, val_fraction=args.val_fraction,
                           answer_views=parse_weights(args.answer_views), evict_weight=args.evict_weight,
                           reworded_questions=args.reworded_questions)
    runtime = None
    if args.tokenizer is not None:
        runtime = Runtime(EvalConfig(window_k=args.window_k, rag_k=args.rag_k), model_dir=args.tokenizer)
    files = [args.timelines] if isinstance(args.timelines, str) else list(args.timelines)
    timelines = [tl for path in files for tl in load_timelines(path, "--timelines")]
    rows, info = build_rows(timelines, config, runtime)
    if args.tasks != "both":  # after the build: the split and the sampled questions stay the mixture's
        rows = {split: [row for row in split_rows if row["task"] == args.tasks] for split, split_rows in rows.items()}
    dataset_dict = to_dataset_dict(rows)
    stats = sft_stats(dataset_dict, config, info["question_pool"])
    stats["tasks_kept"] = args.tasks
    digests = [hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in files]
    stats["timelines_sha256"] = digests[0] if len(digests) == 1 else digests
    write_sft(dataset_dict, args.out, stats)


def register_cli(sub: Any) -> None:
    """Add the ``build-sft`` verb."""
    p = sub.add_parser(
        "build-sft",
        help="turn training timelines into the chat-messages SFT dataset",
        description="Build the CONSOLIDATE + ANSWER SFT dataset (Hugging Face save_to_disk format, splits "
        "train/validation by persona) from a training timeline file, plus sft_stats.json.",
    )
    # inputs and outputs
    p.add_argument("--timelines", required=True, nargs="+", metavar="FILE",
                   help="training timelines (JSON lines from clerk generate); several files are one mixture, e.g. the "
                   "closed benchmark's and the open world's (SPEC §2.9): persona names must not repeat across them")
    p.add_argument("--tokenizer", metavar="DIR", default=None,
                   help="model directory whose tokenizer sizes the transcript views (needed for view kinds other than ledger)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (replaced if it is an earlier dataset)")
    # experiment facts
    p.add_argument("--seed", required=True, type=int, help="base seed of the persona split, answer sampling and shuffles")
    p.add_argument("--tasks", choices=TASKS, default="both",
                   help="examples kept: both (the policy and reader share one adapter), consolidate (a policy "
                   "of its own) or answer (a separate reader); the persona split and sampling are the same "
                   "(default both)")
    # the settings of the sft section, and the views' sizes of the evaluate section (clerk.settings)
    add_settings(p, "build-sft", SFTSection, EvaluateSection, answer_views={"ledger": 1.0}, evict_weight=1,
                 notes={"evict_weight": "1, none extra"})
    p.set_defaults(func=main)
