"""LoCoMo evaluation: every memory system's writer over the sessions, then the MC reader (SPEC §7).

Each conversation is replayed through every memory system's writer session by session, in order
(the synthetic runner's ``clerk.evaluate.replay``); its two speakers are the transcript roles, so
ledger writers can use their names as subjects, and each session's date heads its transcript
(:func:`session_record`). Ledger systems (``clerk``: the trained adapter writes and reads;
``prompted-ledger``: the base model) keep a ledger of ``--budget`` slots (config ``locomo.budget``,
by default the synthetic budget 12 the closed policy was trained with) in the form ``--ledger``
names (:func:`conversation_timeline`). Only then are the
questions asked, once each, against the system's final memory, and scored by the same
multiple-choice log-likelihood reader as the synthetic benchmark (``clerk.evaluate.mc_choose``).
``full`` shows the whole conversation, left-truncated to the reader's context (``truncated`` in
every prediction; the untruncated length per conversation is in ``metrics.json``); the prompt up
to the question is identical for every question of a conversation, so it is encoded once and its
KV cache reused (``clerk bench-locomo-prefix`` measures the saving). ``summary-rag``
(``clerk/memory/summary_rag.py``) shows the top-k session summaries for the question by BM25.
There is no gold ledger on LoCoMo, so only answer accuracy is scored (plus write-side health for
ledger systems: parse failures, invalid ops). ``accuracy`` is over non-adversarial questions;
adversarial questions are reported apart (``adversarial_accuracy``: their gold option is the
reader's own abstention answer, ``unknown``, an option of every question), and so is how often a
system abstains on an answerable question (``abstention_rate``). Outputs: ``selection.json``,
``predictions.jsonl``, ``metrics.json`` (:data:`LOCOMO_SCHEMAS`) and the model writers' programs
(``programs.jsonl.gz``, :mod:`clerk.evaluate.programs`: it holds conversation text, so like the
predictions it is never committed), written by ``clerk locomo`` (:mod:`clerk.locomo.cli`).

    clerk locomo --data locomo_mc10.json --model resources/models/smollm2-135m --adapter results/train/137 \\
        --max-questions 200 --seed 137 --out results/locomo/137
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.form import LedgerForm, normalise_subject
from clerk.locomo.config import LocomoSection
from clerk.locomo.data import CATEGORIES, Conversation, Question, Session, as_chat_turns
from clerk.memory.base import EvalConfig, Runtime
from clerk.prompts import UNKNOWN_ANSWER

#: ``role`` of the leading pseudo-turn that carries a session's date (see :func:`session_record`).
DATE_ROLE = "date"
#: Ledger budget B on LoCoMo when none is given: the locomo section's default (one default each).
DEFAULT_BUDGET = LocomoSection.budget
#: The ledger form of the ledger systems on LoCoMo (:class:`LocomoEvalConfig` ``ledger``).
LEDGER_FORMS = ("open", "closed")
DEFAULT_LEDGER = LocomoSection.ledger
#: Summaries the ``summary-rag`` view retrieves per question by default.
DEFAULT_SUMMARY_K = 3
#: Non-adversarial categories; ``accuracy`` is over these, adversarial questions are reported apart.
ANSWERABLE = CATEGORIES[:4]
LOCOMO_METRICS_SCHEMA_ID = "clerk.locomo.metrics/1"

_N = type(None)
#: Field -> allowed exact types per record kind (validated with ``clerk.evaluate.validate_record``).
LOCOMO_SCHEMAS: dict[str, dict[str, tuple]] = {
    "predictions": {
        "question_id": (str,),
        "conversation": (str,),  # conversation id
        "category": (str,),  # corrected name (CATEGORIES)
        "raw_label": (str,),  # the label as the data file had it
        "adversarial": (bool,),
        "system": (str,),  # registry key
        "reader": (str,),  # "base" | "adapter"
        "chosen": (int,),
        "correct_index": (int,),
        "correct": (bool,),
        "read_tokens": (int,),  # tokens of the view text under the reader's tokenizer
        "truncated": (bool,),  # the view was cut (oldest first) to fit the reader's context
        "abstained": (bool,),  # the reader chose the abstention option (prompts.UNKNOWN_ANSWER)
    },
    "metrics": {
        "schema": (str,),
        "seed": (int,),  # the run seed = the workflow's {seed} (subset.seed: the question subset's)
        "input": (dict,),  # data file: path, format, source, sha256, sizes, per-conversation tokens
        "subset": (dict,),  # max_questions, seed, size, per_category, adversarial
        "config": (dict,),  # systems, model, adapter, budget, summary_k, EvalConfig fields, context
        "versions": (dict,),  # system -> version, plus "clerk"
        "systems": (dict,),  # system -> "metrics.system"
        "wall_seconds": (float,),
    },
    "metrics.system": {
        "version": (str,),
        "is_ledger": (bool,),
        "reader": (dict,),  # {"method": "mc", "model": "base" | "adapter"}
        "source": (str,),  # SOURCE_PERCENA or SOURCE_LOCAL
        "data_sha256": (str,),
        "subset_size": (int,),  # questions evaluated (adversarial included)
        "subset_seed": (int,),
        "n_questions": (int,),  # = subset_size
        "n": (int,),  # non-adversarial questions (the denominator of accuracy)
        "accuracy": (float, _N),  # over non-adversarial questions; None when there are none
        "accuracy_by_category": (dict,),  # ANSWERABLE -> float | None
        "n_by_category": (dict,),
        "adversarial_accuracy": (float, _N),  # = the abstention rate on adversarial questions
        "n_adversarial": (int,),
        "abstention_rate": (float, _N),  # abstained on a non-adversarial question (always wrong)
        "read_tokens_mean": (float, _N),
        "truncated_rate": (float, _N),
        "wall_seconds": (float,),  # writing + reading
        "write_seconds": (float,),
        "read_seconds": (float,),
        "n_writes": (int,),  # conversation-sessions consolidated
        # ledger systems only (None otherwise):
        "write_tokens_mean": (float, _N),
        "n_ops": (int, _N),
        "invalid_op_rate": (float, _N),
        "invalid_reasons": (dict, _N),  # rejection code -> invalid ops (clerk.evaluate.programs)
        "parse_failure_rate": (float, _N),
        "occupied_mean": (float, _N),  # occupied slots of the final ledgers
    },
}


@dataclass
class LocomoEvalConfig(EvalConfig):
    """The synthetic evaluation knobs (:class:`clerk.memory.EvalConfig`) plus LoCoMo's own.

    Attributes:
        budget: ledger slots B of the ledger systems on LoCoMo (``--budget``); default the
            synthetic budget, :data:`DEFAULT_BUDGET`, so the trained policy sees the budget it
            was trained with.
        summary_k: summaries the ``summary-rag`` view retrieves per question.
        ledger: ``open`` (a format-2 ledger whose subjects are the conversation's two speakers,
            keys coined by the writer, SPEC §1.7) or ``closed`` (the synthetic benchmark's one
            subject and catalogue, for a policy trained on the closed world only).
    """

    budget: int = DEFAULT_BUDGET
    summary_k: int = DEFAULT_SUMMARY_K
    ledger: str = DEFAULT_LEDGER
    # No LoCoMo system shows a window or rag view; metrics.json records these two as it always has.
    window_k: int = 3
    rag_k: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("budget", "summary_k"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UserError(f"{name} must be an int >= 1, got {value!r}")
        if self.ledger not in LEDGER_FORMS:
            raise UserError(f"ledger must be one of {', '.join(LEDGER_FORMS)}, got {self.ledger!r}")
        if self.reader != "mc":
            raise UserError(f"reader must be 'mc' on LoCoMo (no gold ledger for the rule reader), got {self.reader!r}")


def session_record(session: Session) -> dict[str, Any]:
    """A LoCoMo session in the form memory systems read (``index``, ``turns`` of ``role``/``content``).

    Speakers' names are the roles, so a ledger writer sees who said what and can use the names
    as subjects. The session's date is carried as a leading ``date`` pseudo-turn, which
    ``prompts.render_turns`` renders exactly as its ``date=`` argument would: every system that
    renders turns (the ledger writers' CONSOLIDATE transcript, the ``full`` view) shows the date
    with no LoCoMo-specific code in the systems. ``date`` and ``summary`` are kept as fields too
    (``summary-rag`` reads them).

    >>> from clerk.prompts import render_turns
    >>> s = Session(2, "8 May 2023", [{"speaker": "Ana", "text": "Hi"}], "Ana said hi.", "session_3")
    >>> render_turns(session_record(s)["turns"]) == render_turns(as_chat_turns(s), date=s.date)
    True
    >>> render_turns(session_record(s)["turns"])
    'date: 8 May 2023\\nAna: Hi'
    """
    turns = as_chat_turns(session)
    # the turns' dialogue ids, where the file gives every turn one (the evidence oracle reads them)
    ids = [str(t.get("dia_id") or "") for t in session.turns]
    ids = ids if all(ids) else []
    if session.date:
        turns = [{"role": DATE_ROLE, "content": session.date}, *turns]
        ids = [""] + ids if ids else []
    return {"index": session.index, "session_id": session.session_id, "date": session.date,
            "summary": session.summary, "turns": turns, "turn_ids": ids, "questions": []}


def check_system_inputs(conversations: Sequence[Conversation], systems: dict[str, Any]) -> None:
    """Every session carries the data each system reads besides its turns (``session_fields``, e.g.
    summary-rag's summaries): data that cannot serve a configured system is an error, not an
    empty memory that scores like one.

    Raises:
        UserError: naming the system, the sessions without the field and the file's field.
    """
    from clerk.locomo.locomo10 import SOURCE_LOCAL, SUMMARY_FIELDS
    from clerk.locomo.percena import SOURCE_PERCENA

    file_fields = {(SOURCE_LOCAL, "summary"): SUMMARY_FIELDS, (SOURCE_PERCENA, "summary"): "'haystack_session_summaries'",
                   (SOURCE_LOCAL, "turn_ids"): "'dia_id' on every turn", (SOURCE_PERCENA, "turn_ids"): "turn ids"}
    total = sum(len(conv.sessions) for conv in conversations)
    for name, system in systems.items():
        for field in getattr(system, "session_fields", ()):
            missing = [(conv, session) for conv in conversations for session in conv.sessions
                       if not str(session_record(session).get(field) or "").strip()]
            if not missing:
                continue
            shown = ", ".join(f"{conv.conv_id} {session.session_id}" for conv, session in missing[:4])
            more = ", ..." if len(missing) > 4 else ""
            expected = file_fields.get((missing[0][0].source, field), repr(field))
            raise UserError(
                f"{name} reads each session's {field}, but {len(missing)} of {total} sessions have none "
                f"({shown}{more}): expected field {expected} ({missing[0][0].source}); use a file that has "
                f"them or leave {name} out of --systems (config locomo.systems)"
            )


def conversation_timeline(conv: Conversation, budget: int, ledger: str = DEFAULT_LEDGER) -> dict[str, Any]:
    """A conversation as the runner's persona record: its sessions (no questions inside them:
    LoCoMo questions are asked after the whole conversation) and the ledger budget. With the
    ``open`` ledger it is a format-2 record whose form has the two speakers as subjects (as the
    open world's synthetic conversations, SPEC §2.9), so writers file each fact under who it is
    about; ``closed`` keeps the synthetic benchmark's one-subject catalogue ledger.

    >>> conv = Conversation("conv-1", ("Ana", "Bo"), [], [], "locomo10")
    >>> conversation_timeline(conv, 24, "open")["form"]["subjects"], "form" in conversation_timeline(conv, 12)
    (['Ana', 'Bo'], False)
    """
    record = {"name": conv.conv_id, "split": "locomo", "seed": 0, "budget": budget,
              "speakers": list(conv.speakers), "sessions": [session_record(s) for s in conv.sessions]}
    if ledger == "closed":
        return record
    form = LedgerForm(tuple(normalise_subject(name) for name in conv.speakers))
    return {"format": 2, "form": form.to_json(), **record}


def question_time(conv: Conversation) -> dict[str, Any]:
    """The pseudo-session the questions are asked in: after the last session, with no turns."""
    return {"index": len(conv.sessions), "turns": [], "questions": [question_record(q) for q in conv.questions]}


def question_record(q: Question) -> dict[str, Any]:
    """The question dict the MC reader scores (``question``, ``options``, ``correct``)."""
    return {"question": q.question, "options": list(q.options), "correct": q.correct, "id": q.question_id,
            "evidence": list(q.evidence)}


def mean_or_none(values: Sequence[float]) -> float | None:
    """Mean, or None for no values.

    >>> mean_or_none([1, 0, 1, 1]), mean_or_none([])
    (0.75, None)
    """
    return math.fsum(values) / len(values) if values else None


def _summarize_system(system: Any, rows: list[dict], writes: list[Any], finals: list[Any],
                      write_s: float, read_s: float) -> dict[str, Any]:
    """The ``metrics.system`` record of one system (data fields are filled in by the caller)."""
    answerable = [r for r in rows if not r["adversarial"]]
    adversarial = [r for r in rows if r["adversarial"]]
    out: dict[str, Any] = {
        "version": system.version,
        "is_ledger": system.is_ledger,
        "reader": {"method": "mc", "model": system.reader_model()},
        "n_questions": len(rows),
        "n": len(answerable),
        "accuracy": mean_or_none([float(r["correct"]) for r in answerable]),
        "accuracy_by_category": {
            c: mean_or_none([float(r["correct"]) for r in rows if r["category"] == c]) for c in ANSWERABLE
        },
        "n_by_category": {c: sum(1 for r in rows if r["category"] == c) for c in ANSWERABLE},
        "adversarial_accuracy": mean_or_none([float(r["correct"]) for r in adversarial]),
        "n_adversarial": len(adversarial),
        "abstention_rate": mean_or_none([float(r["abstained"]) for r in answerable]),
        "read_tokens_mean": mean_or_none([float(r["read_tokens"]) for r in rows]),
        "truncated_rate": mean_or_none([float(r["truncated"]) for r in rows]),
        "wall_seconds": float(write_s + read_s),
        "write_seconds": float(write_s),
        "read_seconds": float(read_s),
        "n_writes": len(writes),
        "write_tokens_mean": None, "n_ops": None, "invalid_op_rate": None, "invalid_reasons": None,
        "parse_failure_rate": None, "occupied_mean": None,
    }
    if system.is_ledger:
        from clerk import ledger as L
        from clerk.evaluate.programs import invalid_reasons

        n_ops = sum(len(w.program or []) for w in writes)
        out.update(
            write_tokens_mean=mean_or_none([float(w.write_tokens) for w in writes]),
            n_ops=n_ops,
            invalid_op_rate=sum(w.n_invalid for w in writes) / n_ops if n_ops else 0.0,
            invalid_reasons=invalid_reasons(w.verdicts for w in writes),
            parse_failure_rate=mean_or_none([float(w.parse_failed) for w in writes]),
            occupied_mean=mean_or_none([float(len(L.occupied(system.ledger(state)))) for state in finals]),
        )
    return out


def _load_models(systems: dict[str, Any], runtime: Runtime) -> None:
    """Load the tokenizer and every reader and writer model up front, so wall times exclude loading."""
    runtime.tokenizer  # noqa: B018
    for system in systems.values():
        runtime.model(system.reader_model())
        if getattr(system, "writer_kind", None) is not None:
            runtime.model(system.writer_kind)


def _write_all(timelines: list[dict], systems: dict[str, Any], progress: bool):
    """Every system's writer over every conversation's sessions (``clerk.evaluate.replay``).

    Returns:
        ``(finals, writes, write_seconds, programs)``: system -> conversation -> final state, system
        -> write results in order, system -> seconds spent writing, the model writers' ``programs``
        records.
    """
    from clerk.evaluate.programs import program_row
    from clerk.evaluate.runner import replay
    from clerk.evaluate.teacher import is_model_writer

    finals = {name: {tl["name"]: system.init_state(tl) for tl in timelines} for name, system in systems.items()}
    writes: dict[str, list[Any]] = {name: [] for name in systems}
    programs: list[dict] = []

    def wrote(name, system, tl, session, before, result):
        finals[name][tl["name"]] = result.state
        writes[name].append(result)
        if is_model_writer(system):
            programs.append(program_row(name, tl["name"], session["index"], result))

    # No session holds questions, so replay only writes; its answer callback is never called.
    write_seconds = replay(timelines, systems, lambda *a: None, wrote, progress)
    return finals, writes, write_seconds, programs


def _prediction(q: Question, conv: Conversation, name: str, reader: str, chosen: int, read_tokens: int,
                truncated: bool) -> dict[str, Any]:
    """One ``predictions`` row (:data:`LOCOMO_SCHEMAS`)."""
    return {
        "question_id": q.question_id, "conversation": conv.conv_id, "category": q.category,
        "raw_label": q.raw_label, "adversarial": bool(q.adversarial), "system": name, "reader": reader,
        "chosen": int(chosen), "correct_index": q.correct, "correct": int(chosen) == q.correct,
        "read_tokens": read_tokens, "truncated": bool(truncated), "abstained": q.options[chosen] == UNKNOWN_ANSWER,
    }


def _read_all(name: str, system: Any, conversations: Sequence[Conversation], timelines: list[dict],
              finals: dict[str, Any], runtime: Runtime, view_tokens: dict[str, int], progress: bool) -> list[dict]:
    """Ask one system every question of every conversation against its final memory (MC reader).

    ``view_tokens`` caches token counts by view text across systems (the full view recurs for
    every question of a conversation).
    """
    from tqdm.auto import tqdm

    from clerk.evaluate.runner import mc_choose

    reader = system.reader_model()
    rows: list[dict] = []
    for conv, tl in tqdm(list(zip(conversations, timelines)), desc=f"read {name}", unit="conv",
                         file=sys.stderr, disable=not progress):
        if not conv.questions:
            continue
        asked = question_time(conv)
        state = finals[tl["name"]]
        views = [system.view(state, tl, asked, qd) for qd in asked["questions"]]
        chosen = mc_choose(runtime.reader(), (name, tl["name"]), asked["questions"], views)
        for q, view, c in zip(conv.questions, views, chosen):
            if view.text not in view_tokens:
                view_tokens[view.text] = runtime.count_tokens(view.text)
            rows.append(_prediction(q, conv, name, reader, c, view_tokens[view.text], view.truncated))
    return rows


def evaluate_locomo(
    conversations: Sequence[Conversation],
    system_names: Sequence[str],
    runtime: Runtime,
    registry: Any = None,
    progress: bool = True,
) -> tuple[list[dict], dict[str, dict], list[dict]]:
    """Run memory systems over LoCoMo conversations and score every question with the MC reader.

    1. Each conversation becomes a persona record (:func:`conversation_timeline`); the synthetic
       runner's ``clerk.evaluate.replay`` drives every system's writer over its sessions in
       order, batched across conversations at the same session index (ledger systems start from
       an empty ledger of ``runtime.config.budget`` slots and apply their programs leniently).
    2. After the last session, every question of the conversation is asked once against the
       system's final memory (:func:`question_time`): its view is built and scored by the MC
       log-likelihood reader (``clerk.evaluate.mc_choose``). Questions with the same view text
       share one encoded prompt prefix: for ``full`` (one view per conversation, left-truncated
       to the reader's context) the conversation is encoded once and its KV cache reused for
       every question.

    Args:
        conversations: the conversations, each holding only the questions to ask.
        system_names: registry keys, e.g. :data:`clerk.locomo.data.LOCOMO_SYSTEMS`.
        runtime: a :class:`clerk.memory.Runtime` whose config is a :class:`LocomoEvalConfig`.
        registry: where names are looked up; default the memory registry.
        progress: show progress bars on stderr.

    Returns:
        (prediction rows, per-system summaries, the model writers' ``programs`` records) following
        :data:`LOCOMO_SCHEMAS` and ``clerk.evaluate.schemas.SCHEMAS`` (the summaries' data fields
        ``source``, ``data_sha256``, ``subset_size``, ``subset_seed`` are left to the caller).

    Raises:
        UserError: unknown systems or a missing adapter (``clerk.evaluate.make_systems``), or
            sessions without the data a system reads (:func:`check_system_inputs`).
    """
    import time

    from clerk.evaluate.runner import make_systems
    from clerk.memory import MEMORY_REGISTRY

    cfg = runtime.config
    assert isinstance(cfg, LocomoEvalConfig), "runtime.config must be a LocomoEvalConfig"
    systems = make_systems(list(system_names), runtime, registry if registry is not None else MEMORY_REGISTRY)
    check_system_inputs(conversations, systems)
    _load_models(systems, runtime)
    timelines = [conversation_timeline(conv, cfg.budget, cfg.ledger) for conv in conversations]
    finals, writes, write_seconds, programs = _write_all(timelines, systems, progress)

    predictions: list[dict] = []
    summaries: dict[str, dict] = {}
    view_tokens: dict[str, int] = {}  # the full view recurs for every question of a conversation
    for name, system in systems.items():
        start = time.perf_counter()
        rows = _read_all(name, system, conversations, timelines, finals[name], runtime, view_tokens, progress)
        read_s = time.perf_counter() - start
        predictions += rows
        summaries[name] = _summarize_system(system, rows, writes[name], list(finals[name].values()),
                                            write_seconds[name], read_s)
    return predictions, summaries, programs


def transcript_tokens(conv: Conversation, runtime: Runtime) -> int:
    """Tokens of the whole conversation as the ``full`` view renders it, before any truncation."""
    from clerk.memory.text import session_lines

    lines = [line for s in conv.sessions for line in session_lines(session_record(s))]
    return runtime.count_tokens("\n".join(lines))


def write_jsonl(path: Path, kind: str, rows: list[dict]) -> None:
    """Rows as JSON lines, each validated against its :data:`LOCOMO_SCHEMAS` kind first."""
    from clerk.atomic import atomic_write
    from clerk.evaluate.schemas import validate_record

    with atomic_write(path) as fh:  # whole or absent (clerk/atomic.py)
        for row in rows:
            validate_record(kind, row, LOCOMO_SCHEMAS)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
