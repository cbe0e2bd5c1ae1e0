"""Paper tables and figures: per-seed values first, then mean ± 95 % t-interval over seeds (SPEC §6, §8).

Every table is written twice: a long per-seed CSV (one row per seed and group, the values exactly
as the per-seed result files hold them) and the aggregated CSV built from it with
:func:`clerk.report.aggregate_frame` (``<metric>_n/_mean/_sd/_ci_low/_ci_high``), so every
aggregated number traces back to the per-seed values it summarises. A compact Markdown rendering
(mean ± half-width of the interval) is what the paper includes. Figures are seaborn plots of those
tables, saved byte-deterministically by :func:`clerk.report.save_figure`.

Verbs (paths as the workflow uses them):

    clerk table-systems --metrics results/eval/*/test/metrics.json --out results/table1.csv \\
        --seeds-out results/table1_seeds.csv --markdown results/table1.md --markdown-cost results/table1_cost.md
    clerk table-eviction --csv results/eviction/*.csv --default-capacity 16 --default-noise 3 \\
        --out results/table4.csv --seeds-out results/table4_seeds.csv --markdown results/table4.md
    clerk table-read-cost --csv results/readcost/*.csv --out results/read_cost.csv
    clerk table-benchmarks --tsv benchmarks/runs/*/*.tsv --out results/benchmarks.csv --markdown results/benchmarks.md
    clerk table-setup --timelines results/data/*/*.jsonl --metrics results/eval/*/*/metrics.json \\
        --train results/train/* --streams results/streams/*.json --out results/setup.json --markdown results/setup.md
    clerk locomo-status --out results/locomo_status.md
    clerk figure accuracy --inputs results/table1_seeds.csv --out results/figures/accuracy_by_type
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Callable

from clerk.errors import UserError

#: Question types in the order the tables and figures list them (SPEC §2).
QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal")
#: Edit-op kinds (SPEC §1), for the per-op F1 columns.
OP_KINDS = ("ADD", "UPDATE", "TOMBSTONE", "EVICT")
#: Per-seed metric columns of the systems table, in table order.
SYSTEM_METRICS = (
    "accuracy", *(f"accuracy_{t}" for t in QUESTION_TYPES), "stale_error_rate",
    "stale_error_rate_negated", "op_precision", "op_recall", "op_f1",
    *(f"op_{k.lower()}_f1" for k in OP_KINDS), "state_f1", "state_exact_rate", "invalid_op_rate",
    "parse_failure_rate", "read_tokens", "write_tokens", "truncated_rate", "wall_seconds",
    "n_questions", "n_personas",
)
#: Group columns of the systems table (``reader`` is constant per system; a change shows as a new row).
SYSTEM_KEYS = ("split", "system", "reader", "is_ledger")
#: Row order of systems where no config order is at hand (the SPEC §6 table order).
SYSTEM_ORDER = ("clerk", "oracle", "prompted-ledger", "full", "window", "rag", "add-only", "null")
EVICTION_METRICS = ("recall_hit_rate", "noise_occupancy", "hits", "recalls")
#: Snakemake benchmark TSV columns we keep: wall seconds, peak resident memory (MB), CPU seconds.
BENCHMARK_COLUMNS = ("s", "max_rss", "cpu_time")
#: Read-cost views in plot order, with the label the paper uses (the oracle ledger stands in for
#: CLERK's ledger: same format, same B slots, so the same read cost).
VIEW_LABELS = {"oracle": "ledger (CLERK)", "full": "full history", "window": "last-k window",
               "rag": "BM25 top-k turns", "add-only": "add-only notes"}
READER_LABELS = {"mc:adapter": "trained adapter", "mc:base": "base model", "rule": "exact rule"}

#: The LoCoMo paragraph the paper includes when the LoCoMo rules are off (SPEC §7).
LOCOMO_NOT_RUN = (
    "**LoCoMo-MC10 was not run for this build.** The workflow configuration names no LoCoMo file "
    "(`locomo.path` is {path}) and does not allow downloading it (`locomo.download` is "
    "{download}), so the zero-shot transfer experiment of the design (every writer over the ten "
    "real conversations, scored by the same multiple-choice reader) was left out and no number "
    "in this paper comes from LoCoMo. The data is licensed CC BY-NC 4.0 and is never committed; "
    "set `locomo.path` to a local copy of the Percena/locomo-mc10 file (or `locomo.download: "
    "true` where the Hugging Face hub is reachable) and rerun the workflow to add the section.\n"
)


# ---- small pure helpers ----------------------------------------------------------------------

def _num(value: Any) -> float:
    """A metric value as a float; null (not applicable, no questions) is NaN.

    >>> _num(None), _num(3), _num(0.25)
    (nan, 3.0, 0.25)
    """
    return math.nan if value is None else float(value)


def reader_label(reader: dict) -> str:
    """The reader of a system as one token: ``mc:<model>`` or ``rule``.

    >>> reader_label({"method": "mc", "model": "adapter"}), reader_label({"method": "rule", "model": None})
    ('mc:adapter', 'rule')
    """
    return "rule" if reader.get("method") == "rule" else f"{reader.get('method')}:{reader.get('model')}"


def mean_pm(row: dict, col: str, fmt: str) -> str:
    """``mean ± half-width`` of the 95 % interval from aggregated columns; ``n/a`` for no value.

    With one seed there is no interval and only the mean is printed. A cell computed from fewer
    seeds than the row has (a seed without such questions) says so: ``0.50 (n=1)``.

    >>> mean_pm({"a_mean": 0.5, "a_ci_low": 0.4, "a_ci_high": 0.6}, "a", ".2f")
    '0.50 ± 0.10'
    >>> mean_pm({"a_mean": 0.5, "a_ci_low": float("nan"), "a_ci_high": float("nan")}, "a", ".2f")
    '0.50'
    >>> mean_pm({"a_mean": float("nan"), "a_ci_low": 0.0, "a_ci_high": 0.0}, "a", ".2f")
    'n/a'
    >>> nan = float("nan")
    >>> mean_pm({"a_mean": 0.5, "a_ci_low": nan, "a_ci_high": nan, "a_n": 1, "n_seeds": 2}, "a", ".2f")
    '0.50 (n=1)'
    """
    mean, low, high = (float(row[f"{col}_{k}"]) for k in ("mean", "ci_low", "ci_high"))
    if math.isnan(mean):
        return "n/a"
    n, n_row = row.get(f"{col}_n"), row.get("n_seeds")
    partial = f" (n={int(n)})" if n is not None and n_row is not None and int(n) < int(n_row) else ""
    if math.isnan(low) or math.isnan(high):
        return format(mean, fmt) + partial
    return f"{format(mean, fmt)} ± {format((high - low) / 2, fmt)}{partial}"


def ordered(values: list[str], preferred: list[str] | tuple[str, ...]) -> list[str]:
    """``values`` in ``preferred`` order, unknown ones after them in sorted order.

    >>> ordered(["rag", "zeta", "clerk", "alpha"], ["clerk", "rag"])
    ['clerk', 'rag', 'alpha', 'zeta']
    """
    known = [v for v in preferred if v in values]
    return known + sorted(v for v in set(values) if v not in preferred)


def _markdown(header: list[str], rows: list[list[str]], align: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _seed_note(agg) -> str:
    """The footer under a table: how the cells were computed and over which seeds."""
    seeds = sorted({s for cell in agg["seeds"] for s in str(cell).split(";")}, key=_seed_key)
    n = sorted(set(int(x) for x in agg["n_seeds"]))
    if n == [1]:
        return f"\nCells: the value of the single seed ({seeds[0]}); one seed gives no interval.\n"
    n_text = "/".join(str(x) for x in n)
    return (f"\nCells: mean ± half-width of the 95 % Student-t interval over n = {n_text} seeds "
            f"({', '.join(seeds)}); one value per seed first, then aggregated.\n")


def _seed_key(seed: str) -> tuple:
    return (0, int(seed), "") if str(seed).lstrip("-").isdigit() else (1, 0, str(seed))


def _write_text(path: str | Path, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(text.encode("utf-8"))


def _load_json(path: str | Path, what: str) -> dict:
    if not Path(path).is_file():
        raise UserError(f"{what}: file '{path}' does not exist")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserError(f"{what}: '{path}' is not valid JSON ({err.msg} at line {err.lineno})") from None


def _read_csv(path: str | Path, what: str, columns: tuple[str, ...]):
    import pandas as pd

    if not Path(path).is_file():
        raise UserError(f"{what}: file '{path}' does not exist")
    df = pd.read_csv(path)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UserError(f"{what}: '{path}' lacks column(s) {missing}; has {list(df.columns)}")
    return df


# ---- table 1 / 3: memory systems -------------------------------------------------------------

def system_rows(metrics: dict, path: str = "metrics.json") -> list[dict]:
    """The per-seed rows of one ``clerk evaluate`` metrics.json: one row per system.

    Args:
        metrics: the parsed metrics.json (``clerk.evaluate.SCHEMAS["metrics"]``).
        path: its path, for error messages.

    Returns:
        Dicts with :data:`SYSTEM_KEYS`, ``seed`` and :data:`SYSTEM_METRICS` (NaN where a metric
        does not apply, e.g. op-F1 of a transcript system).

    Raises:
        UserError: the file is not a metrics file of exactly one seed and one split.
    """
    for field in ("input", "systems"):
        if not isinstance(metrics.get(field), dict):
            raise UserError(f"--metrics: '{path}' has no '{field}' object; expected a metrics.json "
                            "written by `clerk evaluate`")
    seeds, splits = metrics["input"].get("seeds") or [], metrics["input"].get("splits") or []
    if len(seeds) != 1 or len(splits) != 1:
        raise UserError(f"--metrics: '{path}' covers seeds {seeds} and splits {splits}; "
                        "expected exactly one seed and one split per file")
    rows = []
    for name, rec in metrics["systems"].items():
        by_type = rec.get("accuracy_by_type") or {}
        op = rec.get("op") or {}
        by_op = op.get("by_type") or {}
        row = {"split": splits[0], "system": name, "reader": reader_label(rec["reader"]),
               "is_ledger": bool(rec["is_ledger"]), "seed": int(seeds[0]),
               "accuracy": _num(rec["accuracy"]),
               **{f"accuracy_{t}": _num(by_type.get(t)) for t in QUESTION_TYPES},
               "stale_error_rate": _num(rec["stale_error_rate"]),
               "stale_error_rate_negated": _num(rec["stale_error_rate_negated"]),
               "op_precision": _num(op.get("precision")), "op_recall": _num(op.get("recall")),
               "op_f1": _num(op.get("f1")),
               **{f"op_{k.lower()}_f1": _num((by_op.get(k) or {}).get("f1")) for k in OP_KINDS},
               "state_f1": _num(rec["state_f1_mean"]), "state_exact_rate": _num(rec["state_exact_rate"]),
               "invalid_op_rate": _num(rec["invalid_op_rate"]),
               "parse_failure_rate": _num(rec["parse_failure_rate"]),
               "read_tokens": _num(rec["read_tokens_mean"]), "write_tokens": _num(rec["write_tokens_mean"]),
               "truncated_rate": _num(rec["truncated_rate"]), "wall_seconds": _num(rec["wall_seconds"]),
               "n_questions": float(rec["n_questions"]),
               "n_personas": _num(metrics["input"].get("n_personas"))}
        rows.append(row)
    return rows


def systems_tables(paths: list[str]):
    """Per-seed long table and the aggregate over seeds for a set of metrics.json files.

    Returns:
        ``(per_seed, aggregated, system_order)``: two DataFrames and the systems in the order the
        first file's config lists them (the paper's row order).

    Raises:
        UserError: no files, a malformed file, or the same (split, system, seed) twice.
    """
    import pandas as pd

    from clerk.report import aggregate_frame

    if not paths:
        raise UserError("--metrics: expected at least one metrics.json file, got none")
    rows, order = [], []
    for path in paths:
        metrics = _load_json(path, "--metrics")
        rows += system_rows(metrics, path)
        order += [s for s in (metrics.get("config") or {}).get("systems", metrics["systems"]) if s not in order]
    per_seed = pd.DataFrame(rows, columns=[*SYSTEM_KEYS, "seed", *SYSTEM_METRICS])
    agg = aggregate_frame(per_seed, list(SYSTEM_KEYS), list(SYSTEM_METRICS))
    return per_seed, agg, order


#: Markdown columns of the answer table: (metric, header, format).
ANSWER_COLUMNS = (("accuracy", "accuracy", ".3f"),
                  *((f"accuracy_{t}", t, ".3f") for t in QUESTION_TYPES),
                  ("stale_error_rate", "stale errors", ".3f"))
#: Markdown columns of the write-quality and cost table.
COST_COLUMNS = (("op_f1", "op-F1", ".3f"), *((f"op_{k.lower()}_f1", k, ".3f") for k in OP_KINDS),
                ("state_f1", "state-F1", ".3f"), ("invalid_op_rate", "invalid ops", ".3f"),
                ("parse_failure_rate", "parse failures", ".3f"),
                ("read_tokens", "read tok./question", ".1f"), ("write_tokens", "write tok./session", ".1f"),
                ("wall_seconds", "wall s", ".1f"))


def systems_markdown(agg, order: list[str], columns=ANSWER_COLUMNS, reader: bool = True) -> str:
    """A compact Markdown table of the aggregated systems table (mean ± half-interval).

    Args:
        agg: the aggregated DataFrame from :func:`systems_tables`.
        order: system row order. columns: (metric, header, format) triples.
        reader: add the reader column.
    """
    records = agg.to_dict("records")
    multi_split = len({r["split"] for r in records}) > 1
    rank = {s: k for k, s in enumerate(ordered([r["system"] for r in records], order))}
    records.sort(key=lambda r: (r["split"], rank[r["system"]], r["reader"]))
    header = (["split"] if multi_split else []) + ["system"] + (["reader"] if reader else [])
    header += [h for _, h, _ in columns]
    rows = []
    for r in records:
        row = ([r["split"]] if multi_split else []) + [r["system"]]
        row += [READER_LABELS.get(r["reader"], r["reader"])] if reader else []
        rows.append(row + [mean_pm(r, m, f) for m, _, f in columns])
    align = [":---"] * (len(header) - len(columns)) + ["---:"] * len(columns)
    return _markdown(header, rows, align) + _seed_note(agg)


# ---- table 4: eviction study -----------------------------------------------------------------

def eviction_tables(paths: list[str], default_capacity: int, default_noise: int):
    """Per-seed rows of ``clerk eviction-study`` CSVs and their aggregate per (policy, capacity, noise).

    The aggregate carries ``setting`` = ``default`` on the rows at the default capacity and noise
    rate (the paper's headline setting) and ``sweep`` elsewhere.

    Raises:
        UserError: no files, a missing column, a duplicate (policy, capacity, noise, seed), or
            no row at the default setting.
    """
    import pandas as pd

    from clerk.report import aggregate_frame

    if not paths:
        raise UserError("--csv: expected at least one eviction-study CSV, got none")
    keys = ("policy", "capacity", "noise_per_turn")
    per_seed = pd.concat([_read_csv(p, "--csv", ("seed", *keys, *EVICTION_METRICS)) for p in paths],
                         ignore_index=True)[["seed", *keys, *EVICTION_METRICS]]
    agg = aggregate_frame(per_seed, list(keys), list(EVICTION_METRICS))
    is_default = (agg["capacity"] == default_capacity) & (agg["noise_per_turn"] == default_noise)
    if not is_default.any():
        raise UserError(f"--default-capacity {default_capacity} / --default-noise {default_noise}: "
                        f"no such setting in the study (capacities {sorted(set(agg['capacity']))}, "
                        f"noise rates {sorted(set(agg['noise_per_turn']))})")
    agg.insert(3, "setting", ["default" if d else "sweep" for d in is_default])
    return per_seed, agg


def eviction_markdown(agg) -> str:
    """Recall hit rate (mean ± half-interval) per policy and noise rate, one column per capacity,
    plus noise occupancy at the default capacity."""
    from clerk.streams import POLICIES

    default = agg[agg["setting"] == "default"].iloc[0]
    capacities = sorted(set(int(c) for c in agg["capacity"]))
    header = ["policy", "noise/turn", *(f"hit rate, C={c}" for c in capacities),
              f"noise occupancy, C={int(default['capacity'])}"]
    rows = []
    for policy in ordered(list(agg["policy"]), list(POLICIES)):
        for noise in sorted(set(int(n) for n in agg["noise_per_turn"])):
            sel = agg[(agg["policy"] == policy) & (agg["noise_per_turn"] == noise)]
            if sel.empty:
                continue
            by_cap = {int(r["capacity"]): r for r in sel.to_dict("records")}
            cells = [mean_pm(by_cap[c], "recall_hit_rate", ".3f") if c in by_cap else "–" for c in capacities]
            at_default = by_cap.get(int(default["capacity"]))
            occ = mean_pm(at_default, "noise_occupancy", ".3f") if at_default else "–"
            rows.append([policy, str(noise), *cells, occ])
    align = [":---", "---:"] + ["---:"] * (len(capacities) + 1)
    return _markdown(header, rows, align) + _seed_note(agg)


# ---- read cost -------------------------------------------------------------------------------

def read_cost_table(paths: list[str]):
    """Aggregate ``clerk read-cost`` CSVs (one per seed, named ``<seed>.csv``) per (view, session).

    Adds ``final`` = True on each view's last session index, the long-horizon end point the paper
    quotes.

    Raises:
        UserError: no files or a missing column.
    """
    import pandas as pd

    from clerk.report import aggregate_frame

    if not paths:
        raise UserError("--csv: expected at least one read-cost CSV, got none")
    frames = []
    for path in paths:
        df = _read_csv(path, "--csv", ("session", "view", "mean_read_tokens", "n"))
        frames.append(df.assign(seed=Path(path).stem))  # the workflow names them results/readcost/{seed}.csv
    per_seed = pd.concat(frames, ignore_index=True)
    agg = aggregate_frame(per_seed, ["view", "session"], ["mean_read_tokens"])
    last = agg.groupby("view")["session"].transform("max")
    agg["final"] = agg["session"] == last
    return agg


# ---- benchmarks (wall time per stage) --------------------------------------------------------

def benchmarks_table(paths: list[str], root: str):
    """Wall time, CPU time and peak memory per workflow stage from Snakemake ``benchmark:`` TSVs.

    The stage is the TSV's folder below ``root`` (``benchmarks/runs/<rule>/<wildcards>.tsv``).

    Returns:
        One row per stage: ``stage, jobs, wall_s_total, wall_s_max, cpu_s_total, max_rss_mb``.

    Raises:
        UserError: no files, a file outside ``root``, or a TSV without the ``s`` column.
    """
    import pandas as pd

    if not paths:
        raise UserError("--tsv: expected at least one benchmark TSV, got none")
    rows = []
    for path in paths:
        rel = Path(path).resolve().relative_to(Path(root).resolve()) if _inside(path, root) else None
        if rel is None or len(rel.parts) < 2:
            raise UserError(f"--tsv: '{path}' is not a '<rule>/<job>.tsv' file under --root '{root}'")
        df = pd.read_csv(path, sep="\t")
        if "s" not in df.columns:
            raise UserError(f"--tsv: '{path}' has no 's' column; expected a Snakemake benchmark file")
        # Snakemake writes "NA"/"-" where it could not measure (very short jobs).
        vals = {c: pd.to_numeric(df[c], errors="coerce") if c in df else pd.Series([math.nan])
                for c in BENCHMARK_COLUMNS}
        rows.append({"stage": rel.parts[0], "job": Path(*rel.parts[1:]).with_suffix("").as_posix(),
                     "wall_s": float(vals["s"].mean()), "cpu_s": float(vals["cpu_time"].mean()),
                     "max_rss_mb": float(vals["max_rss"].max())})
    jobs = pd.DataFrame(rows)
    out = (jobs.groupby("stage", sort=True)
           .agg(jobs=("job", "count"), wall_s_total=("wall_s", "sum"), wall_s_max=("wall_s", "max"),
                cpu_s_total=("cpu_s", "sum"), max_rss_mb=("max_rss_mb", "max"))
           .reset_index())
    total = {"stage": "total", "jobs": int(out["jobs"].sum()), "wall_s_total": float(out["wall_s_total"].sum()),
             "wall_s_max": float(out["wall_s_max"].max()), "cpu_s_total": float(out["cpu_s_total"].sum()),
             "max_rss_mb": float(out["max_rss_mb"].max())}
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


def _inside(path: str, root: str) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def benchmarks_markdown(table, order: list[str] | None = None) -> str:
    """The stage table in pipeline order (``order``; others after, ``total`` last)."""
    records = {r["stage"]: r for r in table.to_dict("records")}
    stages = ordered([s for s in records if s != "total"], order or [])
    header = ["stage", "jobs", "wall s (sum)", "wall s (longest job)", "CPU s (sum)", "peak RSS MB"]
    rows = [[s, str(int(r["jobs"])), *(_fmt(r[c], ".1f") for c in
                                       ("wall_s_total", "wall_s_max", "cpu_s_total", "max_rss_mb"))]
            for s, r in ((s, records[s]) for s in [*stages, "total"])]
    rows[-1][0] = "**total**"
    return _markdown(header, rows, [":---"] + ["---:"] * 5)


def _fmt(value: float, fmt: str) -> str:
    return "n/a" if math.isnan(float(value)) else format(float(value), fmt)


# ---- setup facts -----------------------------------------------------------------------------

def _first_json_line(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        line = fh.readline()
    if not line.strip():
        raise UserError(f"--timelines: '{path}' is empty")
    return json.loads(line)


def _one(values: dict[str, Any], what: str) -> Any:
    """The single value shared by all files (file -> value); differing values are an error."""
    distinct = sorted({json.dumps(v, sort_keys=True) for v in values.values()})
    if len(distinct) > 1:
        raise UserError(f"{what} differs between files: "
                        + "; ".join(f"{p}: {v}" for p, v in sorted(values.items())))
    return json.loads(distinct[0]) if distinct else None


def setup_facts(timelines: list[str], metrics: list[str], train: list[str], streams: list[str]) -> dict:
    """The experimental setup as recorded in the result files themselves (not in config).

    Args:
        timelines: timeline files (JSON lines; the first persona gives split, seed and budget).
        metrics: ``clerk evaluate`` metrics.json files.
        train: ``clerk train`` output folders (``train_config.json``, ``metrics.json``).
        streams: ``clerk streams`` files.

    Returns:
        A JSON-ready dict: ``seeds``, ``n_seeds``, ``budget``, ``data/<split>/{personas,sessions}``,
        ``evaluate/...``, ``train/...`` (settings plus mean final loss and steps over seeds) and
        ``streams/...``. Settings that must agree across seeds raise if they do not.

    Raises:
        UserError: a missing file, or a setting that differs between seeds.
    """
    from clerk.report import CI_LEVEL

    seeds, budgets, data, options = set(), {}, {}, {}
    for path in timelines:
        if not Path(path).is_file():
            raise UserError(f"--timelines: file '{path}' does not exist")
        first = _first_json_line(path)
        with open(path, encoding="utf-8") as fh:
            personas = [json.loads(line) for line in fh if line.strip()]
        # The long-horizon probe reuses the test names: its folder-level split is the file stem.
        split = Path(path).stem
        seeds.add(int(first["seed"]))
        budgets[path] = int(first["budget"])
        counts = sorted({len(q["options"]) for p in personas for s in p["sessions"] for q in s.get("questions") or []})
        if counts:
            options[path] = counts
        data.setdefault(split, {}).setdefault("personas", {})[path] = len(personas)
        data[split].setdefault("sessions", {})[path] = max(len(p["sessions"]) for p in personas)
    n_options = _one(options, "answer options per question") if options else None
    if n_options is not None and len(n_options) != 1:
        raise UserError(f"--timelines: questions carry {n_options} options; expected one count")
    facts: dict[str, Any] = {"budget": _one(budgets, "ledger budget") if budgets else None,
                             "options": n_options[0] if n_options else None,
                             "chance": 1 / n_options[0] if n_options else None,
                             "ci_level": CI_LEVEL,
                             "data": {s: {k: _one(v, f"{s} {k}") for k, v in sorted(d.items())}
                                      for s, d in sorted(data.items())}}
    eval_cfg, systems, questions, models = {}, {}, {}, {}
    for path in metrics:
        m = _load_json(path, "--metrics")
        seeds.update(int(s) for s in m["input"]["seeds"])
        cfg = {k: v for k, v in m["config"].items() if k not in ("model", "adapter")}
        eval_cfg[path] = cfg
        models[path] = Path(str(m["config"].get("model"))).name
        systems[path] = {n: {"reader": reader_label(r["reader"]), "version": r["version"]}
                         for n, r in m["systems"].items()}
        split = m["input"]["splits"][0]
        first = next(iter(m["systems"].values()), {})
        questions.setdefault(split, {})[path] = first.get("n_questions", 0)
    if metrics:
        facts["model"] = _one(models, "base model")
        facts["evaluate"] = _one(eval_cfg, "evaluation config")
        facts["systems"] = _one(systems, "systems and readers")
        for split, per_file in sorted(questions.items()):
            facts["data"].setdefault(split, {})["questions_per_seed_mean"] = (
                sum(per_file.values()) / len(per_file))
    train_cfg, losses, steps, secs, params = {}, [], [], [], {}
    for folder in train:
        cfg = _load_json(Path(folder) / "train_config.json", "--train")
        res = _load_json(Path(folder) / "metrics.json", "--train")
        seeds.add(int(cfg["config"]["seed"]))
        keep = ("lr", "epochs", "max_steps", "batch_size", "grad_accum", "max_length", "lora_r",
                "lora_alpha", "lora_dropout", "lora_targets", "modules_to_save", "warmup", "scheduler")
        train_cfg[folder] = {k: cfg["config"].get(k) for k in keep}
        params[folder] = {"trainable_params": cfg.get("trainable_params"), "device": cfg.get("device"),
                          "bf16": cfg.get("bf16")}
        losses.append(float(res["train_loss"]))
        steps.append(float(res["steps"]))
        secs.append(_train_seconds(Path(folder)))
    if train:
        facts["train"] = {**_one(train_cfg, "training config"), **_one(params, "training hardware"),
                          "steps_mean": sum(steps) / len(steps), "train_loss_mean": sum(losses) / len(losses),
                          "seconds_mean": sum(secs) / len(secs)}
    stream_cfg = {}
    for path in streams:
        s = _load_json(path, "--streams")
        seeds.add(int(s["seed"]))
        stream_cfg[path] = s["config"]
    if streams:
        facts["streams"] = _one(stream_cfg, "stream config")
    ordered_seeds = sorted(seeds)
    return {"seeds": ordered_seeds, "n_seeds": len(ordered_seeds), **facts}


def _train_seconds(folder: Path) -> float:
    """Training wall seconds: the last ``seconds`` of train_log.csv (it survives resumption)."""
    log = folder / "train_log.csv"
    if not log.is_file():
        return math.nan
    with open(log, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return float(rows[-1]["seconds"]) if rows else math.nan


def setup_markdown(facts: dict) -> str:
    """The setup facts as a two-column Markdown table for the paper."""
    def show(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if math.isnan(v) else (str(int(v)) if v.is_integer() else f"{v:.4g}")
        if isinstance(v, (list, tuple)):
            return ", ".join(str(x) for x in v) or "none"
        return "none" if v is None else str(v)

    rows = [["seeds", show(facts["seeds"])], ["base model", show(facts.get("model"))],
            ["ledger budget B (slots)", show(facts.get("budget"))],
            ["answer options per question", show(facts.get("options"))],
            ["interval level", show(facts.get("ci_level"))]]
    for split, d in facts.get("data", {}).items():
        rows.append([f"{split}: personas × sessions", f"{show(d.get('personas'))} × {show(d.get('sessions'))}"])
        if "questions_per_seed_mean" in d:
            rows.append([f"{split}: questions per seed", show(d["questions_per_seed_mean"])])
    for name, info in (facts.get("systems") or {}).items():
        rows.append([f"system {name}", f"reader {READER_LABELS.get(info['reader'], info['reader'])}, "
                                       f"version {info['version']}"])
    for key, v in (facts.get("evaluate") or {}).items():
        if key != "systems":
            rows.append([f"evaluate.{key}", show(v)])
    for key, v in (facts.get("train") or {}).items():
        rows.append([f"train.{key}", show(v)])
    for key, v in (facts.get("streams") or {}).items():
        rows.append([f"streams.{key}", show(v)])
    return _markdown(["setting", "value"], rows, [":---", ":---"])


# ---- figures ---------------------------------------------------------------------------------

FIGURES = ("read-cost", "accuracy", "eviction", "loss", "state-f1")


def _new_axes(width: float = 4.5, height: float = 3.0):
    import matplotlib.pyplot as plt

    from clerk.report import set_plot_style

    set_plot_style()
    return plt.subplots(figsize=(width, height))


def _integer_x(ax) -> None:
    """Integer ticks on the x axis (session indices, steps)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _finish(fig, out: str) -> tuple[Path, Path]:
    import matplotlib.pyplot as plt

    from clerk.report import save_figure

    fig.tight_layout()
    paths = save_figure(fig, out)
    plt.close(fig)
    return paths


def figure_read_cost(table_csv: str, out: str) -> tuple[Path, Path]:
    """(a) Read tokens per question against session index, one line per view (mean over seeds).

    Args:
        table_csv: the aggregated read-cost table (:func:`read_cost_table`).
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import seaborn as sns

    df = _read_csv(table_csv, "--inputs", ("view", "session", "mean_read_tokens_mean"))
    views = ordered(list(df["view"]), list(VIEW_LABELS))
    df = df.assign(label=[VIEW_LABELS.get(v, v) for v in df["view"]])
    fig, ax = _new_axes()
    sns.lineplot(data=df, x="session", y="mean_read_tokens_mean", hue="label", marker="o",
                 hue_order=[VIEW_LABELS.get(v, v) for v in views], errorbar=None, ax=ax, markersize=3,
                 palette=sns.color_palette("colorblind", len(views)))
    _integer_x(ax)
    ax.set(xlabel="session index", ylabel="read tokens per question", title="Read cost over time")
    ax.legend(title=None, fontsize="small")
    return _finish(fig, out)


def figure_accuracy(seeds_csv: str, out: str, split: str = "test") -> tuple[Path, Path]:
    """(b) Accuracy overall and per question type per system, mean with 95 % t-interval bars.

    Args:
        seeds_csv: a per-seed systems table (``table1_seeds.csv``).
        out: output path without extension. split: the split to plot.

    Returns:
        The PDF and PNG paths.

    Raises:
        UserError: no rows of ``split`` or a missing column.
    """
    import numpy as np
    import seaborn as sns

    from clerk.report import aggregate

    cols = ("accuracy", *(f"accuracy_{t}" for t in QUESTION_TYPES))
    df = _read_csv(seeds_csv, "--inputs", ("split", "system", *cols))
    df = df[df["split"] == split]
    if df.empty:
        raise UserError(f"--split: no rows of split '{split}' in '{seeds_csv}'")
    systems = ordered(list(df["system"]), SYSTEM_ORDER)
    labels = ["overall", *QUESTION_TYPES]
    fig, ax = _new_axes(6.5, 3.2)
    width = 0.8 / len(systems)
    palette = sns.color_palette("colorblind", len(systems))
    for k, system in enumerate(systems):
        sub = df[df["system"] == system]
        stats = [aggregate(sub[c].tolist()) for c in cols]
        means = np.array([s["mean"] for s in stats])
        err = np.array([[s["mean"] - s["ci_low"] for s in stats], [s["ci_high"] - s["mean"] for s in stats]])
        x = np.arange(len(cols)) - 0.4 + width * (k + 0.5)
        ax.bar(x, np.nan_to_num(means), width, label=system, color=palette[k])
        ax.errorbar(x, means, yerr=np.nan_to_num(err), fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
    ax.set_xticks(np.arange(len(cols)), labels)
    ax.set(ylabel="accuracy", ylim=(0, 1.05), title=f"Accuracy by question type ({split})")
    ax.axhline(0.1, color="grey", linestyle=":", linewidth=0.8, label="chance")
    ax.legend(fontsize="x-small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    return _finish(fig, out)


def figure_eviction(table_csv: str, out: str, noise: int | None = None) -> tuple[Path, Path]:
    """(c) Recall hit rate against capacity per policy at one noise rate, with interval bars.

    Args:
        table_csv: the aggregated eviction table (``table4.csv``).
        out: output path without extension.
        noise: noise facts per turn to plot; None = the rows marked ``setting = default``.

    Returns:
        The PDF and PNG paths.

    Raises:
        UserError: no rows at that noise rate or a missing column.
    """
    import seaborn as sns

    from clerk.streams import POLICIES

    df = _read_csv(table_csv, "--inputs", ("policy", "capacity", "noise_per_turn", "setting",
                                            "recall_hit_rate_mean", "recall_hit_rate_ci_low",
                                            "recall_hit_rate_ci_high"))
    if noise is None:
        noise = int(df[df["setting"] == "default"]["noise_per_turn"].iloc[0])
    df = df[df["noise_per_turn"] == noise].sort_values(["policy", "capacity"])
    if df.empty:
        raise UserError(f"--noise: no rows with noise_per_turn {noise} in '{table_csv}'")
    policies = ordered(list(df["policy"]), list(POLICIES))
    palette = dict(zip(policies, sns.color_palette("colorblind", len(policies))))
    fig, ax = _new_axes()
    for policy in policies:
        sub = df[df["policy"] == policy]
        low = (sub["recall_hit_rate_mean"] - sub["recall_hit_rate_ci_low"]).fillna(0)
        high = (sub["recall_hit_rate_ci_high"] - sub["recall_hit_rate_mean"]).fillna(0)
        ax.errorbar(sub["capacity"], sub["recall_hit_rate_mean"], yerr=[low, high], marker="o",
                    markersize=3, capsize=2, linewidth=1, label=policy, color=palette[policy])
    ax.set_xticks(sorted(set(int(c) for c in df["capacity"])))
    ax.set(xlabel="capacity (slots)", ylabel="recall hit rate", ylim=(-0.02, 1.02),
           title=f"Eviction policies at {noise} noise facts/turn")
    ax.legend(fontsize="x-small", ncol=2)
    return _finish(fig, out)


def _train_log(folder_or_csv: str) -> tuple[str, Any]:
    """(seed label, train_log DataFrame) of a ``clerk train`` folder or a train_log.csv path."""
    path = Path(folder_or_csv)
    folder = path if path.is_dir() else path.parent
    log = path / "train_log.csv" if path.is_dir() else path
    df = _read_csv(log, "--inputs", ("step", "loss"))
    cfg = folder / "train_config.json"
    seed = str(json.loads(cfg.read_text(encoding="utf-8"))["config"]["seed"]) if cfg.is_file() else folder.name
    return seed, df


def figure_loss(inputs: list[str], out: str) -> tuple[Path, Path]:
    """(d) Training loss against optimizer step, one line per seed.

    Args:
        inputs: ``clerk train`` folders (``train_log.csv`` inside; the seed from
            ``train_config.json``, else the folder name) or train_log.csv files.
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import pandas as pd
    import seaborn as sns

    logs = sorted((_train_log(p) for p in inputs), key=lambda sd: _seed_key(sd[0]))
    df = pd.concat([d.assign(seed=s) for s, d in logs], ignore_index=True)
    fig, ax = _new_axes()
    sns.lineplot(data=df, x="step", y="loss", hue="seed", hue_order=[s for s, _ in logs],
                 errorbar=None, ax=ax, linewidth=1)
    ax.set(xlabel="optimizer step", ylabel="training loss (assistant tokens)", title="LoRA SFT loss")
    ax.legend(title="seed", fontsize="small")
    return _finish(fig, out)


def state_f1_by_session(paths: list[str]):
    """Ledger-state F1 per (system, session): per seed the mean over personas, then over seeds.

    Returns:
        The aggregated DataFrame (``system, session, n_seeds, seeds, state_f1_*``).
    """
    import pandas as pd

    from clerk.report import aggregate_frame

    rows = []
    for path in paths:
        if not Path(path).is_file():
            raise UserError(f"--inputs: file '{path}' does not exist")
        with open(path, encoding="utf-8") as fh:
            rows += [{k: r[k] for k in ("system", "seed", "session", "state_f1")}
                     for r in map(json.loads, fh) if r]
    if not rows:
        raise UserError(f"--inputs: no ledger rows in {paths}")
    per_persona = pd.DataFrame(rows)
    per_seed = per_persona.groupby(["system", "seed", "session"], as_index=False)["state_f1"].mean()
    return aggregate_frame(per_seed, ["system", "session"], ["state_f1"])


def figure_state_f1(inputs: list[str], out: str) -> tuple[Path, Path]:
    """(e) Ledger-state F1 after each session per ledger system, mean with a 95 % t-interval band.

    Args:
        inputs: ``ledgers.jsonl`` files of ``clerk evaluate`` (one per seed).
        out: output path without extension.

    Returns:
        The PDF and PNG paths.
    """
    import seaborn as sns

    agg = state_f1_by_session(inputs)
    systems = ordered(list(agg["system"]), SYSTEM_ORDER)
    palette = dict(zip(systems, sns.color_palette("colorblind", len(systems))))
    fig, ax = _new_axes()
    for system in systems:
        sub = agg[agg["system"] == system].sort_values("session")
        ax.plot(sub["session"], sub["state_f1_mean"], marker="o", markersize=3, linewidth=1,
                label=system, color=palette[system])
        ax.fill_between(sub["session"], sub["state_f1_ci_low"], sub["state_f1_ci_high"],
                        color=palette[system], alpha=0.2, linewidth=0)
    _integer_x(ax)
    ax.set(xlabel="session index", ylabel="ledger-state F1 vs gold", ylim=(-0.02, 1.02),
           title="Ledger state over sessions")
    ax.legend(fontsize="small")
    return _finish(fig, out)


# ---- CLI -------------------------------------------------------------------------------------

def _systems_main(args) -> None:
    from clerk.report import write_csv

    per_seed, agg, order = systems_tables(args.metrics)
    write_csv(agg, args.out, sort_by=list(SYSTEM_KEYS))
    write_csv(per_seed, args.seeds_out or _sibling(args.out, "_seeds"), sort_by=[*SYSTEM_KEYS, "seed"])
    if args.markdown:
        _write_text(args.markdown, systems_markdown(agg, order, ANSWER_COLUMNS, reader=True))
    if args.markdown_cost:
        _write_text(args.markdown_cost, systems_markdown(agg, order, COST_COLUMNS, reader=False))


def _sibling(path: str, suffix: str) -> str:
    """``results/table1.csv`` -> ``results/table1_seeds.csv``.

    >>> _sibling("results/table1.csv", "_seeds")
    'results/table1_seeds.csv'
    """
    p = Path(path)
    return str(p.with_name(p.stem + suffix + p.suffix))


def _eviction_main(args) -> None:
    from clerk.report import write_csv

    per_seed, agg = eviction_tables(args.csv, args.default_capacity, args.default_noise)
    write_csv(agg, args.out, sort_by=["policy", "capacity", "noise_per_turn"])
    write_csv(per_seed, args.seeds_out or _sibling(args.out, "_seeds"),
              sort_by=["policy", "capacity", "noise_per_turn", "seed"])
    if args.markdown:
        _write_text(args.markdown, eviction_markdown(agg))


def _read_cost_main(args) -> None:
    from clerk.report import write_csv

    write_csv(read_cost_table(args.csv), args.out, sort_by=["view", "session"])


def _benchmarks_main(args) -> None:
    from clerk.report import write_csv

    table = benchmarks_table(args.tsv, args.root)
    write_csv(table, args.out, float_format="%.2f", sort_by=["stage"])
    if args.markdown:
        _write_text(args.markdown, benchmarks_markdown(table, args.order))


def _setup_main(args) -> None:
    from clerk.provenance.files import write_json

    facts = setup_facts(args.timelines, args.metrics, args.train, args.streams)
    write_json(facts, args.out)
    if args.markdown:
        _write_text(args.markdown, setup_markdown(facts))


def _locomo_main(args) -> None:
    _write_text(args.out, LOCOMO_NOT_RUN.format(path=f"`{args.path}`" if args.path else "empty",
                                                download=args.download))


def _figure_main(args) -> None:
    # kind -> (takes a single table file, render(inputs, out, args))
    kinds: dict[str, tuple[bool, Callable]] = {
        "read-cost": (True, lambda i, o, a: figure_read_cost(i[0], o)),
        "accuracy": (True, lambda i, o, a: figure_accuracy(i[0], o, a.split)),
        "eviction": (True, lambda i, o, a: figure_eviction(i[0], o, a.noise)),
        "loss": (False, lambda i, o, a: figure_loss(i, o)),
        "state-f1": (False, lambda i, o, a: figure_state_f1(i, o)),
    }
    single, render = kinds[args.kind]
    if single and len(args.inputs) != 1:
        raise UserError(f"--inputs: figure '{args.kind}' takes one table file, got {len(args.inputs)}")
    render(args.inputs, args.out, args)


def register_cli(sub) -> None:
    """Add the verbs ``table-systems``, ``table-eviction``, ``table-read-cost``,
    ``table-benchmarks``, ``table-setup``, ``locomo-status`` and ``figure``."""
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

    p = sub.add_parser("table-read-cost", help="read tokens per question by session and view, over seeds",
                       description="Aggregate `clerk read-cost` CSVs (named <seed>.csv) per (view, session).")
    p.add_argument("--csv", nargs="+", required=True, help="per-seed read-cost CSVs, file name = seed")
    p.add_argument("--out", required=True, help="aggregated CSV to write")
    p.set_defaults(func=_read_cost_main)

    p = sub.add_parser("table-benchmarks", help="wall time, CPU time and memory per workflow stage",
                       description="Collect Snakemake benchmark TSVs (ROOT/<rule>/<job>.tsv) into one row per stage.")
    p.add_argument("--tsv", nargs="+", required=True, help="benchmark TSV files")
    p.add_argument("--root", default="benchmarks/runs", help="folder holding <rule>/ folders (default: benchmarks/runs)")
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
    p.add_argument("--streams", nargs="*", default=[], help="`clerk streams` JSON files")
    p.add_argument("--out", required=True, help="JSON to write")
    p.add_argument("--markdown", default=None, help="Markdown table to write")
    p.set_defaults(func=_setup_main)

    p = sub.add_parser("locomo-status", help="the paper paragraph stating that LoCoMo was not run",
                       description="Write the Markdown paragraph the paper includes when no LoCoMo data is configured.")
    p.add_argument("--path", default="", help="configured locomo.path (empty = none)")
    p.add_argument("--download", choices=("true", "false"), default="false",
                   help="configured locomo.download (default: false)")
    p.add_argument("--out", required=True, help="Markdown file to write")
    p.set_defaults(func=_locomo_main)

    p = sub.add_parser("figure", help="one paper figure as PDF + PNG (deterministic bytes)",
                       description="read-cost: results/read_cost.csv; accuracy: a table*_seeds.csv; eviction: "
                       "results/table4.csv; loss: `clerk train` folders; state-f1: ledgers.jsonl files.")
    p.add_argument("kind", choices=FIGURES, help="which figure")
    p.add_argument("--inputs", nargs="+", required=True, help="input file(s) or folder(s), see the description")
    p.add_argument("--out", required=True, help="output path without extension (.pdf and .png are written)")
    p.add_argument("--split", default="test", help="accuracy: split to plot (default: test)")
    p.add_argument("--noise", type=int, default=None,
                   help="eviction: noise facts per turn to plot (default: the table's default setting)")
    p.set_defaults(func=_figure_main)
