"""The synthetic evaluation runner (``clerk evaluate``, SPEC §6): replay timelines through memory systems.

Every persona's sessions are replayed in order for every memory system (registry keys from
``clerk.memory``). At each session index, for each system: the session's questions are answered
from memory as it stands *before* the session (session 0 has none), then the session is
consolidated, batched across personas. A session without questions (every session of the
eviction-pressure slice, SPEC §2.6) is only consolidated. The model writers named by
``--teacher-forced`` are also scored teacher-forced, every session written from the gold ledger
before it (:mod:`clerk.evaluate.teacher`). Four files are written to ``--out``:

* ``predictions.jsonl``: one row per question x system (:data:`~clerk.evaluate.schemas.SCHEMAS`
  ``"predictions"``);
* ``ledgers.jsonl``: one row per session x persona x ledger system, write-side metrics against
  the gold program and gold ``ledger_after`` (``SCHEMAS["ledgers"]``);
* ``programs.jsonl.gz``: one row per write of a model writer, teacher-forced rewrites marked:
  text, ops, the reducer's verdict per op, the ledger after (:mod:`clerk.evaluate.programs`);
* ``metrics.json``: the per-seed summary per system, with the config, system versions and the
  input's sha256 (``SCHEMAS["metrics"]`` and ``SCHEMAS["metrics.system"]``), written last.

    clerk evaluate --timelines results/data/test_137.jsonl --model resources/models/smollm2-135m \\
        --adapter results/train/adapter_137 --systems clerk oracle full window rag add-only --out results/eval/test_137
    clerk evaluate --timelines T.jsonl --model M --systems oracle --reader rule --out /tmp/ev   # exact, no model calls
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clerk.atomic import start_outputs, write_text
from clerk.errors import UserError
from clerk.evaluate.config import EvaluateConfig
from clerk.evaluate.programs import PROGRAMS_FILE, program_row, write_programs
from clerk.evaluate.schemas import METRICS_SCHEMA_ID, validate_record, write_jsonl
from clerk.evaluate.summary import is_stale_error, ledger_row, set_teacher_forced, summarize
from clerk.evaluate.teacher import is_model_writer, teacher_forced
from clerk.inputs import check_run_dirs
from clerk.memory import MEMORY_REGISTRY, MemorySystem, Registry, Runtime


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
    for name in runtime.config.teacher_forced:
        if name not in out:
            raise UserError(f"--teacher-forced: {name!r} is not one of --systems {list(out)}")
        if not is_model_writer(out[name]):
            writers = [n for n, s in out.items() if is_model_writer(s)]
            raise UserError(f"--teacher-forced: {name!r} is not a model writer (allowed: the model writers of "
                            f"--systems, {writers}; the others generate no program to re-run from the gold ledger)")
    for name, system in out.items():
        if runtime.config.reader == "rule" and not system.is_ledger:
            raise UserError(f"--reader rule needs a ledger system, got {name!r} (use --reader mc)")
        reads_with = runtime.config.reader_model if runtime.config.reader == "mc" else None
        needs_adapter = getattr(system, "writer_kind", None) == "adapter" or reads_with == "adapter"
        if needs_adapter and runtime.adapter_dir is None:
            raise UserError(f"--adapter is required for system {name!r} (it reads or writes with the trained adapter)")
        if reads_with == "reader" and runtime.reader_adapter_dir is None:
            raise UserError(f"--reader-adapter is required for system {name!r} (--reader-model reader reads "
                            "every system with the separate reader adapter)")
    return out


def mc_choose(reader: Any, key: Any, questions: list[dict], views: list[Any]) -> list[int]:
    """The MC reader's chosen option per question; questions whose views are the same text are
    read together (one encoded view, every question and option in one forward:
    :class:`~clerk.memory.reader.Reader`).

    Args:
        reader: the run's reader (``Runtime.reader()``).
        key: who reads, e.g. (system, persona): a view that grows from the last one of the same
            key is encoded from where that one ended.
        questions: question dicts with ``question`` and ``options``.
        views: one :class:`~clerk.memory.View` per question.

    Returns:
        One chosen option index per question, in order.
    """
    chosen = [-1] * len(questions)
    groups: dict[str, list[int]] = {}
    for k, view in enumerate(views):
        groups.setdefault(view.text, []).append(k)
    for text, ks in groups.items():
        for k, c in zip(ks, reader.choose(key, text, [questions[k] for k in ks])):
            chosen[k] = c
    return chosen


def replay(
    timelines: list[dict],
    systems: dict[str, MemorySystem],
    answer: Callable[..., None],
    wrote: Callable[..., None] | None = None,
    progress: bool = True,
    prepare: Callable[..., Any] | None = None,
    after_write: Callable[..., None] | None = None,
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
        prepare: ``prepare(name, system, timeline, session, state) -> state`` before each
            persona-session's questions, with or without questions (the erasure study delivers
            forget requests here, :mod:`clerk.evaluate.erasure`).
        after_write: ``after_write(name, system, timelines, sessions, states_before, results)`` once
            per session index and system, after its batch of writes (and their ``wrote`` calls),
            outside the system's timed seconds (teacher-forced writes, :mod:`clerk.evaluate.teacher`).

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
                if prepare is not None:
                    states[name][j] = prepare(name, system, tl, session, states[name][j])
                questions = session.get("questions") or []
                if not questions:
                    continue
                states[name][j] = system.on_questions(states[name][j], tl, session)
                views = [system.view(states[name][j], tl, session, q) for q in questions]
                answer(name, system, tl, session, states[name][j], views)
            before = [states[name][j] for j in active]
            batch, sessions = [timelines[j] for j in active], [timelines[j]["sessions"][index] for j in active]
            results = system.write(before, batch, sessions)
            assert len(results) == len(active)
            for j, state, result in zip(active, before, results):
                if wrote is not None:
                    wrote(name, system, timelines[j], timelines[j]["sessions"][index], state, result)
                states[name][j] = result.state
            seconds[name] += time.perf_counter() - start
            if after_write is not None:
                after_write(name, system, batch, sessions, before, results)
    return seconds


def load_up_front(runtime: Runtime, systems: dict[str, MemorySystem]) -> None:
    """Load the tokenizer and every model the systems read (MC reader) or write with, so that wall
    times and per-write seconds exclude loading."""
    runtime.tokenizer  # noqa: B018
    if runtime.config.reader == "mc":
        runtime.reader()
    for system in systems.values():
        if getattr(system, "writer_kind", None) is not None:
            runtime.model(system.writer_kind)


def _prediction_rows(name: str, tl: dict, session: dict, views: list[Any], chosen: list[int], reader: str,
                     runtime: Runtime) -> list[dict]:
    """The ``predictions`` records of one persona-session's questions for system ``name``."""
    return [{
        "system": name, "persona": tl["name"], "split": tl["split"], "seed": tl["seed"],
        "session": session["index"], "q": k, "type": q["type"], "pred": q["pred"], "chosen": c,
        "correct_index": q["correct"], "correct": c == q["correct"],
        "stale_error": is_stale_error(tl, session["index"], q, c),
        "read_tokens": runtime.count_tokens(view.text), "truncated": bool(view.truncated), "reader": reader,
    } for k, (q, view, c) in enumerate(zip(session["questions"], views, chosen))]


def evaluate(
    timelines: list[dict],
    system_names: list[str],
    runtime: Runtime,
    registry: Registry = MEMORY_REGISTRY,
    progress: bool = True,
) -> tuple[list[dict], list[dict], dict[str, dict], list[dict]]:
    """Run the evaluation in memory.

    Args:
        timelines: personas to replay (one split/seed file).
        system_names: registry keys.
        runtime: config, models and tokenizer.
        registry: where the names are looked up (tests pass a local one).
        progress: show progress bars.

    Returns:
        (prediction rows, ledger rows, per-system summary, program rows of the model writers)
        following :data:`~clerk.evaluate.schemas.SCHEMAS`.

    Raises:
        UserError: see :func:`make_systems`.
    """
    from clerk.memory.reader import rule_choice

    systems = make_systems(system_names, runtime, registry)
    cfg = runtime.config
    load_up_front(runtime, systems)
    predictions: list[dict] = []
    ledger_rows: list[dict] = []
    program_rows: list[dict] = []

    def answer(name, system, tl, session, state, views):
        if name in cfg.write_only:
            return
        questions = session["questions"]
        reader = "rule" if cfg.reader == "rule" else system.reader_model()
        if cfg.reader == "rule":
            chosen = [rule_choice(system.ledger(state), tl["name"], q) for q in questions]
        else:
            chosen = mc_choose(runtime.reader(), (name, tl["name"]), questions, views)
        predictions.extend(_prediction_rows(name, tl, session, views, chosen, reader, runtime))

    def wrote(name, system, tl, session, before, result):
        if system.is_ledger:
            ledger_rows.append(ledger_row(name, tl, session, system.ledger(before), result))
        else:
            write_tokens[name].append(result.write_tokens)
        if is_model_writer(system):
            program_rows.append(program_row(name, tl["name"], session["index"], result))

    def forced(name, system, batch, sessions, before, results):
        if name not in cfg.teacher_forced:
            return
        scored = teacher_forced(system, batch, sessions, before, results)
        tf_seconds[name] += scored.seconds
        for row, tl, session, scores, extra in zip(ledger_rows[-len(results):], batch, sessions, scored.scores,
                                                   scored.extra):
            assert (row["system"], row["persona"], row["session"]) == (name, tl["name"], session["index"])
            set_teacher_forced(row, scores)
            if extra is not None:
                program_rows.append(program_row(name, tl["name"], session["index"], extra, teacher_forced=True))

    write_tokens: dict[str, list[int]] = {name: [] for name in systems}
    tf_seconds = {name: 0.0 for name in systems}
    seconds = replay(timelines, systems, answer, wrote, progress, after_write=forced)
    summary = {name: summarize(name, system, predictions, ledger_rows, write_tokens[name], seconds[name], cfg,
                               tf_seconds[name])
               for name, system in systems.items()}
    for row in ledger_rows:
        row.pop("_scores")
        row.pop("_tf_scores")
        row.pop("_verdicts")
    return predictions, ledger_rows, summary, program_rows


def catalogue_keys(phrasings: str | None) -> list[str]:
    """The predicate keys of the phrasings catalogue (built-in when None): the facts a
    constrained writer may ADD. Train, test and OOD catalogues share them."""
    from clerk.generator.catalogue import load_catalogue

    return [pred.key for pred in load_catalogue(phrasings).predicates]


def load_timelines_file(path: str) -> list[dict]:
    """Timelines via ``clerk.generator.load_timelines``, with input errors as UserError."""
    from clerk.generator.files import load_timelines

    if not Path(path).is_file():
        raise UserError(f"--timelines must be an existing timelines file (JSON lines), got {path!r}")
    timelines = load_timelines(path, "--timelines")
    if not timelines:
        raise UserError(f"--timelines {path!r} holds no persona")
    return timelines


def runtime_from_config(cfg: EvaluateConfig) -> Runtime:
    """The :class:`~clerk.memory.Runtime` of a replay run (torch threads set first)."""
    from clerk.models.device import set_torch_threads

    set_torch_threads(cfg.threads)
    runtime = Runtime(cfg.eval, model_dir=cfg.model, adapter_dir=cfg.adapter, reader_adapter_dir=cfg.reader_adapter)
    runtime.predicates = catalogue_keys(cfg.phrasings)
    return runtime


def run_evaluate(cfg: EvaluateConfig, registry: Registry = MEMORY_REGISTRY) -> None:
    """``clerk evaluate``: evaluate, then write predictions.jsonl, ledgers.jsonl, programs.jsonl.gz and
    metrics.json (last).

    Raises:
        UserError: bad arguments or timelines (see :func:`make_systems`, :class:`EvalConfig`).
    """
    start = time.perf_counter()
    from clerk.models.hashes import sha256_file

    out = start_outputs(cfg.out, "--out", marker="metrics.json")  # up front; no stale completion marker
    check_run_dirs(cfg)
    runtime = runtime_from_config(cfg)
    systems = list(cfg.systems)
    make_systems(systems, runtime, registry)  # fail on bad names before loading anything
    timelines = load_timelines_file(cfg.timelines)
    if any(session.get("forget") for tl in timelines for session in tl["sessions"]):
        raise UserError(f"--timelines {cfg.timelines!r} holds forget requests, which clerk evaluate does not "
                        "deliver; replay it with clerk erasure")
    predictions, ledger_rows, summary, program_rows = evaluate(timelines, systems, runtime, registry,
                                                               progress=not cfg.quiet)
    write_jsonl(out / "predictions.jsonl", "predictions", predictions)
    write_jsonl(out / "ledgers.jsonl", "ledgers", ledger_rows)
    write_programs(out / PROGRAMS_FILE, program_rows)
    from clerk import __version__

    metrics = {
        "schema": METRICS_SCHEMA_ID,
        "input": {"path": str(cfg.timelines), "sha256": sha256_file(cfg.timelines), "n_personas": len(timelines),
                  # personas of a slice (the eviction-pressure slice: no questions, scored for edits only)
                  "n_slice_personas": sum(1 for tl in timelines if tl.get("slice")),
                  "splits": sorted({tl["split"] for tl in timelines}), "seeds": sorted({tl["seed"] for tl in timelines})},
        "config": cfg.record(),
        "versions": {"clerk": __version__, **{name: summary[name]["version"] for name in systems}},
        "systems": summary,
        "wall_seconds": float(time.perf_counter() - start),
    }
    validate_record("metrics", metrics)
    for record in summary.values():
        validate_record("metrics.system", record)
    # metrics.json last: its existence means the run completed.
    write_text(out / "metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    print(f"clerk evaluate: {len(predictions)} predictions, {len(ledger_rows)} ledger rows -> {out} "
          f"in {metrics['wall_seconds']:.1f} s", file=sys.stderr)
