"""The store's interface: what a memory store holds, the fence errors, and a consolidation.

SPEC §9. A store holds, per subject (the user a memory belongs to): the ledger (SPEC §1), the
transcript log (one entry per consolidated session), every derived memory the memory systems
keep (BM25 index input, add-only notes, summaries: a generic ``kind -> [text]`` table), the
values the store has published per (subject, predicate) (so a forget can scrub every value a
predicate ever held), and two counters:

* the **erase generation**, advanced by every acknowledged forget in the same transaction as the
  erasure. A consolidation captures it before it reads anything; its publish re-proves it under
  the store's write lock, so a consolidation that read before a forget cannot write the
  forgotten value back (:class:`StaleGeneration`). No captured generation, no publish.
* the **session counter** (``sessions``): the number of sessions published, i.e. the next
  session index. A publish re-proves it too, so two consolidations of the same subject that
  read the same state cannot both publish (:class:`ConcurrentPublish`; the second would
  silently undo the first). Forgets do not advance it: the two checks are independent, and
  ``fence=False`` (the stress harness's negative control) skips only the generation re-proof.

    python -c "from clerk.store import open_store; s = open_store('sqlite:///:memory:'); print(s.read('Ari'))"
"""

from __future__ import annotations

import abc
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clerk import ledger as L
from clerk.errors import UserError

#: Default ledger budget B of a subject the store has not seen yet (SPEC §2 default).
DEFAULT_BUDGET = 12


class StoreError(Exception):
    """A store operation that could not be carried out (the database said no)."""


class StaleGeneration(StoreError):
    """A publish whose captured erase generation is not the subject's current one.

    A forget landed after the consolidation captured its generation (or no generation was
    captured at all), so what it read may hold erased values. Nothing was written; the caller
    may retry from a fresh read (a new ``store.consolidation(subject)``).

    Attributes:
        subject: the subject.
        captured: the generation the consolidation captured, or None (none captured).
        current: the subject's generation under the write lock.
    """

    def __init__(self, subject: str, captured: int | None, current: int):
        self.subject, self.captured, self.current = subject, captured, current
        if captured is None:
            why = "no erase generation was captured (fail-closed: a publish must prove what it read)"
        else:
            why = (f"it captured erase generation {captured}, but a forget has advanced subject "
                   f"{subject!r} to generation {current} since")
        super().__init__(f"publish refused for subject {subject!r}: {why}; nothing was written, "
                         f"retry from a fresh read")


class ConcurrentPublish(StoreError):
    """A publish whose read is not the subject's latest: another consolidation published first.

    Attributes:
        subject: the subject.
        read_session: the next-session index the consolidation read.
        current_session: the subject's next-session index under the write lock.
    """

    def __init__(self, subject: str, read_session: int, current_session: int):
        self.subject, self.read_session, self.current_session = subject, read_session, current_session
        super().__init__(
            f"publish refused for subject {subject!r}: it read the state before session {read_session}, "
            f"but another consolidation has published since (next session is {current_session}); "
            f"nothing was written, retry from a fresh read")


class UnknownSubject(StoreError):
    """A forget of a subject the store has no row for (never published, never forgotten).

    Nothing was written: forgetting a name the store does not know is most likely a typo, and
    the store must not create a row for it.
    """

    def __init__(self, subject: str, known: int):
        self.subject = subject
        super().__init__(f"subject {subject!r} is not in the store (it holds {known} subject(s)); "
                         f"nothing was forgotten and nothing was written")


@dataclass(frozen=True)
class Snapshot:
    """One consistent read of a subject (generation first, then everything else).

    ``transcripts`` is the log, oldest first: ``[{"session": k, "turns": [{"role","content"}]}]``;
    ``derived`` maps a kind to its texts in order. A subject the store has never seen reads as
    generation 0, no sessions and an empty ledger of the store's budget.
    """

    subject: str
    generation: int
    sessions: int
    ledger: list
    transcripts: list = field(default_factory=list)
    derived: dict = field(default_factory=dict)

    def texts(self) -> Iterator[str]:
        """Every text the snapshot holds: ledger values (``o``, ``prev``), turns, derived texts.
        What an erasure check scans.

        >>> list(Snapshot("Ari", 0, 1, [{"i": 0, "s": "Ari", "p": "city", "o": "Oslo", "prev": "Rome", "v": 1,
        ...      "born": 0, "t": 0, "uses": 0}], [{"session": 0, "turns": [{"role": "user", "content": "Oslo!"}]}],
        ...      {"note": ["Ari: Oslo"]}).texts())
        ['Oslo', 'Rome', 'Oslo!', 'Ari: Oslo']
        """
        for slot in L.occupied(self.ledger):
            yield from (v for v in (slot["o"], slot["prev"]) if v is not None)
        for entry in self.transcripts:
            yield from (turn["content"] for turn in entry["turns"])
        for texts in self.derived.values():
            yield from texts


@dataclass(frozen=True)
class Receipt:
    """An acknowledged (committed) publish: the session index it consolidated, the generation it
    committed under, and the lenient reducer's report (applied positions, skipped ops)."""

    subject: str
    session: int
    generation: int
    applied: list = field(default_factory=list)
    invalid: list = field(default_factory=list)


@dataclass(frozen=True)
class ForgetReport:
    """An acknowledged (committed, durable) forget. Counts only: the values themselves are gone.

    ``predicate`` is None for a whole-subject forget; ``values`` is how many distinct values were
    scrubbed; ``turns`` / ``derived`` how many texts were redacted (or deleted); ``slots`` how
    many ledger slots were freed."""

    subject: str
    predicate: str | None
    generation: int
    values: int = 0
    slots: int = 0
    turns: int = 0
    derived: int = 0


# --------------------------------------------------------------------------- input checks


def check_text(field_name: str, value: Any) -> str:
    """A string a store can hold: valid Unicode (no lone surrogate, e.g. a command-line argument
    that was not UTF-8) and no NUL character. Raises UserError naming the field."""
    if not isinstance(value, str):
        raise UserError(f"{field_name} must be a string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{field_name} must be valid UTF-8 text, got {value!r} (bytes that are not UTF-8)") from None
    if "\x00" in value:
        raise UserError(f"{field_name} must not contain a NUL character, got {value!r}")
    return value


def text_problem(value: str, controls: bool = True) -> str | None:
    """Why ``value`` cannot be stored as ledger text, or None: a lone surrogate (what a byte that
    was not UTF-8 becomes when decoded with ``surrogateescape``) or, with ``controls``, a control
    character (Unicode category Cc: C0, DEL, C1; newlines and tabs included).

    >>> text_problem("ci\\udcfft"), text_problem("a\\tb"), text_problem("Zürich"), text_problem("a\\tb", controls=False)
    ('a lone surrogate U+DCFF at offset 2 (bytes that were not UTF-8)', 'a control character U+0009 at offset 1', None, None)
    """
    for pos, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            return f"a lone surrogate U+{ord(ch):04X} at offset {pos} (bytes that were not UTF-8)"
        if controls and unicodedata.category(ch) == "Cc":
            return f"a control character U+{ord(ch):04X} at offset {pos}"
    return None


def check_ledger_text(ledger: list) -> None:
    """Every text field (``s``, ``p``, ``o``, ``prev``) of every occupied slot is storable text:
    no lone surrogate, no control character (:func:`text_problem`). Raises UserError naming the
    slot, the field and the value."""
    for slot in L.occupied(ledger):
        for name in ("s", "p", "o", "prev"):
            value = slot.get(name)
            if isinstance(value, str) and (why := text_problem(value)):
                raise UserError(f"ledger to publish: slot {slot['i']} field {name!r} must be text without lone "
                                f"surrogates or control characters, got {value!r}: {why}")


def check_name(field_name: str, value: Any) -> str:
    """A subject or predicate: a non-empty string (:func:`check_text`). Raises UserError naming the field."""
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{field_name} must be a non-empty string, got {value!r}")
    return check_text(field_name, value)


def check_values(values: Any) -> list[str]:
    """The extra values of a forget: any iterable of strings (a generator is read once), not a string."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise UserError(f"values must be a list of strings, got {values!r}")
    values = list(values)
    for value in values:
        check_text("value", value)
    return values


def check_transcript(transcript: Any) -> list[dict]:
    """A session transcript: a list of ``{"role": str, "content": str}`` turns."""
    if not isinstance(transcript, list):
        raise UserError(f"transcript must be a list of {{'role', 'content'}} turns, got {type(transcript).__name__}")
    for pos, turn in enumerate(transcript):
        if not isinstance(turn, dict) or set(turn) != {"role", "content"}:
            raise UserError(f"transcript turn {pos} must be a dict with exactly 'role' and 'content', got {turn!r}")
        for key in ("role", "content"):
            check_text(f"transcript turn {pos} field {key!r}", turn[key])
    return transcript


def check_derived(derived: Any) -> dict[str, list[str]]:
    """Derived memories to publish: a mapping kind -> sequence of texts (None = none)."""
    if derived is None:
        return {}
    if not isinstance(derived, Mapping):
        raise UserError(f"derived must be a mapping kind -> list of texts, got {type(derived).__name__}")
    out = {}
    for kind, texts in derived.items():
        check_name("derived kind", kind)
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise UserError(f"derived[{kind!r}] must be a list of strings, got {type(texts).__name__}")
        for text in texts:
            check_text(f"derived[{kind!r}] text", text)
        out[kind] = list(texts)
    return out


# --------------------------------------------------------------------------- the interface


class Store(abc.ABC):
    """A memory store (SPEC §9). One instance holds one database connection: use one per process
    or thread. Backends: :class:`clerk.store.sqlite.SQLiteStore`,
    :class:`clerk.store.postgres.PostgresStore`; open either with :func:`clerk.store.open_store`.

    Args:
        budget: ledger budget B given to subjects the store has not seen yet.
        fence: re-prove the captured erase generation at publish (always, except in the stress
            harness's ``--no-fence`` negative control, which shows what the fence prevents).
    """

    def __init__(self, budget: int = DEFAULT_BUDGET, fence: bool = True) -> None:
        if type(budget) is not int or budget < 1:
            raise UserError(f"budget must be an int >= 1, got {budget!r}")
        self.budget, self.fence = budget, bool(fence)

    def consolidation(self, subject: str) -> Consolidation:
        """Capture the subject's erase generation and read its state (one consistent read)."""
        return Consolidation(self, self.read(subject))

    @abc.abstractmethod
    def read(self, subject: str) -> Snapshot:
        """One consistent read of ``subject``: the generation first, then everything else."""

    @abc.abstractmethod
    def publish(self, subject: str, *, generation: int | None, session: int, ledger: list,
                transcript: list, derived: Mapping | None = None) -> Receipt:
        """Atomically write a consolidation's result (low level; use :meth:`Consolidation.publish`).

        Under the write lock: re-prove ``generation`` (unless the store is unfenced) and
        ``session``; then replace the ledger with ``ledger``, append ``transcript`` as session
        ``session`` of the log, replace each derived kind given in ``derived`` by its texts
        (kinds not given stay), record the ledger's values per predicate, and advance the
        session counter.

        Raises:
            StaleGeneration: ``generation`` is None or not the current generation.
            ConcurrentPublish: another publish advanced the session counter since the read.
            UserError: malformed ``ledger``, ``transcript`` or ``derived``.
        """

    @abc.abstractmethod
    def forget(self, subject: str, predicate: str | None = None, *, values: Sequence[str] = ()) -> ForgetReport:
        """Erase ``predicate`` of ``subject`` (every value it has held), or the whole subject.

        A predicate forget frees the ledger slot(s) of the predicate (``o`` and ``prev`` go with
        them), deletes the store's record of the values the predicate was published with, and
        redacts each of those values (plus ``values``, for values the caller knows but the
        ledger never held) in the subject's transcript log and derived memories. A whole-subject
        forget deletes the subject's ledger, log, derived memories and records; the subject's
        row (its name, budget and counters) stays, since the generation must outlive the erasure
        to fence consolidations that read before it. A subject the store has no row for is an
        error (:class:`UnknownSubject`) and writes nothing. Either way the erase generation advances in
        the same transaction, and the call returns only once that transaction is durable.

        A slot of another predicate of this subject whose value holds a forgotten value (as text,
        any case or Unicode normal form: :mod:`clerk.scrub`) is freed too, and such a ``prev`` cleared: a learned writer can file a
        value under the wrong predicate, and the value must still leave the ledger (SPEC §9).
        Not erased: other subjects.
        """

    @abc.abstractmethod
    def subjects(self) -> list[str]:
        """Every subject the store has a row for, sorted."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Consolidation:
    """What a consolidation read (captured generation first) and its one publish.

    Attributes (read-only by convention): ``subject``, ``generation`` (captured), ``now`` (the
    session index this consolidation writes), ``ledger``, ``transcripts``, ``derived``, and
    ``snapshot``, the :class:`Snapshot` they come from.

        with store.consolidation("Ari") as c:
            c.publish(policy(c.ledger, transcript), transcript)
    """

    def __init__(self, store: Store, snapshot: Snapshot) -> None:
        self.store, self.snapshot = store, snapshot
        self.subject, self.generation, self.now = snapshot.subject, snapshot.generation, snapshot.sessions
        self.ledger, self.transcripts, self.derived = snapshot.ledger, snapshot.transcripts, snapshot.derived
        self.receipt: Receipt | None = None

    def publish(self, program: Any, transcript: list, *, derived: Mapping | None = None) -> Receipt:
        """Apply ``program`` (lenient reducer, SPEC §1) to the ledger this consolidation read, at
        ``now``, and publish it with the session's ``transcript`` and the new ``derived`` memories.

        Raises:
            StaleGeneration: a forget landed since the capture; nothing written, retry fresh.
            ConcurrentPublish: another consolidation of the subject published first.
            StoreError: this consolidation already published.
        """
        if self.receipt is not None:
            raise StoreError(f"this consolidation of {self.subject!r} already published session "
                             f"{self.receipt.session}; open a new one for the next session")
        new_ledger, report = L.reduce(self.ledger, program, self.now, strict=False)
        receipt = self.store.publish(self.subject, generation=self.generation, session=self.now,
                                     ledger=new_ledger, transcript=transcript, derived=derived)
        self.receipt = Receipt(receipt.subject, receipt.session, receipt.generation,
                               applied=report.applied, invalid=report.invalid)
        return self.receipt

    def __enter__(self) -> Consolidation:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
