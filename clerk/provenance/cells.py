"""Table cells of two results folders, rows matched by their keys (``clerk compare``).

Each CSV's rows are matched by *key columns*: the ones ``paper/tolerances.yaml`` declares for the
file (``keys:``), else every column that is not numeric (plus ``seed``). A rerun may hold a subset
of the shipped seeds: then a per-seed row (its key has ``seed``) or a per-seed file
(``eviction/137.csv``) of a seed the rerun lacks is left out, and an aggregate row (a ``seeds`` or
``n_seeds`` column: means, intervals, paired differences) over another set of seeds is skipped; each
skip is counted in a :class:`Skip` note naming the file, the rows and why. A shipped row the rerun
should have and lacks is ``missing``.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.keys import read_rows

#: Columns that hold a row's seed, or the seeds (``137;991;4242``) an aggregate row is over.
SEED, SEEDS, N_SEEDS = "seed", "seeds", "n_seeds"


@dataclass
class Table:
    """One CSV of a results folder: its rows and the columns that identify a row."""

    rel: str
    header: list[str]
    rows: list[dict[str, str]]
    key: list[str]

    def label(self, row: dict[str, str]) -> str:
        """``col=value,...`` of the key columns (``row N`` for a keyless one-row file)."""
        return ",".join(f"{k}={row.get(k, '')}" for k in self.key) or "row 1"

    def index(self) -> dict[tuple, dict[str, str]]:
        return {tuple(r.get(k, "") for k in self.key): r for r in self.rows}


@dataclass
class Skip:
    """Rows of one file left out of the comparison, and why (printed as one note)."""

    rel: str
    why: str
    rows: list[str] = field(default_factory=list)

    def line(self) -> str:
        n = len(self.rows)
        return f"{self.rel}: {n} row{'s' if n != 1 else ''} skipped ({self.why})"


def _numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return value.strip().lower() in ("", "nan")
    return True


def key_columns(rel: str, header: list[str], rows: list[dict[str, str]], declared: dict[str, list[str]]) -> list[str]:
    """The key of a CSV: its declared ``keys:`` entry (the first pattern matching ``rel``), else
    every non-numeric column but ``seeds``, plus ``seed``, plus integer columns left to right
    until the rows differ.

    >>> key_columns("t.csv", ["system", "seed", "acc"], [{"system": "a", "seed": "1", "acc": "0.5"}], {})
    ['system', 'seed']

    Raises:
        UserError: a declared column is not in the file, or the key does not tell the rows apart.
    """
    key = None
    for pattern, cols in declared.items():
        if fnmatch.fnmatchcase(rel, pattern):
            lacking = [c for c in cols if c not in header]
            if lacking:
                raise UserError(f"{rel}: declared key column(s) {', '.join(lacking)} not in its header")
            key = list(cols)
            break
    if key is None:
        key = [c for c in header if c == SEED or (c != SEEDS and not all(_numeric(r[c]) for r in rows))]
        for col in header:  # integer columns (a step, a session), left to right, until the rows differ
            if _unique(rows, key):
                break
            if col not in key and rows and all(r[col].strip().lstrip("-").isdigit() for r in rows):
                key.append(col)
    if not _unique(rows, key):
        raise UserError(f"{rel}: key ({', '.join(key) or 'no column'}) does not tell its rows apart; "
                        f"declare its key columns under 'keys:' in the tolerances file")
    return key


def _unique(rows: list[dict[str, str]], key: list[str]) -> bool:
    seen = [tuple(r.get(k, "") for k in key) for r in rows]
    return len(set(seen)) == len(seen)


def load_tables(root: Path, declared: dict[str, list[str]]) -> dict[str, Table]:
    """Every CSV under ``root`` (by path inside it), with its key columns."""
    tables = {}
    for path in sorted(root.rglob("*.csv")):
        rel = path.relative_to(root).as_posix()
        rows = read_rows(path)
        header = list(rows[0]) if rows else _header(path)
        tables[rel] = Table(rel, header, rows, key_columns(rel, header, rows, declared))
    return tables


def _header(path: Path) -> list[str]:
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    return first[0].split(",") if first else []


def seeds_of(tables: dict[str, Table]) -> set[str]:
    """The seeds a run holds: every value of a ``seed`` column."""
    return {r[SEED] for t in tables.values() if SEED in t.header for r in t.rows}


def _seed_list(value: str) -> str:
    return ";".join(sorted(value.split(";"), key=lambda s: (len(s), s)))


def row_skip(table: Table, shipped: dict[str, str], rerun: dict[str, str] | None,
             rerun_seeds: set[str]) -> str | None:
    """Why a shipped row is left out of the comparison, or None to compare it.

    >>> t = Table("t1.csv", ["system", "seeds", "acc"], [], ["system"])
    >>> row_skip(t, {"system": "a", "seeds": "137;991", "acc": "0.5"}, {"system": "a", "seeds": "137", "acc": "0.6"}, {"137"})
    'aggregates over seeds 137;991 in the shipped run, over 137 in the rerun'
    """
    if SEED in table.key and shipped.get(SEED) not in rerun_seeds:
        return f"seed {shipped.get(SEED)} not in the rerun"
    if rerun is None:
        return None
    if SEEDS in table.header and _seed_list(shipped[SEEDS]) != _seed_list(rerun.get(SEEDS, "")):
        return f"aggregates over seeds {_seed_list(shipped[SEEDS])} in the shipped run, over {_seed_list(rerun.get(SEEDS, ''))} in the rerun"
    if N_SEEDS in table.header and shipped[N_SEEDS] != rerun.get(N_SEEDS):
        return f"aggregates over {shipped[N_SEEDS]} seeds in the shipped run, over {rerun.get(N_SEEDS)} in the rerun"
    return None


def file_skip(rel: str, shipped_seeds: set[str], rerun_seeds: set[str]) -> str | None:
    """Why a per-seed file the rerun lacks is left out (``eviction/991.csv`` when 991 was not rerun)."""
    stem = Path(rel).stem
    if stem in shipped_seeds and stem not in rerun_seeds:
        return f"per-seed file of seed {stem}, not in the rerun"
    return None


def pair_rows(shipped: Table, rerun: Table, rerun_seeds: set[str]) -> list[tuple[str, dict | None, dict | None, str | None]]:
    """``(label, shipped row, rerun row, why skipped)`` per key of either table: a row None is
    missing from that side; ``why`` (see :func:`row_skip`) is None for a row to compare."""
    mine, theirs = shipped.index(), rerun.index()
    pairs = [(shipped.label(row), row, theirs.get(k), row_skip(shipped, row, theirs.get(k), rerun_seeds))
             for k, row in mine.items()]
    return pairs + [(rerun.label(row), None, row, None) for k, row in theirs.items() if k not in mine]


def skip_notes(skipped: list[tuple[str, str, str]]) -> list[Skip]:
    """``(file, why, row label)`` triples as one :class:`Skip` per file and reason; the rows of
    seeds a rerun lacks make one note per file naming every such seed."""
    out: dict[tuple[str, str], Skip] = {}
    seeds: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rel, why, label in skipped:
        if why.startswith("seed ") and why.endswith(" not in the rerun"):
            seeds[(rel, "seeds")].add(why.split()[1])
            why = "seeds"
        out.setdefault((rel, why), Skip(rel, why)).rows.append(label)
    for k, found in seeds.items():
        names = sorted(found, key=lambda x: (len(x), x))
        out[k].why = f"rows of seed{'s' if len(names) > 1 else ''} {', '.join(names)}, not in the rerun"
    return list(out.values())
