"""The SQLite backend: the embedded default, one database file (stdlib ``sqlite3``).

How a forgotten value leaves every byte of the files (SPEC §9):

* ``PRAGMA secure_delete = ON``: SQLite overwrites deleted content (cells, freed pages) with
  zeros instead of leaving it in free space (https://sqlite.org/pragma.html#pragma_secure_delete).
* ``PRAGMA journal_mode = DELETE`` (a rollback journal, not WAL): a write transaction copies the
  pages it changes into ``<db>-journal`` and the journal is deleted when the transaction
  commits. So no ``-wal`` file ever exists, and the journal that held the pre-forget pages is
  gone once ``forget`` returns. (In WAL mode the WAL keeps old page images until a checkpoint
  truncates it, which concurrent readers can hold off.) The deleted journal's blocks are then
  the filesystem's free space: erasure below the file level (filesystem, SSD wear levelling,
  backups) is out of this store's reach; use an encrypted volume where that matters.
* ``PRAGMA synchronous = FULL``: a commit is fsynced before it returns, so an acknowledged forget
  (and the generation it advanced) is durable.
* ``PRAGMA temp_store = MEMORY``: sorts and temporary indices never spill into temp files.

Writes (publish, forget) run under ``BEGIN IMMEDIATE``: the one database write lock, taken at
the start, is the fence's lock. Reads are one ``BEGIN`` (deferred) transaction: one snapshot.

    clerk forget --store sqlite:///memory.db --subject Ari --predicate city
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from clerk.store.base import DEFAULT_BUDGET, StoreError
from clerk.store.sql import Db, SqlStore

#: Seconds a connection waits for another process's lock before giving up (busy timeout).
BUSY_TIMEOUT_S = 60.0

#: Pragmas set on every connection, and the value each must read back as.
PRAGMAS = (("secure_delete", "ON", 1), ("journal_mode", "DELETE", "delete"),
           ("synchronous", "FULL", 2), ("temp_store", "MEMORY", 2))


#: What a file that is not a regular file is, by its ``stat`` type.
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_problem(path: str) -> str | None:
    """Why ``path`` cannot hold a SQLite store, or None for a regular file (a symbolic link is
    followed: a link to a regular file is fine). The reason reads after "it ...".

    >>> file_problem("/nonexistent/m.db"), file_problem("/")
    ('does not exist', 'is a directory, not a regular file')
    """
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"cannot be examined ({err.strerror})"
    via = ""
    if stat.S_ISLNK(link.st_mode):
        via = f"is a symbolic link to {os.readlink(path)!r}, which "
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return via + "does not exist (a dangling link)"
        except OSError as err:
            return via + f"cannot be examined ({err.strerror})"
    else:
        info = link
    for test, kind in _FILE_KINDS:
        if test(info.st_mode):
            return f"{via}is {kind}, not a regular file"
    return None


class SQLiteStore(SqlStore):
    """A store in one SQLite file (``path``; ``:memory:`` for a private in-memory store).

    Args:
        path: database file; created with the schema if missing.
        budget, fence: see :class:`clerk.store.base.Store`.
        timeout: busy timeout in seconds (``BUSY_TIMEOUT_S`` by default).
        create: create the file and the tables when missing; False: StoreError instead.

    Raises:
        StoreError: the file cannot be opened, or a pragma did not take (e.g. the database is in
            WAL mode and another connection keeps it there).
    """

    def __init__(self, path: str, budget: int = DEFAULT_BUDGET, fence: bool = True,
                 timeout: float = BUSY_TIMEOUT_S, create: bool = True) -> None:
        super().__init__(budget=budget, fence=fence)
        self.path = path
        if path != ":memory:":
            problem = file_problem(path)
            if problem is not None and (not create or problem != "does not exist"):
                hint = "this verb creates no store; " if not create else ""
                raise StoreError(f"no SQLite store at {path!r}: it {problem} ({hint}check the --store URL)")
        if not create and path != ":memory:":
            try:
                with open(path, "rb") as fh:
                    header = fh.read(16)
            except OSError as err:
                raise StoreError(f"no SQLite store at {path!r}: it cannot be read ({err.strerror})") from None
            if header != b"SQLite format 3\x00":  # checked before SQLite writes a header into it
                raise StoreError(f"no SQLite store at {path!r}: the file is not a SQLite database "
                                 f"(empty or other content; this verb creates no store, check the --store URL)")
        try:
            # isolation_level=None: no implicit transactions; every one is an explicit BEGIN.
            self._conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open SQLite store {path!r}: {err}") from None
        for name, value, expected in PRAGMAS:
            if name == "journal_mode" and path == ":memory:":
                continue  # an in-memory database has no files and its journal mode is "memory"
            self._set_pragma(name, value, expected)
        with self._txn(write=True) as db:
            if create:
                self._create_schema(db)
            else:
                found = db.one("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'subjects'")[0]
        if not create and not found:
            self._conn.close()
            raise StoreError(f"SQLite file {path!r} holds no CLERK store (no 'subjects' table); "
                             f"this verb creates no store, check the --store URL")

    def _set_pragma(self, name: str, value: str, expected: object) -> None:
        """Set a pragma and check it reads back as ``expected``; StoreError otherwise."""
        try:
            got = self._conn.execute(f"PRAGMA {name} = {value}").fetchone()
            got = self._conn.execute(f"PRAGMA {name}").fetchone()[0] if got is None else got[0]
        except sqlite3.Error as err:
            got = f"an error ({err})"
        if got != expected:
            self._conn.close()
            raise StoreError(f"SQLite store {self.path!r}: PRAGMA {name} = {value} reads back {got!r}, expected "
                             f"{expected!r}; is another connection holding the database in WAL mode?")

    @contextmanager
    def _txn(self, write: bool) -> Iterator[Db]:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.OperationalError as err:
            raise StoreError(f"SQLite store {self.path!r}: cannot begin a transaction: {err}") from None
        try:
            yield Db(conn.cursor(), pyformat=False)
            conn.execute("COMMIT")
        except sqlite3.Error as err:
            self._rollback()
            raise StoreError(f"SQLite store {self.path!r}: transaction failed, nothing written: {err}") from err
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()
