"""The workflow's ``evaluate`` and ``erasure`` sections (:mod:`clerk.settings`): the memory systems
of tables 1, 3 and 5 and the reader and writer knobs every replay shares.

They import nothing of the memory systems, so :class:`clerk.memory.EvalConfig` takes its defaults
from here (one default per setting).

    python -c "from clerk.eval_sections import EvaluateSection; print(EvaluateSection.window_k)"
"""

from __future__ import annotations

from dataclasses import dataclass

from clerk.settings import MAX_PERSONAS, MAX_SESSIONS, setting

#: The verbs that replay timelines through memory systems with the evaluation's knobs.
_REPLAY = ("evaluate", "erasure")


@dataclass(kw_only=True)
class EvaluateSection:
    """The memory systems of tables 1 and 3, and the reader and writer knobs every replay shares
    (``evaluate``)."""

    # No default: which systems a table compares is the profile's choice, and the memory registry is
    # the one list of system names (by hand: --systems is required).
    systems: tuple[str, ...] = setting(
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

    personas: int = setting(6, help="personas per seed (test names and phrasings)", minimum=1, maximum=MAX_PERSONAS, verbs=("generate",))
    sessions: int = setting(8, help="sessions per persona (session 0 states facts)", minimum=2, maximum=MAX_SESSIONS,
                            verbs=("generate",))
    forgets: int = setting(2, help="forget requests per persona, one per session >= 1 (at most sessions - 1)",
                           minimum=1, maximum=MAX_SESSIONS, verbs=("generate",), metavar="K")
    # No default: which systems a table compares is the profile's choice, and the memory registry is
    # the one list of system names (by hand: --systems is required).
    systems: tuple[str, ...] = setting(
        help="systems replayed with the forget requests delivered (table 5's main rows)", choices="memory_system",
        min_items=1, unique=True, verbs=("erasure",))
    # No default: the naive contrast's systems are the profile's choice (by hand: none).
    ignore_forget: tuple[str, ...] = setting(
        help="systems also replayed with the forget requests not delivered (the naive contrast)",
        choices="memory_system", unique=True, verbs=("erasure",))
