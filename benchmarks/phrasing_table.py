"""Print the phrasing-diversity lever's tables (benchmarks/phrasing-levers.md) from its score files.

    python benchmarks/phrasing_table.py DIR

DIR holds ``policy-{base,diverse}-{in,held}.csv`` (``clerk learning-curve``) and
``reader-{base,diverse}-{in,held}.json`` (``benchmarks/reader_calibration.py``), as written by
``benchmarks/phrasing_diversity.sh WORK score`` into WORK/score. The base adapters on the shipped
phrasings are the same recipe's committed seed-137 records (``REFERENCE``: the base policy's run
here saw the same 134,527 tokens as ``policy-only-600.csv``'s); they stand in only for a folder of
that seed (or one without reader records to tell), never for another seed's. Missing files print
as "n/a".
Reader accuracies are under the shipped scoring rule (contextual calibration ``pmi 0.25``).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

CONDITIONS = {"base": "shipped catalogue", "diverse": "+ new phrasings"}
SETS = {"in": "shipped phrasings", "held": "held-out new phrasings"}
RULE = "pmi 0.25"
HERE = Path(__file__).resolve().parent
REFERENCE = {"policy-base-in.csv": HERE / "policy-only-600.csv", "reader-base-in.json": HERE / "reader-only-600.json"}
REFERENCE_SEED = 137


def folder_seed(folder: Path) -> int | None:
    """The seed of the folder's reader records (None when it has none)."""
    for path in sorted(folder.glob("reader-*.json")):
        return json.loads(path.read_text())["seed"]
    return None


def find(folder: Path, name: str) -> Path:
    """WORK/score/NAME, else its committed seed-137 reference record (base adapters on shipped phrasings)."""
    path = folder / name
    if path.is_file() or name not in REFERENCE or folder_seed(folder) not in (None, REFERENCE_SEED):
        return path
    return REFERENCE[name]
TYPES = ("unknown", "current", "superseded", "negated", "temporal")


def policy_rows(folder: Path) -> list[str]:
    out = ["| training catalogue | validation phrasings | sessions | decoding | op-F1 | ADD | UPDATE | TOMBSTONE | EVICT | parse failures |",
           "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for cond, cond_name in CONDITIONS.items():
        for split, split_name in SETS.items():
            path = find(folder, f"policy-{cond}-{split}.csv")
            if not path.is_file():
                out.append(f"| {cond_name} | {split_name} | n/a | | | | | | | |")
                continue
            for row in csv.DictReader(path.open()):
                if row["point"] not in ("final", "free"):
                    continue
                decoding = "grammar" if row["constrained"] == "True" else "free"
                cells = [f"{float(row[k]):.3f}" for k in ("op_f1", "add_f1", "update_f1", "tombstone_f1", "evict_f1",
                                                          "parse_failure_rate")]
                out.append(f"| {cond_name} | {split_name} | {row['sessions']} | {decoding} | " + " | ".join(cells) + " |")
    return out


def reader_rows(folder: Path) -> list[str]:
    out = ["| training catalogue | validation phrasings | view | questions | all | " + " | ".join(TYPES) + " |",
           "| --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in TYPES) + " |"]
    for cond, cond_name in CONDITIONS.items():
        for split, split_name in SETS.items():
            path = find(folder, f"reader-{cond}-{split}.json")
            if not path.is_file():
                out.append(f"| {cond_name} | {split_name} | n/a | | | " + " | ".join("" for _ in TYPES) + " |")
                continue
            result = json.loads(path.read_text())
            for system, view in (("oracle", "gold ledger"), ("full", "full transcript")):
                if system not in result["accuracy"]:
                    continue
                acc = result["accuracy"][system][RULE]
                cells = [f"{acc[t]:.3f}" for t in ("all", *TYPES)]
                out.append(f"| {cond_name} | {split_name} | {view} | {result['n_questions'][system]} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    folder = Path(sys.argv[1])
    print("\n".join(["Policy (clerk learning-curve, final adapter, teacher-forced ledgers):", "", *policy_rows(folder), "",
                     f"Reader (benchmarks/reader_calibration.py, rule {RULE!r}, the shipped one):", "", *reader_rows(folder)]))


if __name__ == "__main__":
    main()
