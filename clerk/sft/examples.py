"""SFT rows from training timelines: the examples, the mixture and the validation split (SPEC §4).

Two tasks, both built with :mod:`clerk.prompts` (the prompts training and evaluation share):

* CONSOLIDATE, one example per session of every persona: (serialized ``ledger_before``, the
  session's user lines) -> the gold program in the program language (``clerk.program``).
* ANSWER, drawn from the sessions' questions over every kind of view the reader will read
  (``clerk.memory.views``: the reader's ledger view of ``ledger_before``, i.e. the ledger at
  question time, and the transcript baselines' views), question -> the gold answer text.

Columns: ``messages`` (list of ``{role, content}``; the assistant turn is the target, so TRL's
``assistant_only_loss`` trains on it alone), ``task`` (``consolidate`` | ``answer``), ``persona``,
``session``, ``view`` (the view kind of an ANSWER row, empty otherwise).

**Validation split by persona.** ``round_half_up(val_fraction * personas)`` personas, at least one
when ``val_fraction > 0`` and at most all but one, are drawn with a seeded ``random.Random`` from
the sorted persona names; every example of a persona lands in the same split.

**Mixture ratio.** Within each split, ``n_answer = round_half_up(answer_ratio * n_consolidate)``
ANSWER rows, shared out over the view kinds by ``answer_views`` weights (largest remainders). A
row is one view with every question of its session that sees that view, asked in turn
(``prompts.answer_turns``: the view is trained on once for all of them). Each kind's rows are
drawn from that split's pool of (session, view of that kind) groups (in file order): ``n // pool`` full passes over the pool, then a seeded sample without replacement for
the remainder, so a question is repeated only when the ratio asks for more answers than there
are questions. An empty pool gives no answer examples (the stats say so). ``evict_weight``
repeats each CONSOLIDATE example whose gold program evicts that many times (1 = no
oversampling), so the rarest decision gets more of the training budget.

**Question wording.** With ``reworded_questions`` p > 0 each question of an ANSWER row is asked,
with probability p, in a wording of the reader's training-only question set
(``clerk/phrasing/reader_questions.yaml``, :mod:`clerk.generator.wordings`) for its predicate and
type, drawn per question, so a (session, view) group drawn twice is asked in two wordings. The
answer and the view do not change; CONSOLIDATE rows never hold a question.

**Determinism.** Every random choice uses its own ``random.Random`` seeded from the string
``"clerk.sft:<purpose>:<seed>"`` (string seeds are hashed with SHA-512 by ``random``, so
``PYTHONHASHSEED`` plays no part). Each split's fingerprint is the SHA-256 of its rows, so
``save_to_disk`` writes byte-identical files for the same timelines and arguments.

    python -m pytest tests/test_sft.py -q
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from clerk import ledger as L
from clerk import prompts
from clerk.errors import UserError
from clerk.form import LedgerForm, timeline_form
from clerk.program import render_program
from clerk.sft.config import SFTSection

TASKS = ("consolidate", "answer")
SPLITS = ("train", "validation")
#: Only training timelines may become SFT data (test personas and phrasings must stay unseen).
SOURCE_SPLIT = "train"
STATS_FILE = "sft_stats.json"


@dataclass
class SFTDataConfig:
    """Knobs of the SFT dataset builder.

    Attributes:
        seed: base seed of the persona split, the answer sampling and the shuffles.
        answer_ratio: ANSWER examples per CONSOLIDATE example in each split (>= 0; 0 = none).
        val_fraction: share of personas held out for validation, in [0, 1).
        answer_views: view kind -> weight of its share of the ANSWER examples
            (the registry's ``MEMORY_REGISTRY.view_kinds()``; weights > 0).
        evict_weight: copies of each CONSOLIDATE example whose gold program has an EVICT (>= 1).
        reworded_questions: share of the ANSWER rows' questions asked in a wording of the
            training-only question set (``clerk.generator.wordings``), in [0, 1]; 0 = none.
    """

    seed: int
    answer_ratio: float = SFTSection.answer_ratio  # the sft section's defaults (one default each)
    val_fraction: float = SFTSection.val_fraction
    answer_views: dict[str, float] = field(default_factory=lambda: {"ledger": 1.0})
    evict_weight: int = 1
    reworded_questions: float = SFTSection.reworded_questions

    def __post_init__(self) -> None:
        if type(self.seed) is not int:
            raise UserError(f"seed must be an int, got {self.seed!r}")
        if not _is_number(self.answer_ratio) or not math.isfinite(self.answer_ratio) or self.answer_ratio < 0:
            raise UserError(f"answer_ratio must be a finite number >= 0, got {self.answer_ratio!r}")
        if not _is_number(self.val_fraction) or not 0 <= self.val_fraction < 1:
            raise UserError(f"val_fraction must be a number in [0, 1), got {self.val_fraction!r}")
        from clerk.memory import MEMORY_REGISTRY

        kinds = MEMORY_REGISTRY.view_kinds()
        if not self.answer_views or any(k not in kinds for k in self.answer_views):
            raise UserError(f"answer_views must map view kinds ({', '.join(kinds)}) to weights, got {self.answer_views!r}")
        if any(not _is_number(w) or not math.isfinite(w) or w <= 0 for w in self.answer_views.values()):
            raise UserError(f"answer_views weights must be numbers > 0, got {self.answer_views!r}")
        if type(self.evict_weight) is not int or self.evict_weight < 1:
            raise UserError(f"evict_weight must be an int >= 1, got {self.evict_weight!r}")
        if not _is_number(self.reworded_questions) or not 0 <= self.reworded_questions <= 1:
            raise UserError(f"reworded_questions must be a number in [0, 1], got {self.reworded_questions!r}")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def round_half_up(x: float) -> int:
    """Round to the nearest int, halves up (not Python's round-half-even).

    >>> [round_half_up(x) for x in (0.5, 1.5, 2.5, 2.49)]
    [1, 2, 3, 2]
    """
    return math.floor(x + 0.5)


def derived_rng(seed: int, purpose: str) -> random.Random:
    """The RNG for one ``purpose`` of the builder, derived from the base seed.

    >>> derived_rng(7, "split").random() == derived_rng(7, "split").random()
    True
    >>> derived_rng(7, "split").random() == derived_rng(7, "shuffle:train").random()
    False
    """
    return random.Random(f"clerk.sft:{purpose}:{seed}")


def validation_count(n_personas: int, val_fraction: float) -> int:
    """How many of ``n_personas`` go to validation: rounded half up, >= 1 when the fraction is
    positive, and never all of them (training needs at least one persona).

    >>> [validation_count(n, 0.1) for n in (1, 2, 10, 15, 100)]
    [0, 1, 1, 2, 10]
    >>> validation_count(10, 0.0)
    0
    """
    k = round_half_up(val_fraction * n_personas)
    if val_fraction > 0:
        k = max(k, 1)
    return max(0, min(k, n_personas - 1))


def split_personas(names: list[str], seed: int, val_fraction: float) -> dict[str, str]:
    """Map each persona name to ``train`` or ``validation`` (seeded, independent of input order).

    >>> split_personas(["Ari", "Bo", "Cy"], seed=1, val_fraction=0.3)
    {'Ari': 'validation', 'Bo': 'train', 'Cy': 'train'}
    """
    ordered = sorted(names)
    held_out = set(derived_rng(seed, "split").sample(ordered, validation_count(len(ordered), val_fraction)))
    return {name: "validation" if name in held_out else "train" for name in ordered}


def example_chars(messages: list[dict[str, str]]) -> int:
    """Characters of an example: the sum of its message contents (chat-template tokens excluded).

    >>> example_chars([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok!"}])
    5
    """
    return sum(len(m["content"]) for m in messages)


def consolidate_example(timeline: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    """The CONSOLIDATE row of one session: serialized ledger before + the writer's transcript
    (``prompts.policy_transcript``) -> gold program (the open language under an open timeline's form)."""
    before = session["ledger_before"]
    messages = prompts.consolidate_messages(
        L.serialize(before),
        prompts.policy_transcript(session["turns"]),
        render_program(before, session["gold_ops"], session["index"], form=timeline_form(timeline)),
    )
    return {"messages": messages, "task": "consolidate", "persona": timeline["name"], "session": session["index"]}


def answer_example(timeline: dict[str, Any], session: dict[str, Any], questions: list[dict[str, Any]], view: str,
                   wording: Any = None) -> dict[str, Any]:
    """The ANSWER row of one view: its questions in turn, each -> the gold answer (``prompts.answer_turns``).
    ``wording``: a function (question, persona name) -> the question's text (default: its own)."""
    ask = wording or (lambda q, name: q["question"])
    messages = prompts.answer_turns(view, [(ask(q, timeline["name"]), q["answer"]) for q in questions])
    return {"messages": messages, "task": "answer", "persona": timeline["name"], "session": session["index"]}


def check_timelines(timelines: list[dict[str, Any]]) -> None:
    """Check what the builder relies on: unique persona names from the training split, sessions
    with valid ledgers, and gold programs that apply strictly (giving ``ledger_after`` if present).

    Raises:
        UserError: naming the persona, the session and what is wrong.
    """
    if not isinstance(timelines, list) or not timelines:
        raise UserError("timelines: expected a non-empty list of personas, got none")
    seen: set[str] = set()
    for n, tl in enumerate(timelines):
        name = tl.get("name") if isinstance(tl, dict) else None
        if not isinstance(name, str) or not name:
            raise UserError(f"persona {n}: 'name' must be a non-empty string, got {name!r}")
        if name in seen:
            raise UserError(f"persona {name!r}: name repeated (the validation split is by persona)")
        seen.add(name)
        split = tl.get("split", SOURCE_SPLIT)
        if split != SOURCE_SPLIT:
            raise UserError(f"persona {name!r}: split must be {SOURCE_SPLIT!r} (SFT uses training timelines only), got {split!r}")
        if not isinstance(tl.get("sessions"), list):
            raise UserError(f"persona {name!r}: 'sessions' must be a list")
        for session in tl["sessions"]:
            _check_session(name, session, timeline_form(tl))


def _check_session(name: str, session: Any, form: LedgerForm | None = None) -> None:
    where = f"persona {name!r} session {session.get('index') if isinstance(session, dict) else '?'}"
    for key, typ in (("index", int), ("turns", list), ("questions", list), ("gold_ops", list), ("ledger_before", list)):
        if not isinstance(session, dict) or key not in session:
            raise UserError(f"{where}: missing field {key!r}")
        if not isinstance(session[key], typ) or isinstance(session[key], bool):
            raise UserError(f"{where}: field {key!r} must be {typ.__name__}, got {type(session[key]).__name__}")
    try:
        L.validate_ledger(session["ledger_before"], form)
        after, _ = L.reduce(session["ledger_before"], session["gold_ops"], session["index"], strict=True, form=form)
    except ValueError as err:  # InvalidOpError is a ValueError too
        raise UserError(f"{where}: {err}") from None
    if "ledger_after" in session and session["ledger_after"] != after:
        raise UserError(f"{where}: ledger_after is not the strict reduce of ledger_before with gold_ops")
    for q in session["questions"]:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not isinstance(q.get("answer"), str):
            raise UserError(f"{where}: every question needs string 'question' and 'answer' fields, got {q!r}")


def _answer_draw(pool: list[Any], n: int, rng: random.Random) -> list[Any]:
    """``n`` items from ``pool``: full passes, then a sample without replacement for the rest.

    >>> _answer_draw(["a", "b", "c"], 7, random.Random(0))[:6]
    ['a', 'b', 'c', 'a', 'b', 'c']
    >>> _answer_draw([], 3, random.Random(0))
    []
    """
    if not pool:
        return []
    passes, rest = divmod(n, len(pool))
    return pool * passes + rng.sample(pool, rest)


def view_shares(n: int, weights: dict[str, float]) -> dict[str, int]:
    """Split ``n`` examples over view kinds in proportion to ``weights`` (largest remainders; ties
    by the order of ``weights``).

    >>> view_shares(10, {"ledger": 3, "full": 1, "window": 1})
    {'ledger': 6, 'full': 2, 'window': 2}
    """
    total = sum(weights.values())
    exact = {k: n * w / total for k, w in weights.items()}
    out = {k: math.floor(x) for k, x in exact.items()}
    order = sorted(weights, key=lambda k: -(exact[k] - out[k]))
    for k in order[: n - sum(out.values())]:
        out[k] += 1
    return out


def _wording(config: SFTDataConfig, purpose: str) -> Any:
    """The question wording of one split's ANSWER rows of one view kind: None (the catalogue's)
    when ``reworded_questions`` is 0, so such a build draws nothing more than before; else a
    share of the questions reworded from the training-only set, with an RNG of its own."""
    if config.reworded_questions == 0:
        return None
    from clerk.generator.wordings import load_question_set

    questions, rng = load_question_set(), derived_rng(config.seed, purpose)
    return lambda q, name: questions.reword(q, name, config.reworded_questions, rng)


def build_rows(timelines: list[dict[str, Any]], config: SFTDataConfig, runtime: Any = None) -> tuple[dict[str, list[dict]], dict[str, Any]]:
    """The shuffled rows of each split and the numbers behind them (no ``datasets`` needed).

    Args:
        timelines: training timelines.
        config: the builder's knobs.
        runtime: a :class:`~clerk.memory.Runtime` (tokenizer, window/rag settings) for transcript
            view kinds; not needed when ``answer_views`` holds only ``ledger``.

    Returns:
        (``{"train": rows, "validation": rows}``, info) where info holds the persona assignment
        and each split's question-pool size per view kind.

    Raises:
        UserError: malformed timelines (see :func:`check_timelines`), or transcript view kinds
            without a runtime.
    """
    from clerk.memory.views import question_views

    check_timelines(timelines)
    transcript = [kind for kind in config.answer_views if kind != "ledger"]
    if transcript and runtime is None:
        raise UserError(f"answer view kinds {transcript} are transcript views, cut to the reader's token budget: "
                        "they need a tokenizer (--tokenizer DIR, a model directory)")
    assignment = split_personas([tl["name"] for tl in timelines], config.seed, config.val_fraction)
    views = list(question_views(timelines, list(config.answer_views), runtime))
    rows: dict[str, list[dict]] = {}
    pools: dict[str, dict[str, int]] = {}
    for split in SPLITS:
        mine = [tl for tl in timelines if assignment[tl["name"]] == split]  # file order
        consolidate = [consolidate_example(tl, s) for tl in mine for s in tl["sessions"]
                       for _ in range(config.evict_weight if any(op["op"] == "EVICT" for op in s["gold_ops"]) else 1)]
        shares = view_shares(round_half_up(config.answer_ratio * len(consolidate)), config.answer_views)
        examples, pools[split] = consolidate, {}
        for kind, n in shares.items():
            pool = [(tl, s, text, qs) for k, tl, s, text, qs in views if k == kind and assignment[tl["name"]] == split]
            drawn = _answer_draw(pool, n, derived_rng(config.seed, f"answers:{split}:{kind}"))
            wording = _wording(config, f"reword:{split}:{kind}")
            examples = examples + [{**answer_example(tl, s, qs, text, wording), "view": kind} for tl, s, text, qs in drawn]
            pools[split][kind] = len(pool)
        examples = [{"view": "", **row} if "view" not in row else row for row in examples]
        derived_rng(config.seed, f"shuffle:{split}").shuffle(examples)
        rows[split] = examples
    return rows, {"assignment": assignment, "question_pool": pools}
