"""Summarise a finished default-profile run into ``benchmarks/default-run.md``.

Every figure of the run is read from files the workflow wrote (benchmark TSV table, training
logs, evaluation metrics, tables), not typed:

    python benchmarks/default_run_report.py --run . --start 1764415210 --end 1764418810 \
        --out benchmarks/default-run.md

How the run was made, and what changed since the previous one, is hand-written: a Markdown file
given with ``--notes`` is appended verbatim. The levers behind the recipe are recorded in
``docs/DECISIONS.md``.

A run stopped and resumed (``snakemake --rerun-incomplete``) names each stretch when nothing ran
with ``--gap STOPPED RESUMED``; the total leaves those stretches out and says so.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

#: Training FLOPs per token of the default recipe (SmolLM2-135M, LoRA r 16 on all 7 projections,
#: frozen base: forward + input gradients + LoRA + attention at ~250 tokens); the speed issue's figure.
GFLOP_PER_TRAINED_TOKEN = 0.49


def _cpus(run: Path) -> list[str]:
    """The CPU kinds the adapters were trained on (``train_config.json``'s numerics record)."""
    kinds = set()
    for path in run.glob("results/train*/*/train_config.json"):
        cpu = (json.loads(path.read_text()).get("numerics") or {}).get("cpu")
        if cpu:
            kinds.add(cpu)
    return sorted(kinds)


def _train_rows(run: Path, gemm_gflops: float | None = None) -> list[str]:
    """Steps, tokens and seconds from each adapter's metrics.json; the loss of the last logged step;
    with ``gemm_gflops`` (the machine's GEMM rate at the model's shapes, measured with
    ``benchmarks/profile_ops.py gemm``) the share of it the training reached.

    ``results/train`` holds the policy adapters and ``results/train_reader`` (where the run has one
    reader adapter per seed) the readers'."""
    rows = []
    paths = [(role, path) for role, folder in (("policy", "train"), ("reader", "train_reader"))
             for path in sorted(run.glob(f"results/{folder}/*/metrics.json"))]
    for role, path in paths:
        metrics = json.loads(path.read_text())
        tokens, seconds = metrics["tokens_seen"], metrics["seconds_this_run"]
        last = list(csv.DictReader((path.parent / "train_log.csv").open()))[-1]
        config = path.parent / "train_config.json"  # the resolved numerics (older runs lack the field)
        resolved = json.loads(config.read_text()) if config.is_file() else {}
        precision = resolved.get("precision", "fp32")
        units = {True: "yes", False: "no"}.get(resolved.get("bf16_units"), "not recorded")
        share = f"{tokens / seconds * GFLOP_PER_TRAINED_TOKEN / gemm_gflops:.0%}" if gemm_gflops else "not measured"
        rows.append(f"| {role} | {path.parent.name} | {precision} | {units} | {metrics['steps']} | {tokens} | "
                    f"{seconds:.0f} | {tokens / seconds:.0f} | {share} | {float(last['loss']):.3f} (step {last['step']}) |")
    return rows


def _eval_rows(run: Path) -> list[str]:
    rows = []
    for path in sorted(run.glob("results/eval/*/*/metrics.json")):
        metrics = json.loads(path.read_text())
        seed, split = path.parent.parent.name, path.parent.name
        for name, system in metrics["systems"].items():
            n, wall = system["n_questions"], system["wall_seconds"]
            rate = n / wall if wall else float("nan")
            rows.append(f"| {seed} | {split} | {name} | {n} | {wall:.0f} | {rate:.2f} |")
    return rows


def _locomo_rows(run: Path) -> list[str]:
    """One row per LoCoMo job and system: questions, write and read seconds, ops written, invalid share."""
    rows = []
    for path in sorted(run.glob("results/locomo/*/metrics.json")):
        metrics = json.loads(path.read_text())
        for name, system in metrics["systems"].items():
            write = system.get("write_seconds") or 0.0
            ops, invalid = system.get("n_ops"), system.get("invalid_op_rate")
            rows.append(f"| {path.parent.name} | {name} | {system['n_questions']} | {write:.0f} | "
                        f"{system['wall_seconds'] - write:.0f} | {'n/a' if ops is None else ops} | "
                        f"{'n/a' if invalid is None else format(invalid, '.3f')} |")
    return rows


def _locomo_share(run: Path, minutes: float) -> list[str]:
    """LoCoMo's job-seconds (its rules' benchmark rows) and what that is of the run's job-seconds."""
    path = run / "results/benchmarks.csv"
    table = {r["stage"]: r for r in csv.DictReader(path.open())}
    stages = [s for s in ("locomo", "locomo_shared", "table_locomo") if s in table]
    if not stages:
        return []
    locomo = sum(float(table[s]["wall_s_total"]) for s in stages)
    total = float(table["total"]["wall_s_total"])
    return [
        "## LoCoMo's share (rules " + ", ".join(f"`{s}`" for s in stages) + ")",
        "",
        f"LoCoMo's jobs ran {locomo:.0f} job-seconds of the run's {total:.0f} ({locomo / total:.1%}); "
        f"on the two cores that is about {locomo / 2 / 60:.1f} minutes of the {minutes:.1f}-minute total "
        "(job-seconds over two cores: the jobs shared the cores with the synthetic experiment's).",
        "",
        "| job | system | questions | write s | read s | ops written | invalid ops |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        *_locomo_rows(run),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=".", help="repository root of the finished run")
    parser.add_argument("--start", type=float, required=True, help="run start, Unix seconds")
    parser.add_argument("--end", type=float, required=True, help="run end, Unix seconds")
    parser.add_argument("--gap", nargs=2, type=float, action="append", default=[],
                        metavar=("STOPPED", "RESUMED"),
                        help="a stretch (Unix seconds) when the run was stopped; repeatable")
    parser.add_argument("--cached", default="nothing (pip packages only)", help="what existed before")
    parser.add_argument("--notes", default=None,
                        help="hand-written notes appended verbatim (how the run was made, what changed)")
    parser.add_argument("--gemm-gflops", type=float, default=None, metavar="RATE",
                        help="this machine's GEMM rate at the model's shapes in the training precision "
                             "(GFLOP/s, `benchmarks/profile_ops.py gemm`): adds the share of it training reached")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    run = Path(args.run)
    for stopped, resumed in args.gap:
        if not args.start <= stopped <= resumed <= args.end:
            parser.error(f"--gap {stopped:.0f} {resumed:.0f}: must lie within --start {args.start:.0f} "
                         f"and --end {args.end:.0f}, stopped before resumed")
    paused = sum(resumed - stopped for stopped, resumed in args.gap)
    minutes = (args.end - args.start - paused) / 60
    gaps = ""
    if args.gap:
        gaps = (f" The run was stopped and resumed {len(args.gap)} time(s) (`snakemake --rerun-incomplete`); "
                f"the total leaves out the {paused / 60:.1f} minutes when nothing ran and counts the work "
                "of the jobs killed at the stop, which ran again.")
    stages = (run / "results/benchmarks.md").read_text()
    lines = [
        "# Default-profile run: wall time per stage",
        "",
        "Generated by `benchmarks/default_run_report.py` from the files of one run of",
        "`snakemake --cores 4 --resources gpu=1` (default profile, three seeds) on this 2-core",
        f"machine. Total wall time: **{minutes:.1f} minutes**. Cached before the run: {args.cached}.{gaps}",
        "",
        "## Per stage (Snakemake `benchmark:` files; `results/benchmarks.md`)",
        "",
        stages.strip(),
        "",
        "## Training throughput (LoRA SFT on CPU; precision as resolved on this machine, `train_config.json`)",
        "",
        f"CPU: {', '.join(_cpus(run)) or 'not recorded'}. Share of GEMM rate: tokens/s x "
        f"{GFLOP_PER_TRAINED_TOKEN} GFLOP a token over "
        + (f"{args.gemm_gflops:g} GFLOP/s, this machine's GEMM rate at the model's shapes "
           "(`benchmarks/profile_ops.py gemm`)." if args.gemm_gflops else "a GEMM rate not measured for this run."),
        "",
        "| adapter | seed | precision | CPU bf16 units | steps | tokens seen | seconds | tokens/s | share of GEMM rate | last logged loss |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *_train_rows(run, args.gemm_gflops),
        "",
        "## Evaluation throughput (questions answered per second of each system's wall time)",
        "",
        "Wall time per system covers its reading and, for model writers, its writing.",
        "",
        "| seed | split | system | questions | seconds | questions/s |",
        "| --- | --- | --- | ---: | ---: | ---: |",
        *_eval_rows(run),
        "",
        "## Quality of this run (mean over seeds, in-distribution test split; `results/table1*.md`)",
        "",
        (run / "results/table1.md").read_text().strip(),
        "",
        (run / "results/table1_cost.md").read_text().strip(),
        "",
        *_locomo_share(run, minutes),
    ]
    if args.notes:
        lines += [Path(args.notes).read_text().strip(), ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"{minutes:.1f}")  # the total, for the caller's commit message


if __name__ == "__main__":
    main()
