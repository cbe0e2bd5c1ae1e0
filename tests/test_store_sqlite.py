"""SQLite backend on the real engine: after ``clerk forget`` no byte of the value is in the files.

    python -m pytest tests/test_store_sqlite.py -q
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from clerk.cli import main as clerk_main
from clerk.store import StoreError, open_store
from clerk.store.sqlite import PRAGMAS

#: Distinctive values, so a byte match can only be the value itself.
SECRET, OLDER = "Ljubljana", "Reykjavik"


def raw_bytes(path):
    """The database file and every sidecar SQLite could leave next to it (-wal, -shm, -journal)."""
    files = [path] + [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]
    return {f.name: f.read_bytes() for f in files if f.exists()}


def fill(path, subjects=("Ari", "Bo")):
    """A history where the secret was stated, updated away (so it sits in ``prev``) and noted."""
    with open_store(f"sqlite:///{path}", budget=4) as store:
        for subject in subjects:
            for k, (program, text) in enumerate([
                ([{"op": "ADD", "s": subject, "p": "city", "o": OLDER}], f"I live in {OLDER}."),
                ([{"op": "UPDATE", "i": 0, "s": subject, "p": "city", "o": SECRET}], f"Moved to {SECRET}!"),
                ([{"op": "UPDATE", "i": 0, "s": subject, "p": "city", "o": "Oslo"}], f"{SECRET} is behind me."),
                ([{"op": "ADD", "s": subject, "p": "job", "o": "chef"}], "I cook."),
            ]):
                with store.consolidation(subject) as c:
                    c.publish(program, [{"role": "user", "content": text}],
                              derived={"note": c.derived.get("note", []) + [text], "bm25": [f"[{k}] {text}"] * 3})


class TestSecureDeletion:
    def test_forgotten_bytes_leave_the_files(self, tmp_path, capsys):
        """After `clerk forget`, neither the value nor an older one is anywhere in the db or a sidecar."""
        path = tmp_path / "m.db"
        fill(path)
        before = raw_bytes(path)
        assert list(before) == ["m.db"]  # rollback journal, deleted at commit: no -wal, no -journal
        assert SECRET.encode() in before["m.db"] and OLDER.encode() in before["m.db"]  # the control
        for subject in ("Ari", "Bo"):
            clerk_main(["forget", "--store", f"sqlite:///{path}", "--subject", subject, "--predicate", "city"])
        report = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert report == {"subject": "Bo", "predicate": "city", "generation": 1, "values": 3, "slots": 1,
                          "turns": 3, "derived": 3}
        after = raw_bytes(path)
        assert list(after) == ["m.db"]
        for value in (SECRET, OLDER, "Oslo"):
            assert value.encode() not in after["m.db"], value
        assert b"I cook." in after["m.db"]  # the rest is still there

    def test_whole_subject_bytes_leave_the_file(self, tmp_path):
        """A whole-subject forget deletes rows; secure_delete zeroes the freed cells and pages."""
        path = tmp_path / "m.db"
        fill(path, subjects=("Ari",))
        clerk_main(["forget", "--store", f"sqlite:///{path}", "--subject", "Ari"])
        data = raw_bytes(path)["m.db"]
        for text in (SECRET, OLDER, "I cook."):
            assert text.encode() not in data, text

    def test_without_secure_delete_the_bytes_would_stay(self, tmp_path):
        """The control for the pragma: a plain DELETE in SQLite leaves the deleted text in the file."""
        path = tmp_path / "plain.db"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA secure_delete = OFF")
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?)", [(f"{SECRET} {k}",) for k in range(50)] + [("keep",)])
        conn.execute("COMMIT")
        conn.execute(f"DELETE FROM t WHERE x LIKE '{SECRET}%'")
        conn.close()
        assert SECRET.encode() in path.read_bytes()


class TestPragmas:
    def test_every_connection_reads_them_back(self, tmp_path):
        """secure_delete ON, rollback journal (DELETE), synchronous FULL, temp_store MEMORY."""
        store = open_store(f"sqlite:///{tmp_path}/m.db")
        for name, _, expected in PRAGMAS:
            assert store._conn.execute(f"PRAGMA {name}").fetchone()[0] == expected
        store.close()

    def test_a_wal_database_is_switched_to_the_rollback_journal(self, tmp_path):
        """A file left in WAL mode by someone else is switched back, so no -wal keeps old pages."""
        path = tmp_path / "m.db"
        holder = sqlite3.connect(path, isolation_level=None)
        assert holder.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
        holder.close()
        with open_store(f"sqlite:///{path}") as store:
            assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"

    def test_a_database_held_in_wal_mode_is_refused(self, tmp_path):
        """If another connection keeps the file in WAL mode, the store refuses instead of leaking."""
        path = tmp_path / "m.db"
        holder = sqlite3.connect(path, isolation_level=None)
        assert holder.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
        holder.execute("CREATE TABLE x (y)")
        holder.execute("BEGIN")
        holder.execute("SELECT * FROM x").fetchall()  # an open read keeps the WAL in use
        try:
            with pytest.raises(StoreError, match=r"PRAGMA journal_mode = DELETE reads back .*, expected 'delete'; "
                                                 r"is another connection holding the database in WAL mode\?"):
                open_store(f"sqlite:///{path}")
        finally:
            holder.execute("COMMIT")
            holder.close()


class TestStoreFile:
    """`clerk forget` names the true reason a path holds no store, and follows a link to one."""

    def _forget(self, url, capsys):
        with pytest.raises(SystemExit) as err:
            clerk_main(["forget", "--store", url, "--subject", "Ari"])
        assert err.value.code == 2
        return capsys.readouterr().err.strip()

    def test_a_symlink_to_a_store_works_and_erases_in_the_target(self, tmp_path, capsys):
        fill(tmp_path / "m.db")
        (tmp_path / "link.db").symlink_to("m.db")
        clerk_main(["forget", "--store", f"sqlite:///{tmp_path}/link.db", "--subject", "Ari", "--predicate", "city"])
        assert json.loads(capsys.readouterr().out)["slots"] == 1
        assert (tmp_path / "link.db").is_symlink()
        raw = (tmp_path / "m.db").read_bytes()
        assert SECRET.encode() in raw  # Bo's
        with open_store(f"sqlite:///{tmp_path}/m.db") as store:
            assert SECRET not in "\n".join(store.read("Ari").texts())

    @pytest.mark.parametrize("make,reason", [
        (lambda p: os.mkfifo(p), "it is a FIFO (named pipe), not a regular file"),
        (lambda p: p.symlink_to("nowhere.db"), "it is a symbolic link to 'nowhere.db', which does not exist (a dangling link)"),
        (lambda p: (os.mkfifo(p.with_name("pipe")), p.symlink_to("pipe")),
         "it is a symbolic link to 'pipe', which is a FIFO (named pipe), not a regular file"),
        (lambda p: p.mkdir(), "it is a directory, not a regular file"),
        (lambda p: None, "it does not exist"),
    ], ids=["fifo", "dangling-link", "link-to-fifo", "directory", "missing"])
    def test_what_is_not_a_store_file_is_named(self, tmp_path, capsys, make, reason):
        path = tmp_path / "m.db"
        make(path)
        assert self._forget(f"sqlite:///{path}", capsys) == (
            f"clerk forget: error: no SQLite store at {str(path)!r}: {reason} (this verb creates no store; "
            f"check the --store URL)")

    def test_a_fifo_is_refused_when_creating_too(self, tmp_path):
        """Opening a FIFO would block on its first read: it is refused before SQLite touches it."""
        os.mkfifo(tmp_path / "pipe")
        with pytest.raises(StoreError, match="it is a FIFO \\(named pipe\\), not a regular file"):
            open_store(f"sqlite:///{tmp_path}/pipe")
