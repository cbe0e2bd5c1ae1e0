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
from clerk.inputs import read_text, require
from clerk.provenance.claims import CLAIM_STATUSES, check_claims
from clerk.provenance.compare import FAILING, compare_trees, load_spec, summary_table
from clerk.provenance.environment import environment_warnings
from clerk.provenance.files import load_json, write_json
from clerk.provenance.manifest import build_manifest
from clerk.provenance.numbers import build_numbers
from clerk.provenance.verify import trace, verify


def _numbers_main(args) -> None:
    import yaml

    text = read_text(args.spec, "--spec", "a YAML numbers spec")
    try:
        spec = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise UserError(f"--spec must be a YAML numbers spec, got {args.spec!r}, which is not valid YAML "
                        f"({str(err).splitlines()[0]})") from None
    require(isinstance(spec, dict) and bool(spec), "--spec", args.spec,
            f"must hold a non-empty mapping (number id -> spec), got {spec!r:.80}")
    write_json(build_numbers(spec, Path(args.workdir)), args.out)


def _manifest_main(args) -> None:
    snakefile = None if args.snakefile == "none" else Path(args.snakefile)
    own = os.path.relpath(args.out, args.workdir)  # the manifest never lists itself
    manifest = build_manifest(Path(args.workdir), args.root or ["results"], args.extra, [own],
                              snakefile)
    write_json(manifest, args.out)


def _is_str_map(value, allow_none: bool = False) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and (isinstance(v, str) or (allow_none and v is None)) for k, v in value.items())


def _load_manifest(path: str, arg: str = "--manifest", nonempty: bool = True) -> dict:
    """manifest.json: ``files`` maps each path to its record (``sha256``, ``inputs``, ``rule``, ...).
    UserError naming ``arg`` for any other shape, and (``nonempty``) for a manifest listing no file:
    verifying nothing is not a pass."""
    manifest = load_json(path, arg)
    files = manifest.get("files")
    require(isinstance(files, dict), arg, path, f"must hold an object 'files' (path -> record), got {files!r:.80}")
    require(bool(files) or not nonempty, arg, path, "lists no file ('files' is empty): nothing to verify")
    require(isinstance(manifest.get("packages", {}), dict), arg, path,
            f"'packages' must be an object (package -> version), got {manifest.get('packages')!r:.80}")
    for name, entry in files.items():
        require(isinstance(entry, dict) and (entry.get("sha256") is None or isinstance(entry.get("sha256"), str))
                and _is_str_map(entry.get("inputs"), allow_none=True) and "rule" in entry
                and (entry.get("files") is None or _is_str_map(entry.get("files"))), arg, path,
                f"files[{name!r}] must be an object with 'sha256' (string or null), 'inputs' (path -> "
                f"sha256), 'rule' and optional 'files'; got {entry!r:.80}")
        size = entry.get("bytes")
        require(size is None or (type(size) is int and size >= 0), arg, path,
                f"files[{name!r}] field 'bytes' must be a whole number >= 0 (the size in bytes) or null, "
                f"got {size!r}")
    return manifest


#: Fields of each numbers.json entry and their JSON types.
_NUMBER_FIELDS = {"source": str, "sha256": str, "key": str, "format": str, "text": str}


def _load_numbers(path: str, arg: str = "--numbers", nonempty: bool = True) -> dict:
    """numbers.json: ``numbers`` maps each id to its entry (:data:`_NUMBER_FIELDS` and a numeric or
    null ``value``). UserError naming ``arg`` for any other shape and (``nonempty``) for no number."""
    numbers = load_json(path, arg)
    nums = numbers.get("numbers")
    require(isinstance(nums, dict), arg, path, f"must hold an object 'numbers' (id -> entry), got {nums!r:.80}")
    require(bool(nums) or not nonempty, arg, path, "holds no number ('numbers' is empty): nothing to verify")
    for number_id, num in nums.items():
        ok = isinstance(num, dict) and all(isinstance(num.get(k), t) for k, t in _NUMBER_FIELDS.items())
        value = num.get("value") if isinstance(num, dict) else None
        ok = ok and (value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)))
        require(ok, arg, path, f"numbers[{number_id!r}] must be an object with string fields "
                f"{', '.join(_NUMBER_FIELDS)} and a numeric or null 'value'; got {num!r:.80}")
    return numbers


def _trace_main(args) -> None:
    numbers = _load_numbers(args.numbers, nonempty=False) if Path(args.numbers).exists() else {}
    print("\n".join(trace(args.target, _load_manifest(args.manifest, nonempty=False), numbers)))


def _verify_main(args) -> None:
    manifest = _load_manifest(args.manifest)
    numbers = _load_numbers(args.numbers)
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
    spec = load_spec(args.tolerances)
    paper = None if args.paper == "none" else Path(args.paper)
    found = compare_trees(Path(args.against), Path(args.rerun), spec)
    claims = check_claims(found, spec.rules, paper)
    print(f"clerk compare: shipped {args.against} vs rerun {args.rerun} (tolerances: {args.tolerances})")
    seeds = [", ".join(sorted(s, key=lambda x: (len(x), x))) for s in found.seeds]
    if found.partial_seeds:
        print(f"seeds: shipped {seeds[0]}; rerun {seeds[1]}: compared on the rerun's seeds, aggregates over "
              "other seeds skipped")
    fail_on = ("failed",) if args.partial else ("failed", "missing")
    print("\nclaims (" + ", ".join(f"{sum(c.status == s for c in claims)} {s}" for s in CLAIM_STATUSES) + "):")
    for claim in claims:
        print(claim.line())
    print("\ncells and numbers:\n")
    print(summary_table(found.numbers, found.cells, found.artifacts))
    if found.skips:
        print("\nskipped (not comparable with this rerun):")
        for skip in found.skips:
            print(f"  {skip.line()}")
    failing = ("different",) if args.partial else FAILING
    shown = ("within", "timing", *FAILING) if args.verbose else ("within", *FAILING)
    items = [i for i in found.numbers + found.cells if i.status in shown]
    if items:
        print()
    for item in items:
        print(f"{item.status:>9}  {item.line()}")
    changed = [(path, st) for path, st in found.artifacts if st != "equal"]
    failed = [i for i in found.numbers + found.cells if i.status in failing]
    if changed and (args.verbose or failed):
        print("\nfiles that differ (where a difference starts; information only):")
        for path, st in changed:
            print(f"{st:>9}  {path}")
    bad_claims = [c for c in claims if c.status in fail_on]
    if bad_claims or failed:
        parts = []
        if bad_claims:
            parts.append(f"{len(bad_claims)} claim(s) failed: " + ", ".join(f"{c.kind} {c.name}" for c in bad_claims[:10])
                         + (f", ... ({len(bad_claims) - 10} more)" if len(bad_claims) > 10 else ""))
        if failed:
            parts.append(f"{len(failed)} number(s)/cell(s) beyond tolerance: " + ", ".join(i.name for i in failed[:20])
                         + (f", ... ({len(failed) - 20} more)" if len(failed) > 20 else ""))
        raise SystemExit("clerk compare: " + "; ".join(parts))
    print("\nclerk compare: every claim holds" + (" or was skipped" if any(c.status != "holds" for c in claims) else "")
          + "; every number and cell equal or within its declared tolerance"
          + (" (a partial rerun: files and rows it lacks listed, not failed)" if args.partial else ""))


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

    p = sub.add_parser("compare", help="shipped vs rerun: the paper's claims, then every paper number and table cell",
                       description="Compare a rerun's results folder with the shipped one. First the claims: every "
                       "conclusive paired verdict keeps its sign and stays conclusive, the rankings of tables 1-3 hold "
                       "where the gap exceeds the two cells' tolerances, the abstract's numbers lie within tolerance. "
                       "Then every number of numbers.json and every CSV cell (rows matched by key) is equal, within its "
                       "tolerance (paper/tolerances.yaml), timing (never compared), skipped (a seed the rerun lacks, or "
                       "an aggregate over other seeds) or different. Exit 1 naming every failed claim and every number "
                       "or cell beyond tolerance.")
    p.add_argument("rerun", help="the rerun's results folder (with numbers.json, the tables, manifest.json)")
    p.add_argument("--against", default="results", help="the shipped results folder (default: results)")
    p.add_argument("--tolerances", default="paper/tolerances.yaml", help="default: paper/tolerances.yaml")
    p.add_argument("--paper", default="paper/paper.md",
                   help="rendered paper whose abstract's numbers are headline claims ('none' = skip; default: paper/paper.md)")
    p.add_argument("--partial", action="store_true",
                   help="the rerun holds only some of the files (a record of tables): a file, row or number it "
                        "lacks is listed, not failed")
    p.add_argument("--verbose", action="store_true", help="also list timing items and every differing file")
    p.set_defaults(func=_compare_main)
