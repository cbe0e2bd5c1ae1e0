"""Training timelines -> a chat-messages SFT dataset (Hugging Face ``datasets``), SPEC §4.

Two tasks, both built with :mod:`clerk.prompts` (the prompts training and evaluation share):

* CONSOLIDATE, one example per session of every persona: (serialized ``ledger_before``, session
  index, transcript) -> the gold program as compact JSON (``ledger.dumps``).
* ANSWER, drawn from the sessions' questions: (serialized ``ledger_before``, i.e. the ledger at
  question time, question) -> the gold answer text.

Columns: ``messages`` (list of ``{role, content}``; the assistant turn is the target, so TRL's
``assistant_only_loss`` trains on it alone), ``task`` (``consolidate`` | ``answer``), ``persona``,
``session``.

**Validation split by persona.** ``round_half_up(val_fraction * personas)`` personas, at least one
when ``val_fraction > 0`` and at most all but one, are drawn with a seeded ``random.Random`` from
the sorted persona names; every example of a persona lands in the same split.

**Mixture ratio.** Within each split, ``n_answer = round_half_up(answer_ratio * n_consolidate)``.
Answer examples are drawn from that split's pool of questions (all questions of its personas, in
file order): ``n_answer // pool`` full passes over the pool, then a seeded sample without
replacement for the remainder, so a question is repeated only when the ratio asks for more
answers than there are questions. An empty pool gives no answer examples (the stats say so).

**Determinism.** Every random choice uses its own ``random.Random`` seeded from the string
``"clerk.sft:<purpose>:<seed>"`` (string seeds are hashed with SHA-512 by ``random``, so
``PYTHONHASHSEED`` plays no part). Each split's fingerprint is the SHA-256 of its rows, so
``save_to_disk`` writes byte-identical files for the same timelines and arguments.

    clerk build-sft --timelines results/data/train_137.jsonl --seed 137 --out results/sft/137
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clerk import ledger as L
from clerk import prompts
from clerk.errors import UserError

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
    """

    seed: int
    answer_ratio: float = 0.5
    val_fraction: float = 0.1

    def __post_init__(self) -> None:
        if type(self.seed) is not int:
            raise UserError(f"seed must be an int, got {self.seed!r}")
        if not _is_number(self.answer_ratio) or not math.isfinite(self.answer_ratio) or self.answer_ratio < 0:
            raise UserError(f"answer_ratio must be a finite number >= 0, got {self.answer_ratio!r}")
        if not _is_number(self.val_fraction) or not 0 <= self.val_fraction < 1:
            raise UserError(f"val_fraction must be a number in [0, 1), got {self.val_fraction!r}")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# --------------------------------------------------------------------------- small pure helpers


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


# --------------------------------------------------------------------------- examples


def consolidate_example(timeline: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    """The CONSOLIDATE row of one session: ledger before + transcript -> gold program."""
    messages = prompts.consolidate_messages(
        L.serialize(session["ledger_before"]),
        session["index"],
        prompts.render_turns(session["turns"]),
        L.dumps(session["gold_ops"]),
    )
    return {"messages": messages, "task": "consolidate", "persona": timeline["name"], "session": session["index"]}


def answer_example(timeline: dict[str, Any], session: dict[str, Any], question: dict[str, Any]) -> dict[str, Any]:
    """The ANSWER row of one question: the ledger at question time + question -> gold answer."""
    messages = prompts.answer_messages(L.serialize(session["ledger_before"]), question["question"], question["answer"])
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
            _check_session(name, session)


def _check_session(name: str, session: Any) -> None:
    where = f"persona {name!r} session {session.get('index') if isinstance(session, dict) else '?'}"
    for key, typ in (("index", int), ("turns", list), ("questions", list), ("gold_ops", list), ("ledger_before", list)):
        if not isinstance(session, dict) or key not in session:
            raise UserError(f"{where}: missing field {key!r}")
        if not isinstance(session[key], typ) or isinstance(session[key], bool):
            raise UserError(f"{where}: field {key!r} must be {typ.__name__}, got {type(session[key]).__name__}")
    try:
        L.validate_ledger(session["ledger_before"])
        after, _ = L.reduce(session["ledger_before"], session["gold_ops"], session["index"], strict=True)
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


def build_rows(timelines: list[dict[str, Any]], config: SFTDataConfig) -> tuple[dict[str, list[dict]], dict[str, Any]]:
    """The shuffled rows of each split and the numbers behind them (no ``datasets`` needed).

    Returns:
        (``{"train": rows, "validation": rows}``, info) where info holds the persona assignment
        and each split's question-pool size.

    Raises:
        UserError: malformed timelines (see :func:`check_timelines`).
    """
    check_timelines(timelines)
    assignment = split_personas([tl["name"] for tl in timelines], config.seed, config.val_fraction)
    rows: dict[str, list[dict]] = {}
    pools: dict[str, int] = {}
    for split in SPLITS:
        mine = [tl for tl in timelines if assignment[tl["name"]] == split]  # file order
        consolidate = [consolidate_example(tl, s) for tl in mine for s in tl["sessions"]]
        pool = [(tl, s, q) for tl in mine for s in tl["sessions"] for q in s["questions"]]
        n_answer = round_half_up(config.answer_ratio * len(consolidate))
        drawn = _answer_draw(pool, n_answer, derived_rng(config.seed, f"answers:{split}"))
        examples = consolidate + [answer_example(tl, s, q) for tl, s, q in drawn]
        derived_rng(config.seed, f"shuffle:{split}").shuffle(examples)
        rows[split], pools[split] = examples, len(pool)
    return rows, {"assignment": assignment, "question_pool": pools}


# --------------------------------------------------------------------------- datasets


def features():
    """The ``datasets.Features`` of every split."""
    from datasets import Features, List, Value

    message = {"role": Value("string"), "content": Value("string")}
    return Features({"messages": List(message), "task": Value("string"), "persona": Value("string"),
                     "session": Value("int64")})


def rows_fingerprint(split: str, rows: list[dict[str, Any]]) -> str:
    """A content hash standing in for ``datasets``' fingerprint (which would otherwise be random
    or depend on object state), so ``state.json`` is the same on every run.

    >>> rows_fingerprint("train", []) == rows_fingerprint("train", [])
    True
    """
    digest = hashlib.sha256(split.encode())
    for row in rows:
        digest.update(L.dumps(row).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def to_dataset_dict(rows: dict[str, list[dict[str, Any]]]):
    """Wrap the rows of each split in a ``datasets.DatasetDict`` with a content fingerprint."""
    import pyarrow as pa
    from datasets import Dataset, DatasetDict, DatasetInfo, NamedSplit

    feats = features()
    out = {}
    for split in SPLITS:
        table = pa.Table.from_pylist(rows[split], schema=feats.arrow_schema)
        out[split] = Dataset(table, info=DatasetInfo(features=feats), split=NamedSplit(split),
                             fingerprint=rows_fingerprint(split, rows[split]))
    return DatasetDict(out)


def build_sft(timelines: list[dict[str, Any]], seed: int, answer_ratio: float = 0.5, val_fraction: float = 0.1):
    """Build the SFT ``DatasetDict`` (splits ``train`` / ``validation``) from training timelines.

    Args:
        timelines: persona timelines in the SPEC format (all from the ``train`` split).
        seed: base seed of the persona split, answer sampling and shuffles.
        answer_ratio: ANSWER examples per CONSOLIDATE example, per split.
        val_fraction: share of personas held out for validation, in [0, 1).

    Returns:
        ``datasets.DatasetDict`` with columns ``messages``, ``task``, ``persona``, ``session``;
        the same inputs always give identical datasets and identical ``save_to_disk`` bytes.

    Raises:
        UserError: a bad argument or malformed timelines.
    """
    rows, _ = build_rows(timelines, SFTDataConfig(seed=seed, answer_ratio=answer_ratio, val_fraction=val_fraction))
    return to_dataset_dict(rows)


def sft_stats(dataset_dict, config: SFTDataConfig, question_pool: dict[str, int] | None = None) -> dict[str, Any]:
    """Counts per split and task and mean characters per example (see :func:`example_chars`).

    Args:
        dataset_dict: the output of :func:`build_sft`.
        config: the configuration it was built with (recorded in the stats).
        question_pool: questions available per split, when known.

    Returns:
        A JSON-ready dict: ``config``, then per split ``personas`` (sorted names), ``examples``,
        ``mean_chars`` and per task ``examples`` / ``mean_chars``.
    """
    out: dict[str, Any] = {"config": asdict(config), "splits": {}}
    for split in SPLITS:
        ds = dataset_dict[split]
        tasks, personas, messages = ds["task"], ds["persona"], ds["messages"]
        chars = [example_chars(m) for m in messages]
        entry: dict[str, Any] = {"personas": sorted(set(personas)), "examples": len(ds), "mean_chars": _mean(chars),
                                 "tasks": {}}
        for task in TASKS:
            mine = [c for c, t in zip(chars, tasks) if t == task]
            entry["tasks"][task] = {"examples": len(mine), "mean_chars": _mean(mine)}
        if question_pool is not None:
            entry["tasks"]["answer"]["question_pool"] = question_pool[split]
        out["splits"][split] = entry
    return out


def _mean(xs: list[int]) -> float:
    return round(sum(xs) / len(xs), 2) if xs else 0.0


def write_sft(dataset_dict, out: str | Path, stats: dict[str, Any]) -> None:
    """Save ``dataset_dict`` to ``out`` (``save_to_disk``) plus ``out/sft_stats.json``.

    An existing ``out`` is replaced only when it is empty or an earlier dataset directory (it has
    ``dataset_dict.json``), so a mistyped path never wipes unrelated files.

    Raises:
        UserError: ``out`` exists and is something else.
    """
    out = Path(out)
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not (out / "dataset_dict.json").is_file()):
            raise UserError(f"--out {out}: exists and is not a dataset directory; expected a new or earlier --out path")
        shutil.rmtree(out)
    dataset_dict.save_to_disk(str(out))
    (out / STATS_FILE).write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- CLI


def main(args: Any) -> None:
    """``clerk build-sft``: read timelines, build the dataset, save it and its stats."""
    from clerk.generator.files import load_timelines

    config = SFTDataConfig(seed=args.seed, answer_ratio=args.answer_ratio, val_fraction=args.val_fraction)
    timelines = load_timelines(args.timelines)
    rows, info = build_rows(timelines, config)
    dataset_dict = to_dataset_dict(rows)
    stats = sft_stats(dataset_dict, config, info["question_pool"])
    stats["timelines_sha256"] = hashlib.sha256(Path(args.timelines).read_bytes()).hexdigest()
    write_sft(dataset_dict, args.out, stats)


def register_cli(sub: Any) -> None:
    """Add the ``build-sft`` verb."""
    p = sub.add_parser(
        "build-sft",
        help="turn training timelines into the chat-messages SFT dataset",
        description="Build the CONSOLIDATE + ANSWER SFT dataset (Hugging Face save_to_disk format, splits "
        "train/validation by persona) from a training timeline file, plus sft_stats.json.",
    )
    # inputs and outputs
    p.add_argument("--timelines", required=True, metavar="FILE", help="training timelines (JSON lines from clerk generate)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (replaced if it is an earlier dataset)")
    # experiment facts
    p.add_argument("--seed", required=True, type=int, help="base seed of the persona split, answer sampling and shuffles")
    p.add_argument("--answer-ratio", type=float, default=0.5, metavar="X",
                   help="ANSWER examples per CONSOLIDATE example in each split (>= 0; 0 = none; default 0.5)")
    p.add_argument("--val-fraction", type=float, default=0.1, metavar="Y",
                   help="share of personas held out for validation, in [0, 1) (default 0.1)")
    p.set_defaults(func=main)
