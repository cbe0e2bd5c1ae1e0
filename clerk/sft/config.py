"""The workflow's ``sft`` section: the SFT mixture of the policy's (and one adapter's) training set.

    python -c "from clerk.sft.config import SFTSection; print(SFTSection())"
"""

from __future__ import annotations

from dataclasses import dataclass

from clerk.errors import UserError
from clerk.settings import setting

#: What ``clerk build-sft`` keeps of the mixture: both tasks (one adapter), or one.
TASKS = ("both", "consolidate", "answer")


@dataclass(kw_only=True)
class SFTSection:
    """ANSWER examples, their memory views, EVICT copies and the validation share (``sft``)."""

    answer_ratio: float = setting(
        0.5, help="ANSWER examples per CONSOLIDATE example in each split (0 = none)", minimum=0,
        verbs=("build-sft",), metavar="X")
    # No default: the mix of views is the profile's choice (clerk build-sft alone: ledger=1, no tokenizer).
    answer_views: dict[str, float] = setting(
        help="view kinds of the ANSWER examples and their weights, e.g. ledger=3,full=1 (clerk/memory/views.py)",
        choices="view_kind", items={"type": "number", "exclusiveMinimum": 0}, schema={"minProperties": 1},
        verbs=("build-sft",), flag_type=lambda text: parse_weights(text), metavar="KIND=W,...")
    # No default: how much to oversample EVICT is the profile's choice (clerk build-sft alone: 1, none extra).
    evict_weight: int = setting(help="copies of each CONSOLIDATE example whose gold program evicts", minimum=1,
                                verbs=("build-sft",), metavar="N")
    reworded_questions: float = setting(
        0.5, help="share of the ANSWER examples' questions asked in a wording of the training-only question set "
        "(clerk/phrasing/reader_questions.yaml) instead of the catalogue's (0 = the catalogue's only)",
        minimum=0, maximum=1, verbs=("build-sft",), metavar="P")
    val_fraction: float = setting(0.1, help="share of training personas held out as the validation split",
                                  exclusive_minimum=0, exclusive_maximum=1, verbs=("build-sft",), metavar="Y")


def parse_weights(text: str | dict) -> dict[str, float]:
    """``"ledger=3,full=1"`` (a flag) or ``{"ledger": 3, "full": 1}`` (``--config``) ->
    ``{"ledger": 3.0, "full": 1.0}`` (order kept).

    >>> parse_weights("ledger=3,full=0.5"), parse_weights({"ledger": 2})
    ({'ledger': 3.0, 'full': 0.5}, {'ledger': 2.0})
    """
    if isinstance(text, dict):
        bad = {k: v for k, v in text.items() if type(v) not in (int, float)}
        if bad:
            raise UserError(f"answer_views: expected kind: weight numbers, got {bad!r}")
        return {str(k): float(v) for k, v in text.items()}
    out = {}
    for part in filter(None, text.split(",")):
        kind, _, weight = part.partition("=")
        try:
            out[kind.strip()] = float(weight)
        except ValueError:
            raise UserError(f"--answer-views: expected kind=weight pairs, got {part!r}") from None
    return out
