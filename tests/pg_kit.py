"""A throwaway local PostgreSQL server for the store tests: initdb into a temp dir, a Unix socket
in that dir only (no TCP), run as an unprivileged user (the server refuses root), stopped after.

Binaries: ``$CLERK_PG_BIN`` or the newest ``/usr/lib/postgresql/<v>/bin`` (Debian's
``postgresql`` package, which ``.ci/run`` installs), else ``initdb`` on PATH. Under root the
server runs as the ``postgres`` user (``runuser -u postgres``).

    python tests/pg_kit.py      # start one, print its URL, stop it
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path


def find_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None when no server is installed."""
    candidates = [os.environ.get("CLERK_PG_BIN", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    which = shutil.which("initdb")
    candidates.append(str(Path(which).parent) if which else "")
    for cand in candidates:
        if cand and (Path(cand) / "initdb").is_file() and (Path(cand) / "pg_ctl").is_file():
            return Path(cand)
    return None


class PgServer:
    """One server; ``url(db)`` names a database on it, ``new_store_url()`` an empty store on it."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="clerk-pg-"))
        self.data = self.dir / "data"
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            try:
                pwd.getpwnam(self.user)
            except KeyError:
                raise RuntimeError("running as root, which PostgreSQL refuses, and there is no 'postgres' "
                                   "user to run it as (Debian's postgresql package creates one)") from None
            shutil.chown(self.dir, user=self.user)

    def _run(self, *argv: str, timeout: float = 60) -> None:
        cmd = ([*(["runuser", "-u", self.user, "--"] if self.user else []), *argv])
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            log = (self.dir / "log").read_text() if (self.dir / "log").exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr}{proc.stdout}{log}")

    def start(self) -> PgServer:
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        opts = f"-c listen_addresses='' -c unix_socket_directories={self.dir} -c fsync=on"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"),
                  "-w", "-t", "30", "start")
        return self

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@/{db}?host={self.dir}"

    def new_store_url(self) -> str:
        """The URL of a fresh empty store: a new schema, first on the connection's search path
        (milliseconds, where a new database takes most of a second)."""
        import psycopg

        name = "t" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{self.url()}&options=-csearch_path%3D{name}"

    def stop(self) -> None:
        try:
            if self.data.exists():
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


_SHARED: list[PgServer] = []


def serve():
    """A pytest fixture body: the one server of this test run (started on first use, stopped when
    the run exits), or a skip naming why there is none.

    Use as ``pg_server = pytest.fixture(scope="module")(pg_kit.serve)``; every module shares the
    server, and each test takes a fresh store on it with :meth:`PgServer.new_store_url`."""
    import pytest

    if not _SHARED:
        bindir = find_bin()
        if bindir is None:
            pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) found: install Debian's postgresql "
                        "package (apt-get install postgresql) or set CLERK_PG_BIN")
        server = PgServer(bindir)
        atexit.register(server.stop)
        _SHARED.append(server.start())
    yield _SHARED[0]


if __name__ == "__main__":
    server = PgServer(find_bin()).start()
    print(server.url())
    server.stop()
