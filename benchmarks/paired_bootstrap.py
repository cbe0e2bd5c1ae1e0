r"""Is a closed-loop policy difference more than persona sampling? A paired bootstrap.

Two policies scored closed loop by ``benchmarks/evict_victim.py --victim policy`` on the same
validation personas (one ``programs.jsonl`` per run and seed) are re-scored here from their logged
programs, per persona, with the evaluation's own scorer (``clerk.metrics.op_scores`` against the
gold program, the gold ledger as ``gold_ledger_before``, as ``clerk evaluate`` scores a system whose
ledger has drifted). The pooled (micro) F1 of each run, overall and per op kind, is recomputed
from the per-persona counts, and ``scipy.stats.bootstrap`` resamples **personas** (paired: the
same personas for both runs; all seeds' personas in one pool, since the seeds' personas are
disjoint; a persona that several seeds' runs score, as in one fresh set for every seed, is one
unit, its counts summed over them) to give a 95 % percentile interval of the difference B - A (percentile, not BCa: BCa is
undefined where the two runs agree on every persona for one op kind). Sessions of one persona are not
independent (a drifted ledger carries over), so the persona is the unit.

    python benchmarks/paired_bootstrap.py --timelines T137 T991 T4242 \
        --a A137/programs.jsonl A991/programs.jsonl A4242/programs.jsonl \
        --b B137/programs.jsonl B991/programs.jsonl B4242/programs.jsonl

The pooled counts printed (``a_counts`` / ``b_counts``: tp, fp, fn) equal the runs' own summaries
(``closed.json``) summed over seeds.

``--reads A.json B.json`` compares two readers instead: the files of ``benchmarks/reader_calibration.py``
(the same questions read by each), re-scored with one rule (``--pmi``, the shipped 0.25 by default),
accuracy per system and question type, and the paired persona-bootstrap interval of B - A:

    python benchmarks/paired_bootstrap.py --reads base.json lever.json

``--ledgers`` instead takes an evaluation's per-write rows (``results/eval/SEED/SPLIT/ledgers.jsonl``
of a default run, one per seed) and gives one system's pooled F1 with a 95 % persona-bootstrap
interval (not paired; the uncertainty of a shipped figure, not a choice made on it):

    python benchmarks/paired_bootstrap.py --ledgers results/eval/{137,991,4242}/test/ledgers.jsonl

``--against`` with ``--ledgers`` compares two systems of the same evaluations, paired (e.g. the
policy with its compile-time repair against the raw policy):

    python benchmarks/paired_bootstrap.py --ledgers EVAL/ledgers.jsonl --system clerk --against clerk-repair

``--versus`` with ``--ledgers`` compares one system of two sets of evaluations over the same
personas, paired (e.g. a recipe's policies of seeds 137, 991 and 4242 against the default's, each
evaluated on one fresh validation set: a persona is one unit, its counts summed over the seeds):

    python benchmarks/paired_bootstrap.py --ledgers BASE_{137,991,4242}/ledgers.jsonl \
        --versus ARM_{137,991,4242}/ledgers.jsonl [--teacher-forced]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from evict_victim import sessions_by_key  # benchmarks/, beside this script
from scipy import stats

from clerk.ledger import OP_KINDS
from clerk.metrics import op_scores, prf

KINDS = ("ALL", *OP_KINDS)
COUNTS = ("tp", "fp", "fn")


def counts_array(count) -> np.ndarray:
    """array[kind, (tp, fp, fn)] from ``count(kind, c)``; kind None is the overall count."""
    return np.array([[count(None if kind == "ALL" else kind, c) for c in COUNTS] for kind in KINDS], dtype=np.int64)


def persona_counts(timelines: Path, programs: Path) -> dict[str, np.ndarray]:
    """``{persona: array[kind, (tp, fp, fn)]}`` summed over the persona's logged writes."""
    gold = sessions_by_key(timelines)
    out: dict[str, np.ndarray] = {}
    for line in programs.read_text().splitlines():
        rec = json.loads(line)
        session = gold[(rec["subject"], rec["now"])]
        s = op_scores(rec["ledger"], rec["program"], session["gold_ops"], rec["now"],
                      gold_ledger_before=session["ledger_before"])
        out[rec["subject"]] = out.get(rec["subject"], 0) + counts_array(
            lambda kind, c: s[c] if kind is None else s["by_type"][kind][c])
    return out


def ledger_rows_counts(path: Path, system: str, prefix: str = "op") -> dict[str, np.ndarray]:
    """``{seed/persona: array[kind, (tp, fp, fn)]}`` from an evaluation's ``ledgers.jsonl`` rows;
    ``prefix`` "op_tf" reads the teacher-forced scores instead of the closed-loop ones."""
    out: dict[str, np.ndarray] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["system"] == system:
            key = f"{row['seed']}/{row['persona']}"
            out[key] = out.get(key, 0) + counts_array(
                lambda kind, c: row[f"{prefix}_{c}"] if kind is None else row[f"{prefix}_{kind}_{c}"])
    return out


TYPES = ("all", "current", "negated", "superseded", "temporal", "unknown")


def read_counts(path: Path, pmi: float) -> dict[tuple[str, str], np.ndarray]:
    """``{(system, persona): array[type, (correct, asked)]}`` from a reader_calibration.py file,
    each question answered by the rule "mean log-prob minus ``pmi`` x its empty-view score"."""
    from clerk.scoring.mc import pick

    out: dict[tuple[str, str], np.ndarray] = {}
    for row in json.loads(path.read_text())["rows"]:
        right = pick([m - pmi * n for (m, _), (n, _) in zip(row["cond"], row["null"])]) == row["gold"]
        counts = out.setdefault((row["system"], row["persona"]), np.zeros((len(TYPES), 2), dtype=np.int64))
        for t in ("all", row["type"]):
            counts[TYPES.index(t)] += (int(right), 1)
    return out


def accuracy(counts: np.ndarray) -> np.ndarray:
    """Pooled accuracy per type from ``counts`` [persona, type, 2]."""
    right, asked = counts.sum(axis=0).T
    return right / np.maximum(asked, 1)


def two_readers(args: argparse.Namespace) -> None:
    """Paired accuracy difference B - A per system and question type, personas resampled."""
    a_by, b_by = read_counts(args.reads[0], args.pmi), read_counts(args.reads[1], args.pmi)
    if set(a_by) != set(b_by):
        raise SystemExit(f"the two files read different (system, persona) pairs: {sorted(set(a_by) ^ set(b_by))[:5]}")
    out = {"pmi": args.pmi}
    for system in sorted({s for s, _ in a_by}):
        keys = sorted(k for k in a_by if k[0] == system)
        a, b = np.stack([a_by[k] for k in keys]), np.stack([b_by[k] for k in keys])
        if (a[:, :, 1] != b[:, :, 1]).any():
            raise SystemExit(f"{system}: the two files asked different questions of some persona")
        fa, fb = accuracy(a), accuracy(b)
        ci = persona_interval(len(a), lambda i: accuracy(b[i]) - accuracy(a[i]), args)
        out[system] = {"personas": len(a), **{t: {"n": int(a[:, k, 1].sum()), "a": round(float(fa[k]), 3),
                                                   "b": round(float(fb[k]), 3), "b_minus_a": round(float(fb[k] - fa[k]), 3),
                                                   "ci95": ci[k]} for k, t in enumerate(TYPES)}}
    print(json.dumps(out, indent=1))


def pooled_f1(counts: np.ndarray) -> np.ndarray:
    """Micro F1 per kind from summed counts: ``counts`` is [persona, kind, 3]."""
    tp, fp, fn = counts.sum(axis=0).T
    return np.array([prf(int(a), int(b), int(c))["f1"] for a, b, c in zip(tp, fp, fn)])


def persona_interval(n: int, statistic, args: argparse.Namespace) -> list[list[float]]:
    """95 % percentile interval per kind of ``statistic(persona indices)``, personas resampled."""
    res = stats.bootstrap((np.arange(n),), statistic, vectorized=False, n_resamples=args.resamples,
                          method="percentile", confidence_level=0.95, random_state=np.random.default_rng(args.seed))
    return [[round(float(lo), 3), round(float(hi), 3)] for lo, hi in zip(res.confidence_interval.low, res.confidence_interval.high)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timelines", type=Path, nargs="+", help="one train.jsonl per seed")
    ap.add_argument("--a", type=Path, nargs="+", help="run A's programs.jsonl, one per seed, same order")
    ap.add_argument("--b", type=Path, nargs="+", help="run B's programs.jsonl, one per seed, same order")
    ap.add_argument("--ledgers", type=Path, nargs="+", help="instead: an evaluation's ledgers.jsonl per seed")
    ap.add_argument("--system", default="clerk", help="the system whose rows --ledgers reads")
    ap.add_argument("--against", help="with --ledgers: a second system of the same files, compared paired "
                                      "(its F1 minus --system's)")
    ap.add_argument("--versus", type=Path, nargs="+",
                    help="with --ledgers: the same system in these evaluations, compared paired (their F1 minus "
                         "--ledgers')")
    ap.add_argument("--teacher-forced", action="store_true",
                    help="with --ledgers: the teacher-forced scores (op_tf_*) instead of the closed-loop ones")
    ap.add_argument("--reads", type=Path, nargs=2, metavar=("A", "B"),
                    help="instead: two readers' reader_calibration.py files over the same questions")
    ap.add_argument("--pmi", type=float, default=0.25, help="--reads: the scoring rule's PMI weight")
    ap.add_argument("--resamples", type=int, default=9999)
    ap.add_argument("--seed", type=int, default=0, help="the bootstrap's random seed")
    args = ap.parse_args()
    if args.ledgers:
        if args.against and args.versus:
            ap.error("give --against (two systems of the same files) or --versus (two sets of files), not both")
        return two_systems(args) if args.against or args.versus else one_run(args)
    if args.reads:
        return two_readers(args)
    if not args.timelines or not args.a or not args.b:
        ap.error("give --timelines, --a and --b (a paired comparison) or --ledgers (one run's interval)")
    if not len(args.timelines) == len(args.a) == len(args.b):
        ap.error(f"--timelines, --a and --b need one path per seed each; got {len(args.timelines)}, "
                 f"{len(args.a)} and {len(args.b)}")
    a_by, b_by = {}, {}  # (timelines, persona): one resampling unit, summed over the seeds that score it
    for t, pa, pb in zip(args.timelines, args.a, args.b):
        ca, cb = persona_counts(t, pa), persona_counts(t, pb)
        if set(ca) != set(cb):
            raise SystemExit(f"{pa} and {pb} score different personas: {sorted(set(ca) ^ set(cb))}")
        for name in ca:
            key = (str(t.resolve()), name)
            a_by[key], b_by[key] = a_by.get(key, 0) + ca[name], b_by.get(key, 0) + cb[name]
    print(json.dumps(paired_f1(a_by, b_by, args), indent=1))


def paired_f1(a_by: dict, b_by: dict, args: argparse.Namespace, **head) -> dict:
    """Pooled F1 per kind of A and B over the same units, B - A with its paired interval."""
    keys = sorted(a_by)
    a, b = np.stack([a_by[k] for k in keys]), np.stack([b_by[k] for k in keys])
    fa, fb = pooled_f1(a), pooled_f1(b)
    ci = persona_interval(len(a), lambda i: pooled_f1(b[i]) - pooled_f1(a[i]), args)  # paired: one index draw
    out = {**head, "personas": len(a)}
    for k, kind in enumerate(KINDS):
        out[kind] = {"a": round(float(fa[k]), 3), "b": round(float(fb[k]), 3), "b_minus_a": round(float(fb[k] - fa[k]), 3),
                     "ci95": ci[k], "a_counts": a[:, k].sum(axis=0).tolist(), "b_counts": b[:, k].sum(axis=0).tolist()}
    return out


def system_rows(paths: list[Path], system: str, args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Counts per persona of one system over every file's rows (one persona scored by several
    runs, e.g. adapters, is one resampling unit), teacher-forced scores with --teacher-forced."""
    prefix = "op_tf" if args.teacher_forced else "op"
    rows: dict[str, np.ndarray] = {}
    for path in paths:
        for key, counts in ledger_rows_counts(path, system, prefix).items():
            rows[key] = rows.get(key, 0) + counts
    if not rows:
        raise SystemExit(f"no rows of system {system!r} in {[str(p) for p in paths]}")
    return rows


def two_systems(args: argparse.Namespace) -> None:
    """Paired F1 difference B - A per kind, personas resampled: two systems of the same evaluations
    (--against: B is that system), or one system of two sets of evaluations over the same personas
    (--versus: B is --system in those files)."""
    a_by = system_rows(args.ledgers, args.system, args)
    if args.versus:
        b_by, names = system_rows(args.versus, args.system, args), {"a": "--ledgers", "b": "--versus"}
    else:
        b_by, names = system_rows(args.ledgers, args.against, args), {"a": args.system, "b": args.against}
    if set(a_by) != set(b_by):
        raise SystemExit(f"{names['a']} and {names['b']} score different personas: {sorted(set(a_by) ^ set(b_by))[:5]}")
    print(json.dumps(paired_f1(a_by, b_by, args, **names, system=args.system), indent=1))


def one_run(args: argparse.Namespace) -> None:
    """Pooled F1 per kind of one system over every seed's rows, with a persona-bootstrap interval."""
    rows = system_rows(args.ledgers, args.system, args)
    c = np.stack([rows[k] for k in sorted(rows)])
    f, ci = pooled_f1(c), persona_interval(len(c), lambda i: pooled_f1(c[i]), args)
    out = {"system": args.system, "personas": len(c)}
    for k, kind in enumerate(KINDS):
        out[kind] = {"f1": round(float(f[k]), 3), "counts": c[:, k].sum(axis=0).tolist(), "ci95": ci[k]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
