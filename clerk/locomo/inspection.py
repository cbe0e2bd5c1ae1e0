"""What a LoCoMo file holds: conversations, sessions, turns and questions per corrected category.

``clerk locomo-inspect`` loads either format and prints :func:`clerk.locomo.subsets.summarize`
as text or JSON, categories under their corrected names.

    clerk locomo-inspect --data tests/fixtures/locomo/locomo10_mini.json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from clerk.locomo.files import load_locomo
from clerk.locomo.subsets import summarize


def format_summary(summary: dict[str, Any], path: str) -> str:
    """Human-readable text of :func:`summarize` for ``clerk locomo-inspect``."""
    lines = [
        f"file: {path}",
        f"source: {', '.join(summary['sources'])}",
        f"conversations: {summary['conversations']}  sessions: {summary['sessions']}  turns: {summary['turns']}  "
        f"questions: {summary['questions']} (adversarial: {summary['adversarial']})",
        "questions per category (corrected names):",
    ]
    lines += [f"  {name:<12} {n}" for name, n in summary["per_category"].items()]
    lines.append("per conversation:")
    for c in summary["per_conversation"]:
        lines.append(
            f"  {c['conv_id']}  speakers={'/'.join(c['speakers'])}  sessions={c['sessions']}  "
            f"turns={c['turns']}  questions={c['questions']}"
        )
    return "\n".join(lines)


def main_inspect(args: argparse.Namespace) -> None:
    """``clerk locomo-inspect``: print conversations, sessions, turns and questions per category."""
    conversations = load_locomo(args.data, mc_seed=args.mc_seed)
    summary = summarize(conversations)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_summary(summary, args.data))

