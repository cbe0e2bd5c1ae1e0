"""The report verbs: paper rendering, the run environment, every table and every figure (SPEC §6, §8).

Each verb is a thin call of the module that owns the concept (:mod:`clerk.report.paper`,
:mod:`clerk.report.systems`, :mod:`clerk.report.eviction`, :mod:`clerk.report.read_cost`,
:mod:`clerk.report.benchmarks`, :mod:`clerk.report.setup_facts`, :mod:`clerk.report.figures`).
Verbs (paths as the workflow uses them):

    clerk render-paper --template paper/template.md --numbers results/numbers.json \\
        --include table1=results/table1.md --out paper/paper.md
    clerk environment --out results/environment.md
    clerk table-systems --metrics results/eval/*/test/metrics.json --out results/table1.csv \\
        --seeds-out results/table1_seeds.csv --markdown results/table1.md --markdown-cost results/table1_cost.md
    clerk table-eviction --csv results/eviction/*.csv --default-capacity 16 --default-noise 3 \\
        --out results/table4.csv --seeds-out results/table4_seeds.csv --markdown results/table4.md
    clerk table-erasure --metrics results/erasure/*/metrics.json --out results/table5.csv \\
        --seeds-out results/table5_seeds.csv --markdown results/table5.md
    clerk table-read-cost --csv results/readcost/*.csv --out results/read_cost.csv
    clerk table-benchmarks --tsv logs/benchmarks/*/*.tsv --out results/benchmarks.csv --markdown results/benchmarks.md
    clerk table-setup --timelines results/data/*/*.jsonl --metrics results/eval/*/*/metrics.json \\
        --train results/train/* --streams results/streams/*.json --out results/setup.json --markdown results/setup.md
    clerk locomo-status --out results/locomo_status.md
    clerk figure accuracy --inputs results/table1_seeds.csv --out results/figures/accuracy_by_type
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.files import load_json, write_json
from clerk.report.benchmarks import benchmarks_markdown, benchmarks_table
from clerk.report.erasure import ERASURE_KEYS, erasure_markdown, erasure_tables
from clerk.report.eviction import eviction_markdown, eviction_tables
from clerk.report.figures import (
    FIGURES,
    figure_accuracy,
    figure_eviction,
    figure_learning_curve,
    figure_loss,
    figure_read_cost,
    figure_state_f1,
)
from clerk.report.paper import LOCOMO_NOT_RUN, environment_markdown, render_paper, template_literal_digits
from clerk.report.read_cost import read_cost_table
from clerk.report.setup_facts import setup_facts, setup_markdown
from clerk.report.systems import ANSWER_COLUMNS, COST_COLUMNS, SYSTEM_KEYS, evict_note, systems_markdown, systems_tables
from clerk.report.tabular import write_csv, write_text

# ---- the paper -------------------------------------------------------------------------------

def _parse_includes(items: list[str]) -> dict[str, str]:
    includes = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name:
            raise UserError(f"--include: expected NAME=FILE, got '{item}'")
        if not Path(path).is_file():
            raise UserError(f"--include {name}: file '{path}' does not exist")
        text = Path(path).read_text(encoding="utf-8")
        includes[name] = f"```mermaid\n{text.strip()}\n```" if path.endswith(".mmd") else text
    return includes


def _render_main(args) -> None:
    if not Path(args.template).is_file():
        raise UserError(f"--template: file '{args.template}' does not exist")
    template = Path(args.template).read_text(encoding="utf-8")
    if args.no_digits_in:
        typed = template_literal_digits(template, args.no_digits_in)
        if typed:
            first = typed[0]
            raise UserError(f"--no-digits-in: {len(typed)} number(s) typed by hand, first "
                            f"'{first.token}' on template line {first.line}: {first.context.strip()}")
    paper = render_paper(template, load_json(args.numbers, "--numbers"), _parse_includes(args.include))
    write_text(args.out, paper)


def _environment_main(args) -> None:
    write_text(args.out, environment_markdown(args.train, args.metrics))


# ---- tables and figures ----------------------------------------------------------------------

def _systems_main(args) -> None:
    per_seed, agg, order = systems_tables(args.metrics)
    write_csv(agg, args.out, sort_by=list(SYSTEM_KEYS))
    write_csv(per_seed, args.seeds_out or _sibling(args.out, "_seeds"), sort_by=[*SYSTEM_KEYS, "seed"])
    if args.markdown:
        write_text(args.markdown, systems_markdown(agg, order, ANSWER_COLUMNS, reader=True))
    if args.markdown_cost:
        write_text(args.markdown_cost, systems_markdown(agg, order, COST_COLUMNS, reader=False) + evict_note(per_seed))


def _sibling(path: str, suffix: str) -> str:
    """``results/table1.csv`` -> ``results/table1_seeds.csv``.

    >>> _sibling("results/table1.csv", "_seeds")
    'results/table1_seeds.csv'
    """
    p = Path(path)
    return str(p.with_name(p.stem + suffix + p.suffix))


def _eviction_main(args) -> None:
    per_seed, agg = eviction_tables(args.csv, args.default_capacity, args.default_noise)
    write_csv(agg, args.out, sort_by=["policy", "capacity", "noise_per_turn"])
    write_csv(per_seed, args.seeds_out or _sibling(args.out, "_seeds"),
              sort_by=["policy", "capacity", "noise_per_turn", "seed"])
    if args.markdown:
        write_text(args.markdown, eviction_markdown(agg))


def _erasure_main(args) -> None:
    per_seed, agg, order = erasure_tables(args.metrics)
    write_csv(agg, args.out, sort_by=["system", "mode"])
    write_csv(per_seed, args.seeds_out or _sibling(args.out, "_seeds"), sort_by=[*ERASURE_KEYS, "seed"])
    if args.markdown:
        write_text(args.markdown, erasure_markdown(agg, order))


def _read_cost_main(args) -> None:
    write_csv(read_cost_table(args.csv), args.out, sort_by=["view", "session"])


def _benchmarks_main(args) -> None:
    table = benchmarks_table(args.tsv, args.root)
    write_csv(table, args.out, float_format="%.2f", sort_by=["stage"])
    if args.markdown:
        write_text(args.markdown, benchmarks_markdown(table, args.order))


def _setup_main(args) -> None:
    facts = setup_facts(args.timelines, args.metrics, args.train, args.streams, args.reader_train)
    write_json(facts, args.out)
    if args.markdown:
        write_text(args.markdown, setup_markdown(facts))


def _true_false(text: str) -> bool:
    """``true`` / ``false`` -> bool (``--config`` passes a JSON bool)."""
    if text not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text == "true"


def _locomo_main(args) -> None:
    write_text(args.out, LOCOMO_NOT_RUN.format(path=f"`{args.path}`" if args.path else "empty",
                                               download=str(args.download).lower()))


def _figure_main(args) -> None:
    # kind -> (takes a single table file, render(inputs, out, args))
    kinds: dict[str, tuple[bool, Callable]] = {
        "read-cost": (True, lambda i, o, a: figure_read_cost(i[0], o)),
        "accuracy": (True, lambda i, o, a: figure_accuracy(i[0], o, a.split)),
        "eviction": (True, lambda i, o, a: figure_eviction(i[0], o, a.noise)),
        "loss": (False, lambda i, o, a: figure_loss(i, o)),
        "state-f1": (False, lambda i, o, a: figure_state_f1(i, o)),
        "learning-curve": (True, lambda i, o, a: figure_learning_curve(i[0], o)),
    }
    single, render = kinds[args.kind]
    if single and len(args.inputs) != 1:
        raise UserError(f"--inputs: figure '{args.kind}' takes one table file, got {len(args.inputs)}")
    render(args.inputs, args.out, args)


# ---- parsers ---------------------------------------------------------------------------------

def _add_paper_verbs(sub) -> None:
    """``render-paper`` and ``environment``."""
    p = sub.add_parser("render-paper", help="fill the paper template from numbers.json and includes",
                       description="Render paper.md: numbers with provenance footnotes, tables, graphs.")
    p.add_argument("--template", required=True, help="Markdown template with {{num:ID}} / {{include:NAME}}")
    p.add_argument("--numbers", required=True, help="numbers JSON written by `clerk numbers`")
    p.add_argument("--include", action="append", default=[], metavar="NAME=FILE",
                   help="text to insert at {{include:NAME}} (repeatable; .mmd is fenced as mermaid)")
    p.add_argument("--no-digits-in", action="append", default=[], metavar="SECTION",
                   help="fail if this section of the template has hand-typed numbers (repeatable)")
    p.add_argument("--out", required=True, help="rendered Markdown to write")
    p.set_defaults(func=_render_main)

    p = sub.add_parser("environment", help="Markdown table of code version, packages and device",
                       description="Write the run environment as a Markdown table for the paper: code, "
                       "packages, machine, CPU numerics, and how the given training and evaluation jobs ran.")
    p.add_argument("--train", nargs="*", default=[], metavar="DIR",
                   help="clerk train output folders (train_config.json: commit, numerics, precision)")
    p.add_argument("--metrics", nargs="*", default=[], metavar="FILE",
                   help="clerk evaluate metrics.json files (their inference dtype)")
    p.add_argument("--out", required=True, help="Markdown file to write")
    p.set_defaults(func=_environment_main)


def _add_result_tables(sub) -> None:
    """``table-systems``, ``table-eviction``, ``table-erasure`` and ``table-read-cost``: the tables of results."""
    p = sub.add_parser("table-systems", help="per-seed and seed-aggregated memory-system table (tables 1, 3)",
                       description="One row per seed x system from each metrics.json, then mean, sd (ddof=1) "
                       "and 95 % t-interval over seeds per (split, system, reader).")
    p.add_argument("--metrics", nargs="+", required=True, help="metrics.json files of `clerk evaluate` (one per seed)")
    p.add_argument("--out", required=True, help="aggregated CSV to write")
    p.add_argument("--seeds-out", default=None,
                   help="per-seed long CSV (default: OUT with '_seeds' before the extension)")
    p.add_argument("--markdown", default=None, help="Markdown answer table: accuracy overall, per type, stale errors")
    p.add_argument("--markdown-cost", default=None,
                   help="Markdown write-quality and cost table: op-F1, state-F1, invalid ops, tokens, seconds")
    p.set_defaults(func=_systems_main)

    p = sub.add_parser("table-eviction", help="eviction study aggregated over seeds (table 4)",
                       description="Mean, sd and 95 % t-interval of recall hit rate and noise occupancy "
                       "over seeds per (policy, capacity, noise rate).")
    p.add_argument("--csv", nargs="+", required=True, help="per-seed CSVs of `clerk eviction-study`")
    p.add_argument("--default-capacity", type=int, required=True, help="the headline capacity (slots)")
    p.add_argument("--default-noise", type=int, required=True, help="the headline noise rate (facts per turn)")
    p.add_argument("--out", required=True, help="aggregated CSV to write")
    p.add_argument("--seeds-out", default=None, help="per-seed long CSV (default: OUT with '_seeds')")
    p.add_argument("--markdown", default=None, help="Markdown table to write")
    p.set_defaults(func=_eviction_main)

    p = sub.add_parser("table-erasure", help="erasure study aggregated over seeds (table 5)",
                       description="One row per seed x system x mode from each `clerk erasure` metrics.json, then "
                       "mean, sd (ddof=1) and 95 % t-interval over seeds per (system, mode): leak rate, accuracy "
                       "on forgotten facts, forgotten values answered, views and questions.")
    p.add_argument("--metrics", nargs="+", required=True, help="metrics.json files of `clerk erasure` (one per seed)")
    p.add_argument("--out", required=True, help="aggregated CSV to write")
    p.add_argument("--seeds-out", default=None, help="per-seed long CSV (default: OUT with '_seeds')")
    p.add_argument("--markdown", default=None, help="Markdown table to write")
    p.set_defaults(func=_erasure_main)

    p = sub.add_parser("table-read-cost", help="read tokens per question by session and view, over seeds",
                       description="Aggregate `clerk read-cost` CSVs (named <seed>.csv) per (view, session).")
    p.add_argument("--csv", nargs="+", required=True, help="per-seed read-cost CSVs, file name = seed")
    p.add_argument("--out", required=True, help="aggregated CSV to write")
    p.set_defaults(func=_read_cost_main)


def _add_run_tables(sub) -> None:
    """``table-benchmarks``, ``table-setup`` and ``locomo-status``: what the run was and did."""
    p = sub.add_parser("table-benchmarks", help="wall time, CPU time and memory per workflow stage",
                       description="Collect Snakemake benchmark TSVs (ROOT/<rule>/<job>.tsv) into one row per stage.")
    p.add_argument("--tsv", nargs="+", required=True, help="benchmark TSV files")
    p.add_argument("--root", default="logs/benchmarks", help="folder holding <rule>/ folders (default: logs/benchmarks)")
    p.add_argument("--order", nargs="*", default=None, help="stage order for the Markdown table (default: sorted)")
    p.add_argument("--out", required=True, help="CSV to write (seconds, MB)")
    p.add_argument("--markdown", default=None, help="Markdown table to write")
    p.set_defaults(func=_benchmarks_main)

    p = sub.add_parser("table-setup", help="the experimental setup as recorded in the result files",
                       description="Seeds, split sizes, budget, evaluation/training/stream settings read from "
                       "the files the runs wrote; settings must agree across seeds.")
    p.add_argument("--timelines", nargs="*", default=[], help="timeline JSONL files (file stem = split)")
    p.add_argument("--metrics", nargs="*", default=[], help="metrics.json files of `clerk evaluate`")
    p.add_argument("--train", nargs="*", default=[], help="`clerk train` output folders")
    p.add_argument("--reader-train", dest="reader_train", nargs="*", default=[],
                   help="`clerk train` output folders of the separate reader (setup.json `reader`)")
    p.add_argument("--streams", nargs="*", default=[], help="`clerk streams` JSON files")
    p.add_argument("--out", required=True, help="JSON to write")
    p.add_argument("--markdown", default=None, help="Markdown table to write")
    p.set_defaults(func=_setup_main)

    p = sub.add_parser("locomo-status", help="the paper paragraph stating that LoCoMo was not run",
                       description="Write the Markdown paragraph the paper includes when no LoCoMo data is configured.")
    p.add_argument("--path", default="", help="configured locomo.path (empty = none)")
    p.add_argument("--download", type=_true_false, default=False, metavar="true|false",
                   help="configured locomo.download (default: false)")
    p.add_argument("--out", required=True, help="Markdown file to write")
    p.set_defaults(func=_locomo_main)


def _add_figure(sub) -> None:
    """``figure``: one figure per call."""
    p = sub.add_parser("figure", help="one paper figure as PDF + PNG (deterministic bytes)",
                       description="read-cost: results/read_cost.csv; accuracy: a table*_seeds.csv; eviction: "
                       "results/table4.csv; loss: `clerk train` folders; state-f1: ledgers.jsonl files; learning-curve: "
                       "a `clerk learning-curve` CSV.")
    p.add_argument("kind", choices=FIGURES, help="which figure")
    p.add_argument("--inputs", nargs="+", required=True, help="input file(s) or folder(s), see the description")
    p.add_argument("--out", required=True, help="output path without extension (.pdf and .png are written)")
    p.add_argument("--split", default="test", help="accuracy: split to plot (default: test)")
    p.add_argument("--noise", type=int, default=None,
                   help="eviction: noise facts per turn to plot (default: the table's default setting)")
    p.set_defaults(func=_figure_main)


def register_cli(sub) -> None:
    """Add the verbs ``render-paper``, ``environment``, ``table-systems``, ``table-eviction``, ``table-erasure``,
    ``table-read-cost``, ``table-benchmarks``, ``table-setup``, ``locomo-status`` and ``figure``."""
    _add_paper_verbs(sub)
    _add_result_tables(sub)
    _add_run_tables(sub)
    _add_figure(sub)
