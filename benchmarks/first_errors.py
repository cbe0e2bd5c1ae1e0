r"""Where closed-loop drift starts: the policy's errors on sessions whose ledger still equals gold.

``benchmarks/evict_victim.py`` found that most EVICT errors follow an earlier error that made the
system's ledger drift from gold. This script sorts the errors that *start* the drift: it reads the
``programs.jsonl`` of one or more closed-loop runs of that script (validation personas only) and,
for every session written against a ledger that still equals gold (``slot_facts``), pairs each
missed gold op with an extra predicted op of the same session:

* ``value``     - same op kind and predicate, another value (for instance a truncated phrase);
* ``op kind``   - same predicate and value, another kind (ADD written as UPDATE, ...);
* ``predicate`` - same kind and value, another predicate (a neighbouring key);
* ``EVICT victim`` - an EVICT, another slot;
* unpaired misses (``missed``: a fact the policy did not write) and unpaired extras (``extra``).

    python benchmarks/first_errors.py --timelines T RUN_DIR [RUN_DIR ...] [--examples N]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from evict_victim import sessions_by_key, slot_facts

from clerk.metrics import canonical_ops


def pair_errors(missed: list[tuple], extra: list[tuple]) -> list[tuple[str, tuple | None, tuple | None]]:
    """Pair each missed gold op with an extra predicted op, closest relation first.

    >>> pair_errors([("ADD", "A", "job", "chef")], [("UPDATE", "A", "job", "chef")])
    [('op kind', ('ADD', 'A', 'job', 'chef'), ('UPDATE', 'A', 'job', 'chef'))]
    >>> pair_errors([("ADD", "A", "job", "chef")], [])
    [('missed', ('ADD', 'A', 'job', 'chef'), None)]
    """
    rules = (
        ("EVICT victim", lambda g, p: g[0] == p[0] == "EVICT"),
        ("value", lambda g, p: g[0] == p[0] and g[2] == p[2]),
        ("op kind", lambda g, p: g[0] != p[0] and g[2] == p[2]),
        ("predicate", lambda g, p: g[0] == p[0] and g[3:] == p[3:]),
    )
    missed, extra, out = list(missed), list(extra), []
    for name, match in rules:
        for g in list(missed):
            p = next((p for p in extra if p[0] != "INVALID" and match(g, p)), None)
            if p is not None:
                out.append((name, g, p))
                missed.remove(g)
                extra.remove(p)
    out += [("missed", g, None) for g in missed] + [("extra", None, p) for p in extra]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timelines", type=Path, required=True, help="the train split timelines the runs used")
    ap.add_argument("runs", type=Path, nargs="+", help="output dirs of benchmarks/evict_victim.py (programs.jsonl)")
    ap.add_argument("--examples", type=int, default=0, help="print this many error sessions with their user lines")
    args = ap.parse_args()
    gold = sessions_by_key(args.timelines)
    counts, kinds, shown = Counter(), Counter(), 0
    for run in args.runs:
        for line in (run / "programs.jsonl").read_text().splitlines():
            rec = json.loads(line)
            session = gold[(rec["subject"], rec["now"])]
            if slot_facts(rec["ledger"]) != slot_facts(session["ledger_before"]):
                counts["sessions drifted before"] += 1
                continue
            counts["sessions on the gold ledger"] += 1
            g = Counter(canonical_ops(session["ledger_before"], session["gold_ops"], rec["now"]))
            p = Counter(canonical_ops(rec["ledger"], rec["program"], rec["now"]))
            errors = pair_errors(list((g - p).elements()), list((p - g).elements()))
            counts["sessions with an error"] += bool(errors)
            for name, gop, pop in errors:
                kinds[(name, (gop or pop)[0], pop[0] if gop and pop else "")] += 1
            if errors and shown < args.examples:
                shown += 1
                users = [t["content"] for t in session["turns"] if t["role"] == "user"]
                print(json.dumps({"users": users, "errors": errors}, ensure_ascii=False))
    print(json.dumps(dict(counts), indent=1))
    for (name, gkind, pkind), n in kinds.most_common():
        print(f"{n:4d}  {name:13s} {gkind}{' -> ' + pkind if pkind and pkind != gkind else ''}")


if __name__ == "__main__":
    main()
