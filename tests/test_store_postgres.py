"""PostgreSQL backend on a real local server (started here, Unix socket only, unprivileged user).

After ``forget`` no live row holds the value; the dead row versions still hold its bytes in the
table files until VACUUM, and ``--vacuum`` (VACUUM FULL) leaves none there: the README's note.

    python -m pytest tests/test_store_postgres.py -q
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pg_kit
import psycopg
import pytest

from clerk.cli import main as clerk_main
from clerk.store import StoreError, open_store

pg_server = pytest.fixture(scope="module")(pg_kit.serve)


def fill(url, secret):
    """A history where ``secret`` was stated, noted, then updated away (so it sits in ``prev``)."""
    with open_store(url, budget=4) as store:
        for program, text in [([{"op": "ADD", "s": "Ari", "p": "city", "o": secret}], f"I live in {secret}."),
                              ([{"op": "UPDATE", "i": 0, "s": "Ari", "p": "city", "o": "Oslo"}], "Now Oslo."),
                              ([{"op": "ADD", "s": "Ari", "p": "job", "o": "chef"}], "I cook.")]:
            with store.consolidation("Ari") as c:
                c.publish(program, [{"role": "user", "content": text}],
                          derived={"note": c.derived.get("note", []) + [text], "summary": [text]})


def rows_holding(url, text):
    """(table, count) of live rows in the store's schema whose text form contains ``text``."""
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]
        assert sorted(tables) == ["derived", "published", "slots", "subjects", "turns"]
        counts = {t: conn.execute(f"SELECT count(*) FROM {t} AS r WHERE r::text LIKE %s", (f"%{text}%",)).fetchone()[0]
                  for t in tables}
    return {t: n for t, n in counts.items() if n}


def files_holding(server, text):
    """Table and index files of the server (after a CHECKPOINT) whose bytes contain ``text``."""
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        base = Path(conn.execute("SHOW data_directory").fetchone()[0]) / "base"
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


class TestRows:
    def test_no_live_row_holds_a_forgotten_value(self, pg_server, capsys):
        """`clerk forget` over a Unix-socket URL: the value is in no row of any table afterwards."""
        url = pg_server.new_store_url()
        fill(url, "Ljubljana")
        assert set(rows_holding(url, "Ljubljana")) == {"slots", "turns", "derived", "published"}  # the control
        clerk_main(["forget", "--store", url, "--subject", "Ari", "--predicate", "city"])
        assert json.loads(capsys.readouterr().out)["generation"] == 1
        assert rows_holding(url, "Ljubljana") == {} and rows_holding(url, "Oslo") == {}
        assert rows_holding(url, "chef") == {"slots": 1, "published": 1}

    def test_percent_encoded_socket_host(self, pg_server):
        """libpq's other Unix-socket form, the directory as an encoded host, works too."""
        url = pg_server.new_store_url().replace("postgresql://postgres@/postgres?host=" + str(pg_server.dir) + "&",
                                                f"postgresql://postgres@{quote(str(pg_server.dir), safe='')}/postgres?")
        assert "%2F" in url
        with open_store(url) as store:
            assert store.read("Ari").generation == 0

    def test_unreachable_server_is_a_clear_error(self, tmp_path):
        """No server behind the socket: a StoreError naming the database and host, never a password."""
        with pytest.raises(StoreError, match=rf"cannot open PostgreSQL store clerk@{tmp_path}: ") as err:
            open_store(f"postgresql://u:hunter2@/clerk?host={tmp_path}")
        assert "hunter2" not in str(err.value)


class TestDeadRowVersions:
    def test_dead_versions_keep_the_bytes_until_vacuum(self, pg_server):
        """What the README says: no live row, but the table files still hold the dead versions."""
        url = pg_server.new_store_url()
        fill(url, "Tegucigalpa")
        with open_store(url) as store:
            store.forget("Ari", "city")
        assert rows_holding(url, "Tegucigalpa") == {}
        assert files_holding(pg_server, "Tegucigalpa")

    def test_vacuum_full_leaves_no_byte_in_the_table_files(self, pg_server, capsys):
        """`clerk forget --vacuum` rewrites the data tables: no file of any table or index holds it."""
        url = pg_server.new_store_url()
        fill(url, "Ouagadougou")
        clerk_main(["forget", "--store", url, "--subject", "Ari", "--predicate", "city", "--vacuum"])
        assert files_holding(pg_server, "Ouagadougou") == []
        assert rows_holding(url, "chef") == {"slots": 1, "published": 1}
