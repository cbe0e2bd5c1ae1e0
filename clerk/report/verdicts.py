"""The paper's verdicts in words, computed from the numbers beside them (SPEC §8).

A sentence such as "the difference is not conclusive: its interval includes zero" is a claim about
numbers; typed by hand into the template it goes stale the moment a rerun moves the interval (the
shipped paper once said an interval ``+0.016 to +0.093`` "includes zero"). The template states such
claims through two placeholders that :func:`clerk.report.paper.render_paper` fills from
``results/numbers.json``, with the rule of the paired table (:func:`verdict`, also its
``conclusive`` column):

* ``{{verdict:pd.<split>.<system>}}``: one comparison, CLERK minus ``system``: "conclusive", or "not
  conclusive" and why (the interval includes zero; it clears zero by less than the machine
  margin), the margin printed as a traced number;
* ``{{verdicts:pd.<split>}}``: every comparison of a split, in table order, sorted into the systems
  CLERK is conclusively ahead of, conclusively behind, and not conclusively apart from.

Both read the ids ``<prefix>.boot_low``, ``<prefix>.boot_high`` and ``<prefix>.margin`` of the
numbers registry (``paper/numbers.yaml``), so every verdict rests on traced numbers.

    python -m pytest tests/test_paper_verdicts.py -q
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clerk.errors import UserError

#: The ids a verdict reads under its prefix.
BOUNDS = ("boot_low", "boot_high", "margin")
#: How the reference system is named in a verdict sentence.
REFERENCE_NAME = "CLERK"


def verdict(low: float, high: float, margin: float) -> str:
    """The paired table's verdict on a difference with bootstrap interval (``low``, ``high``):
    ``ahead`` / ``behind`` (the interval clears zero by more than ``margin``, above / below it),
    ``includes zero``, or ``within margin`` (it excludes zero by ``margin`` or less).

    >>> verdict(0.016, 0.093, 0.063), verdict(0.1, 0.2, 0.063), verdict(-0.2, -0.1, 0.0), verdict(-0.01, 0.02, 0.0)
    ('within margin', 'ahead', 'behind', 'includes zero')
    """
    if low > margin:
        return "ahead"
    if high < -margin:
        return "behind"
    return "includes zero" if low <= 0 <= high else "within margin"


def _bounds(nums: dict[str, dict], prefix: str, where: str) -> tuple[float, float, float]:
    missing = [f"{prefix}.{b}" for b in BOUNDS if f"{prefix}.{b}" not in nums]
    if missing:
        raise UserError(f"{where}: the verdict of '{prefix}' needs number ids {', '.join(missing)} "
                        "(paper/numbers.yaml: the paired table's boot_low, boot_high and margin columns)")
    low, high, margin = (float(nums[f"{prefix}.{b}"]["value"]) for b in BOUNDS)
    return low, high, margin


def verdict_text(nums: dict[str, dict], prefix: str, cite: Callable[[str], str], where: str) -> str:
    """``{{verdict:PREFIX}}``: the verdict on one comparison as a phrase; ``cite(id)`` prints a
    traced number (the margin).

    >>> nums = {"d.boot_low": {"value": 0.016}, "d.boot_high": {"value": 0.093}, "d.margin": {"value": 0.063, "text": "0.063"}}
    >>> verdict_text(nums, "d", lambda i: nums[i]["text"], "line 1")
    'not conclusive: its interval clears zero by less than the machine margin of 0.063'
    """
    low, high, margin = _bounds(nums, prefix, where)
    found = verdict(low, high, margin)
    if found in ("ahead", "behind"):
        return "conclusive" if not margin else f"conclusive beyond the machine margin of {cite(f'{prefix}.margin')}"
    if found == "includes zero":
        return "not conclusive: its interval includes zero"
    return f"not conclusive: its interval clears zero by less than the machine margin of {cite(f'{prefix}.margin')}"


def _series(items: list[str], last: str = " and ") -> str:
    """``a``, ``a and b``, ``a, b and c`` (``last`` joins the final item).

    >>> _series(["`full`"]), _series(["a", "b", "c"]), _series(["a", "b"], last=", and ")
    ('`full`', 'a, b and c', 'a, and b')
    """
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])}{last}{items[-1]}"


def verdicts_text(nums: dict[str, dict], prefix: str, where: str) -> str:
    """``{{verdicts:PREFIX}}``: every comparison under ``PREFIX`` (one split), sorted by verdict,
    as a sentence; systems in the tables' order (the memory registry's).

    >>> row = lambda lo, hi: {f"{b}": {"value": v} for b, v in zip(("boot_low", "boot_high", "margin"), (lo, hi, 0.05))}
    >>> nums = {f"pd.t.{s}.{k}": v for s, (lo, hi) in {"rag": (-0.01, 0.3), "oracle": (-0.2, -0.1), "full": (0.1, 0.2)}.items()
    ...         for k, v in row(lo, hi).items()}
    >>> verdicts_text(nums, "pd.t", "line 1")
    'CLERK is conclusively ahead of `full`, conclusively behind `oracle`, and not conclusively apart from `rag`'
    """
    from clerk.report.systems import SYSTEM_ORDER
    from clerk.report.tabular import ordered

    start = f"{prefix}."
    systems = ordered([i[len(start):].rsplit(".", 1)[0] for i in nums if i.startswith(start) and i.endswith(".boot_low")],
                      SYSTEM_ORDER)
    if not systems:
        raise UserError(f"{where}: no paired comparison under '{prefix}' in the numbers (ids {prefix}.<system>.boot_low)")
    groups: dict[str, list[str]] = {"ahead": [], "behind": [], "apart": []}
    for system in systems:
        found = verdict(*_bounds(nums, f"{prefix}.{system}", where))
        groups[found if found in ("ahead", "behind") else "apart"].append(system)
    parts = [f"{label} {_series([f'`{s}`' for s in groups[key]])}" for key, label in (("ahead", "conclusively ahead of"),
                                                                ("behind", "conclusively behind"),
                                                                ("apart", "not conclusively apart from"))
             if groups[key]]
    return f"{REFERENCE_NAME} is {_series(parts, last=', and ')}"


def fill_verdict(kind: str, name: str, nums: dict[str, Any], cite: Callable[[str], str], line: int) -> str:
    """The text of a ``verdict`` or ``verdicts`` placeholder at template ``line``."""
    where = f"template line {line}"
    return verdict_text(nums, name, cite, where) if kind == "verdict" else verdicts_text(nums, name, where)
