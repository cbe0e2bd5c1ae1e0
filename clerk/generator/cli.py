"""The ``clerk generate`` verb: write persona timelines and print their stats (SPEC §2).

    clerk generate --seed 137 --split test --personas 5 --sessions 8 --out /tmp/test.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any

from clerk.atomic import check_out_file
from clerk.errors import UserError
from clerk.eval_sections import ErasureSection
from clerk.generator.config import WORLDS, DataSection, GeneratorConfig, SplitSection, count_range
from clerk.generator.files import timeline_stats, write_timelines
from clerk.generator.open_world import generate_open
from clerk.generator.timelines import generate_from_config
from clerk.settings import add_settings


def main(args: Any) -> None:
    """``clerk generate``: write timelines to ``args.out`` and print their stats to stderr."""
    check_out_file(args.out, "--out")
    cfg = GeneratorConfig(seed=args.seed, split=args.split, personas=args.personas, sessions=args.sessions,
                          budget=args.budget, n_init=args.init_facts, forgets=args.forgets,
                          questions=_questions(args.questions), evict_personas=args.evict_personas,
                          evict_adds=_evict_adds(args.evict_adds), compose=args.compose,
                          rewrites=tuple(args.rewrites), world=args.world)
    if cfg.world == "closed" and cfg.budget < cfg.n_init:
        # The config schema's rule for the workflow's data (clerk.config); the library still builds such
        # timelines (gold programs then evict in session 0), which its own tests use.
        raise UserError(f"budget: {cfg.budget} is less than init_facts {cfg.n_init} (session 0 states init_facts "
                        "facts into an empty ledger of budget slots: budget >= init_facts)")
    if cfg.world == "open":  # two-person dated conversations over composed keys (SPEC §2.9)
        if args.phrasings is not None:
            raise UserError("--phrasings is for --world closed; the open world's key space is "
                            "clerk/phrasing/open_world.yaml")
        timelines = generate_open(cfg)
    else:
        timelines = generate_from_config(cfg, args.phrasings)
    write_timelines(args.out, timelines)
    print(json.dumps(timeline_stats(timelines), indent=1), file=sys.stderr)


def _questions(value: str | tuple | list) -> tuple[int, int]:
    """``--questions``: ``"LOW-HIGH"`` text (a flag) or a ``[low, high]`` pair (``--config``).

    >>> _questions("1-3"), _questions((3, 3))
    ((1, 3), (3, 3))
    """
    return _pair(value, "questions")


def _evict_adds(value: str | tuple | list) -> tuple[int, int]:
    """``--evict-adds``: like :func:`_questions`, the ADDs per session of the eviction slice.

    >>> _evict_adds("3-4"), _evict_adds([5, 5])
    ((3, 4), (5, 5))
    """
    return _pair(value, "evict_adds")


def _pair(value: str | tuple | list, name: str) -> tuple[int, int]:
    """A count range from ``"LOW-HIGH"`` text or a ``[low, high]`` pair; ``name`` is the option's dest."""
    if isinstance(value, str):
        return count_range(value, "--" + name.replace("_", "-"))
    if len(value) != 2 or not all(type(v) is int for v in value):
        raise UserError(f"{name} must be a [low, high] pair of whole numbers, got {list(value)!r}")
    return int(value[0]), int(value[1])


def register_cli(sub: Any) -> None:
    """Add the ``generate`` verb."""
    p = sub.add_parser(
        "generate",
        help="write synthetic persona timelines (JSON lines) with gold programs and MC questions",
        description="Generate persona timelines (SPEC §2): one JSON line per persona with every "
        "session's turns, events, questions (10 options), gold program and ledgers before/after. "
        "Same arguments, same bytes. Prints summary statistics to stderr.",
    )
    # what to generate
    p.add_argument("--seed", type=int, required=True, help="base seed; the RNG is seeded from (seed, split)")
    p.add_argument("--split", required=True, metavar="SPLIT",
                   help="train (train names), test (test names) or test_ood (test names, OOD phrasings)")
    # the settings of the data section (and a split's, the erasure study's forgets): clerk.settings;
    # by hand, a split's default size (100 for train, 40 for test and test_ood), 8 sessions, no forgets
    add_settings(p, "generate", SplitSection, DataSection, ErasureSection, personas=None, sessions=8, forgets=0,
                 notes={"personas": "100 for train, 40 for test and test_ood"})
    p.add_argument("--world", choices=WORLDS, default="closed",
                   help="closed: the 28-predicate one-person benchmark (format-1 timelines); open: two-person dated "
                   "conversations over the compositional key space of clerk/phrasing/open_world.yaml, one open ledger "
                   "per conversation (format-2 timelines, SPEC §2.9; --personas counts conversations) (default: closed)")
    # where to write
    p.add_argument("--out", required=True, metavar="FILE", help="output timeline file (JSON lines)")
    p.set_defaults(func=main)
