"""Paired comparisons: clerk minus each other system on the same questions (SPEC §6).

Every system answers the same questions, so a comparison is a paired difference, not two
independent intervals. For each (split, system) this table gives the accuracy difference
``clerk - system`` two ways:

* **per seed**: the difference of the two accuracies in each seed's evaluation, then the mean and
  95 % Student-t interval over seeds (:func:`clerk.report.stats.aggregate`): the seed-to-seed
  spread, training included, with n = 3;
* **paired bootstrap over personas**: the personas of every seed are the resampled units (a
  persona's questions are not independent of each other); each resample draws as many units as
  there are, with replacement, and takes the difference of the two systems' accuracies over the
  drawn units' questions; the 95 % percentile interval of ``n_boot`` resamples
  (``scipy.stats.bootstrap``, a fixed seed, so the table is deterministic).

``conclusive`` is true when the bootstrap interval excludes zero by more than ``margin``: the
largest change of a bootstrap bound between two CPU kinds, as ``paper/tolerances.yaml`` declares
it for ``table_paired.csv:boot_low`` / ``boot_high`` (``--tolerances``; measured in
``benchmarks/machine-spread.md``), so that a verdict holds at both ends of the machine spread.
Without ``--tolerances`` the margin is 0. The paper's claims follow it.

    clerk table-paired --predictions results/eval/*/test/predictions.jsonl results/eval/*/test_ood/predictions.jsonl \\
        --out results/table_paired.csv --markdown results/table_paired.md
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.memory.registry import MEMORY_REGISTRY
from clerk.report.stats import CI_LEVEL, aggregate
from clerk.report.systems import SYSTEM_ORDER
from clerk.report.tabular import markdown_table, ordered, write_csv, write_text
from clerk.report.verdicts import verdict

#: The system every other is compared with (the one the registry declares the reference: clerk).
REFERENCE = MEMORY_REGISTRY.reference()
#: Resamples of the persona bootstrap and its seed.
N_BOOT = 10_000
BOOT_SEED = 20261201


#: Fields every prediction row of ``clerk evaluate`` has that the pairing reads.
PREDICTION_FIELDS = ("split", "seed", "persona", "system", "session", "q", "correct")


def prediction_rows(path: str | Path, fields: tuple[str, ...], what: str) -> list[dict[str, Any]]:
    """The JSON objects of one predictions.jsonl, each holding ``fields`` (``what`` names the kind
    of prediction in the error).

    Raises:
        UserError: the file cannot be read, or a line is not JSON or lacks a field.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"--predictions: cannot read {str(path)!r} ({err.strerror})") from None
    rows = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise UserError(f"--predictions {str(path)!r}: line {n} is not JSON ({err}; truncated?)") from None
        if not isinstance(row, dict) or not set(fields) <= set(row):
            raise UserError(f"--predictions {str(path)!r}: line {n} must be {what} with {', '.join(fields)}; "
                            f"got {line[:80]!r}")
        rows.append(row)
    return rows


def _load(paths: list[str]) -> dict[tuple, dict[str, dict[tuple, bool]]]:
    """(split, seed, persona) -> system -> (session, q) -> correct."""
    units: dict[tuple, dict[str, dict[tuple, bool]]] = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        for row in prediction_rows(path, PREDICTION_FIELDS, "a prediction object"):
            units[(row["split"], row["seed"], row["persona"])][row["system"]][(row["session"], row["q"])] = bool(row["correct"])
    return units


def _pairs(per_unit: dict[str, dict[tuple, bool]], system: str, reference: str = REFERENCE) -> tuple[int, int, int]:
    """(reference correct, system correct, questions) over the questions both answered in one unit."""
    ref, other = per_unit.get(reference, {}), per_unit.get(system, {})
    common = sorted(set(ref) & set(other))
    return sum(ref[k] for k in common), sum(other[k] for k in common), len(common)


def paired_rows(paths: list[str], n_boot: int = N_BOOT, margin: float = 0.0) -> list[dict[str, Any]]:
    """One row per (split, system != clerk): the paired difference, per seed and bootstrapped."""
    return paired_from_units(_load(paths), n_boot, margin)


def machine_margin(tolerances: str | None, table: str = "table_paired.csv") -> float:
    """The declared machine spread of a paired table's bootstrap bounds (0 without a file)."""
    if tolerances is None:
        return 0.0
    from clerk.provenance.compare import load_tolerances, rule_for

    rules = load_tolerances(tolerances)
    return max(rule_for(rules, f"{table}:{bound}").abs for bound in ("boot_low", "boot_high"))


def paired_from_units(units: dict[tuple, dict[str, dict[Any, bool]]], n_boot: int = N_BOOT,
                      margin: float = 0.0, reference: str = REFERENCE) -> list[dict[str, Any]]:
    """:func:`paired_rows` over units already loaded: ``(split, seed, unit) -> system -> question
    key -> correct`` (a unit is what the bootstrap resamples: a persona, a LoCoMo conversation);
    ``reference`` minus every other system; ``conclusive`` needs the interval to clear zero by more
    than ``margin``."""
    import numpy as np
    from scipy import stats

    splits = sorted({key[0] for key in units})
    systems = ordered(sorted({s for per in units.values() for s in per if s != reference}), SYSTEM_ORDER)
    rows = []
    for split in splits:
        # Sorted units: the bootstrap's draws index them, so the order the files came in must not matter.
        mine = {key: units[key] for key in sorted(units) if key[0] == split and reference in units[key]}
        for system in systems:
            counts = {key: _pairs(per, system, reference) for key, per in mine.items() if system in per}
            counts = {key: c for key, c in counts.items() if c[2]}
            if not counts:
                continue
            seeds = sorted({key[1] for key in counts})
            per_seed = []
            for seed in seeds:
                a, b, n = (sum(c[i] for key, c in counts.items() if key[1] == seed) for i in range(3))
                per_seed.append((a - b) / n)
            ref_ok, sys_ok, n_q = (np.array([c[i] for c in counts.values()], dtype=float) for i in range(3))
            delta = (ref_ok.sum() - sys_ok.sum()) / n_q.sum()
            boot = stats.bootstrap((ref_ok, sys_ok, n_q), lambda r, s, n: (r.sum() - s.sum()) / n.sum(),
                                   paired=True, vectorized=False, n_resamples=n_boot, confidence_level=CI_LEVEL,
                                   method="percentile", random_state=np.random.default_rng(BOOT_SEED))
            low, high = float(boot.confidence_interval.low), float(boot.confidence_interval.high)
            seed_stats = aggregate(per_seed)
            rows.append({
                "split": split, "system": system, "reference": reference, "n_seeds": len(seeds),
                "n_personas": len(counts), "n_questions": int(n_q.sum()), "delta": float(delta),
                "boot_low": low, "boot_high": high, "margin": float(margin),
                "conclusive": verdict(low, high, margin) in ("ahead", "behind"),
                "seed_mean": seed_stats["mean"], "seed_ci_low": seed_stats["ci_low"], "seed_ci_high": seed_stats["ci_high"],
            })
    return rows


def paired_markdown(rows: list[dict[str, Any]]) -> str:
    """The paper's rendering: one line per comparison, the difference with both intervals."""
    header = ["split", "comparison", "Δ accuracy", "95 % bootstrap (personas)", "per-seed 95 % t", "questions",
              "conclusive"]
    body = []
    for r in rows:
        body.append([r["split"], f"clerk − {r['system']}", f"{r['delta']:+.3f}",
                     f"[{r['boot_low']:+.3f}, {r['boot_high']:+.3f}]",
                     f"[{r['seed_ci_low']:+.3f}, {r['seed_ci_high']:+.3f}]" if r["n_seeds"] > 1 else "n/a",
                     str(r["n_questions"]), "yes" if r["conclusive"] else not_conclusive_reason(r)])
    note = (f"\nPaired on the same questions. Bootstrap: {N_BOOT:,} resamples of the (seed, persona) units, "
            "percentile interval; per seed: the difference of the two accuracies in each seed, then the "
            "Student-t interval over seeds." + margin_note(rows))
    return markdown_table(header, body, [":---", ":---", "---:", "---:", "---:", "---:", ":---"]) + note


def not_conclusive_reason(row: dict[str, Any]) -> str:
    """Why a comparison is not conclusive: its interval includes zero, or clears it by less than the margin."""
    if verdict(row["boot_low"], row["boot_high"], row["margin"]) == "includes zero":
        return "no (interval includes 0)"
    return "no (interval clears 0 by less than the machine spread)"


#: What the synthetic tables' margin is (see ``paper/tolerances.yaml``).
MARGIN_SOURCE = ("the largest change of a bootstrap bound between two CPU kinds (paper/tolerances.yaml, "
                 "benchmarks/machine-spread.md)")


def margin_note(rows: list[dict[str, Any]], source: str = MARGIN_SOURCE) -> str:
    """The sentence saying what 'conclusive' needs (the margin of the first row: one per table),
    and what the margin is (``source``)."""
    margin = rows[0]["margin"] if rows else 0.0
    if not margin:
        return " Conclusive: the bootstrap interval excludes zero."
    return f" Conclusive: the bootstrap interval excludes zero by more than {margin:.3f}, {source}."


def main(args: Any) -> None:
    """``clerk table-paired``."""
    import pandas as pd

    rows = paired_rows(args.predictions, args.n_boot, machine_margin(args.tolerances))
    if not rows:
        raise UserError(f"--predictions: no question answered by both {REFERENCE!r} and another system")
    write_csv(pd.DataFrame(rows), args.out)
    write_text(args.markdown, paired_markdown(rows) + "\n")


def register_cli(sub: Any) -> None:
    """Add the ``table-paired`` verb."""
    p = sub.add_parser("table-paired", help="paired differences clerk - every other system, with intervals",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--predictions", nargs="+", required=True, help="predictions.jsonl files of clerk evaluate")
    p.add_argument("--out", required=True, help="output CSV")
    p.add_argument("--markdown", required=True, help="output Markdown table (for the paper)")
    p.add_argument("--n-boot", dest="n_boot", type=int, default=N_BOOT, help=f"bootstrap resamples (default {N_BOOT})")
    p.add_argument("--tolerances", default=None, metavar="YAML",
                   help="tolerances file (paper/tolerances.yaml): 'conclusive' then needs the interval to clear zero by "
                   "more than the declared machine spread of the bootstrap bounds; default: none (margin 0)")
    p.set_defaults(func=main)
