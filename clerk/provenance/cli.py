"""The provenance verbs: ``clerk numbers``, ``clerk manifest``, ``clerk trace``, ``clerk verify``
and ``clerk compare``.

    clerk numbers --spec paper/numbers.yaml --out results/numbers.json
    clerk manifest --root results --extra paper/paper.md --out results/manifest.json
    clerk trace main.clerk.test.accuracy_mean && clerk verify
    clerk compare /path/to/rerun/results            # vs the shipped results/
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.environment import environment_warnings
from clerk.provenance.compare import FAILING, compare_trees, load_tolerances, summary_table
from clerk.provenance.files import load_json, write_json
from clerk.provenance.manifest import build_manifest
from clerk.provenance.numbers import build_numbers
from clerk.provenance.verify import trace, verify


def _numbers_main(args) -> None:
    import yaml

    if not Path(args.spec).is_file():
        raise UserError(f"--spec: file '{args.spec}' does not exist")
    spec = yaml.safe_load(Path(args.spec).read_text(encoding="utf-8")) or {}
    write_json(build_numbers(spec, Path(args.workdir)), args.out)


def _manifest_main(args) -> None:
    snakefile = None if args.snakefile == "none" else Path(args.snakefile)
    own = os.path.relpath(args.out, args.workdir)  # the manifest never lists itself
    manifest = build_manifest(Path(args.workdir), args.root or ["results"], args.extra, [own],
                              snakefile)
    write_json(manifest, args.out)


def _trace_main(args) -> None:
    numbers = load_json(args.numbers, "--numbers") if Path(args.numbers).is_file() else {}
    print("\n".join(trace(args.target, load_json(args.manifest, "--manifest"), numbers)))


def _verify_main(args) -> None:
    manifest = load_json(args.manifest, "--manifest")
    numbers = load_json(args.numbers, "--numbers")
    paper = None if args.paper == "none" else Path(args.paper)
    absent: list[str] = []
    problems = verify(Path(args.workdir), manifest, numbers, paper, absent=absent, strict=args.strict)
    for problem in problems:
        print(f"clerk verify: {problem}", file=sys.stderr)
    # Warnings only, printed either way: another environment may explain a mismatch.
    lock = None if args.lock == "none" else Path(args.workdir) / args.lock
    for line in environment_warnings(manifest, lock):
        print(f"clerk verify: {line}", file=sys.stderr)
    if problems:
        raise SystemExit(f"clerk verify: FAILED with {len(problems)} problem(s)")
    for path in absent:
        print(f"clerk verify: not in this checkout (git-ignored; sha256 recorded): {path}", file=sys.stderr)
    print(f"verified {len(manifest['files']) - len(absent)} files and {len(numbers['numbers'])} numbers"
          + (f" against {paper}" if paper else "")
          + (f" ({len(absent)} git-ignored outputs not in this checkout)" if absent else ""))


def _compare_main(args) -> None:
    rules = load_tolerances(args.tolerances)
    numbers, cells, artifacts = compare_trees(Path(args.against), Path(args.rerun), rules)
    print(f"clerk compare: shipped {args.against} vs rerun {args.rerun} (tolerances: {args.tolerances})\n")
    print(summary_table(numbers, cells, artifacts))
    shown = ("within", "timing", *FAILING) if args.verbose else ("within", *FAILING)
    items = [i for i in numbers + cells if i.status in shown]
    if items:
        print()
    for item in items:
        print(f"{item.status:>9}  {item.line()}")
    changed = [(path, st) for path, st in artifacts if st != "equal"]
    if changed and (args.verbose or any(i.status in FAILING for i in numbers + cells)):
        print("\nfiles that differ (where a difference starts; information only):")
        for path, st in changed:
            print(f"{st:>9}  {path}")
    failed = [i for i in numbers + cells if i.status in FAILING]
    if failed:
        names = ", ".join(i.name for i in failed[:20]) + (f", ... ({len(failed) - 20} more)" if len(failed) > 20 else "")
        raise SystemExit(f"clerk compare: {len(failed)} number(s)/cell(s) beyond tolerance: {names}")
    print("\nclerk compare: every number and cell equal or within its declared tolerance")


def register_cli(sub) -> None:
    """Add the verbs ``numbers``, ``manifest``, ``trace``, ``verify`` and ``compare``."""
    p = sub.add_parser("numbers", help="resolve paper/numbers.yaml into results/numbers.json",
                       description="Read every number the paper prints from its results file.")
    p.add_argument("--spec", required=True, help="numbers spec YAML (ids -> source, key, format, rule)")
    p.add_argument("--out", required=True, help="numbers JSON to write")
    p.add_argument("--workdir", default=".", help="Snakemake working directory (default: .)")
    p.set_defaults(func=_numbers_main)

    p = sub.add_parser("manifest", help="sha256 manifest of results/ with Snakemake's records",
                       description="Hash every results file; attach rule, wildcards, params, inputs.")
    p.add_argument("--root", action="append", default=None, help="folder to list (repeatable; default: results)")
    p.add_argument("--extra", action="append", default=[], help="extra file to list (repeatable)")
    p.add_argument("--out", required=True, help="manifest JSON to write (never lists itself)")
    p.add_argument("--snakefile", default="workflow/Snakefile",
                   help="Snakefile whose output patterns give wildcards ('none' = skip; default: workflow/Snakefile)")
    p.add_argument("--workdir", default=".", help="Snakemake working directory (default: .)")
    p.set_defaults(func=_manifest_main)

    p = sub.add_parser("trace", help="walk a number or file back through rules and inputs",
                       description="Print number -> file (sha256) -> rule (params) -> inputs, recursively.")
    p.add_argument("target", help="a number id from numbers.json or a file path in the manifest")
    p.add_argument("--manifest", default="results/manifest.json", help="default: results/manifest.json")
    p.add_argument("--numbers", default="results/numbers.json", help="default: results/numbers.json")
    p.set_defaults(func=_trace_main)

    p = sub.add_parser("verify", help="re-hash the manifest and check every number in the paper",
                       description="Exit 1 naming every file or number id that no longer matches.")
    p.add_argument("--manifest", default="results/manifest.json", help="default: results/manifest.json")
    p.add_argument("--numbers", default="results/numbers.json", help="default: results/numbers.json")
    p.add_argument("--paper", default="paper/paper.md", help="rendered paper ('none' = skip; default: paper/paper.md)")
    p.add_argument("--workdir", default=".", help="directory the manifest paths are relative to (default: .)")
    p.add_argument("--strict", action="store_true",
                   help="also fail on missing git-ignored outputs (models, adapters) instead of listing them")
    p.add_argument("--lock", default="requirements.lock",
                   help="lock to compare the running environment with, relative to --workdir; a difference from "
                        "it or from the manifest's package versions is a warning ('none' = skip; default: "
                        "requirements.lock)")
    p.set_defaults(func=_verify_main)

    p = sub.add_parser("compare", help="shipped vs rerun: every paper number and table cell, against declared tolerances",
                       description="Compare a rerun's results folder with the shipped one: every number of numbers.json "
                       "and every CSV cell is equal, within its tolerance (paper/tolerances.yaml), timing (never "
                       "compared) or different. Exit 1 naming every number or cell beyond tolerance.")
    p.add_argument("rerun", help="the rerun's results folder (with numbers.json, the tables, manifest.json)")
    p.add_argument("--against", default="results", help="the shipped results folder (default: results)")
    p.add_argument("--tolerances", default="paper/tolerances.yaml", help="default: paper/tolerances.yaml")
    p.add_argument("--verbose", action="store_true", help="also list timing items and every differing file")
    p.set_defaults(func=_compare_main)
