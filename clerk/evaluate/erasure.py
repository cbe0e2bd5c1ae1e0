"""The erasure study (``clerk erasure``, SPEC §9): forget requests replayed through every memory system.

Timelines with forget requests (``clerk generate --forgets K``, :mod:`clerk.generator.forgets`) are
replayed through the configured systems with the runner's loop (:func:`~clerk.evaluate.runner.replay`):
at each session, first the session's forget requests are delivered (``MemorySystem.forget``), then
the questions are answered from memory, then the session is consolidated. Each system runs in one
of two modes: ``forget`` (requests delivered: the main rows) and, for the systems listed with
``--ignore-forget``, also ``ignore`` (requests not delivered: what a memory without an erasure
API keeps; the naive contrast).

Two measurements per (system, mode):

* **Leak rate**: over every question asked after a forget (every later question of that persona,
  whatever it asks about) while a forgotten value is *live* (forgotten and not stated again by
  the persona since the forget), the share whose view still contains a live forgotten value.
  A value *occurs* in a view when its text appears there as a whole word, case-insensitively
  and in any Unicode normal form (:func:`clerk.scrub.value_pattern` with ``words=True``;
  the redaction itself removes every occurrence of the text, whole word or not). A plain
  substring test would charge every system for text that never stated the value ("pho" inside
  "phone", "cat" inside "relocated"); it is recorded too (``leak_rate_substring``). Views need no
  model: every question's view is checked.
* **Forgotten-fact accuracy**: the reader answers only the questions about forgotten facts
  (type ``forgotten``; gold: the unknown answer), by the evaluation's reader
  (:func:`~clerk.evaluate.runner.mc_choose`, or the exact rule reader on ledgers). Also the share
  of them answered with a forgotten value (``forgotten_value_rate``).

Files in ``--out``: ``views.jsonl`` (one row per checked view, :data:`SCHEMAS` ``"views"``),
``programs.jsonl.gz`` (every write of the model writers in the ``forget`` replay,
:mod:`clerk.evaluate.programs`; their rejected ops by code are ``invalid_reasons`` of their rows) and
``metrics.json`` (``SCHEMAS["metrics"]``, one ``"metrics.row"`` per system and mode), written last.

    clerk erasure --timelines results/data/137/forget.jsonl --model resources/models/smollm2-135m \\
        --adapter results/train/137 --systems clerk oracle full window rag add-only --ignore-forget oracle full \\
        --out results/erasure/137
    clerk erasure --timelines F.jsonl --model M --systems oracle --reader rule --out /tmp/er   # exact, no model calls
"""

from __future__ import annotations

import json
import sys
import time

from clerk.atomic import start_outputs, write_text
from clerk.errors import UserError
from clerk.evaluate.config import ErasureConfig
from clerk.evaluate.programs import PROGRAMS_FILE, invalid_reasons, program_row, write_programs
from clerk.evaluate.runner import (
    load_timelines_file,
    load_up_front,
    make_systems,
    mc_choose,
    replay,
    runtime_from_config,
)
from clerk.evaluate.schemas import validate_record, write_jsonl
from clerk.evaluate.summary import mean_or_none
from clerk.evaluate.teacher import is_model_writer
from clerk.generator.forgets import FORGOTTEN
from clerk.inputs import check_run_dirs
from clerk.memory import MEMORY_REGISTRY, EvalConfig, MemorySystem, Registry, Runtime
from clerk.memory.forgetting import value_pattern

ERASURE_SCHEMA_ID = "clerk.erasure.metrics/1"
#: ``forget``: requests delivered to the system; ``ignore``: not delivered (the naive contrast).
MODES = ("forget", "ignore")

_N = type(None)
#: Field -> allowed exact types of the study's records (validated on write).
SCHEMAS: dict[str, dict[str, tuple]] = {
    "views": {
        "system": (str,),  # registry key
        "mode": (str,),  # MODES
        "persona": (str,),
        "seed": (int,),
        "session": (int,),  # session index the question is asked in
        "q": (int,),  # position of the question within the session
        "type": (str,),  # question type (``forgotten`` = about a forgotten fact)
        "pred": (str,),
        "n_live": (int,),  # forgotten values live at this question (> 0 on every row)
        "leaked": (list,),  # live forgotten values the view contains (whole word, case-insensitive)
        "leak": (bool,),  # leaked is not empty
        "leak_substring": (bool,),  # a live value occurs as a plain case-insensitive substring
        "chosen": (int, _N),  # forgotten questions only: the reader's option; -1 = rule answer not an option
        "correct": (bool, _N),
        "chose_forgotten": (bool, _N),  # the chosen option is a forgotten value
        "reader": (str, _N),  # "base" | "adapter" | "reader" | "rule" (forgotten questions only)
    },
    "metrics": {
        "schema": (str,),
        "input": (dict,),  # {"path", "sha256", "n_personas", "splits", "seeds", "n_sessions", "n_forget_requests"}
        "config": (dict,),  # systems, ignore_forget, model, adapter, EvalConfig fields
        "versions": (dict,),  # system name -> version, plus "clerk"
        "rows": (list,),  # one "metrics.row" per (system, mode)
        "wall_seconds": (float,),
    },
    "metrics.row": {
        "system": (str,),
        "mode": (str,),
        "version": (str,),
        "is_ledger": (bool,),
        "forget_action": (str,),  # the system's forget_action, or "ignored" in mode ignore
        "reader": (dict,),  # {"method": "mc" | "rule", "model": "base" | "adapter" | "reader" | None}
        "n_views": (int,),  # views checked (questions after a forget with a live value)
        "n_leaks": (int,),
        "leak_rate": (float, _N),  # None when no view was checked
        "leak_rate_substring": (float, _N),
        "n_forgotten": (int,),  # questions about forgotten facts
        "accuracy_forgotten": (float, _N),  # None when there were none
        "forgotten_value_rate": (float, _N),
        "wall_seconds": (float,),  # forgetting + reading + writing for this system and mode
        "invalid_reasons": (dict, _N),  # model writers: rejected ops per code (clerk.evaluate.programs); else None
    },
}


def live_forgotten(timeline: dict) -> dict[int, list[str]]:
    """Per session index, the forgotten values live at its questions: delivered by a forget at
    this or an earlier session and not stated (ADD or UPDATE) by the persona since.

    >>> tl = {"sessions": [
    ...     {"index": 0, "forget": [], "events": [{"kind": "ADD", "pred": "city", "value": "Oslo"}]},
    ...     {"index": 1, "forget": [{"pred": "city", "values": ["Oslo"]}], "events": [
    ...         {"kind": "ADD", "pred": "job", "value": "chef"}]},
    ...     {"index": 2, "forget": [], "events": [{"kind": "ADD", "pred": "city", "value": "Oslo"}]},
    ...     {"index": 3, "forget": [], "events": []}]}
    >>> live_forgotten(tl)
    {0: [], 1: ['Oslo'], 2: ['Oslo'], 3: []}
    """
    live: list[str] = []
    out = {}
    for session in timeline["sessions"]:
        for request in session.get("forget") or []:
            live += [v for v in request["values"] if v not in live]
        out[session["index"]] = list(live)
        stated = {e["value"] for e in session["events"] if e["kind"] in ("ADD", "UPDATE")}
        live = [v for v in live if v not in stated]
    return out


def leaked_values(text: str, values: list[str]) -> list[str]:
    """The ``values`` that occur in ``text`` as a whole word, case-insensitively (the redaction's matcher).

    >>> leaked_values("Ari moved to oslo; her phone is new.", ["Oslo", "pho", "Rome"])
    ['Oslo']
    """
    patterns = [(v, value_pattern([v], words=True)) for v in values]
    return [v for v, pattern in patterns if pattern is not None and pattern.search(text)]


def _check_systems(systems: dict[str, MemorySystem]) -> None:
    for name, system in systems.items():
        if type(system).forget is MemorySystem.forget:
            raise UserError(f"--systems: memory system {name!r} does not implement forget")


def erasure(
    timelines: list[dict],
    system_names: list[str],
    runtime: Runtime,
    ignore_forget: list[str] = (),
    registry: Registry = MEMORY_REGISTRY,
    progress: bool = True,
) -> tuple[list[dict], list[dict]]:
    """Run the study in memory.

    Args:
        timelines: personas with forget requests (one split/seed file).
        system_names: registry keys run in mode ``forget`` (requests delivered).
        runtime: config, models and tokenizer.
        ignore_forget: registry keys also run in mode ``ignore`` (requests not delivered).
        registry: where the names are looked up (tests pass a local one).
        progress: show progress bars.

    Returns:
        (view rows, one summary row per system and mode, the model writers' ``programs`` records of
        the ``forget`` replay), following :data:`SCHEMAS` and ``clerk.evaluate.schemas.SCHEMAS``.

    Raises:
        UserError: bad names (see :func:`~clerk.evaluate.runner.make_systems`), a system without
            ``forget``, or timelines without forget requests.
    """
    from clerk.memory.reader import rule_choice

    if not any(session.get("forget") for tl in timelines for session in tl["sessions"]):
        raise UserError("the timelines hold no forget request; generate them with clerk generate --forgets K")
    by_mode = {"forget": make_systems(system_names, runtime, registry)}
    if ignore_forget:
        by_mode["ignore"] = make_systems(list(ignore_forget), runtime, registry)
    _check_systems(by_mode["forget"])
    systems = {(name, mode): system for mode, group in by_mode.items() for name, system in group.items()}
    load_up_front(runtime, systems)
    cfg = runtime.config
    live = {tl["name"]: live_forgotten(tl) for tl in timelines}
    rows: list[dict] = []

    def prepare(key, system, tl, session, state):
        if key[1] == "forget":
            for request in session.get("forget") or []:
                state = system.forget(state, tl, request["pred"], list(request["values"]))
        return state

    def answer(key, system, tl, session, state, views):
        values = live[tl["name"]][session["index"]]
        if not values:
            return
        questions = session["questions"]
        asked = [k for k, q in enumerate(questions) if q["type"] == FORGOTTEN]
        reader = "rule" if cfg.reader == "rule" else system.reader_model()
        chosen: dict[int, int] = {}
        if asked and cfg.reader == "rule":
            chosen = {k: rule_choice(system.ledger(state), tl["name"], questions[k]) for k in asked}
        elif asked:
            picks = mc_choose(runtime.reader(), (key, tl["name"]), [questions[k] for k in asked], [views[k] for k in asked])
            chosen = dict(zip(asked, picks))
        lowered = [v.lower() for v in values]
        for k, (q, view) in enumerate(zip(questions, views)):
            leaked = leaked_values(view.text, values)
            c = chosen.get(k)
            option = q["options"][c] if c is not None and 0 <= c < len(q["options"]) else None
            rows.append({
                "system": key[0], "mode": key[1], "persona": tl["name"], "seed": tl["seed"],
                "session": session["index"], "q": k, "type": q["type"], "pred": q["pred"],
                "n_live": len(values), "leaked": leaked, "leak": bool(leaked),
                "leak_substring": any(v in view.text.lower() for v in lowered),
                "chosen": c, "correct": None if c is None else c == q["correct"],
                "chose_forgotten": None if c is None else option in values,
                "reader": reader if c is not None else None,
            })

    programs: list[dict] = []
    verdicts: dict[tuple[str, str], list[list[str]]] = {key: [] for key in systems}

    def wrote(key, system, tl, session, before, result):
        if is_model_writer(system):
            verdicts[key].append(result.verdicts)
            if key[1] == "forget":  # the study's own replay; an ignore-mode rerun would repeat its keys
                programs.append(program_row(key[0], tl["name"], session["index"], result))

    seconds = replay(timelines, systems, answer, wrote, progress=progress, prepare=prepare)
    summary = [_summarize(key, system, [r for r in rows if (r["system"], r["mode"]) == key], seconds[key], cfg,
                          invalid_reasons(verdicts[key]) if is_model_writer(system) else None)
               for key, system in systems.items()]
    return rows, summary, programs


def _summarize(key: tuple[str, str], system: MemorySystem, rows: list[dict], seconds: float,
               cfg: EvalConfig, reasons: dict[str, int] | None = None) -> dict:
    """The ``metrics.row`` record of one system and mode."""
    asked = [r for r in rows if r["chosen"] is not None]
    return {
        "system": key[0], "mode": key[1], "version": system.version, "is_ledger": system.is_ledger,
        "forget_action": system.forget_action if key[1] == "forget" else "ignored",
        "reader": {"method": cfg.reader, "model": None if cfg.reader == "rule" else system.reader_model()},
        "n_views": len(rows), "n_leaks": sum(r["leak"] for r in rows),
        "leak_rate": mean_or_none([float(r["leak"]) for r in rows]),
        "leak_rate_substring": mean_or_none([float(r["leak_substring"]) for r in rows]),
        "n_forgotten": len(asked),
        "accuracy_forgotten": mean_or_none([float(r["correct"]) for r in asked]),
        "forgotten_value_rate": mean_or_none([float(r["chose_forgotten"]) for r in asked]),
        "wall_seconds": float(seconds),
        "invalid_reasons": reasons,
    }


def run_erasure(cfg: ErasureConfig, registry: Registry = MEMORY_REGISTRY) -> None:
    """``clerk erasure``: run the study, then write views.jsonl and metrics.json (last).

    Raises:
        UserError: bad arguments or timelines (see :func:`erasure`, :class:`~clerk.memory.EvalConfig`).
    """
    start = time.perf_counter()
    from clerk import __version__
    from clerk.models.hashes import sha256_file

    out = start_outputs(cfg.out, "--out", marker="metrics.json")  # up front; no stale completion marker
    check_run_dirs(cfg)
    runtime = runtime_from_config(cfg)
    systems, ignore_forget = list(cfg.systems), list(cfg.ignore_forget)
    _check_systems(make_systems(systems, runtime, registry))  # fail on bad names before loading anything
    if ignore_forget:
        make_systems(ignore_forget, runtime, registry)
    timelines = load_timelines_file(cfg.timelines)
    rows, summary, programs = erasure(timelines, systems, runtime, ignore_forget, registry, progress=not cfg.quiet)
    write_jsonl(out / "views.jsonl", "views", rows, SCHEMAS)
    write_programs(out / PROGRAMS_FILE, programs)
    versions = {"clerk": __version__, **{r["system"]: r["version"] for r in summary}}
    metrics = {
        "schema": ERASURE_SCHEMA_ID,
        "input": {"path": str(cfg.timelines), "sha256": sha256_file(cfg.timelines), "n_personas": len(timelines),
                  "splits": sorted({tl["split"] for tl in timelines}), "seeds": sorted({tl["seed"] for tl in timelines}),
                  "n_sessions": max(len(tl["sessions"]) for tl in timelines),
                  "n_forget_requests": sum(len(s.get("forget") or []) for tl in timelines for s in tl["sessions"])},
        "config": cfg.record(),
        "versions": versions,
        "rows": summary,
        "wall_seconds": float(time.perf_counter() - start),
    }
    validate_record("metrics", metrics, SCHEMAS)
    for record in summary:
        validate_record("metrics.row", record, SCHEMAS)
    # metrics.json last: its existence means the run completed.
    write_text(out / "metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    print(f"clerk erasure: {len(rows)} views of {len(summary)} system rows -> {out} "
          f"in {metrics['wall_seconds']:.1f} s", file=sys.stderr)
