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
