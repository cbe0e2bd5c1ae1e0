"""The knobs of one generation run (``clerk generate``), checked on construction (SPEC §2).

    python -c "from clerk.generator.config import GeneratorConfig; print(GeneratorConfig(seed=137, split='test'))"
"""

from __future__ import annotations

from dataclasses import dataclass

from clerk.errors import UserError
from clerk.generator.catalogue import SPLITS
from clerk.generator.rewrites import REWRITE_KINDS, check_kinds
from clerk.settings import MAX_BUDGET, MAX_PERSONAS, MAX_SESSIONS, setting

#: Personas per split when ``--personas`` is not given (SPEC default sizes).
DEFAULT_PERSONAS = {"train": 100, "test": 40, "test_ood": 40, "val_ood": 40}
#: What a run generates: the closed benchmark or the open world (SPEC §2.9).
WORLDS = ("closed", "open")
#: Name list each split draws from (test_ood and val_ood reuse the test names: names unseen in
#: training, so val_ood differs from test_ood only in its wording and its RNG stream).
NAME_LIST = {"train": "train", "test": "test", "test_ood": "test", "val_ood": "test"}


# ---- the workflow's `data` section (clerk.settings) -------------------------------------------

_RANGE = {"type": "integer", "minimum": 1, "maximum": 3}


@dataclass
class SplitSection:
    """One split's sizes (``data.train``, ``data.test``, ``data.test_ood``, ``data.long``)."""

    personas: int = setting(help="number of personas", minimum=1, maximum=MAX_PERSONAS, verbs=("generate",))
    sessions: int = setting(help="sessions per persona (session 0 states facts)", minimum=2, maximum=MAX_SESSIONS,
                            verbs=("generate",))
    questions: tuple[int, int] = setting(
        (1, 3), help="questions per session >= 1, [low, high] with low <= high, drawn uniformly (SPEC §2: within 1-3)",
        items=_RANGE, verbs=("generate",), flag_type=lambda text: count_range(text, "--questions"), metavar="LOW-HIGH")
    evict_personas: int = setting(
        0, help="eviction-pressure slice: this many extra personas after the regular ones, each with evict_adds ADDs "
        "per session and no questions (scored for their edits only, never read); 0 = none, the split's file unchanged",
        minimum=0, maximum=MAX_PERSONAS, verbs=("generate",), metavar="K")
    evict_adds: tuple[int, int] = setting(
        (3, 4), help="ADDs per session of each slice persona, [low, high] with 0 <= low <= high, drawn uniformly "
        "(needs evict_personas >= 1)", items={"type": "integer", "minimum": 0}, verbs=("generate",),
        flag_type=lambda text: count_range(text, "--evict-adds"), metavar="LOW-HIGH")
    compose: float = setting(
        0.0, help="compositional wording (clerk.generator.compose): each rewrite of a user line (opener, two facts "
        "in one line, an in-line correction, a fact about someone else) is tried with this probability; the facts "
        "and gold programs stay those of 0; 0 = none, the split's file unchanged",
        minimum=0, maximum=1, verbs=("generate",), metavar="P")
    rewrites: tuple[str, ...] = setting(
        [], help="kinds (add, update, tombstone: statements; chatter: small talk) whose training-only lines "
        "(clerk/phrasing/train_rewrites.yaml) are appended to the catalogue's lists before the split is worded; "
        "the train split only, with the built-in catalogue; [] = none, the split's file unchanged",
        choices=REWRITE_KINDS, unique=True, verbs=("generate",), metavar="KIND")


@dataclass
class OpenSection:
    """The open world's training conversations (SPEC §2.9) mixed into the policy's and the
    reader's SFT sets, per seed."""

    personas: int = setting(help="conversations (two subjects each)", minimum=1, maximum=MAX_PERSONAS,
                            verbs=("generate",))
    sessions: int = setting(help="sessions per conversation", minimum=2, maximum=MAX_SESSIONS, verbs=("generate",))
    budget: int = setting(help="ledger slots of an open conversation", minimum=1, maximum=MAX_BUDGET,
                          verbs=("generate",))


@dataclass
class DataSection:
    """The synthetic timelines: ledger budget, facts of session 0, each split's sizes (``data``)."""

    budget: int = setting(12, help="ledger slots B", minimum=1, maximum=MAX_BUDGET, verbs=("generate",))
    init_facts: int = setting(4, help="facts stated in session 0", minimum=1, maximum=MAX_BUDGET, verbs=("generate",))
    train: SplitSection = setting(SplitSection(personas=100, sessions=8, questions=(3, 3), rewrites=REWRITE_KINDS),
                                  help="the training split (SFT data), worded with the training-only rewrites")
    test: SplitSection = setting(SplitSection(personas=16, sessions=8, questions=(3, 3), evict_personas=8),
                                 help="the in-distribution test split (table 1)")
    test_ood: SplitSection = setting(SplitSection(personas=16, sessions=8, questions=(3, 3), evict_personas=8),
                                     help="the out-of-distribution test split (table 3)")
    long: SplitSection = setting(SplitSection(personas=10, sessions=50),
                                 help="long-horizon personas of the read-cost probe")
    open: OpenSection | None = setting(
        None, help="the open world's training conversations (SPEC §2.9) mixed into the policy's and the reader's "
        "SFT sets, per seed; null = closed world only")
    phrasings: str | None = setting(
        None, help="optional phrasing catalogue file (an existing YAML file; absolute, or relative inside the "
        "repository; letters, digits and . _ / + @ - only) or null for the built-in one",
        schema={"$ref": "#/$defs/path"}, verbs=("generate", "evaluate", "erasure", "learning-curve"),
        metavar="FILE")


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
        rewrites: kinds (statements, small talk) whose training-only lines join the catalogue's lists
            (:mod:`clerk.generator.rewrites`); the train split only; () = none, output
            byte-identical to a run without it.
        world: ``closed`` (the 28-predicate, one-subject benchmark, format-1 timelines) or
            ``open`` (two-person dated conversations over the compositional key space, format-2
            timelines: :mod:`clerk.generator.open_world`, SPEC §2.9).
    """

    seed: int
    split: str
    personas: int | None = None
    sessions: int = 8
    # Defaults of the settings the data section declares are the section's (one default each).
    budget: int = DataSection.budget
    n_init: int = DataSection.init_facts
    adds: tuple[int, int] = (1, 2)
    updates: tuple[int, int] = (0, 2)
    tombstones: tuple[int, int] = (0, 1)
    questions: tuple[int, int] = SplitSection.questions
    chatter: tuple[int, int] = (1, 2)
    forgets: int = 0
    evict_personas: int = SplitSection.evict_personas
    evict_adds: tuple[int, int] = SplitSection.evict_adds
    compose: float = SplitSection.compose
    rewrites: tuple[str, ...] = ()
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
        self.rewrites = check_kinds(self.rewrites)
        if self.rewrites and (self.split != "train" or self.world != "closed"):
            raise UserError(f"rewrites: the training-only rewrites word the closed train split only, got split "
                            f"{self.split!r} (world {self.world!r}) with rewrites {list(self.rewrites)!r}")
        for name in ("adds", "evict_adds", "updates", "tombstones", "questions", "chatter"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise UserError(f"{name} must be a range 0 <= low <= high, got {(low, high)!r}")

    @property
    def rng_seed(self) -> str:
        """The string the run's ``random.Random`` is seeded with."""
        return f"clerk.generator:{self.seed}:{self.split}"


def count_range(text: str, flag: str) -> tuple[int, int]:
    """``"1-3"`` -> ``(1, 3)``; ``"3"`` -> ``(3, 3)`` (a count range given as a flag).

    >>> count_range("2-3", "--questions"), count_range("3", "--questions")
    ((2, 3), (3, 3))
    """
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise UserError(f"{flag}: expected N or LOW-HIGH (whole numbers), got {text!r}") from None
