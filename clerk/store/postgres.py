"""The PostgreSQL backend (psycopg 3): one store shared by consolidation workers on many machines.

The fence's lock is the subject's row lock: publish and forget run in a READ COMMITTED
transaction that first takes ``SELECT ... FROM subjects WHERE subject = %s FOR UPDATE``, so
every write to a subject is serialised behind it and sees every commit before it. A read is one
``REPEATABLE READ, READ ONLY`` transaction: the generation and everything after it come from one
snapshot. ``synchronous_commit`` is set ``on`` for the session, so a forget returns only once its
commit is flushed to the server's WAL.

What "erased" means on PostgreSQL: after a forget no live row holds the value. The rows that
held it (the old slots, the un-redacted turns and texts, the value records) become dead row
versions: their bytes stay in the tables' files until VACUUM, and the server's WAL keeps the
records that wrote them until its segments are recycled after checkpoints (backups, WAL
archives and replicas keep their own copies). A plain VACUUM (autovacuum) marks the dead
versions' space reusable but does not promise to overwrite it: measured here, the bytes of a
forgotten note survived a plain VACUUM in a page of ``derived``. ``forget`` does not vacuum by
default; a store opened with ``vacuum=True`` (``clerk forget --vacuum``) runs ``VACUUM FULL`` on
the four data tables after the forget commits, which rewrites them into new files holding only
live rows (measured: no byte of the value left in the table files) at the price of an ACCESS
EXCLUSIVE lock on them while it runs; a dead version that a still-open older snapshot can see
is copied along. No index key holds a value (see :mod:`clerk.store.sql`), so indexes keep none.

    clerk forget --store 'postgresql:///clerk?host=/run/postgresql' --subject Ari --predicate city
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from clerk.errors import UserError
from clerk.store.base import DEFAULT_BUDGET, StoreError
from clerk.store.sql import DATA_TABLES, Db, SqlStore

#: Advisory lock key serialising schema creation by concurrent first connections.
_SCHEMA_LOCK = 0x636C65726B  # "clerk"


def describe(url: str) -> str:
    """``dbname@host`` of a libpq URL for messages (never the password)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # psycopg.ProgrammingError: an unparseable URL
        return "<unparseable URL>"
    return f"{parts.get('dbname', '?')}@{parts.get('host', 'default host')}"


class PostgresStore(SqlStore):
    """A store in a PostgreSQL database (``url``: a libpq URL, e.g. ``postgresql://u@h/db`` or,
    over a Unix socket, ``postgresql:///db?host=/run/postgresql``).

    Args:
        url: where the database is; the tables are created if missing.
        budget, fence: see :class:`clerk.store.base.Store`.
        vacuum: after each forget commits, ``VACUUM FULL`` the data tables (module docstring).
        create: create the tables when missing; False: StoreError instead.

    Raises:
        UserError: psycopg is not installed.
        StoreError: the server cannot be reached or refuses.
    """

    LOCK_CLAUSE = " FOR UPDATE"

    def __init__(self, url: str, budget: int = DEFAULT_BUDGET, fence: bool = True, vacuum: bool = False,
                 create: bool = True) -> None:
        super().__init__(budget=budget, fence=fence)
        try:
            import psycopg
        except ImportError:
            raise UserError("the PostgreSQL store needs psycopg 3: pip install 'psycopg[binary]'") from None
        self._psycopg, self.vacuum, self.where = psycopg, bool(vacuum), describe(url)
        try:
            missing = False
            self._conn = psycopg.connect(url, autocommit=True)
            self._conn.execute("SET synchronous_commit TO on")
            with self._txn(write=True) as db:
                if create:
                    db.run("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
                    self._create_schema(db)
                elif db.one("SELECT to_regclass('subjects')")[0] is None:
                    missing = True
        except psycopg.Error as err:
            raise StoreError(f"cannot open PostgreSQL store {self.where}: {err}") from None
        if not create and missing:
            self._conn.close()
            raise StoreError(f"PostgreSQL database {self.where} holds no CLERK store (no 'subjects' table); "
                             f"this verb creates no store, check the --store URL")

    @contextmanager
    def _txn(self, write: bool) -> Iterator[Db]:
        try:
            with self._conn.transaction():
                cur = self._conn.cursor()
                if not write:
                    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield Db(cur, pyformat=True)
        except self._psycopg.Error as err:
            raise StoreError(f"PostgreSQL store {self.where}: transaction failed, nothing written: {err}") from err

    def _after_forget(self) -> None:
        if self.vacuum:
            try:
                self._conn.execute("VACUUM FULL " + ", ".join(DATA_TABLES))
            except self._psycopg.Error as err:
                raise StoreError(f"PostgreSQL store {self.where}: the forget committed, "
                                 f"but the VACUUM FULL after it failed: {err}") from err

    def close(self) -> None:
        self._conn.close()
