"""Compare a rerun's results with the shipped ones: the paper's claims, every paper number and
every table cell.

For each number of ``numbers.json`` (by id) and each cell of each CSV under the results folder
(``<path>[<row key>]:<column>``, rows matched by their key columns: :mod:`clerk.provenance.cells`),
shipped vs rerun is one of: ``equal`` (identical), ``within`` (differs by no more than its
tolerance), ``timing`` (a wall-time figure: shown, never compared), ``skipped`` (a seed the rerun
lacks, or an aggregate over another set of seeds), ``different`` (beyond tolerance), ``missing``
(in one tree only). A number read from a table cell is judged by that cell's rule. Tolerances,
table keys and seed-set numbers come from one declared file, ``paper/tolerances.yaml``
(:func:`load_spec`). The claims (:mod:`clerk.provenance.claims`) are checked on the same items.
The manifests' sha256 of every file are compared too, for information: they tell which artifact a
difference starts at.

    clerk compare /path/to/rerun/results --against results
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.provenance.cells import Skip, Table, file_skip, load_tables, pair_rows, seeds_of, skip_notes
from clerk.provenance.files import legacy_dir_digest, load_json
from clerk.provenance.keys import _as_number, csv_lookup

STATUSES = ("equal", "within", "timing", "skipped", "different", "missing")
#: Statuses that make ``clerk compare`` fail.
FAILING = ("different", "missing")


@dataclass(frozen=True)
class Rule:
    """One tolerance rule: names matching ``pattern`` (in rows whose columns hold one of the values
    ``where`` lists) may differ by ``abs`` (or are timing)."""

    pattern: str
    abs: float
    timing: bool
    why: str
    where: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def matches(self, name: str, row: dict[str, str] | None = None) -> bool:
        if not fnmatch.fnmatchcase(name, self.pattern):
            return False
        return all(row is not None and row.get(col) in values for col, values in self.where)


@dataclass
class Tolerances:
    """The tolerances file: ``rules`` (first match wins), ``keys`` (file pattern -> key columns of
    its rows) and ``seed_set`` (number ids over the run's whole seed set that no table row names)."""

    rules: list[Rule]
    keys: dict[str, list[str]] = field(default_factory=dict)
    seed_set: list[str] = field(default_factory=list)


def load_spec(path: str | Path) -> Tolerances:
    """The rules, table keys and seed-set numbers of a tolerances YAML file (``paper/tolerances.yaml``).

    Raises:
        UserError: the file is missing; a rule lacks ``pattern``/``why``, has neither ``abs``
            (>= 0) nor ``timing: true``, or a ``where`` that is not column -> list of values; a key
            entry is not a list of column names.
    """
    import yaml

    if not Path(path).is_file():
        raise UserError(f"--tolerances: file '{path}' does not exist")
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    rules = []
    for i, raw in enumerate(doc.get("rules") or []):
        where = f"{path}: rule {i + 1}"
        if not isinstance(raw, dict) or not raw.get("pattern") or not raw.get("why"):
            raise UserError(f"{where}: needs 'pattern' and 'why', got {raw!r}")
        timing = raw.get("timing") is True
        tol = raw.get("abs", 0 if timing else None)
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol < 0:
            raise UserError(f"{where} ('{raw['pattern']}'): 'abs' must be a number >= 0 "
                            f"(or 'timing: true'), got {tol!r}")
        rows = raw.get("where") or {}
        if not isinstance(rows, dict) or not all(isinstance(v, list) for v in rows.values()):
            raise UserError(f"{where} ('{raw['pattern']}'): 'where' must map a column to a list of values, got {rows!r}")
        rules.append(Rule(str(raw["pattern"]), float(tol), timing, str(raw["why"]),
                          tuple((str(c), tuple(str(v) for v in vs)) for c, vs in rows.items())))
    keys = doc.get("keys") or {}
    if not isinstance(keys, dict) or not all(isinstance(v, list) and v for v in keys.values()):
        raise UserError(f"{path}: 'keys' must map a file pattern to a list of key columns, got {keys!r:.80}")
    seed_set = doc.get("seed_set") or []
    if not isinstance(seed_set, list):
        raise UserError(f"{path}: 'seed_set' must be a list of number-id patterns, got {seed_set!r:.80}")
    return Tolerances(rules, {str(k): [str(c) for c in v] for k, v in keys.items()}, [str(p) for p in seed_set])


def load_tolerances(path: str | Path) -> list[Rule]:
    """The rules of a tolerances YAML file, in file order (see :func:`load_spec`)."""
    return load_spec(path).rules


def rule_for(rules: list[Rule], name: str, row: dict[str, str] | None = None) -> Rule:
    """The first rule matching ``name`` (and ``row``, for rules with ``where``); none = identical.

    >>> rule_for([Rule("bench.*", 0.0, True, "timing")], "bench.train.wall_s_total").timing
    True
    >>> rule_for([], "t1.clerk.accuracy_mean").abs
    0.0
    >>> writers = Rule("t.csv:acc", 0.1, False, "w", (("system", ("clerk",)),))
    >>> rule_for([writers], "t.csv:acc", {"system": "clerk"}).abs, rule_for([writers], "t.csv:acc", {"system": "full"}).abs
    (0.1, 0.0)
    """
    for rule in rules:
        if rule.matches(name, row):
            return rule
    return Rule("(no rule)", 0.0, False, "no rule matches: must be identical")


@dataclass
class Item:
    """One compared number or cell."""

    kind: str  # "number" | "cell"
    name: str  # number id, or "<csv>[<row key>]:<column>"
    shipped: Any
    rerun: Any
    status: str
    rule: Rule | None = None
    family: str = ""  # the name its rule was matched against: number id or "<csv>:<column>"
    row: dict[str, str] | None = None  # the shipped row of a cell (or of a number's source cell)

    def line(self) -> str:
        """One human-readable line: what, both values, the difference and the rule."""
        text = f"{self.kind} {self.name}: shipped {_show(self.shipped)}, rerun {_show(self.rerun)}"
        d = self.diff()
        if d is not None and d > 0:
            text += f", |diff| {d:.3g}"
        if self.rule is not None and self.status in ("within", "different"):
            text += f" (tolerance {self.rule.abs:g}, rule '{self.rule.pattern}'{_where(self.rule)}: {self.rule.why})"
        return text

    def diff(self) -> float | None:
        """|rerun - shipped| of two numbers (None when either is not a number, NaN, or absent)."""
        a, b = _number(self.shipped), _number(self.rerun)
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            return None
        return abs(a - b)


def _where(rule: Rule) -> str:
    return "".join(f" [{col} in {', '.join(vals)}]" for col, vals in rule.where)


def _show(value: Any) -> str:
    if isinstance(value, dict):  # a number of numbers.json: its value and printed text
        return f"{value['value']!r} (printed {value['text']})"
    return "absent" if value is None else repr(value)


def _number(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value["value"]
    if value is None:
        return math.nan
    try:
        return float(_as_number(value))
    except (TypeError, ValueError):
        return None


def _judge(kind: str, name: str, shipped: Any, rerun: Any, rule: Rule) -> Item:
    """Equal / within / timing / different for one pair of values (numbers or strings)."""
    if shipped is None or rerun is None:
        return Item(kind, name, shipped, rerun, "missing", rule)
    if rule.timing:
        return Item(kind, name, shipped, rerun, "timing", rule)
    same_text = not isinstance(shipped, dict) or shipped["text"] == rerun["text"]
    a, b = _number(shipped), _number(rerun)
    if a is None or b is None:  # text cells: equal or not
        same = (shipped == rerun) if not isinstance(shipped, dict) else shipped["value"] == rerun["value"]
        return Item(kind, name, shipped, rerun, "equal" if same else "different", rule)
    if (a == b or (math.isnan(a) and math.isnan(b))) and same_text:
        return Item(kind, name, shipped, rerun, "equal", rule)
    within = not (math.isnan(a) or math.isnan(b)) and abs(a - b) <= rule.abs
    return Item(kind, name, shipped, rerun, "within" if within else "different", rule)


def compare_table(rel: str, shipped: Table | None, rerun: Table | None, spec: Tolerances,
                  seeds: tuple[set[str], set[str]]) -> tuple[list[Item], list[tuple[str, str, str]]]:
    """Every cell of one CSV, rows matched by key; a file or row on one side only is one
    ``missing`` item. Also the ``(file, why, row)`` of each shipped row left out (:mod:`cells`);
    with other seeds in the rerun, a column of ``seed_set`` (a count over the whole run) is skipped."""
    rules = spec.rules
    whole = {c for c in (shipped.header if shipped else []) if seeds[0] != seeds[1]
             and any(fnmatch.fnmatchcase(f"{rel}:{c}", p) for p in spec.seed_set)}
    if shipped is not None and rerun is None and (why := file_skip(rel, *seeds)):
        return ([Item("cell", f"{rel}[{shipped.label(r)}]:{c}", r[c], None, "skipped", family=f"{rel}:{c}", row=r)
                 for r in shipped.rows for c in shipped.header], [(rel, why, shipped.label(r)) for r in shipped.rows])
    if shipped is None or rerun is None:
        return [Item("cell", rel, "present" if shipped else None, "present" if rerun else None, "missing")], []
    items, skipped = [], []
    header = shipped.header + [c for c in rerun.header if c not in shipped.header]
    for label, a, b, why in pair_rows(shipped, rerun, seeds[1]):
        if why is not None:
            skipped.append((rel, why, label))
            items += [Item("cell", f"{rel}[{label}]:{c}", a.get(c), None if b is None else b.get(c), "skipped",
                           family=f"{rel}:{c}", row=a) for c in shipped.header]
        elif a is None or b is None:
            items.append(Item("cell", f"{rel}[{label}]", "row" if a else None, "row" if b else None, "missing", row=a or b))
        else:
            for col in header:
                if col in whole:
                    items.append(Item("cell", f"{rel}[{label}]:{col}", a.get(col), b.get(col), "skipped",
                                      family=f"{rel}:{col}", row=a))
                    skipped.append((f"{rel}:{col}", "a count over the run's whole seed set", label))
                    continue
                item = _judge("cell", f"{rel}[{label}]:{col}", a.get(col), b.get(col), rule_for(rules, f"{rel}:{col}", a))
                item.family, item.row = f"{rel}:{col}", a
                items.append(item)
    return items, skipped


def _source_cell(entry: dict, tables: dict[str, Table]) -> tuple[str, str, dict[str, str]] | None:
    """``(file, column, shipped row)`` a number of numbers.json was read from, when that is a
    results table (its ``source`` is ``results/<file>.csv``), else None."""
    source = str(entry.get("source", ""))
    rel = source.split("/", 1)[1] if "/" in source else source
    table = tables.get(rel)
    if table is None or not source.endswith(".csv"):
        return None
    try:
        csv_lookup(table.rows, str(entry.get("key", "")))  # exactly one row, a known column
    except KeyError:
        return None
    selector, _, column = str(entry["key"]).rpartition("/")
    conditions = dict(c.split("=", 1) for c in selector.split(",") if c)
    return rel, column, next(r for r in table.rows if all(r.get(k) == v for k, v in conditions.items()))


def compare_numbers(shipped: dict, rerun: dict, spec: Tolerances, tables: dict[str, Table],
                    cell_status: dict[tuple[str, str], str], seeds_differ: bool) -> list[Item]:
    """Every number id of either ``numbers.json`` (their ``numbers`` maps), sorted by id. A number
    read from a table cell takes that cell's rule and is skipped where its row is; one over the
    run's seed set (``seed_set`` patterns) is skipped when the two runs hold different seeds."""
    a, b = shipped.get("numbers", {}), rerun.get("numbers", {})
    items = []
    for nid in sorted(set(a) | set(b)):
        cell = _source_cell(a[nid], tables) if nid in a else None
        if cell is not None:
            rel, col, row = cell
            label = tables[rel].label(row)
            rule, family = rule_for(spec.rules, f"{rel}:{col}", row), f"{rel}:{col}"
            why = cell_status.get((rel, label)) or cell_status.get((f"{rel}:{col}", label))
        else:
            rule, family, row, why = rule_for(spec.rules, nid), nid, None, None
            if seeds_differ and any(fnmatch.fnmatchcase(nid, p) for p in spec.seed_set):
                why = "over the run's whole seed set"
        if why is not None and nid in a:
            item = Item("number", nid, a[nid], b.get(nid), "skipped", rule)
        else:
            item = _judge("number", nid, a.get(nid), b.get(nid), rule)
        item.family, item.row = family, row
        items.append(item)
    return items


def compare_artifacts(shipped: dict | None, rerun: dict | None) -> list[tuple[str, str]]:
    """``(path, status)`` per file of either manifest: ``equal``, ``different`` or ``missing``.

    A directory recorded file by file in both is compared per file (``path/rel``); against a
    manifest without per-file lists, on its digest (with or without Snakemake's marker).
    """
    a, b = (shipped or {}).get("files", {}), (rerun or {}).get("files", {})
    out: dict[str, str] = {}  # a file under results/ is listed itself and inside its directory
    for path in sorted(set(a) | set(b)):
        x, y = a.get(path), b.get(path)
        if x is None or y is None:
            out[path] = "missing"
        elif "files" in x and "files" in y:
            for rel in sorted(set(x["files"]) | set(y["files"])):
                fx, fy = x["files"].get(rel), y["files"].get(rel)
                out[f"{path}/{rel}"] = ("missing" if fx is None or fy is None else
                                        "equal" if fx == fy else "different")
        else:
            out[path] = "equal" if _digests(x) & _digests(y) else "different"
    return sorted(out.items())


def _digests(entry: dict) -> set[str]:
    """The digests an entry matches: its sha256, and for a listed directory its legacy digest."""
    return {entry["sha256"]} | ({legacy_dir_digest(entry["files"])} if "files" in entry else set())


@dataclass
class Comparison:
    """Everything ``clerk compare`` found: items, skip notes, file digests, both trees' tables."""

    numbers: list[Item]
    cells: list[Item]
    artifacts: list[tuple[str, str]]
    skips: list[Skip]
    shipped: dict[str, Table]
    rerun: dict[str, Table]
    seeds: tuple[set[str], set[str]]

    @property
    def partial_seeds(self) -> bool:
        """True when the rerun holds other seeds than the shipped run (aggregates skipped)."""
        return self.seeds[0] != self.seeds[1]


def compare_trees(shipped_dir: Path, rerun_dir: Path, spec: Tolerances) -> Comparison:
    """Numbers, table cells and artifacts of two results folders.

    Raises:
        UserError: either folder is missing or lacks ``numbers.json``, or a table's key does not
            tell its rows apart.
    """
    shipped_dir, rerun_dir = Path(shipped_dir), Path(rerun_dir)
    for d in (shipped_dir, rerun_dir):
        if not d.is_dir():
            raise UserError(f"results folder '{d}' does not exist")
    ours, theirs = load_tables(shipped_dir, spec.keys), load_tables(rerun_dir, spec.keys)
    seeds = (seeds_of(ours), seeds_of(theirs))
    cells, skipped = [], []
    for rel in sorted(set(ours) | set(theirs)):
        got, why = compare_table(rel, ours.get(rel), theirs.get(rel), spec, seeds)
        cells += got
        skipped += why
    status = {(rel, label): why for rel, why, label in skipped}
    numbers = compare_numbers(load_json(shipped_dir / "numbers.json", "shipped numbers"),
                              load_json(rerun_dir / "numbers.json", "rerun numbers"), spec, ours, status,
                              seeds[0] != seeds[1])
    if seeds[0] != seeds[1] and any(i.status == "skipped" and i.family == i.name for i in numbers):
        skipped += [("numbers.json", "over the run's whole seed set", i.name) for i in numbers
                    if i.status == "skipped" and i.family == i.name]
    manifests = [load_json(d / "manifest.json", "manifest") if (d / "manifest.json").is_file() else None
                 for d in (shipped_dir, rerun_dir)]
    return Comparison(numbers, cells, compare_artifacts(*manifests), skip_notes(skipped), ours, theirs, seeds)


def summary_table(numbers: list[Item], cells: list[Item], artifacts: list[tuple[str, str]]) -> str:
    """The Markdown summary: counts per status for numbers, cells and artifacts."""
    lines = ["| compared | " + " | ".join(STATUSES) + " |", "| :--- |" + " ---: |" * len(STATUSES)]
    for what, items in (("paper numbers (numbers.json)", numbers), ("table cells (every CSV)", cells)):
        lines.append(f"| {what} | " + " | ".join(str(sum(i.status == s for i in items)) for s in STATUSES) + " |")
    counts = {s: sum(st == s for _, st in artifacts) for s in ("equal", "different", "missing")}
    lines.append(f"| files by sha256 (manifest; information) | {counts['equal']} | | | | "
                 f"{counts['different']} | {counts['missing']} |")
    return "\n".join(lines)
