"""Synthetic evaluation runner (``clerk evaluate``) and read-cost probe (``clerk read-cost``).

SPEC §6. Every persona's sessions are replayed in order for every memory system (registry keys
from ``clerk.memory``). At each session index, for each system: the session's questions are
answered from memory as it stands *before* the session (session 0 has none), then the session is
consolidated, batched across personas. Three files are written to ``--out``:

* ``predictions.jsonl``: one row per question x system (:data:`SCHEMAS` ``"predictions"``);
* ``ledgers.jsonl``: one row per session x persona x ledger system, write-side metrics against
  the gold program and gold ``ledger_after`` (:data:`SCHEMAS` ``"ledgers"``);
* ``metrics.json``: the per-seed summary per system, with the config, system versions and the
  input's sha256 (:data:`SCHEMAS` ``"metrics"`` and ``"metrics.system"``), written last.

Definitions: *stale error* = the chosen option is a value the fact held earlier
(``generator.questions.stale_answers``): on a ``superseded`` question an earlier value, on a ``negated``
question a value of the retracted fact. ``stale_error_rate`` is over superseded questions (SPEC
§6); ``stale_error_rate_negated`` over negated ones. *Invalid-op rate* = invalid ops / predicted ops; *parse-failure rate* =
writes whose text held no JSON list / writes. *Read tokens* = tokens of the view text under the
reader's tokenizer (the answer prompt's frame and question are the same for every system and
not counted). *Write tokens* = generated tokens per session (0 for non-model writers).

    clerk evaluate --timelines results/data/test_137.jsonl --model resources/models/smollm2-135m \\
        --adapter results/train/adapter_137 --systems clerk oracle full window rag add-only --out results/eval/test_137
    clerk evaluate --timelines T.jsonl --model M --systems oracle --reader rule --out /tmp/ev   # exact, no model calls
    clerk read-cost --timelines long.jsonl --tokenizer M --out results/read_cost.csv
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

from clerk.errors import UserError
from clerk.ledger import OP_KINDS
from clerk.memory.base import DTYPES
from clerk.memory import MEMORY_REGISTRY, EvalConfig, MemorySystem, Registry, Runtime
from clerk.metrics import micro_op_scores, op_scores, state_f1

QUESTION_TYPES = ("unknown", "current", "superseded", "negated", "temporal")
METRICS_SCHEMA_ID = "clerk.evaluate.metrics/1"

_N = type(None)
_OP_FIELDS = ("tp", "fp", "fn", "precision", "recall", "f1")


def _op_columns() -> dict[str, tuple]:
    cols: dict[str, tuple] = {}
    for prefix in ["op"] + [f"op_{kind}" for kind in OP_KINDS]:
        for name in _OP_FIELDS:
            cols[f"{prefix}_{name}"] = (int,) if name in ("tp", "fp", "fn") else (float,)
    return cols


#: Field -> allowed exact types, per record kind. Validated on write and in the tests.
SCHEMAS: dict[str, dict[str, tuple]] = {
    "predictions": {
        "system": (str,),  # registry key
        "persona": (str,),  # timeline "name"
        "split": (str,),
        "seed": (int,),  # generator seed of the timeline
        "session": (int,),  # session index the question is asked in
        "q": (int,),  # position of the question within the session
        "type": (str,),  # question type (QUESTION_TYPES)
        "pred": (str,),  # predicate asked about
        "chosen": (int,),  # chosen option index; -1 = the rule reader's answer is not an option
        "correct_index": (int,),
        "correct": (bool,),
        "stale_error": (bool,),  # chose a stale value (superseded or negated question)
        "read_tokens": (int,),  # tokens of the view text
        "truncated": (bool,),  # the view was cut to fit its budget
        "reader": (str,),  # "base" | "adapter" (MC log-likelihood) | "rule"
    },
    "ledgers": {
        "system": (str,),
        "persona": (str,),
        "split": (str,),
        "seed": (int,),
        "session": (int,),
        "n_ops": (int,),  # ops in the parsed program
        "n_invalid": (int,),  # ops the lenient reducer skipped
        "parse_failure": (bool,),  # model text held no JSON list
        "write_tokens": (int,),
        "seconds": (float,),  # write wall time (batch time / personas in the batch)
        "state_f1": (float,),  # (s,p,o,v) F1 of the ledger after the write vs gold ledger_after
        "state_exact": (bool,),  # the ledger equals gold ledger_after exactly (all fields)
        **_op_columns(),  # op_{tp..f1} overall and op_<KIND>_{tp..f1} per op type
    },
    "metrics": {
        "schema": (str,),
        "input": (dict,),  # {"path", "sha256", "n_personas", "splits", "seeds"}
        "config": (dict,),  # the CLI config (systems, model, adapter, EvalConfig fields)
        "versions": (dict,),  # system name -> version, plus "clerk"
        "systems": (dict,),  # system name -> "metrics.system" record
        "wall_seconds": (float,),
    },
    "metrics.system": {
        "version": (str,),
        "is_ledger": (bool,),
        "reader": (dict,),  # {"method": "mc" | "rule", "model": "base" | "adapter" | None}
        "n_questions": (int,),
        "accuracy": (float, _N),  # None when there were no questions
        "accuracy_by_type": (dict,),  # QUESTION_TYPES (+ any other seen) -> float | None
        "n_by_type": (dict,),
        "stale_error_rate": (float, _N),  # over superseded questions
        "n_superseded": (int,),
        "stale_error_rate_negated": (float, _N),  # over negated questions
        "read_tokens_mean": (float, _N),
        "truncated_rate": (float, _N),
        "n_writes": (int,),  # persona-sessions consolidated
        "write_tokens_mean": (float, _N),
        "wall_seconds": (float,),  # reading + writing for this system
        # ledger systems only (None otherwise):
        "op": (dict, _N),  # micro op scores: tp/fp/fn/precision/recall/f1/n_invalid/by_type
        "state_f1_mean": (float, _N),
        "state_exact_rate": (float, _N),
        "invalid_op_rate": (float, _N),
        "parse_failure_rate": (float, _N),
        "n_ops": (int, _N),
    },
}


def validate_record(kind: str, record: dict, schemas: dict[str, dict[str, tuple]] | None = None) -> None:
    """Raise ValueError unless ``record`` has exactly the fields of ``schemas[kind]`` with their types.

    ``schemas`` defaults to :data:`SCHEMAS`; other runners (``clerk.locomo``) pass their own.

    >>> validate_record("metrics", {"schema": "x"})
    Traceback (most recent call last):
    ...
    ValueError: metrics record: missing field(s) ['config', 'input', 'systems', 'versions', 'wall_seconds']
    """
    schema = (SCHEMAS if schemas is None else schemas)[kind]
    missing = sorted(set(schema) - set(record))
    extra = sorted(set(record) - set(schema))
    if missing:
        raise ValueError(f"{kind} record: missing field(s) {missing}")
    if extra:
        raise ValueError(f"{kind} record: unexpected field(s) {extra}")
    for name, types in schema.items():
        if type(record[name]) not in types:
            allowed = " | ".join(t.__name__ for t in types)
            raise ValueError(f"{kind} record: field {name!r} must be {allowed}, got {type(record[name]).__name__}")


# --------------------------------------------------------------------------- helpers


def _mean(values: list[float]) -> float | None:
    """Mean, or None for no values.

    >>> _mean([1, 2]), _mean([])
    (1.5, None)
    """
    return math.fsum(values) / len(values) if values else None


def is_stale_error(timeline: dict, index: int, question: dict, chosen: int) -> bool:
    """The chosen option is a stale value (``generator.questions.stale_answers``): an earlier value of a
    superseded fact, or any value of a retracted fact answered as if still true."""
    from clerk.generator.questions import stale_answers

    if not 0 <= chosen < len(question["options"]):
        return False
    return question["options"][chosen] in stale_answers(timeline, index, question)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (recorded in metrics.json so results trace to their input)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_systems(names: list[str], runtime: Runtime, registry: Registry = MEMORY_REGISTRY) -> dict[str, MemorySystem]:
    """Instantiate systems by registry key, checking up front that their needs are met.

    Raises:
        UserError: an unknown or repeated name, the rule reader with a non-ledger system, or a
            system that needs the adapter when none was given.
    """
    if not names:
        raise UserError("--systems must name at least one memory system")
    out: dict[str, MemorySystem] = {}
    for name in names:
        if name in out:
            raise UserError(f"--systems lists {name!r} twice")
        try:
            out[name] = registry.get(name)(runtime)
        except KeyError as err:
            raise UserError(f"--systems: {err.args[0]}") from None
    for name, system in out.items():
        if runtime.config.reader == "rule" and not system.is_ledger:
            raise UserError(f"--reader rule needs a ledger system, got {name!r} (use --reader mc)")
        needs_adapter = getattr(system, "writer_kind", None) == "adapter" or (
            runtime.config.reader == "mc" and system.reader_model() == "adapter")
        if needs_adapter and runtime.adapter_dir is None:
            raise UserError(f"--adapter is required for system {name!r} (it reads or writes with the trained adapter)")
    return out


def mc_choose(model: Any, tokenizer: Any, questions: list[dict], views: list[Any]) -> list[int]:
    """The MC reader's chosen option per question; questions whose views are the same text share
    one encoded prompt prefix (``reader.mc_choices``), so a long view is encoded once.

    Args:
        model, tokenizer: the reader.
        questions: question dicts with ``question`` and ``options``.
        views: one :class:`~clerk.memory.View` per question.

    Returns:
        One chosen option index per question, in order.
    """
    from clerk.memory.reader import mc_choices

    chosen = [-1] * len(questions)
    groups: dict[str, list[int]] = {}
    for k, view in enumerate(views):
        groups.setdefault(view.text, []).append(k)
    for text, ks in groups.items():
        for k, c in zip(ks, mc_choices(model, tokenizer, text, [questions[k] for k in ks])):
            chosen[k] = c
    return chosen


def replay(
    timelines: list[dict],
    systems: dict[str, MemorySystem],
    answer: Callable[..., None],
    wrote: Callable[..., None] | None = None,
    progress: bool = True,
) -> dict[str, float]:
    """Drive every system through every persona's sessions in order; returns wall seconds per system.

    Args:
        timelines: personas (timeline dicts).
        systems: name -> system instance.
        answer: ``answer(name, system, timeline, session, state, views)`` for each persona-session
            with questions; ``views`` is one :class:`~clerk.memory.View` per question, built after
            ``on_questions``.
        wrote: ``wrote(name, system, timeline, session, state_before, result)`` after each write.
        progress: show a tqdm bar on stderr.

    Returns:
        Wall seconds spent per system (reading + writing).
    """
    from tqdm.auto import tqdm

    states = {name: [system.init_state(tl) for tl in timelines] for name, system in systems.items()}
    seconds = {name: 0.0 for name in systems}
    n_index = max((len(tl["sessions"]) for tl in timelines), default=0)
    for index in tqdm(range(n_index), desc="sessions", unit="session", file=sys.stderr, disable=not progress):
        active = [j for j, tl in enumerate(timelines) if index < len(tl["sessions"])]
        for name, system in systems.items():
            start = time.perf_counter()
            for j in active:
                tl, session = timelines[j], timelines[j]["sessions"][index]
                assert session["index"] == index, f"{tl['name']}: session {index} has index {session['index']}"
                questions = session.get("questions") or []
                if not questions:
                    continue
                states[name][j] = system.on_questions(states[name][j], tl, session)
                views = [system.view(states[name][j], tl, session, q) for q in questions]
                answer(name, system, tl, session, states[name][j], views)
            before = [states[name][j] for j in active]
            results = system.write(before, [timelines[j] for j in active], [timelines[j]["sessions"][index] for j in active])
            assert len(results) == len(active)
            for j, state, result in zip(active, before, results):
                if wrote is not None:
                    wrote(name, system, timelines[j], timelines[j]["sessions"][index], state, result)
                states[name][j] = result.state
            seconds[name] += time.perf_counter() - start
    return seconds


# --------------------------------------------------------------------------- evaluation


def _ledger_row(name: str, tl: dict, session: dict, before: list, result: Any) -> dict:
    """The ``ledgers`` record of one write; the predicted program resolves on the system's own
    ledger, the gold one on the gold ledger (ops compare as facts)."""
    scores = op_scores(before, result.program, session["gold_ops"], session["index"],
                       gold_ledger_before=session["ledger_before"])
    row = {
        "system": name, "persona": tl["name"], "split": tl["split"], "seed": tl["seed"], "session": session["index"],
        "n_ops": len(result.program), "n_invalid": result.n_invalid, "parse_failure": bool(result.parse_failed),
        "write_tokens": int(result.write_tokens), "seconds": float(result.seconds),
        "state_f1": float(state_f1(result.state, session["ledger_after"])),
        "state_exact": result.state == session["ledger_after"],
    }
    for key in _OP_FIELDS:
        row[f"op_{key}"] = scores[key]
    for kind in OP_KINDS:
        for key in _OP_FIELDS:
            row[f"op_{kind}_{key}"] = scores["by_type"][kind][key]
    row["_scores"] = scores  # kept in memory for micro-averaging; dropped before writing
    return row


def evaluate(
    timelines: list[dict],
    system_names: list[str],
    runtime: Runtime,
    registry: Registry = MEMORY_REGISTRY,
    progress: bool = True,
) -> tuple[list[dict], list[dict], dict[str, dict]]:
    """Run the evaluation in memory.

    Args:
        timelines: personas to replay (one split/seed file).
        system_names: registry keys.
        runtime: config, models and tokenizer.
        registry: where the names are looked up (tests pass a local one).
        progress: show progress bars.

    Returns:
        (prediction rows, ledger rows, per-system summary) following :data:`SCHEMAS`.

    Raises:
        UserError: see :func:`make_systems`.
    """
    from clerk.memory.reader import rule_choice

    systems = make_systems(system_names, runtime, registry)
    cfg = runtime.config
    # Load the tokenizer and every model up front so wall times and per-write seconds exclude loading.
    runtime.tokenizer  # noqa: B018
    for system in systems.values():
        if cfg.reader == "mc":
            runtime.model(system.reader_model())
        if getattr(system, "writer_kind", None) is not None:
            runtime.model(system.writer_kind)
    predictions: list[dict] = []
    ledger_rows: list[dict] = []

    def answer(name, system, tl, session, state, views):
        questions = session["questions"]
        reader = "rule" if cfg.reader == "rule" else system.reader_model()
        if cfg.reader == "rule":
            chosen = [rule_choice(system.ledger(state), tl["name"], q) for q in questions]
        else:
            chosen = mc_choose(*runtime.model(reader), questions, views)
        for k, (q, view, c) in enumerate(zip(questions, views, chosen)):
            predictions.append({
                "system": name, "persona": tl["name"], "split": tl["split"], "seed": tl["seed"],
                "session": session["index"], "q": k, "type": q["type"], "pred": q["pred"], "chosen": c,
                "correct_index": q["correct"], "correct": c == q["correct"],
                "stale_error": is_stale_error(tl, session["index"], q, c),
                "read_tokens": runtime.count_tokens(view.text), "truncated": bool(view.truncated), "reader": reader,
            })

    def wrote(name, system, tl, session, before, result):
        if system.is_ledger:
            ledger_rows.append(_ledger_row(name, tl, session, system.ledger(before), result))
        else:
            write_tokens[name].append(result.write_tokens)

    write_tokens: dict[str, list[int]] = {name: [] for name in systems}
    seconds = replay(timelines, systems, answer, wrote, progress)
    summary = {name: _summarize(name, system, predictions, ledger_rows, write_tokens[name], seconds[name], cfg)
               for name, system in systems.items()}
    for row in ledger_rows:
        row.pop("_scores")
    return predictions, ledger_rows, summary


def _summarize(name: str, system: MemorySystem, predictions: list[dict], ledger_rows: list[dict],
               write_tokens: list[int], seconds: float, cfg: EvalConfig) -> dict:
    """The ``metrics.system`` record of one system."""
    rows = [r for r in predictions if r["system"] == name]
    writes = [r for r in ledger_rows if r["system"] == name]
    types = list(QUESTION_TYPES) + sorted({r["type"] for r in rows} - set(QUESTION_TYPES))
    superseded = [r for r in rows if r["type"] == "superseded"]
    out = {
        "version": system.version,
        "is_ledger": system.is_ledger,
        "reader": {"method": cfg.reader, "model": None if cfg.reader == "rule" else system.reader_model()},
        "n_questions": len(rows),
        "accuracy": _mean([float(r["correct"]) for r in rows]),
        "accuracy_by_type": {t: _mean([float(r["correct"]) for r in rows if r["type"] == t]) for t in types},
        "n_by_type": {t: sum(1 for r in rows if r["type"] == t) for t in types},
        "stale_error_rate": _mean([float(r["stale_error"]) for r in superseded]),
        "n_superseded": len(superseded),
        "stale_error_rate_negated": _mean([float(r["stale_error"]) for r in rows if r["type"] == "negated"]),
        "read_tokens_mean": _mean([float(r["read_tokens"]) for r in rows]),
        "truncated_rate": _mean([float(r["truncated"]) for r in rows]),
        "n_writes": len(writes) if system.is_ledger else len(write_tokens),
        "write_tokens_mean": _mean([float(r["write_tokens"]) for r in writes] if system.is_ledger
                                   else [float(x) for x in write_tokens]),
        "wall_seconds": float(seconds),
        "op": None, "state_f1_mean": None, "state_exact_rate": None, "invalid_op_rate": None,
        "parse_failure_rate": None, "n_ops": None,
    }
    if system.is_ledger:
        n_ops = sum(r["n_ops"] for r in writes)
        out.update(
            op=micro_op_scores(r["_scores"] for r in writes),
            state_f1_mean=_mean([r["state_f1"] for r in writes]),
            state_exact_rate=_mean([float(r["state_exact"]) for r in writes]),
            invalid_op_rate=sum(r["n_invalid"] for r in writes) / n_ops if n_ops else 0.0,
            parse_failure_rate=_mean([float(r["parse_failure"]) for r in writes]),
            n_ops=n_ops,
        )
    return out


def _write_jsonl(path: Path, kind: str, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            validate_record(kind, row)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_timelines_file(path: str) -> list[dict]:
    """Timelines via ``clerk.generator.files.load_timelines``, with input errors as UserError."""
    from clerk.generator.files import load_timelines

    if not Path(path).is_file():
        raise UserError(f"--timelines must be an existing timelines file (JSON lines), got {path!r}")
    timelines = load_timelines(path)
    if not timelines:
        raise UserError(f"--timelines {path!r} holds no persona")
    return timelines


def run_evaluate(args: Any, registry: Registry = MEMORY_REGISTRY) -> None:
    """``clerk evaluate``: evaluate, then write predictions.jsonl, ledgers.jsonl and metrics.json (last).

    Raises:
        UserError: bad arguments or timelines (see :func:`make_systems`, :class:`EvalConfig`).
    """
    start = time.perf_counter()
    from clerk.models.device import set_torch_threads

    set_torch_threads(args.threads)
    cfg = EvalConfig(window_k=args.window_k, rag_k=args.rag_k, max_new_tokens=args.max_new_tokens,
                     batch_size=args.batch_size, reader=args.reader, baseline_reader=args.baseline_reader,
                     max_read_tokens=args.max_read_tokens, add_only_budget=args.add_only_budget,
                     dtype=args.dtype)
    runtime = Runtime(cfg, model_dir=args.model, adapter_dir=args.adapter)
    make_systems(args.systems, runtime, registry)  # fail on bad names before loading anything
    timelines = load_timelines_file(args.timelines)
    predictions, ledger_rows, summary = evaluate(timelines, args.systems, runtime, registry, progress=not args.quiet)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "predictions.jsonl", "predictions", predictions)
    _write_jsonl(out / "ledgers.jsonl", "ledgers", ledger_rows)
    from clerk import __version__

    metrics = {
        "schema": METRICS_SCHEMA_ID,
        "input": {"path": str(args.timelines), "sha256": sha256_file(args.timelines), "n_personas": len(timelines),
                  "splits": sorted({tl["split"] for tl in timelines}), "seeds": sorted({tl["seed"] for tl in timelines})},
        "config": {"systems": list(args.systems), "model": args.model, "adapter": args.adapter, **cfg.to_dict()},
        "versions": {"clerk": __version__, **{name: summary[name]["version"] for name in args.systems}},
        "systems": summary,
        "wall_seconds": float(time.perf_counter() - start),
    }
    validate_record("metrics", metrics)
    for record in summary.values():
        validate_record("metrics.system", record)
    # metrics.json last: its existence means the run completed.
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"clerk evaluate: {len(predictions)} predictions, {len(ledger_rows)} ledger rows -> {out} "
          f"in {metrics['wall_seconds']:.1f} s", file=sys.stderr)


# --------------------------------------------------------------------------- read-cost probe

#: Views measured by the probe; the oracle ledger stands in for clerk's ledger (same format, B slots).
READ_COST_VIEWS = ("oracle", "full", "window", "rag", "add-only")


def read_cost(timelines: list[dict], runtime: Runtime, views: tuple[str, ...] = READ_COST_VIEWS,
              progress: bool = True) -> list[dict]:
    """Mean read tokens per question by session index for each view; tokenizer only, no model.

    Transcript views are not truncated here (the runtime's context should be effectively
    unbounded) so the growth of an unbounded history is visible.

    Returns:
        Rows ``{"session", "view", "mean_read_tokens", "n"}`` sorted by session, then view order.
    """
    systems = make_systems(list(views), runtime)
    sums: dict[tuple[int, str], list[int]] = {}

    def answer(name, system, tl, session, state, views_):
        sums.setdefault((session["index"], name), []).extend(runtime.count_tokens(v.text) for v in views_)

    replay(timelines, systems, answer, progress=progress)
    order = {name: k for k, name in enumerate(views)}
    return [{"session": index, "view": name, "mean_read_tokens": _mean([float(x) for x in counts]), "n": len(counts)}
            for (index, name), counts in sorted(sums.items(), key=lambda kv: (kv[0][0], order[kv[0][1]]))]


def run_read_cost(args: Any) -> None:
    """``clerk read-cost``: write the probe's CSV (see :func:`read_cost`)."""
    from transformers import AutoTokenizer

    if not Path(args.tokenizer).is_dir():
        raise UserError(f"--tokenizer must be a model or tokenizer directory, got {args.tokenizer!r}")
    cfg = EvalConfig(window_k=args.window_k, rag_k=args.rag_k)
    runtime = Runtime(cfg, tokenizer=AutoTokenizer.from_pretrained(args.tokenizer), context_tokens=10**12)
    rows = read_cost(load_timelines_file(args.timelines), runtime, progress=not args.quiet)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["session", "view", "mean_read_tokens", "n"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"clerk read-cost: {len(rows)} rows -> {out}", file=sys.stderr)


# --------------------------------------------------------------------------- CLI


def _add_view_knobs(p: Any) -> None:
    d = EvalConfig()
    p.add_argument("--window-k", dest="window_k", type=int, default=d.window_k,
                   help=f"sessions shown by the window view (default: {d.window_k})")
    p.add_argument("--rag-k", dest="rag_k", type=int, default=d.rag_k,
                   help=f"turns retrieved by BM25 for the rag view (default: {d.rag_k})")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def register_cli(sub: Any) -> None:
    """Add ``clerk evaluate`` and ``clerk read-cost``."""
    d = EvalConfig()
    p = sub.add_parser(
        "evaluate", help="replay timelines through memory systems; write predictions, ledger metrics and a summary",
        description="Synthetic evaluation (SPEC §6): for every session, answer its questions from each system's "
        "memory, then consolidate. Writes predictions.jsonl, ledgers.jsonl and metrics.json to --out. "
        f"Systems: {', '.join(MEMORY_REGISTRY.names())}.")
    # inputs and outputs
    p.add_argument("--timelines", required=True, help="timelines file (JSON lines, one persona per line)")
    p.add_argument("--model", required=True, help="base model directory (from clerk materialize-model)")
    p.add_argument("--adapter", default=None, help="LoRA adapter directory (from clerk train); needed by clerk")
    p.add_argument("--systems", nargs="+", required=True, metavar="NAME", help="memory systems (registry keys)")
    p.add_argument("--out", required=True, help="output directory")
    # views
    _add_view_knobs(p)
    p.add_argument("--max-read-tokens", dest="max_read_tokens", type=int, default=d.max_read_tokens,
                   help="cap on transcript-view tokens; -1 = reader context minus a prompt reserve (default: -1)")
    p.add_argument("--add-only-budget", dest="add_only_budget", type=int, default=d.add_only_budget,
                   help="add-only view budget in tokens; -1 = the gold ledger view's tokens at that session (default: -1)")
    # writers and readers
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=d.max_new_tokens,
                   help=f"generation cap for model writers, tokens (default: {d.max_new_tokens})")
    p.add_argument("--batch-size", dest="batch_size", type=int, default=d.batch_size,
                   help=f"prompts per generation batch (default: {d.batch_size})")
    p.add_argument("--reader", choices=("mc", "rule"), default=d.reader,
                   help="mc = multiple-choice log-likelihood; rule = exact rule reader, ledger systems only (default: mc)")
    p.add_argument("--baseline-reader", dest="baseline_reader", choices=("base", "adapter"), default=d.baseline_reader,
                   help="model reading full/window/rag/add-only/null (default: base)")
    p.add_argument("--dtype", choices=DTYPES, default=d.dtype,
                   help="inference dtype of readers and writers; auto = bf16 on CUDA, fp32 on CPU (default: auto)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="torch CPU threads; 0 = torch's default (default: 0)")
    p.set_defaults(func=run_evaluate)

    p = sub.add_parser(
        "read-cost", help="read tokens per question by session index for each memory view (tokenizer only)",
        description="Read-cost probe: mean view tokens per question by session index for the oracle ledger "
        "(stand-in for clerk), full, window, rag and add-only views; no model calls. Writes a CSV "
        "(session, view, mean_read_tokens, n).")
    p.add_argument("--timelines", required=True, help="timelines file (JSON lines), e.g. a long-horizon set")
    p.add_argument("--tokenizer", required=True, help="model or tokenizer directory whose tokenizer counts tokens")
    p.add_argument("--out", required=True, help="output CSV path")
    _add_view_knobs(p)
    p.set_defaults(func=run_read_cost)
