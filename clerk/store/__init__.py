"""The memory store: ledger, transcript log, derived memories and erase generations (SPEC §9).

One small interface over two real engines: SQLite (embedded default, one file, secure deletion)
and PostgreSQL (psycopg 3; consolidation workers on several machines).

    store = open_store("sqlite:///memory.db")
    with store.consolidation("Ari") as c:             # captures the erase generation, then reads
        c.publish(policy(c.ledger, transcript), transcript, derived={"note": notes})
    store.forget("Ari", "city")                       # every value city held, everywhere; durable
    # a consolidation that read before that forget raises StaleGeneration at publish: retry fresh

    clerk forget --store sqlite:///memory.db --subject Ari --predicate city
    clerk stress-forget --store sqlite:///$(mktemp -d)/m.db --workers 4 --forgetters 2 --seconds 20
"""

from __future__ import annotations

from clerk.errors import UserError
from clerk.store.base import (
    DEFAULT_BUDGET,
    ConcurrentPublish,
    Consolidation,
    ForgetReport,
    Receipt,
    Snapshot,
    StaleGeneration,
    Store,
    StoreError,
    UnknownSubject,
)

__all__ = ["open_store", "Store", "Consolidation", "Snapshot", "Receipt", "ForgetReport",
           "StoreError", "StaleGeneration", "ConcurrentPublish", "UnknownSubject", "DEFAULT_BUDGET", "URL_FORMS"]

#: The store URLs :func:`open_store` accepts, for help texts and errors.
URL_FORMS = ("sqlite:///PATH (relative; sqlite:////abs/path absolute; sqlite:///:memory:)",
             "postgresql://[user@][host][:port]/DB (or postgres://; a Unix socket: "
             "postgresql:///DB?host=/socket/dir or postgresql://%2Fsocket%2Fdir/DB)")


def backend_of(url: str) -> str:
    """"sqlite" or "postgresql" for a store URL; UserError naming the accepted forms otherwise.

    >>> backend_of("sqlite:///m.db"), backend_of("postgres:///clerk?host=/tmp")
    ('sqlite', 'postgresql')
    """
    if not isinstance(url, str):
        raise UserError(f"store URL must be a string, got {url!r}")
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"store URL must be valid UTF-8 text, got {url!r} (bytes that are not UTF-8)") from None
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    raise UserError(f"store URL must be one of: {'; '.join(URL_FORMS)}; got {url!r}")


def open_store(url: str, *, budget: int = DEFAULT_BUDGET, fence: bool = True, vacuum: bool = False,
               create: bool = True, vacuum_wait: float | None = None) -> Store:
    """Open the store at ``url``; create it (file and tables) if needed unless ``create`` is False.

    Args:
        url: ``sqlite:///PATH`` or a libpq ``postgresql://`` URL (see :data:`URL_FORMS`).
        budget: ledger budget B of subjects the store has not seen yet.
        fence: re-prove the erase generation at publish; False only for the stress harness's
            negative control (``clerk stress-forget --no-fence``).
        vacuum: PostgreSQL only: ``VACUUM FULL`` the data tables after each forget commits, so no
            dead row version keeps a forgotten value in the table files.
        vacuum_wait: PostgreSQL only: seconds such a forget waits for snapshots older than it
            to end before it fails naming them (default
            :data:`clerk.store.postgres.DEFAULT_VACUUM_WAIT`).
        create: False for a verb that only changes an existing store (``clerk forget``): a
            SQLite file that does not exist, or a database without the store's tables, is a
            :class:`StoreError` and nothing is created (a typo in the URL must not "succeed").

    Raises:
        UserError: an unknown URL form, or ``vacuum`` on SQLite (secure deletion needs none).
        StoreError: the engine cannot open it, or (``create=False``) there is no store there.
    """
    kind = backend_of(url)
    if kind == "sqlite":
        if vacuum or vacuum_wait is not None:
            raise UserError("vacuum and vacuum_wait apply to PostgreSQL stores only "
                            "(SQLite zeroes deleted content itself)")
        from clerk.store.sqlite import SQLiteStore

        return SQLiteStore(url[len("sqlite:///"):], budget=budget, fence=fence, create=create)
    from clerk.store.postgres import DEFAULT_VACUUM_WAIT, PostgresStore

    wait = DEFAULT_VACUUM_WAIT if vacuum_wait is None else vacuum_wait
    return PostgresStore(url, budget=budget, fence=fence, vacuum=vacuum, create=create, vacuum_wait=wait)
