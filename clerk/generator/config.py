"""The knobs of one generation run (``clerk generate``), checked on construction (SPEC §2).

    python -c "from clerk.generator.config import GeneratorConfig; print(GeneratorConfig(seed=137, split='test'))"
"""

from __future__ import annotations

from dataclasses import dataclass

from clerk.errors import UserError
from clerk.generator.catalogue import SPLITS

#: Personas per split when ``--personas`` is not given (SPEC default sizes).
DEFAULT_PERSONAS = {"train": 100, "test": 40, "test_ood": 40, "val_ood": 40}
#: What a run generates: the closed benchmark or the open world (SPEC §2.9).
WORLDS = ("closed", "open")
#: Name list each split draws from (test_ood and val_ood reuse the test names: names unseen in
#: training, so val_ood differs from test_ood only in its wording and its RNG stream).
NAME_LIST = {"train": "train", "test": "test", "test_ood": "test", "val_ood": "test"}


@dataclass
class GeneratorConfig:
    """Knobs of one generation run (``clerk generate``). Ranges are inclusive ``(low, high)``.

    Attributes:
        seed: base seed; the run's RNG is seeded from ``(seed, split)``.
        split: train | test | test_ood | val_ood (names and built-in phrasings depend on it).
        personas: personas to generate; None = ``DEFAULT_PERSONAS[split]``.
        sessions: sessions per persona (>= 2: session 0 only states facts).
        budget: ledger slots B.
        n_init: facts stated in session 0.
        adds / updates / tombstones / questions / chatter: per-session count ranges
            (sessions >= 1; chatter applies to every session).
        forgets: forget requests per persona (the erasure study, SPEC §9), at most one per
            session, at distinct seeded sessions >= 1 (so at most ``sessions - 1``); 0 = none,
            and then the output is byte-identical to a run without the option
            (:mod:`clerk.generator.forgets`).
        evict_personas: eviction-pressure slice: this many extra personas appended
            after the ``personas`` regular ones, each with ``evict_adds`` ADDs per session and no
            questions, so the split carries enough gold EVICT ops for a tight EVICT F1 at little
            evaluation cost (policy calls only, no reader calls). They draw names after the
            regular personas and consume the RNG after them, so the regular personas are
            byte-identical with or without the slice; each slice persona has ``"slice": "evict"``.
            0 = none, output byte-identical to a run without the option.
        evict_adds: per-session ADD count range of the slice personas.
        compose: probability each compositional rewrite of a user line is tried
            (:mod:`clerk.generator.compose`); 0 = none, output byte-identical to a run without it.
        world: ``closed`` (the 28-predicate, one-subject benchmark, format-1 timelines) or
            ``open`` (two-person dated conversations over the compositional key space, format-2
            timelines: :mod:`clerk.generator.open_world`, SPEC §2.9).
    """

    seed: int
    split: str
    personas: int | None = None
    sessions: int = 8
    budget: int = 12
    n_init: int = 4
    adds: tuple[int, int] = (1, 2)
    updates: tuple[int, int] = (0, 2)
    tombstones: tuple[int, int] = (0, 1)
    questions: tuple[int, int] = (1, 3)
    chatter: tuple[int, int] = (1, 2)
    forgets: int = 0
    evict_personas: int = 0
    evict_adds: tuple[int, int] = (3, 4)
    compose: float = 0.0
    world: str = "closed"

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise UserError(f"split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        if self.personas is None:
            self.personas = DEFAULT_PERSONAS[self.split]
        checks = (("seed", self.seed, None), ("personas", self.personas, 1), ("sessions", self.sessions, 2),
                  ("budget", self.budget, 1), ("n_init", self.n_init, 1),
                  ("evict_personas", self.evict_personas, 0))
        for name, value, low in checks:
            if type(value) is not int or (low is not None and value < low):
                expected = "an int" if low is None else f"an int >= {low}"
                raise UserError(f"{name} must be {expected}, got {value!r}")
        if self.world not in WORLDS:
            raise UserError(f"world must be one of {', '.join(WORLDS)}, got {self.world!r}")
        if type(self.compose) not in (int, float) or not 0 <= self.compose <= 1:
            raise UserError(f"compose must be a number from 0 to 1, got {self.compose!r}")
        if type(self.forgets) is not int or not 0 <= self.forgets <= self.sessions - 1:
            raise UserError(f"forgets must be an int from 0 to sessions - 1 = {self.sessions - 1} "
                            f"(one forget per session >= 1), got {self.forgets!r}")
        for name in ("adds", "evict_adds", "updates", "tombstones", "questions", "chatter"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise UserError(f"{name} must be a range 0 <= low <= high, got {(low, high)!r}")

    @property
    def rng_seed(self) -> str:
        """The string the run's ``random.Random`` is seeded with."""
        return f"clerk.generator:{self.seed}:{self.split}"
