"""The typed config of a replay run: ``clerk evaluate`` (:class:`EvaluateConfig`) and ``clerk
erasure`` (:class:`ErasureConfig`).

``clerk read-cost`` takes a :class:`ReadCostConfig`. The verbs' flags and their ``--config`` JSON (the workflow's ``evaluate`` block, clerk.wiring) both
become one of these; the runners (:func:`clerk.evaluate.runner.run_evaluate`,
:func:`clerk.evaluate.erasure.run_erasure`) take it and never see ``argparse``. The knobs of the
memory systems and the reader are the :class:`~clerk.memory.EvalConfig` in ``eval``.

    >>> cfg = EvaluateConfig.from_values({"timelines": "t.jsonl", "model": "m", "out": "o",
    ...                                   "systems": ["oracle"], "window_k": 2})
    >>> cfg.systems, cfg.eval.window_k
    (('oracle',), 2)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from clerk.errors import UserError
from clerk.memory import EvalConfig
from clerk.settings import setting

_EVAL_FIELDS = frozenset(f.name for f in dataclasses.fields(EvalConfig))


@dataclass
class EvaluateConfig:
    """Inputs, outputs and knobs of one ``clerk evaluate`` run.

    Attributes:
        timelines: timelines file (JSON lines).
        model: base model directory.
        out: output directory.
        systems: memory systems (registry keys), in order.
        adapter: the policy's LoRA adapter directory; None = none.
        reader_adapter: the separate reader's adapter (``eval.reader_model`` "reader").
        phrasings: phrasings catalogue whose predicate keys constrained writers may ADD; None = built-in.
        threads: torch CPU threads; 0 = torch's default.
        quiet: no progress bars.
        eval: the memory systems' and the reader's knobs.
    """

    timelines: str
    model: str
    out: str
    systems: tuple[str, ...]
    adapter: str | None = None
    reader_adapter: str | None = None
    phrasings: str | None = None
    threads: int = 0
    quiet: bool = False
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        self.systems = tuple(self.systems)
        for name in ("timelines", "model", "out"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise UserError(f"{name} must be a non-empty path, got {value!r}")
        for name in ("adapter", "reader_adapter", "phrasings"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise UserError(f"{name} must be a path or null, got {value!r}")
        if not self.systems or not all(isinstance(s, str) for s in self.systems):
            raise UserError(f"systems must be a non-empty list of memory-system names, got {list(self.systems)!r}")
        if type(self.threads) is not int or self.threads < 0:
            raise UserError(f"threads must be an int >= 0, got {self.threads!r}")
        if type(self.quiet) is not bool:
            raise UserError(f"quiet must be true or false, got {self.quiet!r}")

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> EvaluateConfig:
        """The config of flat option values (a verb's parsed flags and ``--config`` keys): the
        fields of :class:`~clerk.memory.EvalConfig` go to ``eval``, other keys not of this class
        are ignored (e.g. ``func``, ``verb``)."""
        own = {f.name for f in dataclasses.fields(cls)} - {"eval"}
        knobs = {k: v for k, v in values.items() if k in _EVAL_FIELDS}
        for name in ("write_only", "teacher_forced"):
            if name in knobs:
                knobs[name] = tuple(knobs[name])
        return cls(**{k: v for k, v in values.items() if k in own}, eval=EvalConfig(**knobs))

    def record(self) -> dict[str, Any]:
        """The ``config`` field of ``metrics.json``."""
        return {"systems": list(self.systems), "model": self.model, "adapter": self.adapter,
                "reader_adapter": self.reader_adapter, **self.eval.to_dict()}


@dataclass
class ErasureConfig(EvaluateConfig):
    """A ``clerk erasure`` run: an evaluation's config plus the systems also run with forget
    requests not delivered (``ignore_forget``, the naive contrast)."""

    ignore_forget: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        self.ignore_forget = tuple(self.ignore_forget)
        if not all(isinstance(s, str) for s in self.ignore_forget):
            raise UserError(f"ignore_forget must be a list of memory-system names, got {list(self.ignore_forget)!r}")

    def record(self) -> dict[str, Any]:
        rec = super().record()
        return {"systems": rec.pop("systems"), "ignore_forget": list(self.ignore_forget), **rec}


@dataclass
class ReadCostConfig:
    """One ``clerk read-cost`` probe: timelines, the tokenizer that counts, the view sizes."""

    timelines: str
    tokenizer: str
    out: str
    window_k: int = EvalConfig.window_k
    rag_k: int = EvalConfig.rag_k
    quiet: bool = False

    def __post_init__(self) -> None:
        for name in ("timelines", "tokenizer", "out"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise UserError(f"{name} must be a non-empty path, got {value!r}")
        for name in ("window_k", "rag_k"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UserError(f"{name} must be an int >= 1, got {value!r}")

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> ReadCostConfig:
        own = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in own})


# ---- the workflow's `evaluate` and `erasure` sections (clerk.settings) ------------------------

#: The verbs that replay timelines through memory systems with the evaluation's knobs.
_REPLAY = ("evaluate", "erasure")


@dataclass(kw_only=True)
class EvaluateSection:
    """The memory systems of tables 1 and 3, and the reader and writer knobs every replay shares
    (``evaluate``)."""

    systems: tuple[str, ...] = setting(
        ["clerk", "oracle", "prompted-ledger", "full", "window", "rag", "add-only"],
        help="memory systems (registry keys of clerk/memory/), in order", choices="memory_system", min_items=1,
        unique=True, verbs=("evaluate",))
    window_k: int = setting(2, help="sessions shown by the window view", minimum=1,
                            verbs=(*_REPLAY, "build-sft", "read-cost"))
    rag_k: int = setting(6, help="turns retrieved by BM25 for the rag view", minimum=1,
                         verbs=(*_REPLAY, "build-sft", "read-cost"))
    max_new_tokens: int = setting(64, help="generation cap of model writers, tokens", minimum=1,
                                  verbs=(*_REPLAY, "learning-curve"))
    batch_size: int = setting(16, help="prompts per generation batch", minimum=1,
                              verbs=(*_REPLAY, "learning-curve", "locomo"))
    # No default: the one instrument of every system is the profile's choice (by hand: the policy's adapter).
    reader_model: str = setting(
        help="the one model that reads every system: reader = the separate reader adapter "
        "(--reader-adapter), adapter = the policy's (--adapter), base = no adapter", choices="reader_model",
        verbs=(*_REPLAY, "locomo"))
    reader_pmi: float = setting(
        0.25, help="contextual calibration of the MC reader: each option's mean log-probability minus this weight "
        "times its mean log-probability after the empty view (0 = plain mean log-probability)",
        minimum=0, maximum=1, verbs=(*_REPLAY, "locomo"), metavar="A")
    constrained: bool = setting(True, help="hold model writers to the program grammar of their ledger (llguidance)",
                                verbs=_REPLAY)
    write_only: tuple[str, ...] = setting(
        [], help="systems of `systems` whose writes are scored but whose memory is not read",
        choices="memory_system", unique=True, verbs=("evaluate",))
    # No default: which writers are worth a second, teacher-forced write is the profile's choice.
    teacher_forced: tuple[str, ...] = setting(
        help="model writers of `systems` whose edits are also scored teacher-forced: every session "
        "written from the gold ledger before it (an extra write only where the system's own ledger has drifted)",
        choices="memory_system", unique=True, verbs=("evaluate",))
    dtype: str = setting(
        "auto", help="inference dtype of readers and writers; auto = bf16 where the device has bf16 units (CUDA "
        "with bf16, AMX or AVX512-BF16 CPUs), fp32 elsewhere", choices="dtype",
        verbs=(*_REPLAY, "learning-curve", "locomo"))


@dataclass(kw_only=True)
class ErasureSection:
    """The erasure study (SPEC §9, clerk erasure): forget timelines per seed and the systems
    replaying them (``erasure``)."""

    personas: int = setting(6, help="personas per seed (test names and phrasings)", minimum=1, verbs=("generate",))
    sessions: int = setting(8, help="sessions per persona (session 0 states facts)", minimum=2, verbs=("generate",))
    forgets: int = setting(2, help="forget requests per persona, one per session >= 1 (at most sessions - 1)",
                           minimum=1, verbs=("generate",), metavar="K")
    systems: tuple[str, ...] = setting(
        ["clerk", "oracle", "full", "window", "rag", "add-only"],
        help="systems replayed with the forget requests delivered (table 5's main rows)", choices="memory_system",
        min_items=1, unique=True, verbs=("erasure",))
    # No default: the naive contrast's systems are the profile's choice (by hand: none).
    ignore_forget: tuple[str, ...] = setting(
        help="systems also replayed with the forget requests not delivered (the naive contrast)",
        choices="memory_system", unique=True, verbs=("erasure",))
