"""The recipe's acceptance figures (the reader's and the policy's goals, and the erasure study's leak rates),
from one run's files.

    python benchmarks/acceptance.py --run RUN [--against OTHER_RUN]

RUN is a checkout whose ``results/`` holds a finished default run (``table1_seeds.csv``,
``table3_seeds.csv``, ``table1.csv``, ``table5.csv``). Prints one line
per figure: the goal, the measured value (mean of seeds, and per seed where the goal is per seed),
and whether it is met. ``--against`` adds the same figure from a second run (for instance the
previously shipped one) so a closing note can state what moved. Reads files only; no model.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

TYPES = ("unknown", "current", "superseded", "negated", "temporal")


def _figures(run: Path) -> list[tuple[str, str, str, bool]]:
    """(figure, goal, measured, met) rows for one run."""
    res = run / "results"
    seeds = pd.concat([pd.read_csv(res / "table1_seeds.csv"), pd.read_csv(res / "table3_seeds.csv")])
    rows: list[tuple[str, str, str, bool]] = []

    def per_seed(split: str, system: str, col: str) -> pd.Series:
        sel = seeds[(seeds.split == split) & (seeds.system == system)].set_index("seed")[col]
        if sel.empty:
            raise SystemExit(f"acceptance.py: no rows for split={split!r} system={system!r} in {res}")
        return sel.sort_index()

    for split in ("test", "test_ood"):
        worst = pd.concat([per_seed(split, "oracle", f"accuracy_{t}") for t in TYPES], axis=1).min(axis=1)
        text = " / ".join(f"{v:.3f}" for v in worst)
        rows.append((f"oracle worst type per seed ({split})", ">= 0.95 each", text, bool((worst >= 0.95).all())))
    cur = per_seed("test", "full", "accuracy_current")
    rows.append(("full `current` (test)", ">= 0.90", f"{cur.mean():.3f} ({' / '.join(f'{v:.3f}' for v in cur)})",
                 bool(cur.mean() >= 0.90)))
    n = seeds.groupby(["split", "seed"]).n_questions.max()
    rows.append(("questions per (seed, split)", ">= 300", f"{int(n.min())} (min)", bool(n.min() >= 300)))
    t1 = pd.read_csv(res / "table1.csv")
    clerk = t1[t1.system == "clerk"].iloc[0]
    half = (clerk.accuracy_ci_high - clerk.accuracy_ci_low) / 2
    rows.append(("clerk accuracy interval (test)", "<= +-0.05", f"+-{half:.3f}", bool(half <= 0.05)))
    for col, goal in (("op_f1", 0.90), ("op_update_f1", 0.80), ("op_tombstone_f1", 0.80), ("op_evict_f1", 0.80),
                      ("state_f1", 0.90)):
        v = per_seed("test", "clerk", col)
        rows.append((f"clerk {col} (test)", f">= {goal:.2f}", f"{v.mean():.3f}", bool(v.mean() >= goal)))
    pf = per_seed("test", "clerk", "parse_failure_rate").mean()
    rows.append(("clerk parse_failure_rate (test)", "<= 0.01", f"{pf:.3f}", bool(pf <= 0.01)))
    gap = per_seed("test", "clerk", "op_f1").mean() - per_seed("test_ood", "clerk", "op_f1").mean()
    rows.append(("clerk op_f1 test - test_ood", "<= 0.05", f"{gap:.3f}", bool(gap <= 0.05)))
    t5 = pd.read_csv(res / "table5.csv")
    for system in ("clerk", "oracle"):
        leak = t5[(t5.system == system) & (t5["mode"] == "forget")].leak_rate_mean.iloc[0]
        rows.append((f"{system} leak rate after forget (erasure study)", "0 (SPEC section 9)", f"{leak:.4f}",
                     bool(leak == 0)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="checkout holding the run's results/")
    ap.add_argument("--against", type=Path, help="a second checkout to print beside it")
    args = ap.parse_args()
    mine = _figures(args.run)
    other = {f: m for f, _, m, _ in _figures(args.against)} if args.against else {}
    head = "| figure | goal | measured | met |" + (" other run |" if other else "")
    print(head)
    print("| --- | --- | --- | --- |" + (" --- |" if other else ""))
    for fig, goal, measured, met in mine:
        tail = f" {other.get(fig, 'n/a')} |" if other else ""
        print(f"| {fig} | {goal} | {measured} | {'yes' if met else 'no'} |{tail}")


if __name__ == "__main__":
    main()
