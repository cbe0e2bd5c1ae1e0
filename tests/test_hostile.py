"""Hostile input to the library: erasure of values written without spaces, in another
script or normal form; forgets aimed at the wrong store or subject; names that are not UTF-8;
Python API edges (ledger ``now``, huge indices, generator values, a string session, adversarial
program text).

Each test here failed on the code before the fix it names (the CLI side is in
tests/test_bad_input.py).

    python -m pytest tests/test_hostile.py -q
"""

from __future__ import annotations

import json
import unicodedata

import pg_kit
import pytest

from clerk import ledger as L
from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.memory.forgetting import scrub_session
from clerk.scrub import REDACTED, redact, value_pattern
from clerk.store import ConcurrentPublish, StoreError, UnknownSubject, open_store
from clerk.store.sql import DATA_TABLES

pg_server = pytest.fixture(scope="module")(pg_kit.serve)

#: (value as the ledger holds it, the turn that stated it): no spaces, NFD, underscore-adjacent.
CASES = [
    ("釧路", "私は釧路に住んでいます"),
    ("Tórshavn", unicodedata.normalize("NFD", "Ich wohne in Tórshavn.")),
    ("Hammerfest", "#Hammerfest_life is the best"),
    ("Wrocław", "WROCŁAW!"),  # another case
    ("Ｓeoul", "서울 or Seoul?"),  # full-width letter in the value, ASCII in the text (NFKC)
]


def forms(value: str) -> list[bytes]:
    """The UTF-8 bytes of ``value`` in NFC and NFD (what must not survive in a file)."""
    return sorted({unicodedata.normalize(f, value).encode() for f in ("NFC", "NFD", "NFKC")})


def fill(url: str) -> None:
    """Ari states each value of :data:`CASES` (one predicate each), notes it and summarises it."""
    with open_store(url, budget=8) as store:
        for k, (value, turn) in enumerate(CASES):
            with store.consolidation("Ari") as c:
                c.publish([{"op": "ADD", "s": "Ari", "p": f"p{k}", "o": value}], [{"role": "user", "content": turn}],
                          derived={"note": c.derived.get("note", []) + [turn], "summary": [f"p{k}={value}"]})
            with store.consolidation("Ari") as c:
                c.publish([], [{"role": "user", "content": "I cook."}], derived={"note": c.derived["note"] + ["I cook."]})


def table_files(pg_server, url: str) -> list[bytes]:
    """After a checkpoint, the bytes of the files of the data tables of the store at ``url``."""
    from pathlib import Path

    import psycopg

    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        data = Path(conn.execute("SHOW data_directory").fetchone()[0])
    with psycopg.connect(url) as conn:
        paths = [conn.execute("SELECT pg_relation_filepath(%s)", (t,)).fetchone()[0] for t in DATA_TABLES]
    return [(data / p).read_bytes() for p in paths]


class TestScrubByText:
    @pytest.mark.parametrize("value,text", CASES)
    def test_a_value_is_found_by_text_in_any_script_case_or_normal_form(self, value, text):
        out = redact(text, value_pattern([value]))
        assert REDACTED in out
        for form in forms(value) + forms(value.upper()) + forms(value.lower()):
            assert form not in out.encode()

    def test_text_outside_the_match_keeps_its_bytes(self):
        nfd = unicodedata.normalize("NFD", "Café in Zürich, café")
        assert redact(nfd, value_pattern(["Zürich"])) == unicodedata.normalize("NFD", "Café in ") + REDACTED + ", " \
            + unicodedata.normalize("NFD", "café")

    def test_a_marker_is_not_a_value(self):
        """A value such as "got" is not found in "[forgotten]", and redacting twice changes nothing."""
        once = redact("I got a cat", value_pattern(["cat"]))
        assert redact(once, value_pattern(["got", "cat"])) == "I [forgotten] a [forgotten]"
        assert value_pattern(["got"]).search(REDACTED) is False

    def test_whole_words_for_the_leak_measure(self):
        """The erasure study's leak measure keeps whole words, but CJK and underscores bound them."""
        words = lambda v, t: value_pattern([v], words=True).search(t)  # noqa: E731
        assert not words("pho", "her phone") and words("東京", "私は東京に住んでいます")
        assert words("Oslo", "#Oslo_life") and words("Zürich", unicodedata.normalize("NFD", "in Zürich."))

    def test_memory_systems_redact_the_same_way(self):
        session = {"index": 0, "turns": [{"role": "user", "content": "私は東京に住んでいます"}]}
        assert scrub_session(session, ["東京"])["turns"][0]["content"] == f"私は{REDACTED}に住んでいます"


class TestStoreErasesByText:
    def test_sqlite_file_read_and_derived_hold_no_byte_of_a_forgotten_value(self, tmp_path):
        path = tmp_path / "m.db"
        fill(f"sqlite:///{path}")
        raw = path.read_bytes()
        assert all(any(f in raw for f in forms(v)) for v, _ in CASES)  # the control
        with open_store(f"sqlite:///{path}") as store:
            reports = [store.forget("Ari", f"p{k}") for k in range(len(CASES))]
            snap = store.read("Ari")
        assert all(r.turns == 1 and r.derived >= 1 for r in reports), reports  # the note (and the summary)
        raw = path.read_bytes()
        texts = "\n".join(snap.texts()).encode()
        for value, _ in CASES:
            for form in forms(value):
                assert form not in raw, (value, form)
                assert form not in texts, (value, form)
        assert b"I cook." in raw and "私は" in "".join(snap.texts())

    def test_postgresql_after_vacuum_holds_no_byte_of_a_forgotten_value(self, pg_server, capsys):
        from pathlib import Path

        import psycopg

        url = pg_server.new_store_url()
        fill(url)
        for k in range(len(CASES)):
            clerk_main(["forget", "--store", url, "--subject", "Ari", "--predicate", f"p{k}", "--vacuum"])
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            base = Path(conn.execute("SHOW data_directory").fetchone()[0]) / "base"
        files = [p.read_bytes() for p in base.rglob("*") if p.is_file()]
        for value, _ in CASES:
            for form in forms(value):
                assert not any(form in data for data in files), (value, form)
        with open_store(url) as store:
            assert not any(v in unicodedata.normalize("NFC", t) for t in store.read("Ari").texts() for v, _ in CASES)

    def test_postgresql_vacuum_waits_out_an_older_snapshot_or_names_it(self, pg_server):
        """VACUUM FULL copies a dead row version that a still-open older snapshot can see (CI stop
        56: an ASCII value survived the vacuum once in the full suite). The forget waits for such
        snapshots to end; one that outlasts the wait is a StoreError naming it, never a silent
        "erased"; a rerun after it ends leaves no byte."""
        import threading

        import psycopg

        url = pg_server.new_store_url()
        fill(url)
        for bad in (-1, float("nan"), float("inf"), True):
            with pytest.raises(UserError, match="vacuum_wait must be a finite number of seconds"):
                open_store(url, vacuum=True, vacuum_wait=bad)
        holder = psycopg.connect(url, autocommit=True, application_name="old-reader")
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT 1")  # the snapshot, older than the forget (and no lock on the tables)
        try:
            with open_store(url, vacuum=True, vacuum_wait=0.5) as store:
                with pytest.raises(StoreError, match=r"forget committed.*older snapshot.*old-reader.*nothing vacuumed"):
                    store.forget("Ari", "p2")
                assert any(b"Hammerfest" in data for data in table_files(pg_server, url))  # the control
                threading.Timer(0.5, holder.execute, ("COMMIT",)).start()
                store.forget("Ari", "p2")  # waits for the holder, then vacuums
        finally:
            holder.close()
        assert not any(b"Hammerfest" in data for data in table_files(pg_server, url))

    def test_postgresql_vacuum_behind_a_lock_fails_in_time(self, pg_server):
        """A session holding a lock on a data table (but no older snapshot) makes VACUUM FULL wait:
        the forget fails once the wait is spent instead of hanging."""
        import psycopg

        url = pg_server.new_store_url()
        fill(url)
        from concurrent.futures import ThreadPoolExecutor

        with psycopg.connect(url) as locker, ThreadPoolExecutor(1) as pool:
            locker.execute("LOCK TABLE turns IN ACCESS SHARE MODE")
            with open_store(url, vacuum=True, vacuum_wait=0) as store:
                outcome = pool.submit(store.forget, "Ari", "p2")
                try:
                    err = outcome.exception(timeout=30)
                finally:
                    locker.rollback()  # frees a forget that hangs, so the test ends (and fails)
                assert isinstance(err, StoreError) and "the VACUUM FULL after it failed" in str(err), err
                assert "lock timeout" in str(err), err
                assert store._conn.execute("SHOW lock_timeout").fetchone()[0] == "0"  # reset for later writes


class TestForgetTarget:
    def test_unknown_subject_is_an_error_and_adds_nothing(self, tmp_path):
        url = f"sqlite:///{tmp_path}/m.db"
        fill(url)
        with open_store(url) as store:
            with pytest.raises(UnknownSubject, match="subject 'Bo' is not in the store"):
                store.forget("Bo", "city")
            assert store.subjects() == ["Ari"]

    def test_a_missing_store_is_not_created(self, tmp_path):
        with pytest.raises(StoreError, match="does not exist"):
            open_store(f"sqlite:///{tmp_path}/typo.db", create=False)
        assert not (tmp_path / "typo.db").exists()

    def test_a_file_without_the_store_is_refused(self, tmp_path):
        import sqlite3

        sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE x (y)").connection.close()
        with pytest.raises(StoreError, match="holds no CLERK store"):
            open_store(f"sqlite:///{tmp_path}/other.db", create=False)

    def test_postgres_without_the_store_is_refused(self, pg_server):
        import psycopg

        url = pg_server.new_store_url()
        with pytest.raises(StoreError, match="holds no CLERK store"):
            open_store(url, create=False)
        with psycopg.connect(url) as conn:  # and nothing was created
            assert conn.execute("SELECT to_regclass('subjects')").fetchone()[0] is None


class TestApiEdges:
    @pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
    def test_non_utf8_names_are_a_user_error(self, backend, tmp_path, request):
        url = f"sqlite:///{tmp_path}/m.db" if backend == "sqlite" else request.getfixturevalue("pg_server").new_store_url()
        bad = b"Ari\xff".decode("utf-8", "surrogateescape")  # what Python makes of such an argv
        with open_store(url) as store:
            for call in (lambda: store.forget(bad), lambda: store.read(bad), lambda: store.forget("Ari", bad),
                         lambda: store.forget("Ari", "city", values=[bad]),
                         lambda: store.publish(bad, generation=0, session=0, ledger=L.empty_ledger(12), transcript=[])):
                with pytest.raises(UserError, match="must be valid UTF-8 text"):
                    call()
            with pytest.raises(UserError, match="NUL"):
                store.read("A\x00ri")

    def test_forget_values_may_be_a_generator(self, tmp_path):
        url = f"sqlite:///{tmp_path}/m.db"
        with open_store(url) as store:
            with store.consolidation("Ari") as c:
                c.publish([], [{"role": "user", "content": "I love Porto."}])
            report = store.forget("Ari", "city", values=(v for v in ["Porto"]))
            assert report.turns == 1 and "Porto" not in "".join(store.read("Ari").texts())

    def test_a_string_session_is_a_user_error_not_a_conflict(self, tmp_path):
        with open_store(f"sqlite:///{tmp_path}/m.db") as store:
            with pytest.raises(UserError, match="session must be an int >= 0.*got '0'"):
                store.publish("Ari", generation=0, session="0", ledger=L.empty_ledger(12), transcript=[])
            with pytest.raises(ConcurrentPublish):  # a real conflict still is one
                store.publish("Ari", generation=0, session=3, ledger=L.empty_ledger(12), transcript=[])

    def test_reduce_rejects_a_negative_now(self):
        with pytest.raises(ValueError, match=r"now must be an int >= 0 \(a session index\), got -5"):
            L.reduce(L.empty_ledger(2), [{"op": "ADD", "s": "Ari", "p": "job", "o": "chef"}], now=-5)
        with pytest.raises(ValueError, match="now must be an int >= 0"):
            L.reduce(L.empty_ledger(2), [], now=True)

    def test_a_huge_index_is_an_invalid_op_not_a_crash(self):
        huge = 10 ** 5000
        out, report = L.reduce(L.empty_ledger(2), [{"op": "EVICT", "i": huge}], 0, strict=False)
        assert report.applied == [] and "out of range" in report.invalid[0][2]
        assert len(report.invalid[0][2]) < 200
        with pytest.raises(L.InvalidOpError, match="out of range"):
            L.reduce(L.empty_ledger(2), [{"op": "EVICT", "i": -huge}], 0)

    def test_parse_program_is_linear(self, monkeypatch):
        """Adversarial text (every '[' starts a list that runs to the end) is decoded a bounded
        number of times, not once per '[' (was up to 256 full scans: 12.5 s for 2 MB)."""
        calls = []
        real = json.JSONDecoder.raw_decode

        def counting(self, s, idx=0):
            calls.append(idx)
            return real(self, s, idx)

        monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
        text = "[1," * 100_000
        assert L.parse_program(text).failed
        assert len(calls) <= 8, len(calls)
        calls.clear()
        assert L.parse_program("[[[" * 50_000).failed
        assert len(calls) <= 50, len(calls)
        calls.clear()  # a real program after junk is still found
        assert L.parse_program('junk [1, [oops ' + '[{"op":"EVICT","i":0}]').program == [{"op": "EVICT", "i": 0}]
