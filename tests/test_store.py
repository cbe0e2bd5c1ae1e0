"""The store's contract (SPEC §9), on both real engines: SQLite and a local PostgreSQL server.

    python -m pytest tests/test_store.py -q
"""

from __future__ import annotations

import doctest

import pg_kit
import pytest

import clerk.store
from clerk import scrub as scrub_module
from clerk.errors import UserError
from clerk.store import ConcurrentPublish, StaleGeneration, StoreError, UnknownSubject, open_store
from clerk.store import base as base_module

pg_server = pytest.fixture(scope="module")(pg_kit.serve)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    """An empty store on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/m.db"
    return request.getfixturevalue("pg_server").new_store_url()


@pytest.fixture
def store(url):
    with open_store(url, budget=4) as s:
        yield s


def say(text):
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


def add(p, o, s="Ari"):
    return {"op": "ADD", "s": s, "p": p, "o": o}


def update(i, p, o, s="Ari"):
    return {"op": "UPDATE", "i": i, "s": s, "p": p, "o": o}


def consolidate(store, subject, program, text, notes=None):
    """One consolidation: program + transcript, and the add-only notes grown by ``notes``."""
    with store.consolidation(subject) as c:
        derived = {"note": c.derived.get("note", []) + [notes or text], "summary": [f"{subject}: {text}"]}
        return c.publish(program, say(text), derived=derived)


def texts(store, subject):
    return "\n".join(store.read(subject).texts())


class TestPublish:
    def test_round_trip(self, store):
        """A publish lands atomically: ledger, log entry, derived kinds, session counter."""
        receipt = consolidate(store, "Ari", [add("city", "Lisbon")], "I live in Lisbon.")
        assert (receipt.session, receipt.generation, receipt.applied) == (0, 0, [0])
        with store.consolidation("Ari") as c:
            assert (c.generation, c.now) == (0, 1)
            assert c.ledger[0] == {"i": 0, "s": "Ari", "p": "city", "o": "Lisbon", "prev": None, "v": 1,
                                   "born": 0, "t": 0, "uses": 0}
            assert c.transcripts == [{"session": 0, "turns": say("I live in Lisbon.")}]
            assert c.derived == {"note": ["I live in Lisbon."], "summary": ["Ari: I live in Lisbon."]}
            c.publish([update(0, "city", "Oslo")], say("Moved to Oslo."), derived={"summary": ["Oslo"]})
        snap = store.read("Ari")
        assert snap.ledger[0]["o"] == "Oslo" and snap.ledger[0]["prev"] == "Lisbon" and snap.ledger[0]["t"] == 1
        assert snap.derived == {"note": ["I live in Lisbon."], "summary": ["Oslo"]}  # kinds not given stay
        assert [e["session"] for e in snap.transcripts] == [0, 1]

    def test_lenient_reducer_skips_invalid_ops(self, store):
        """Model programs go through the lenient reducer: invalid ops are skipped and reported."""
        receipt = consolidate(store, "Ari", [add("job", "chef"), {"op": "EVICT", "i": 3}, "junk"], "I cook.")
        assert receipt.applied == [0]
        assert [pos for pos, _, _ in receipt.invalid] == [1, 2]
        assert store.read("Ari").ledger[0]["o"] == "chef"

    def test_one_publish_per_consolidation(self, store):
        """A consolidation publishes once; the next session needs a fresh read."""
        with store.consolidation("Ari") as c:
            c.publish([], say("hi"))
            with pytest.raises(StoreError, match="already published session 0; open a new one"):
                c.publish([], say("again"))

    def test_concurrent_publish_is_refused(self, store):
        """Two consolidations that read the same state: the second publish would undo the first."""
        first, second = store.consolidation("Ari"), store.consolidation("Ari")
        first.publish([add("city", "Lisbon")], say("Lisbon."))
        with pytest.raises(ConcurrentPublish) as err:
            second.publish([add("city", "Oslo")], say("Oslo."))
        assert str(err.value) == (
            "publish refused for subject 'Ari': it read the state before session 0, but another consolidation "
            "has published since (next session is 1); nothing was written, retry from a fresh read")
        assert store.read("Ari").ledger[0]["o"] == "Lisbon"

    def test_bad_inputs_name_the_field(self, store):
        """Malformed transcripts, derived memories and names are refused with what was expected."""
        with store.consolidation("Ari") as c:
            with pytest.raises(UserError, match=r"transcript turn 0 must be a dict with exactly 'role' and 'content'"):
                c.publish([], [{"role": "user"}])
            with pytest.raises(UserError, match=r"derived\['note'\] must be a list of strings, got str"):
                c.publish([], say("x"), derived={"note": "text"})
        with pytest.raises(UserError, match="subject must be a non-empty string, got ''"):
            store.read("")
        with pytest.raises(UserError, match="values must be a list of strings"):
            store.forget("Ari", "city", values="Lisbon")

    @pytest.mark.parametrize("field,bad,why", [
        ("p", "ci\udcfft", "a lone surrogate U+DCFF at offset 2 (bytes that were not UTF-8)"),
        ("o", "Os\udc80lo", "a lone surrogate U+DC80 at offset 2 (bytes that were not UTF-8)"),
        ("o", "Oslo\x07", "a control character U+0007 at offset 4"),
        ("o", "Os\nlo", "a control character U+000A at offset 2"),
        ("s", "A\x85ri", "a control character U+0085 at offset 1"),
    ])
    def test_ledger_fields_are_checked_at_publish(self, store, field, bad, why):
        """A lone surrogate (an undecodable byte) or a control character in a ledger field is one
        line naming the slot, the field, the value and what is allowed; nothing is written."""
        op = add("city", "Oslo") | {field: bad}
        with store.consolidation("Ari") as c:
            with pytest.raises(UserError) as err:
                c.publish([op], say("x"))
        assert str(err.value) == (f"ledger to publish: slot 0 field {field!r} must be text without lone surrogates "
                                  f"or control characters, got {bad!r}: {why}")
        assert "\n" not in str(err.value)
        assert store.read("Ari").sessions == 0 and store.subjects() == []


class TestFence:
    def test_publish_after_forget_raises_stale_generation(self, store):
        """A consolidation that read before an acknowledged forget refuses to publish; retry works."""
        consolidate(store, "Ari", [add("city", "Lisbon")], "I live in Lisbon.")
        stale = store.consolidation("Ari")
        assert store.forget("Ari", "city").generation == 1
        with pytest.raises(StaleGeneration) as err:
            stale.publish([update(0, "city", "Oslo")], say("Moved to Oslo."))
        assert str(err.value) == (
            "publish refused for subject 'Ari': it captured erase generation 0, but a forget has advanced "
            "subject 'Ari' to generation 1 since; nothing was written, retry from a fresh read")
        assert (err.value.captured, err.value.current) == (0, 1)
        assert store.read("Ari").sessions == 1 and "Lisbon" not in texts(store, "Ari")
        receipt = consolidate(store, "Ari", [add("city", "Oslo")], "Moved to Oslo.")  # the retry
        assert (receipt.generation, receipt.session) == (1, 1)

    def test_publish_without_captured_generation_refuses(self, store):
        """Fail-closed: a write that cannot prove what it read (e.g. a replay) is refused."""
        ledger = store.read("Ari").ledger
        with pytest.raises(StaleGeneration, match="no erase generation was captured") as err:
            store.publish("Ari", generation=None, session=0, ledger=ledger, transcript=say("replayed"))
        assert err.value.captured is None
        assert store.read("Ari").sessions == 0

    def test_forget_of_unseen_subject_is_refused_and_writes_nothing(self, store):
        """A subject the store has no row for is most likely a typo: UnknownSubject, no row, no
        generation (nothing was acknowledged, so a consolidation that read before it may publish)."""
        fresh = store.consolidation("Bo")
        with pytest.raises(UnknownSubject, match="subject 'Bo' is not in the store"):
            store.forget("Bo")
        assert store.subjects() == [] and store.read("Bo").generation == 0
        fresh.publish([add("city", "Lima", s="Bo")], say("Lima.", ))
        assert store.forget("Bo").generation == 1  # known now

    def test_generation_is_durable_across_reopen(self, url):
        """The generation lives in the database, not in the connection."""
        with open_store(url) as s:
            consolidate(s, "Ari", [add("city", "Lima")], "Lima.")
            stale = s.consolidation("Ari")
            s.forget("Ari", "city")
        with open_store(url) as s:
            assert s.read("Ari").generation == 1
            with pytest.raises(StaleGeneration):
                s.publish("Ari", generation=stale.generation, session=1, ledger=stale.ledger, transcript=[])


class TestForget:
    def _history(self, store):
        consolidate(store, "Ari", [add("city", "Lisbon"), add("job", "chef")], "Lisbon, and I cook.")
        consolidate(store, "Ari", [update(0, "city", "Oslo")], "Moved to Oslo from Lisbon.")
        consolidate(store, "Ari", [update(0, "city", "Quito")], "Now Quito; Oslo was cold.")
        consolidate(store, "Bo", [add("city", "Lisbon", s="Bo")], "Bo is in Lisbon.")

    def test_every_value_the_predicate_held_is_gone(self, store):
        """o, prev and an older value (in no slot any more) leave the ledger, log and derived memories."""
        self._history(store)
        assert store.read("Ari").ledger[0]["prev"] == "Oslo"  # Lisbon is in no slot, only in the record
        report = store.forget("Ari", "city")
        assert (report.generation, report.values, report.slots, report.turns, report.derived) == (1, 3, 1, 3, 4)  # 3 notes + 1 summary
        snap = store.read("Ari")
        assert [slot.get("p") for slot in snap.ledger] == [None, "job", None, None]
        everything = texts(store, "Ari")
        for value in ("Lisbon", "Oslo", "Quito"):
            assert value not in everything
        assert snap.transcripts[1]["turns"][0]["content"] == "Moved to [forgotten] from [forgotten]."
        assert "chef" in everything and "I cook" in everything  # the other predicate stays
        assert "Lisbon" in texts(store, "Bo")  # other subjects are untouched

    def test_a_copy_filed_under_another_predicate_goes_too(self, store):
        """A writer that also filed the value under another predicate leaves no copy: that slot is
        freed, a ``prev`` holding it cleared, and its value record dropped; an unrelated slot stays."""
        consolidate(store, "Ari", [add("work_project", "the mobile app"), add("deadline", "the mobile app"),
                                   add("job", "chef")], "The mobile app; I cook.")
        consolidate(store, "Ari", [update(2, "job", "baker")], "Now a baker.")
        consolidate(store, "Ari", [update(2, "job", "the mobile app tester")], "Testing the mobile app.")
        report = store.forget("Ari", "work_project")
        assert report.slots == 3
        assert [slot.get("o") for slot in store.read("Ari").ledger] == [None, None, None, None]
        assert store.forget("Ari", "deadline").values == 0  # its record went with the copy
        consolidate(store, "Ari", [add("job", "chef")], "I cook again.")
        consolidate(store, "Ari", [update(0, "job", "baker")], "A baker again.")
        store.forget("Ari", "work_project", values=["chef"])
        assert store.read("Ari").ledger[0]["o"] == "baker" and store.read("Ari").ledger[0]["prev"] is None

    def test_the_value_record_is_erased_too(self, store):
        """A second forget of the predicate has nothing left to scrub: the record went with the first."""
        self._history(store)
        store.forget("Ari", "city")
        assert store.forget("Ari", "city").values == 0

    def test_whole_subject(self, store):
        """Without a predicate the subject's ledger, log and derived memories are all deleted."""
        self._history(store)
        report = store.forget("Ari")
        assert (report.predicate, report.generation, report.slots, report.turns) == (None, 1, 2, 6)
        snap = store.read("Ari")
        assert (snap.generation, snap.sessions, snap.transcripts, snap.derived) == (1, 3, [], {})
        assert all("p" not in slot for slot in snap.ledger)
        assert store.read("Bo").sessions == 1
        assert consolidate(store, "Ari", [add("pet", "cat")], "A cat.").session == 3

    def test_extra_values_are_redacted(self, store):
        """Values the ledger never held (the policy missed them) can be named by the caller."""
        consolidate(store, "Ari", [], "I moved to Lisbon.")
        store.forget("Ari", "city", values=["lisbon"])
        assert texts(store, "Ari").startswith("I moved to [forgotten].")

    def test_tombstone_keeps_its_value(self, store):
        """TOMBSTONE is not forget: the value stays for "what did it used to be?"."""
        consolidate(store, "Ari", [add("city", "Lisbon")], "Lisbon.")
        consolidate(store, "Ari", [{"op": "TOMBSTONE", "i": 0}], "I left Lisbon.")
        slot = store.read("Ari").ledger[0]
        assert (slot["o"], slot["v"]) == ("Lisbon", 0)
        store.forget("Ari", "city")
        assert "Lisbon" not in texts(store, "Ari")


class TestOpen:
    def test_unknown_url_lists_the_forms(self):
        """A URL of no known engine names the forms accepted."""
        with pytest.raises(UserError, match=r"store URL must be one of: sqlite:///PATH .*; got 'mysql://x/db'"):
            open_store("mysql://x/db")

    def test_vacuum_is_postgresql_only(self, tmp_path):
        for kwargs in ({"vacuum": True}, {"vacuum_wait": 5}):
            with pytest.raises(UserError, match="vacuum and vacuum_wait apply to PostgreSQL stores only"):
                open_store(f"sqlite:///{tmp_path}/m.db", **kwargs)
            assert not (tmp_path / "m.db").exists()

    def test_bad_budget(self, tmp_path):
        with pytest.raises(UserError, match="budget must be an int >= 1, got 0"):
            open_store(f"sqlite:///{tmp_path}/m.db", budget=0)

    def test_doctests(self):
        for module in (clerk.store, base_module, scrub_module):
            assert doctest.testmod(module).failed == 0
