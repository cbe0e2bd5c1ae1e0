"""The paper's claims, checked on a rerun before its cells (``clerk compare``).

Three kinds, each on the items :func:`clerk.provenance.compare.compare_trees` found:

* **verdict**: every ``conclusive`` paired difference (``table_paired.csv``, ``table2_paired.csv``)
  keeps its sign and stays conclusive;
* **ranking**: in tables 1-3, every two systems whose accuracies lie further apart than the sum of
  their two cells' tolerances keep their order (on the seeds' rows when the rerun holds other
  seeds than the shipped run, so that the three-seed means are skipped);
* **headline**: every number the paper's abstract prints lies within its tolerance.

A claim ``holds``, ``failed``, is ``missing`` (its table is not in the rerun) or ``skipped`` (an
aggregate over another set of seeds, said why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.cells import SEED, Table, row_skip
from clerk.provenance.compare import Comparison, Rule, rule_for

#: The paired tables whose conclusive verdicts the paper states.
PAIRED = ("table_paired.csv", "table2_paired.csv")
#: Tables 1-3 (three-seed means) and their per-seed tables: the rankings the paper states.
RANKED = (("table1.csv", "table1_seeds.csv"), ("table3.csv", "table3_seeds.csv"), ("table2.csv", None))
CLAIM_STATUSES = ("holds", "skipped", "failed", "missing")


@dataclass
class Claim:
    kind: str  # "verdict" | "ranking" | "headline"
    name: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status:>7}  {self.kind} {self.name}: {self.detail}"


def _f(value: str | float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def verdict_claims(found: Comparison) -> list[Claim]:
    """One claim per conclusive row of each paired table: sign kept and still conclusive."""
    claims = []
    for rel in PAIRED:
        shipped, rerun = found.shipped.get(rel), found.rerun.get(rel)
        if shipped is None:
            continue
        theirs = rerun.index() if rerun is not None else {}
        for key, row in shipped.index().items():
            if row.get("conclusive") != "True":
                continue
            name = f"{rel}[{row['split']}: clerk - {row['system']}]"
            stated = f"shipped {_f(row['delta']):+.3f} [{_f(row['boot_low']):+.3f}, {_f(row['boot_high']):+.3f}] conclusive"
            other = theirs.get(key)
            if other is None:
                claims.append(Claim("verdict", name, "missing", f"{stated}; rerun lacks the {'row' if rerun else 'table'}"))
                continue
            why = row_skip(shipped, row, other, found.seeds[1])
            if why is not None:
                claims.append(Claim("verdict", name, "skipped", f"{stated}; not checked: {why}"))
                continue
            d0, d1 = _f(row["delta"]), _f(other["delta"])
            seen = f"rerun {d1:+.3f} [{_f(other['boot_low']):+.3f}, {_f(other['boot_high']):+.3f}]"
            if other.get("conclusive") == "True" and (d0 > 0) == (d1 > 0):
                claims.append(Claim("verdict", name, "holds", f"{stated}; {seen} conclusive"))
            else:
                what = "sign flipped" if (d0 > 0) != (d1 > 0) else "no longer conclusive"
                claims.append(Claim("verdict", name, "failed", f"{what}: {stated}; {seen} "
                                    f"{'conclusive' if other.get('conclusive') == 'True' else 'not conclusive'} "
                                    f"(delta moved {d1 - d0:+.3f})"))
    return claims


def _ranking(rows: dict[str, dict], theirs: dict[str, dict], rel: str, column: str, rules: list[Rule]) -> tuple[str, str]:
    """``(status, detail)`` of one ranking: shipped systems in ``rows``, rerun ones in ``theirs``."""
    order = sorted(rows, key=lambda s: -_f(rows[s][column]))
    claimed, broken, absent = 0, [], 0
    for a, b in combinations(order, 2):
        gap = _f(rows[a][column]) - _f(rows[b][column])
        margin = rule_for(rules, f"{rel}:{column}", rows[a]).abs + rule_for(rules, f"{rel}:{column}", rows[b]).abs
        if not gap > margin:
            continue
        claimed += 1
        if a not in theirs or b not in theirs:
            broken.append(f"{a} > {b}: {a if a not in theirs else b} missing from the rerun")
            absent += 1
            continue
        now = _f(theirs[a][column]) - _f(theirs[b][column])
        if not now > 0:
            broken.append(f"{a} > {b} (shipped gap {gap:+.3f}, margin {margin:.3f}; rerun gap {now:+.3f})")
    text = f"{' > '.join(order)}; {claimed} pair(s) apart by more than their two tolerances"
    if broken:
        return ("missing" if absent == len(broken) else "failed"), f"{text}, {len(broken)} not in order: " + "; ".join(broken)
    return "holds", f"{text}, every one in order in the rerun"


def ranking_claims(found: Comparison, rules: list[Rule]) -> list[Claim]:
    """One claim per table 1-3 and split (three-seed means), or per rerun seed (per-seed rows)
    where the rerun's means are over other seeds."""
    claims = []
    for agg, per_seed in RANKED:
        shipped, rerun = found.shipped.get(agg), found.rerun.get(agg)
        if shipped is None:
            continue
        if rerun is None:
            claims.append(Claim("ranking", agg, "missing", "the rerun lacks the table"))
            continue
        for split, rows in _by(shipped, "split").items():
            theirs = {r["system"]: r for r in rerun.rows if r.get("split", "") == split}
            skipped = [row_skip(shipped, r, theirs.get(s), found.seeds[1]) for s, r in rows.items()]
            name = f"{agg}" + (f" ({split})" if split else "")
            if not any(skipped):
                status, detail = _ranking(rows, theirs, agg, "accuracy_mean", rules)
                claims.append(Claim("ranking", f"{name}, accuracy over seeds", status, detail))
                continue
            why = next(w for w in skipped if w)
            if per_seed is None or per_seed not in found.rerun or per_seed not in found.shipped:
                claims.append(Claim("ranking", name, "skipped", f"not checked: {why}, and no per-seed table to check instead"))
                continue
            for seed in sorted(found.seeds[1] & found.seeds[0], key=lambda s: (len(s), s)):
                ours = {r["system"]: r for r in found.shipped[per_seed].rows if r.get("split") == split and r[SEED] == seed}
                got = {r["system"]: r for r in found.rerun[per_seed].rows if r.get("split") == split and r[SEED] == seed}
                status, detail = _ranking(ours, got, per_seed, "accuracy", rules)
                claims.append(Claim("ranking", f"{per_seed} ({split}, seed {seed}), accuracy", status,
                                    f"{detail} (the means are skipped: {why})"))
    return claims


def _by(table: Table, column: str) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for row in table.rows:
        out.setdefault(row.get(column, ""), {})[row["system"]] = row
    return out


def abstract_numbers(paper: Path) -> list[str]:
    """The number ids the paper's abstract prints (its ``[^num-ID]`` footnotes), in order.

    Raises:
        UserError: the paper is missing or has no ``## Abstract`` section.
    """
    if not paper.is_file():
        raise UserError(f"--paper: file '{paper}' does not exist")
    text = paper.read_text(encoding="utf-8")
    found = re.search(r"^## Abstract\n(.*?)(?=^## )", text, re.S | re.M)
    if found is None:
        raise UserError(f"--paper: '{paper}' has no '## Abstract' section")
    return list(dict.fromkeys(re.findall(r"\[\^num-([^\]]+)\]", found.group(1))))


def headline_claims(found: Comparison, ids: list[str]) -> list[Claim]:
    """One claim per abstract number: its numbers.json item equal or within its tolerance."""
    items = {i.name: i for i in found.numbers}
    claims = []
    for nid in ids:
        item = items.get(nid)
        if item is None:
            claims.append(Claim("headline", nid, "missing", "in neither numbers.json"))
            continue
        status = {"equal": "holds", "within": "holds", "timing": "holds", "skipped": "skipped"}.get(item.status, "failed")
        if item.status == "missing":
            status = "missing"
        detail = item.line().split(": ", 1)[1]
        if item.status == "skipped":
            detail += f"; not checked: {_skip_reason(found, item)}"
        elif item.rule is not None and item.status in ("equal", "within"):
            detail = detail.split(" (tolerance")[0] + f" (tolerance {item.rule.abs:g})"
        claims.append(Claim("headline", nid, status, detail))
    return claims


def _skip_reason(found: Comparison, item) -> str:
    """The note a skipped number's cell (or the number itself) was left out under."""
    rel = item.family.split(":")[0]
    label = found.shipped[rel].label(item.row) if rel in found.shipped and item.row is not None else item.name
    for skip in found.skips:
        if skip.rel in (rel, item.family, "numbers.json") and label in skip.rows:
            return skip.why
    return "an aggregate over another set of seeds"


def check_claims(found: Comparison, rules: list[Rule], paper: Path | None) -> list[Claim]:
    """Every claim: verdicts, rankings, then the abstract's numbers (``paper`` None: none)."""
    return (verdict_claims(found) + ranking_claims(found, rules)
            + (headline_claims(found, abstract_numbers(paper)) if paper is not None else []))
