"""The store's transactions in SQL, shared by the SQLite and PostgreSQL backends (SPEC §9).

Both backends run the same statements (SQLite >= 3.24 and PostgreSQL both speak ``INSERT ...
ON CONFLICT DO NOTHING``); a backend supplies only its connection, how a transaction begins
(:meth:`SqlStore._txn`), the clause that takes the subject's row lock (none for SQLite, whose
``BEGIN IMMEDIATE`` already holds the one database write lock; ``FOR UPDATE`` for PostgreSQL)
and what to do after a forget commits.

Tables (one row set per subject; free ledger slots have no row):

* ``subjects(subject, budget, generation, sessions)``: the erase generation and session counter.
* ``slots(subject, i, s, p, o, prev, v, born, t, uses)``: the occupied ledger slots.
* ``turns(subject, session, pos, role, content)``: the transcript log.
* ``derived(subject, kind, pos, text)``: derived memories (BM25 input, notes, summaries, ...).
* ``published(subject, predicate, value)``: every value a publish put in the ledger, so that a
  forget can scrub older values that are no longer in any slot (one row per distinct value).

No index key holds a value or a text, only subjects, predicates and positions.

    python -c "from clerk.store.sql import SCHEMA; print(*SCHEMA, sep=chr(10))"
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from clerk import ledger as L
from clerk import scrub
from clerk.errors import UserError
from clerk.store.base import (
    ConcurrentPublish,
    ForgetReport,
    Receipt,
    Snapshot,
    StaleGeneration,
    Store,
    UnknownSubject,
    check_derived,
    check_ledger_text,
    check_name,
    check_transcript,
    check_values,
)

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS subjects (subject TEXT PRIMARY KEY, budget INTEGER NOT NULL, "
    "generation INTEGER NOT NULL, sessions INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS slots (subject TEXT NOT NULL, i INTEGER NOT NULL, s TEXT NOT NULL, "
    "p TEXT NOT NULL, o TEXT NOT NULL, prev TEXT, v INTEGER NOT NULL, born INTEGER NOT NULL, "
    "t INTEGER NOT NULL, uses INTEGER NOT NULL, PRIMARY KEY (subject, i))",
    "CREATE TABLE IF NOT EXISTS turns (subject TEXT NOT NULL, session INTEGER NOT NULL, "
    "pos INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (subject, session, pos))",
    "CREATE TABLE IF NOT EXISTS derived (subject TEXT NOT NULL, kind TEXT NOT NULL, pos INTEGER NOT NULL, "
    "text TEXT NOT NULL, PRIMARY KEY (subject, kind, pos))",
    # No index holds a value: a deleted index key can outlive VACUUM in PostgreSQL's btree pages.
    "CREATE TABLE IF NOT EXISTS published (subject TEXT NOT NULL, predicate TEXT NOT NULL, value TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS published_subject ON published (subject, predicate)",
)
#: Tables holding per-subject data, in the order a whole-subject forget deletes them.
DATA_TABLES = ("slots", "turns", "derived", "published")


class Db:
    """A cursor wrapper that speaks ``?`` placeholders to either driver (psycopg wants ``%s``)."""

    def __init__(self, cursor: Any, pyformat: bool) -> None:
        self.cur, self.pyformat = cursor, pyformat

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.pyformat else sql

    def run(self, sql: str, params: Sequence = ()) -> int:
        """Execute; return the row count."""
        self.cur.execute(self._sql(sql), tuple(params))
        return self.cur.rowcount

    def many(self, sql: str, rows: Sequence[Sequence]) -> None:
        if rows:
            self.cur.executemany(self._sql(sql), [tuple(r) for r in rows])

    def one(self, sql: str, params: Sequence = ()) -> tuple | None:
        self.cur.execute(self._sql(sql), tuple(params))
        return self.cur.fetchone()

    def all(self, sql: str, params: Sequence = ()) -> list[tuple]:
        self.cur.execute(self._sql(sql), tuple(params))
        return self.cur.fetchall()


class SqlStore(Store):
    """The store's logic over a :class:`Db`; backends implement the abstract hooks."""

    #: Appended to the subject-row SELECT inside write transactions (the row lock, if any).
    LOCK_CLAUSE = ""

    @abc.abstractmethod
    def _txn(self, write: bool) -> AbstractContextManager[Db]:
        """A transaction: ``write`` = holds the write lock from its start (SQLite) or may take row
        locks (PostgreSQL); otherwise one consistent read-only snapshot. Commits on success (and
        a committed write is durable), rolls back on any exception."""

    def _forget_mark(self, db: Db) -> Any:
        """Hook run last inside a forget's transaction; its result goes to :meth:`_after_forget`
        (default: None)."""
        return None

    def _after_forget(self, mark: Any) -> None:
        """Hook run after a forget's transaction committed, given :meth:`_forget_mark`'s result
        (default: nothing)."""

    def _create_schema(self, db: Db) -> None:
        for statement in SCHEMA:
            db.run(statement)

    # ---------------------------------------------------------------- read

    def read(self, subject: str) -> Snapshot:
        check_name("subject", subject)
        with self._txn(write=False) as db:
            # The generation is captured first, in the same snapshot as everything read after it.
            row = db.one("SELECT budget, generation, sessions FROM subjects WHERE subject = ?", (subject,))
            budget, generation, sessions = row if row else (self.budget, 0, 0)
            slots = db.all("SELECT i, s, p, o, prev, v, born, t, uses FROM slots WHERE subject = ? ORDER BY i",
                           (subject,))
            turns = db.all("SELECT session, role, content FROM turns WHERE subject = ? ORDER BY session, pos",
                           (subject,))
            derived_rows = db.all("SELECT kind, text FROM derived WHERE subject = ? ORDER BY kind, pos", (subject,))
        ledger = L.empty_ledger(budget)
        for row in slots:
            ledger[row[0]] = dict(zip(L.SLOT_FIELDS, row))
        transcripts: list[dict] = []
        for session, role, content in turns:
            if not transcripts or transcripts[-1]["session"] != session:
                transcripts.append({"session": session, "turns": []})
            transcripts[-1]["turns"].append({"role": role, "content": content})
        derived: dict[str, list[str]] = {}
        for kind, text in derived_rows:
            derived.setdefault(kind, []).append(text)
        return Snapshot(subject, generation, sessions, ledger, transcripts, derived)

    def subjects(self) -> list[str]:
        with self._txn(write=False) as db:
            return [row[0] for row in db.all("SELECT subject FROM subjects ORDER BY subject")]

    # ---------------------------------------------------------------- write

    def _lock_subject(self, db: Db, subject: str) -> tuple[int, int, int]:
        """(budget, generation, sessions) of ``subject`` under the write lock; creates the row."""
        db.run("INSERT INTO subjects (subject, budget, generation, sessions) VALUES (?, ?, 0, 0) "
               "ON CONFLICT (subject) DO NOTHING", (subject, self.budget))
        row = db.one("SELECT budget, generation, sessions FROM subjects WHERE subject = ?" + self.LOCK_CLAUSE,
                     (subject,))
        assert row is not None
        return row

    def publish(self, subject: str, *, generation: int | None, session: int, ledger: list,
                transcript: list, derived: Mapping | None = None) -> Receipt:
        check_name("subject", subject)
        check_transcript(transcript)
        derived = check_derived(derived)
        try:
            L.validate_ledger(ledger)
        except ValueError as err:
            raise UserError(f"ledger to publish is malformed: {err}") from None
        check_ledger_text(ledger)
        if generation is not None and (type(generation) is not int or generation < 0):
            raise UserError(f"generation must be an int >= 0 or None, got {generation!r}")
        if type(session) is not int or session < 0:
            raise UserError(f"session must be an int >= 0 (the next-session index the consolidation read), "
                            f"got {session!r}")
        with self._txn(write=True) as db:
            budget, current, sessions = self._lock_subject(db, subject)
            # The fence: re-prove the captured erase generation under the write lock.
            if self.fence and (generation is None or generation != current):
                raise StaleGeneration(subject, generation, current)
            if session != sessions:
                raise ConcurrentPublish(subject, session, sessions)
            if len(ledger) != budget:
                raise UserError(f"ledger to publish has {len(ledger)} slots, subject {subject!r} has budget {budget}")
            self._write_state(db, subject, session, ledger, transcript, derived)
        return Receipt(subject, session, current)

    def _write_state(self, db: Db, subject: str, session: int, ledger: list, transcript: list,
                     derived: dict[str, list[str]]) -> None:
        """Replace the ledger and the given derived kinds, append the session, record values."""
        db.run("DELETE FROM slots WHERE subject = ?", (subject,))
        db.many("INSERT INTO slots (subject, i, s, p, o, prev, v, born, t, uses) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(subject, *(slot[name] for name in L.SLOT_FIELDS)) for slot in L.occupied(ledger)])
        db.many("INSERT INTO turns (subject, session, pos, role, content) VALUES (?, ?, ?, ?, ?)",
                [(subject, session, pos, turn["role"], turn["content"]) for pos, turn in enumerate(transcript)])
        for kind, texts in derived.items():
            db.run("DELETE FROM derived WHERE subject = ? AND kind = ?", (subject, kind))
            db.many("INSERT INTO derived (subject, kind, pos, text) VALUES (?, ?, ?, ?)",
                    [(subject, kind, pos, text) for pos, text in enumerate(texts)])
        known = set(db.all("SELECT predicate, value FROM published WHERE subject = ?", (subject,)))
        db.many("INSERT INTO published (subject, predicate, value) VALUES (?, ?, ?)",
                [(subject, p, v) for p, v in sorted(scrub.published_values(ledger) - known)])
        db.run("UPDATE subjects SET sessions = sessions + 1 WHERE subject = ?", (subject,))

    # ---------------------------------------------------------------- forget

    def forget(self, subject: str, predicate: str | None = None, *, values: Sequence[str] = ()) -> ForgetReport:
        check_name("subject", subject)
        if predicate is not None:
            check_name("predicate", predicate)
        values = check_values(values)
        with self._txn(write=True) as db:
            # Never creates the subject's row: forgetting an unknown name writes nothing.
            row = db.one("SELECT generation FROM subjects WHERE subject = ?" + self.LOCK_CLAUSE, (subject,))
            if row is None:
                raise UnknownSubject(subject, db.one("SELECT COUNT(*) FROM subjects")[0])
            generation = row[0]
            if predicate is None:
                counts = self._erase_subject(db, subject)
            else:
                counts = self._erase_predicate(db, subject, predicate, values)
            db.run("UPDATE subjects SET generation = generation + 1 WHERE subject = ?", (subject,))
            mark = self._forget_mark(db)
        self._after_forget(mark)
        return ForgetReport(subject, predicate, generation + 1, **counts)

    def _erase_subject(self, db: Db, subject: str) -> dict[str, int]:
        n_values = db.one("SELECT COUNT(*) FROM published WHERE subject = ?", (subject,))[0]
        counts = {table: db.run(f"DELETE FROM {table} WHERE subject = ?", (subject,)) for table in DATA_TABLES}
        return {"values": n_values, "slots": counts["slots"], "turns": counts["turns"], "derived": counts["derived"]}

    def _erase_predicate(self, db: Db, subject: str, predicate: str, extra: Sequence[str]) -> dict[str, int]:
        """Free the predicate's slots, drop its value record, redact every value it held."""
        slots = [dict(zip(("p", "o", "prev"), row))
                 for row in db.all("SELECT p, o, prev FROM slots WHERE subject = ? AND p = ?", (subject, predicate))]
        recorded = {row[0] for row in db.all("SELECT value FROM published WHERE subject = ? AND predicate = ?",
                                             (subject, predicate))}
        doomed = recorded | scrub.slot_values(slots, predicate) | set(extra)
        n_slots = db.run("DELETE FROM slots WHERE subject = ? AND p = ?", (subject, predicate))
        db.run("DELETE FROM published WHERE subject = ? AND predicate = ?", (subject, predicate))
        pattern = scrub.value_pattern(doomed)
        n_slots += self._free_copies(db, doomed, pattern, subject)
        n_turns = self._redact(db, pattern, "turns", "content", ("session", "pos"), subject)
        n_derived = self._redact(db, pattern, "derived", "text", ("kind", "pos"), subject)
        return {"values": len(doomed), "slots": n_slots, "turns": n_turns, "derived": n_derived}

    @staticmethod
    def _free_copies(db: Db, doomed: set[str], pattern: Any, subject: str) -> int:
        """Apply :func:`scrub.free_values` to ``subject``'s remaining slots (a slot holding a
        forgotten value is freed, such a ``prev`` cleared) and drop the records of values that
        ``pattern`` (``doomed``'s, from the caller) matches; return how many slots were freed."""
        rows = db.all("SELECT i, p, o, prev FROM slots WHERE subject = ?", (subject,))
        slots = [{"i": i, "p": p, "o": o, "prev": prev} for i, p, o, prev in rows]
        kept = scrub.free_values(slots, doomed)
        freed = [(subject, old["i"]) for old, new in zip(slots, kept) if "p" not in new]
        db.many("DELETE FROM slots WHERE subject = ? AND i = ?", freed)
        db.many("UPDATE slots SET prev = NULL WHERE subject = ? AND i = ?",
                [(subject, old["i"]) for old, new in zip(slots, kept) if "p" in new and new["prev"] != old["prev"]])
        records = db.all("SELECT predicate, value FROM published WHERE subject = ?", (subject,))
        db.many("DELETE FROM published WHERE subject = ? AND predicate = ? AND value = ?",
                [(subject, p, v) for p, v in records if pattern is not None and pattern.search(v)])
        return len(freed)

    @staticmethod
    def _redact(db: Db, pattern: Any, table: str, column: str, keys: tuple[str, str], subject: str) -> int:
        """Rewrite every text of ``subject`` in ``table`` that ``pattern`` matches; return how many."""
        if pattern is None:
            return 0
        rows = db.all(f"SELECT {keys[0]}, {keys[1]}, {column} FROM {table} WHERE subject = ?", (subject,))
        changed = [(new, subject, a, b) for a, b, text in rows if (new := scrub.redact(text, pattern)) != text]
        db.many(f"UPDATE {table} SET {column} = ? WHERE subject = ? AND {keys[0]} = ? AND {keys[1]} = ?", changed)
        return len(changed)

