"""The memory-system contract, the evaluation knobs and the shared runtime (models, tokenizer).

SPEC §6: a memory system = a *writer* (how memory changes after each session) + a *view* (the
text the reader sees for a question) + a *reader* (which model scores the answer options). The
runner (``clerk.evaluate``) drives every system through the same loop, per session index and
batched across personas:

1. ``on_questions`` (bookkeeping at question time, e.g. ledger ``uses``),
2. ``view`` for each question, scored by the reader,
3. ``write`` with the session transcript (consolidation).

    python -c "from clerk.memory import MEMORY_REGISTRY; print(MEMORY_REGISTRY.names())"
"""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from clerk.errors import UserError
from clerk.eval_sections import EvaluateSection

READERS = ("mc", "rule")
READER_MODELS = ("base", "adapter", "reader")


DTYPES = ("auto", "float32", "bfloat16")


#: The config's evaluate section: the one default of each of its settings.
_S = EvaluateSection


@dataclass
class EvalConfig:
    """Knobs of the synthetic evaluation (defaults < CLI); recorded in ``metrics.json``. A knob
    that is a setting of the config's ``evaluate`` section has that setting's default (``_S``)."""

    #: sessions the ``window`` view shows (the k most recent earlier sessions).
    window_k: int = _S.window_k
    #: turns the ``rag`` view retrieves per question.
    rag_k: int = _S.rag_k
    #: generation cap for model writers, in tokens (bounds an over-long program).
    max_new_tokens: int = _S.max_new_tokens
    #: prompts per generation batch for model writers.
    batch_size: int = _S.batch_size
    #: "mc" = multiple-choice log-likelihood; "rule" = exact rule reader (ledger systems only).
    reader: str = "mc"
    #: the one model that reads every system (SPEC §6: one instrument): "adapter" (the policy's
    #: adapter, trained on a mixture of CONSOLIDATE and ANSWER examples), "reader" (an adapter of
    #: its own, trained on ANSWER examples only: ``reader_adapter_dir``) or "base".
    reader_model: str = "adapter"
    #: contextual calibration of the MC reader: each option's score minus this weight times its
    #: score after the empty view (0 = plain mean log-probability; ``clerk.memory.reader``).
    reader_pmi: float = _S.reader_pmi
    #: hold model writers to the program grammar of their ledger (``clerk.models.constrained``).
    constrained: bool = _S.constrained
    #: systems whose writes are scored but whose memory is not read (no questions answered).
    write_only: tuple[str, ...] = ()
    #: model writers whose programs are also scored teacher-forced: each session written from the
    #: gold ledger before it (``clerk.evaluate.teacher``; ``clerk evaluate`` only).
    teacher_forced: tuple[str, ...] = ()
    #: cap on view tokens for transcript views; -1 = the reader's context minus the prompt reserve.
    max_read_tokens: int = -1
    #: token budget of the add-only view; -1 = the token count of the gold (oracle) ledger view at
    #: the same session, i.e. the read cost of a ledger.
    add_only_budget: int = -1
    #: inference dtype of every model: "auto" = bf16 where the device has bf16 units (CUDA with
    #: bf16, CPUs with AMX/AVX512-BF16: the reader and writers run about 2.4x faster, measured on
    #: SmolLM2), fp32 elsewhere (clerk.models.device.resolve_inference_dtype).
    dtype: str = _S.dtype

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise UserError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        for name in ("window_k", "rag_k", "max_new_tokens", "batch_size"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UserError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("max_read_tokens", "add_only_budget"):
            value = getattr(self, name)
            if type(value) is not int or (value < 1 and value != -1):
                raise UserError(f"{name} must be an int >= 1 or -1, got {value!r}")
        if self.reader not in READERS:
            raise UserError(f"reader must be one of {', '.join(READERS)}, got {self.reader!r}")
        if self.reader_model not in READER_MODELS:
            raise UserError(f"reader_model must be one of {', '.join(READER_MODELS)}, got {self.reader_model!r}")
        if type(self.reader_pmi) not in (int, float) or not 0 <= self.reader_pmi <= 1:
            raise UserError(f"reader_pmi must be a number in [0, 1], got {self.reader_pmi!r}")
        if type(self.constrained) is not bool:
            raise UserError(f"constrained must be true or false, got {self.constrained!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Runtime:
    """Lazily loaded models and tokenizer shared by all systems of one evaluation run.

    Args:
        config: the evaluation knobs.
        model_dir: base model directory (safetensors + tokenizer); needed for model readers/writers
            and, unless ``tokenizer`` is given, for token counting.
        adapter_dir: LoRA adapter directory of the policy (model writers), or None.
        reader_adapter_dir: LoRA adapter directory of a separate reader (``reader_model`` "reader"),
            or None.
        tokenizer: a ready tokenizer (tests, read-cost probe); default: loaded from ``model_dir``.
        context_tokens: the reader's context length; default: the model config's
            ``max_position_embeddings``.
    """

    #: Tokens kept free in the reader's context for the prompt frame, the question and the option.
    PROMPT_RESERVE = 192

    def __init__(
        self,
        config: EvalConfig,
        model_dir: str | None = None,
        adapter_dir: str | None = None,
        tokenizer: Any = None,
        reader_adapter_dir: str | None = None,
        context_tokens: int | None = None,
    ) -> None:
        self.config = config
        self.model_dir, self.adapter_dir = model_dir, adapter_dir
        self.reader_adapter_dir = reader_adapter_dir
        self._tokenizer = tokenizer
        self._context = context_tokens
        self._models: dict[str, tuple[Any, Any]] = {}
        self._line_tokens: dict[str, int] = {}
        self._reader: Any = None
        #: predicate keys a constrained writer may ADD (the catalogue's); None = any snake_case key.
        self.predicates: list[str] | None = None

    # ---------------------------------------------------------------- tokens

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            if self.model_dir is None:
                raise UserError("a model directory (--model) is needed to count tokens")
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the reader's tokenizer, without special tokens."""
        if not text:
            return 0
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def line_tokens(self, line: str) -> int:
        """Cached token count of one view line (transcript lines recur every session)."""
        if line not in self._line_tokens:
            self._line_tokens[line] = self.count_tokens(line)
        return self._line_tokens[line]

    @property
    def context_tokens(self) -> int:
        if self._context is None:
            if self.model_dir is None:
                raise UserError("a model directory (--model) is needed to know the reader's context length")
            from transformers import AutoConfig

            self._context = int(AutoConfig.from_pretrained(self.model_dir).max_position_embeddings)
        return self._context

    def view_budget(self) -> int:
        """Most tokens a transcript view may take: the reader's context minus the prompt reserve,
        capped by ``max_read_tokens``."""
        budget = max(1, self.context_tokens - self.PROMPT_RESERVE)
        if self.config.max_read_tokens != -1:
            budget = min(budget, self.config.max_read_tokens)
        return budget

    # ---------------------------------------------------------------- models

    def model(self, kind: str) -> tuple[Any, Any]:
        """(model, tokenizer) for ``kind`` = "base", "adapter" (the policy's) or "reader" (the separate
        reader's adapter), loaded once via ``clerk.models.loading``."""
        if kind not in self._models:
            from clerk.models.loading import load_model

            if self.model_dir is None:
                raise UserError("a model directory (--model) is needed for model readers and writers")
            dtype = None if self.config.dtype == "auto" else self.config.dtype
            if kind == "adapter":
                if self.adapter_dir is None:
                    raise UserError("an adapter directory (--adapter) is needed to read or write with the adapter")
                self._models[kind] = load_model(self.model_dir, adapter_dir=self.adapter_dir, dtype=dtype)
            elif kind == "reader":
                if self.reader_adapter_dir is None:
                    raise UserError("a reader adapter directory (--reader-adapter) is needed to read with "
                                    "--reader-model reader")
                self._models[kind] = load_model(self.model_dir, adapter_dir=self.reader_adapter_dir, dtype=dtype)
            elif kind == "base":
                self._models[kind] = load_model(self.model_dir, dtype=dtype)
            else:
                raise ValueError(f"model kind must be one of {', '.join(READER_MODELS)}, got {kind!r}")
            self._models[kind][0].eval()
        return self._models[kind]


    def reader(self) -> Any:
        """The :class:`~clerk.memory.reader.Reader` over ``config.reader_model`` (one for the run,
        so its caches serve every system)."""
        if self._reader is None:
            from clerk.memory.reader import Reader

            self._reader = Reader(*self.model(self.config.reader_model), pmi=self.config.reader_pmi)
        return self._reader


@dataclass
class View:
    """What the reader sees for one question; ``truncated`` = older content was cut to fit."""

    text: str
    truncated: bool = False


@dataclass
class WriteResult:
    """One persona's consolidation after a session.

    ``program`` is None for systems that do not write edit programs; the other fields then keep
    their defaults. ``seconds`` is the batch's wall time divided evenly over its personas.
    """

    state: Any
    program: list | None = None
    parse_failed: bool = False
    n_invalid: int = 0
    write_tokens: int = 0
    seconds: float = 0.0
    invalid: list = field(default_factory=list)


class MemorySystem(abc.ABC):
    """A memory system under evaluation.

    Contract:

    * ``init_state(timeline)`` returns the empty memory of one persona. The runner owns the
      states; a system keeps no per-persona state of its own, so one instance serves all personas.
    * ``view(state, timeline, session, question)`` returns the :class:`View` the reader sees for
      ``question``, from memory as it stands *before* ``session`` is consolidated (the session's
      own transcript is never visible). Views must be deterministic.
    * ``write(states, timelines, sessions)`` consolidates ``sessions[j]`` into ``states[j]`` for a
      batch of personas at the same session index and returns one :class:`WriteResult` each. It
      never raises on bad model output.
    * ``on_questions(state, timeline, session)`` (optional) does question-time bookkeeping before
      the views are built; default: nothing.
    * ``reader_model()`` names the model that scores the options: the run's one reader.
    * ``forget(state, timeline, pred, values)`` (the erasure study, SPEC §9) erases a predicate
      and every value it held from the memory and returns the new state; ``forget_action`` says
      how (:mod:`clerk.memory.forgetting`).

    Class attributes: ``name`` (set by the registry), ``version`` (bump on any behaviour change;
    recorded in results) and ``is_ledger`` (the memory is a ledger: write metrics and the rule
    reader apply, and ``ledger(state)`` returns it).
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = ""
    is_ledger: ClassVar[bool] = False

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    @abc.abstractmethod
    def init_state(self, timeline: dict) -> Any:
        """The empty memory of one persona."""

    @abc.abstractmethod
    def view(self, state: Any, timeline: dict, session: dict, question: dict) -> View:
        """The text the reader sees for ``question`` asked in ``session``."""

    @abc.abstractmethod
    def write(self, states: list, timelines: list[dict], sessions: list[dict]) -> list[WriteResult]:
        """Consolidate each session into its persona's state (batched across personas)."""

    def on_questions(self, state: Any, timeline: dict, session: dict) -> Any:
        """Question-time bookkeeping; returns the (possibly new) state."""
        return state

    def reader_model(self) -> str:
        """Every system is read by the run's one reader (``--reader-model``)."""
        return self.rt.config.reader_model

    def ledger(self, state: Any) -> list:
        """The ledger held in ``state`` (ledger systems only)."""
        raise TypeError(f"memory system {self.name!r} has no ledger")

    #: What :meth:`forget` does: "free-slot", "redact" or "nothing" (:data:`clerk.memory.forgetting.FORGET_ACTIONS`).
    forget_action: ClassVar[str] = ""

    def forget(self, state: Any, timeline: dict, pred: str, values: list[str]) -> Any:
        """Erase ``pred`` of ``timeline``'s persona, and every one of ``values`` (all it ever held),
        from ``state``; returns the new state and never mutates the input. Called out of band,
        before the questions of the session that carries the request, so every later view is
        built from the erased memory. A system that cannot forget keeps this default.

        Raises:
            NotImplementedError: the system has no erasure.
        """
        raise NotImplementedError(f"memory system {self.name!r} does not implement forget")
