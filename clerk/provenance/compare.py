"""Compare a rerun's results with the shipped ones: every paper number and every table cell.

For each number of ``numbers.json`` (by id) and each cell of each CSV under the results folder
(``<path>:<column>``, rows in file order), shipped vs rerun is one of: ``equal`` (identical),
``within`` (differs by no more than its tolerance), ``timing`` (a wall-time figure: shown, never
compared), ``different`` (beyond tolerance), ``missing`` (in one tree only). Tolerances come from
one declared file, ``paper/tolerances.yaml`` (:func:`load_tolerances`). The manifests' sha256 of
every file (a directory file by file: base model, SFT data, adapters) are compared too, for
information: they tell which artifact a difference starts at.

    clerk compare /path/to/rerun/results --against results
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.provenance.files import legacy_dir_digest, load_json
from clerk.provenance.keys import _as_number, read_rows

STATUSES = ("equal", "within", "timing", "different", "missing")
#: Statuses that make ``clerk compare`` fail.
FAILING = ("different", "missing")


@dataclass(frozen=True)
class Rule:
    """One tolerance rule: names matching ``pattern`` may differ by ``abs`` (or are timing)."""

    pattern: str
    abs: float
    timing: bool
    why: str


def load_tolerances(path: str | Path) -> list[Rule]:
    """The rules of a tolerances YAML file, in file order (see ``paper/tolerances.yaml``).

    Raises:
        UserError: the file is missing or a rule lacks ``pattern``/``why`` or has neither
            ``abs`` (>= 0) nor ``timing: true``.
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
        rules.append(Rule(str(raw["pattern"]), float(tol), timing, str(raw["why"])))
    return rules


def rule_for(rules: list[Rule], name: str) -> Rule:
    """The first rule whose pattern matches ``name``; none matching = identical (abs 0).

    >>> rule_for([Rule("bench.*", 0.0, True, "timing")], "bench.train.wall_s_total").timing
    True
    >>> rule_for([], "t1.clerk.accuracy_mean").abs
    0.0
    """
    for rule in rules:
        if fnmatch.fnmatchcase(name, rule.pattern):
            return rule
    return Rule("(no rule)", 0.0, False, "no rule matches: must be identical")


@dataclass
class Item:
    """One compared number or cell."""

    kind: str  # "number" | "cell"
    name: str  # number id, or "<csv>[<row label>]:<column>"
    shipped: Any
    rerun: Any
    status: str
    rule: Rule | None = None

    def line(self) -> str:
        """One human-readable line: what, both values, the difference and the rule."""
        text = f"{self.kind} {self.name}: shipped {_show(self.shipped)}, rerun {_show(self.rerun)}"
        a, b = _number(self.shipped), _number(self.rerun)
        if a is not None and b is not None and not (math.isnan(a) or math.isnan(b)) and a != b:
            text += f", |diff| {abs(a - b):.3g}"
        if self.rule is not None and self.status in ("within", "different"):
            text += f" (tolerance {self.rule.abs:g}, rule '{self.rule.pattern}': {self.rule.why})"
        return text


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


def compare_numbers(shipped: dict, rerun: dict, rules: list[Rule]) -> list[Item]:
    """Every number id of either ``numbers.json`` (their ``numbers`` maps), sorted by id."""
    a, b = shipped.get("numbers", {}), rerun.get("numbers", {})
    return [_judge("number", nid, a.get(nid), b.get(nid), rule_for(rules, nid)) for nid in sorted(set(a) | set(b))]


def _row_labels(rows: list[dict[str, str]], header: list[str]) -> list[str]:
    """A label per row: its leading columns up to the first holding a decimal number, less those
    with one value in every row (counts, seed lists), so the label names what varies.

    >>> _row_labels([{"system": "a", "n": "3", "acc": "0.5"}, {"system": "b", "n": "3", "acc": "0.7"}],
    ...             ["system", "n", "acc"])
    ['system=a', 'system=b']
    """
    keys = []
    for col in header:
        if any("." in r[col] and _number(r[col]) is not None for r in rows):
            break
        if len({r[col] for r in rows}) > 1:
            keys.append(col)
    return [",".join(f"{k}={r[k]}" for k in keys) or f"row {i + 1}" for i, r in enumerate(rows)]


def compare_csv(rel: str, shipped: Path | None, rerun: Path | None, rules: list[Rule]) -> list[Item]:
    """Every cell of one CSV, rows matched in order; a missing file or row is one ``missing`` item."""
    if shipped is None or rerun is None:
        return [Item("cell", f"{rel}", "present" if shipped else None, "present" if rerun else None, "missing")]
    a_rows, b_rows = read_rows(shipped), read_rows(rerun)
    header = list(a_rows[0]) if a_rows else []
    labels = _row_labels(a_rows, header) if a_rows else []
    items = []
    for i in range(max(len(a_rows), len(b_rows))):
        if i >= len(a_rows) or i >= len(b_rows):
            label = labels[i] if i < len(labels) else f"row {i + 1}"
            items.append(Item("cell", f"{rel}[{label}]", "row" if i < len(a_rows) else None,
                              "row" if i < len(b_rows) else None, "missing"))
            continue
        for col in sorted(set(a_rows[i]) | set(b_rows[i]), key=lambda c: (c not in header, header.index(c) if c in header else 0, c)):
            items.append(_judge("cell", f"{rel}[{labels[i]}]:{col}", a_rows[i].get(col), b_rows[i].get(col),
                                rule_for(rules, f"{rel}:{col}")))
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


def compare_trees(shipped_dir: Path, rerun_dir: Path, rules: list[Rule]) -> tuple[list[Item], list[Item], list]:
    """Numbers, table cells and artifacts of two results folders.

    Raises:
        UserError: either folder lacks ``numbers.json``.
    """
    shipped_dir, rerun_dir = Path(shipped_dir), Path(rerun_dir)
    for d in (shipped_dir, rerun_dir):
        if not d.is_dir():
            raise UserError(f"results folder '{d}' does not exist")
    numbers = compare_numbers(load_json(shipped_dir / "numbers.json", "shipped numbers"),
                              load_json(rerun_dir / "numbers.json", "rerun numbers"), rules)
    csvs = {p.relative_to(d).as_posix() for d in (shipped_dir, rerun_dir) for p in d.rglob("*.csv")}
    cells = []
    for rel in sorted(csvs):
        cells += compare_csv(rel, _file(shipped_dir / rel), _file(rerun_dir / rel), rules)
    manifests = [load_json(d / "manifest.json", "manifest") if (d / "manifest.json").is_file() else None
                 for d in (shipped_dir, rerun_dir)]
    return numbers, cells, compare_artifacts(*manifests)


def _file(path: Path) -> Path | None:
    return path if path.is_file() else None


def summary_table(numbers: list[Item], cells: list[Item], artifacts: list[tuple[str, str]]) -> str:
    """The Markdown summary: counts per status for numbers, cells and artifacts."""
    lines = ["| compared | " + " | ".join(STATUSES) + " |", "| :--- |" + " ---: |" * len(STATUSES)]
    for what, items in (("paper numbers (numbers.json)", numbers), ("table cells (every CSV)", cells)):
        lines.append(f"| {what} | " + " | ".join(str(sum(i.status == s for i in items)) for s in STATUSES) + " |")
    counts = {s: sum(st == s for _, st in artifacts) for s in ("equal", "different", "missing")}
    lines.append(f"| files by sha256 (manifest; information) | {counts['equal']} | | | "
                 f"{counts['different']} | {counts['missing']} |")
    return "\n".join(lines)
