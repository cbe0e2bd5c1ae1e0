"""Closed-loop CONSOLIDATE examples (a closed-loop drift lever; DAgger-style), from TRAINING personas only.

A trained policy evaluated session after session writes against its own ledger, which drifts from
gold after its first mistake; the SFT set only ever shows it gold ledgers (teacher forcing). This
script reads the programs the policy wrote for the SFT *train* personas in its own closed loop
(``benchmarks/evict_victim.py --personas train``: ``programs.jsonl`` holds the system's ledger
before each session) and, for every session whose ledger had drifted from gold, makes one
CONSOLIDATE row: that ledger, the session's transcript, and the program that applies the session's
events to *that* ledger by the generator's own rule (``clerk.generator.gold.gold_program``; an ADD
of a predicate the drifted ledger already holds becomes an UPDATE to the stated value, a stated
fact it already holds with that value needs no op). The rows are appended to the train split of
an SFT dataset; the validation split (and so the personas scored) is unchanged.

    python benchmarks/dagger.py --timelines T --programs R1/programs.jsonl R2/programs.jsonl \\
        --sft W/p137/sft --out W/p137-dagger/sft
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from evict_victim import sessions_by_key, slot_facts  # benchmarks/, beside this script

from clerk import ledger as L
from clerk.generator.gold import gold_program
from clerk.sft.dataset import to_dataset_dict
from clerk.sft.examples import consolidate_example


def program_against(ledger: L.Ledger, events: list[dict], subject: str, now: int) -> L.Program:
    """The session's events applied to ``ledger`` (not necessarily gold's) by the gold rule."""
    work, program = ledger, []
    for event in events:
        i = L.find(work, subject, event["pred"])
        if event["kind"] in ("ADD", "UPDATE") and i is not None:
            if work[i]["o"] == event["value"] and work[i]["v"] == 1:
                continue
            event = {**event, "kind": "UPDATE"}
        ops = gold_program(work, [event], subject, now)
        work, _ = L.reduce(work, ops, now=now, strict=True)
        program.extend(ops)
    return program


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timelines", type=Path, required=True, help="train timelines (results/data/SEED/train.jsonl)")
    ap.add_argument("--programs", type=Path, nargs="+", required=True, help="programs.jsonl of train-persona rollouts")
    ap.add_argument("--sft", type=Path, required=True, help="the SFT dataset to extend (its validation split is kept)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from datasets import load_from_disk

    sessions = sessions_by_key(args.timelines)
    base = load_from_disk(str(args.sft))
    train_names = set(base["train"]["persona"])
    new, counts = [], {"sessions": 0, "drifted": 0, "rejected": 0, "ops": 0}
    for path in args.programs:
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["subject"] not in train_names:
                raise SystemExit(f"{path}: persona {rec['subject']!r} is not in the SFT train split")
            session = sessions[(rec["subject"], rec["now"])]
            counts["sessions"] += 1
            if slot_facts(rec["ledger"]) == slot_facts(session["ledger_before"]):
                continue
            counts["drifted"] += 1
            try:
                ops = program_against(rec["ledger"], session["events"], rec["subject"], session["index"])
            except (ValueError, AssertionError):
                counts["rejected"] += 1
                continue
            counts["ops"] += len(ops)
            row = consolidate_example({"name": rec["subject"]}, {**session, "ledger_before": rec["ledger"], "gold_ops": ops})
            new.append({**row, "view": ""})
    rows = {split: [dict(r) for r in base[split]] for split in base}
    rows["train"] += new
    args.out.mkdir(parents=True, exist_ok=True)
    to_dataset_dict(rows).save_to_disk(str(args.out))
    shutil.copy(args.sft / "sft_stats.json", args.out / "sft_stats.json")
    counts.update(added=len(new), train_rows=len(rows["train"]))
    (args.out / "dagger_stats.json").write_text(json.dumps(counts, indent=1) + "\n")
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
