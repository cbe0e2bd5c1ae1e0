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
EXCLUSIVE lock on them while it runs. VACUUM FULL copies along a dead version that a still-open
snapshot older than the forget can see (a session idle in an old transaction, an ANALYZE in
progress, a prepared transaction, a replication slot's xmin: one such survived the vacuum in CI),
so before vacuuming the forget waits up to ``vacuum_wait`` seconds for every such snapshot to end
and, if one outlasts it, raises :class:`StoreError` naming them instead of vacuuming. Snapshots
taken after the forget committed cannot see the old versions, so the check has no race. No index
key holds a value (see :mod:`clerk.store.sql`), so indexes keep none.

    clerk forget --store 'postgresql:///clerk?host=/run/postgresql' --subject Ari --predicate city
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from clerk.errors import UserError
from clerk.store.base import DEFAULT_BUDGET, StoreError
from clerk.store.sql import DATA_TABLES, Db, SqlStore

#: Advisory lock key serialising schema creation by concurrent first connections.
_SCHEMA_LOCK = 0x636C65726B  # "clerk"

#: Seconds a vacuuming forget waits, by default, for snapshots older than it to end.
DEFAULT_VACUUM_WAIT = 60.0

#: What holds a snapshot (or a transaction) no newer than transaction ``%(mark)s``: the sessions
#: whose xmin or xid VACUUM counts for this database's tables, prepared transactions, slots.
_OLDER_SNAPSHOTS = """
SELECT format('pid %%s (%%s, application %%L, %%s)', pid, backend_type, application_name, state)
  FROM pg_stat_activity
 WHERE pid <> pg_backend_pid() AND (datname = current_database() OR datid IS NULL OR datid = 0)
   AND greatest(age(backend_xmin), age(backend_xid)) >= age(%(mark)s::xid)
UNION ALL
SELECT format('prepared transaction %%L', gid) FROM pg_prepared_xacts
 WHERE database = current_database() AND age(transaction) >= age(%(mark)s::xid)
UNION ALL
SELECT format('replication slot %%L', slot_name) FROM pg_replication_slots
 WHERE age(xmin) >= age(%(mark)s::xid)
"""


def check_vacuum_wait(value: Any, name: str = "vacuum_wait") -> float:
    """``value`` as seconds, or a UserError naming ``name``: a finite number >= 0, not a bool.

    >>> check_vacuum_wait(5), check_vacuum_wait(0.5, "--vacuum-wait")
    (5.0, 0.5)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise UserError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


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
        vacuum_wait: seconds such a forget waits for older snapshots to end (module docstring).
        create: create the tables when missing; False: StoreError instead.

    Raises:
        UserError: psycopg is not installed.
        StoreError: the server cannot be reached or refuses.
    """

    LOCK_CLAUSE = " FOR UPDATE"

    def __init__(self, url: str, budget: int = DEFAULT_BUDGET, fence: bool = True, vacuum: bool = False,
                 create: bool = True, vacuum_wait: float = DEFAULT_VACUUM_WAIT) -> None:
        super().__init__(budget=budget, fence=fence)
        try:
            import psycopg
        except ImportError:
            raise UserError("the PostgreSQL store needs psycopg 3: pip install 'psycopg[binary]'") from None
        self.vacuum_wait = check_vacuum_wait(vacuum_wait)
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

    def _forget_mark(self, db: Db) -> Any:
        return db.one("SELECT pg_current_xact_id()::xid::text")[0] if self.vacuum else None

    def _after_forget(self, mark: Any) -> None:
        if not self.vacuum:
            return
        fail = f"PostgreSQL store {self.where}: the forget committed, but"
        deadline = time.monotonic() + self.vacuum_wait
        try:
            while holders := [row[0] for row in self._conn.execute(_OLDER_SNAPSHOTS, {"mark": mark})]:
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{fail} after {self.vacuum_wait:g} s {len(holders)} older snapshot(s) still see the "
                        f"forgotten rows, which VACUUM FULL would copy: {'; '.join(holders)}; nothing vacuumed: "
                        f"end them and rerun `clerk forget --vacuum` (it vacuums even when nothing is left to erase)")
                time.sleep(0.05)
            # A lock another session holds on the tables must not hang the forget forever.
            wait_ms = max(1000, int((deadline - time.monotonic()) * 1000))
            self._conn.execute(f"SET lock_timeout = {wait_ms}")
            try:
                self._conn.execute("VACUUM FULL " + ", ".join(DATA_TABLES))
            finally:
                self._conn.execute("RESET lock_timeout")  # the store's later writes wait as before
        except self._psycopg.Error as err:
            raise StoreError(f"{fail} the VACUUM FULL after it failed: {err}") from err

    def close(self) -> None:
        self._conn.close()
