"""The spread of every paper number and table cell, per tolerance family, between runs.

Two kinds of record, each grouped by the first rule of ``paper/tolerances.yaml`` that matches an
item (as ``clerk compare`` matches them: rows by key, a number by the table cell it is read from):

* ``--pair LABEL RUN_A RUN_B``: two results folders of the same recipe on two machines; every
  item compared as ``clerk compare`` does (a rerun with a subset of the seeds is compared on those
  seeds' rows only). Repeatable.
* ``--seeds LABEL RUN``: the seed-to-seed spread inside one run: for each row of a per-seed table
  (a key with ``seed``), the largest difference of a cell between two seeds of the same row key.
  An upper bound for cells too small to measure a machine spread on (a few questions a type).

For each family it prints the items, how many differ, the largest difference and where, per
record; the declared ``abs``; the smallest tolerance covering every *pair* record (rounded up to
two significant digits), and the same over every record (seed records included); and whether the
declared one covers the pair records. Text cells that differ (a flipped ``conclusive``) are listed. Exit status 1 when a declared
tolerance is below a pair record's spread. The Markdown it writes is the record the tolerances cite:

    python benchmarks/machine_spread.py --pair "A: ..." RUN_A/results RUN_B/results \\
        --pair "B: ..." results RERUN/results --seeds "C: ..." results --out benchmarks/machine-spread.md

The record ``benchmarks/machine-spread.md`` was made so: record A's two trees are the results
committed at 84df146 and b5a37c3 (``git archive 84df146 results | tar -x -C A``); record B's
rerun tree is the seed-137 rerun on a CPU without bf16 units (its tables and numbers.json, kept
outside this repository); record C is ``results`` alone.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from clerk.provenance.cells import SEED, load_tables
from clerk.provenance.compare import Rule, compare_trees, load_spec, rule_for


def _blank(rules: list[Rule]) -> dict[str, dict]:
    return {r.pattern + repr(r.where): {"items": 0, "differ": 0, "max": 0.0, "where": "", "text": []} for r in rules}


def _add(row: dict, diff: float | None, where: str, differs: bool) -> None:
    row["items"] += 1
    if not differs:
        return
    row["differ"] += 1
    if diff is None:  # a text cell that differs (a flipped verdict): no tolerance covers it, listed apart
        row["text"].append(where)
    elif diff > row["max"]:
        row["max"], row["where"] = diff, where


def pair_spread(a: Path, b: Path, tolerances: Path) -> dict[str, dict]:
    """Per rule: items, differing items, max |diff| and where, between two results folders."""
    spec = load_spec(tolerances)
    found = compare_trees(a, b, spec)
    out = _blank(spec.rules)
    for item in found.numbers + found.cells:
        if item.status in ("skipped", "missing") or item.rule is None:
            continue
        rule = item.rule
        if rule.timing:
            out[rule.pattern + repr(rule.where)]["items"] += 1
            continue
        _add(out[rule.pattern + repr(rule.where)], item.diff(), item.name, item.status != "equal")
    return out


def seed_spread(run: Path, tolerances: Path) -> dict[str, dict]:
    """Per rule: the largest difference of a per-seed cell between two seeds of the same row key."""
    spec = load_spec(tolerances)
    out = _blank(spec.rules)
    for rel, table in load_tables(run, spec.keys).items():
        if SEED not in table.key:
            continue
        groups = defaultdict(list)
        for row in table.rows:
            groups[tuple(row[k] for k in table.key if k != SEED)].append(row)
        for rows in groups.values():
            for col in table.header:
                rule = rule_for(spec.rules, f"{rel}:{col}", rows[0])
                if rule.timing or col in table.key:
                    continue
                for x, y in combinations(rows, 2):
                    try:
                        d = abs(float(x[col]) - float(y[col]))
                    except ValueError:
                        continue
                    if not math.isnan(d):
                        _add(out[rule.pattern + repr(rule.where)], d,
                             f"{rel}[{table.label(x)} vs {y[SEED]}]:{col}", d > 0)
    return out


def round_up(x: float) -> float:
    """``x`` rounded up to two significant digits (0 stays 0).

    >>> round_up(0.08599), round_up(0.2), round_up(0.0)
    (0.086, 0.2, 0.0)
    """
    if x <= 0 or math.isinf(x):
        return x
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return round(math.ceil(round(x / scale, 9)) * scale, 12)


def markdown(rules: list[Rule], records: list[tuple[str, str, dict]]) -> str:
    """The record: one row per rule with items, max |diff| (where) per record, and the tolerances."""
    lines = ["# Spread of every paper number and table cell, per tolerance family", "",
             "Generated by `benchmarks/machine_spread.py`: each item grouped by the first rule of",
             "`paper/tolerances.yaml` that matches it, as `clerk compare` matches them. Pair records compare",
             "two runs of one recipe on two machines; a seed record is the seed-to-seed spread inside one run.",
             "`needs` is the smallest tolerance covering every pair record, rounded up to two significant digits;",
             "`needs with seeds` covers the seed records too.",
             ""]
    lines += [f"- **{label}** ({kind}): the columns headed {label.split(':')[0]}" for label, kind, _ in records]
    heads = [label.split(":")[0] for label, _, _ in records]
    lines += ["", "| rule (first match) | where | " + " | ".join(f"{h} items/differ | {h} max | {h} at" for h in heads)
              + " | needs | needs with seeds | declared | covered |",
              "| :--- | :--- |" + " ---: | ---: | :--- |" * len(records) + " ---: | ---: | ---: | :--- |"]
    short, text = [], []
    for rule in rules:
        key = rule.pattern + repr(rule.where)
        if not any(rec[key]["items"] for _, _, rec in records):
            continue
        cells, need, need_all = [], 0.0, 0.0
        for label, kind, rec in records:
            r = rec[key]
            cells.append(f"{r['items']}/{r['differ']} | {r['max']:.4g} | {r['where'][:80]}" if r["items"] else " | | ")
            text += [f"{label.split(':')[0]}: {w}" for w in r["text"]]
            need_all = max(need_all, r["max"])
            if kind == "pair":
                need = max(need, r["max"])
        where = "; ".join(f"{c}: {', '.join(v)}" for c, v in rule.where)
        declared = "timing" if rule.timing else f"{rule.abs:g}"
        covered = "timing" if rule.timing else ("yes" if need <= rule.abs else "**no**")
        if covered == "**no**":
            short.append(f"`{rule.pattern}`{' (' + where + ')' if where else ''}")
        lines.append(f"| `{rule.pattern}` | {where} | " + " | ".join(cells) +
                     f" | {'' if rule.timing else f'{round_up(need):g}'} | {'' if rule.timing else f'{round_up(need_all):g}'}"
                     f" | {declared} | {covered} |")
    lines += ["", "## How each tolerance was set", "",
              "From `paper/tolerances.yaml` (each rule's `why`): which record gave it; \"across different code\"",
              "marks a family whose only or largest measure spans two versions of the code.", "",
              "| rule | where | abs | why |", "| :--- | :--- | ---: | :--- |"]
    lines += [f"| `{r.pattern}` | {'; '.join(f'{c}: {chr(44).join(v)}' for c, v in r.where)} | {r.abs:g} | {r.why} |"
              for r in rules if not r.timing and r.abs > 0]
    if text:
        lines += ["", "Text cells that differ (no tolerance applies; a flipped verdict is a failed claim): "
                  + "; ".join(text) + "."]
    if short:
        lines += ["", "Declared below a pair record's spread: " + "; ".join(short) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=3, action="append", default=[], metavar=("LABEL", "RUN_A", "RUN_B"),
                        help="two results folders of one recipe on two machines (repeatable)")
    parser.add_argument("--seeds", nargs=2, action="append", default=[], metavar=("LABEL", "RUN"),
                        help="one results folder: the seed-to-seed spread of its per-seed tables (repeatable)")
    parser.add_argument("--tolerances", type=Path, default=Path("paper/tolerances.yaml"))
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown record here")
    args = parser.parse_args(argv)
    if not args.pair and not args.seeds:
        parser.error("give at least one --pair or --seeds")
    records = [(label, "pair", pair_spread(Path(a), Path(b), args.tolerances)) for label, a, b in args.pair]
    records += [(label, "seeds", seed_spread(Path(run), args.tolerances)) for label, run in args.seeds]
    rules = load_spec(args.tolerances).rules
    text = markdown(rules, records)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 1 if "Declared below a pair record's spread" in text else 0


if __name__ == "__main__":
    sys.exit(main())
