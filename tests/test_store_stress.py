"""The fence under real concurrency: `clerk stress-forget` with processes on both engines, and the
judge that counts resurrections and lost writes.

The fenced runs must show refusals and no resurrection or loss; the ``--no-fence`` runs (the same
code with only the generation re-proof skipped) must show resurrections: the proof that this
test can fail. Every run is bounded by events, not time (``--events``: it runs until enough
publishes, forgets and stale publishes happened, however loaded the machine), with a generous
``--seconds`` cap that fails the run loudly, and a subprocess timeout past that.

    python -m pytest tests/test_store_stress.py -q
"""

from __future__ import annotations

import doctest
import json
import random
import subprocess
import sys

import pg_kit
import pytest

from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.store import audit, open_store
from clerk.store import stress as stress_module
from clerk.store.audit import Forgot, Published, Seen, judge
from clerk.store.base import Snapshot
from clerk.store.stress import StressConfig, gold_program, make_session

pg_server = pytest.fixture(scope="module")(pg_kit.serve)

#: Publishes, forgets and stale publishes (refused with the fence, let through without it) a run
#: waits for, each: every one a race the fence must win.
EVENTS = 15
#: The cap on a run, seconds: an idle 2-core machine needs under 10; reaching it fails the run.
CAP_S = 300


def stress(url, *flags):
    """Run `clerk stress-forget` in a subprocess; return (exit status, its last-line JSON)."""
    cmd = [sys.executable, "-m", "clerk.cli", "stress-forget", "--store", url, "--workers", "4",
           "--forgetters", "2", "--events", str(EVENTS), "--seconds", str(CAP_S), *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CAP_S + 120)
    assert proc.stdout.strip(), proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["events_reached"], f"the {CAP_S} s cap came first: {proc.stderr}"
    return proc.returncode, report


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/m.db"
    return request.getfixturevalue("pg_server").new_store_url()


class TestStressForget:
    def test_fenced_run_has_no_resurrection_and_no_loss(self, url):
        """With the fence: refusals happen, and they are what keeps every forgotten value gone."""
        status, report = stress(url)
        assert status == 0, report
        assert report["fence"] is True
        assert min(report["published"], report["refused"], report["forgets"]) >= EVENTS, report
        assert report["stale_published"] == 0, report
        assert report["forgotten_values"] > 0 and report["views_checked"] > report["published"], report
        assert (report["resurrections"], report["lost"]) == (0, 0), report["examples"]

    def test_without_the_fence_values_come_back(self, url):
        """Skipping only the re-proof: stale consolidations write forgotten values back."""
        status, report = stress(url, "--no-fence")
        assert status == 0  # only a fenced run fails on resurrections
        assert report["fence"] is False and report["refused"] == 0
        assert report["stale_published"] >= EVENTS and report["resurrections"] > 0, report
        example = report["examples"]["resurrections"][0]
        assert example["seen_at"] >= example["forgotten_at"]


class TestJudge:
    def _snap(self, subject, generation, ledger_values=(), sessions=()):
        ledger = [{"i": i, "s": subject, "p": p, "o": o, "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}
                  for i, (p, o) in enumerate(ledger_values)]
        return Snapshot(subject, generation, len(sessions), ledger, [{"session": k, "turns": []} for k in sessions])

    def test_a_value_stated_again_after_the_forget_is_not_a_resurrection(self):
        """Only a publish after the forget may bring a value back legitimately."""
        published = [Published("Ari", 0, 0, {"city": "Oslo-1"}), Published("Ari", 1, 1, {"city": "Oslo-1"})]
        seen = [Seen("Ari", 1, frozenset({"Oslo-1"}))]
        assert audit.resurrections(published, [Forgot("Ari", "city", 1)], seen) == []
        assert len(audit.resurrections(published[:1], [Forgot("Ari", "city", 1)], seen)) == 1

    def test_a_whole_subject_forget_covers_every_predicate(self):
        published = [Published("Ari", 0, 0, {"city": "Oslo-1", "job": "Chef-2"})]
        seen = [Seen("Ari", 3, frozenset({"Chef-2"})), Seen("Bo", 3, frozenset({"Oslo-1"}))]
        res = audit.resurrections(published, [Forgot("Ari", None, 1)], seen)
        assert res == [{"subject": "Ari", "value": "Chef-2", "forgotten_at": 1, "seen_at": 3}]

    def test_lost_writes_are_found(self):
        """A last write missing from the final ledger, or a session missing from the log, is lost."""
        published = [Published("Ari", 0, 0, {"city": "Oslo-1"}), Published("Ari", 1, 0, {"job": "Chef-2"})]
        finals = {"Ari": self._snap("Ari", 0, [("city", "Oslo-1")], sessions=[0])}
        verdict = judge(published, [], [], finals)
        assert verdict["lost"] == 1
        assert verdict["examples"]["lost"] == [{"subject": "Ari", "session": 1, "problems": [
            "session 1 missing from the transcript log", "job should be Chef-2, the final ledger holds None"]}]
        finals = {"Ari": self._snap("Ari", 1, [("city", "Oslo-1")], sessions=[0, 1])}
        assert judge(published, [Forgot("Ari", "job", 1)], [], finals)["lost"] == 0  # forgotten, not lost

    def test_doctests(self):
        for module in (audit, stress_module):
            assert doctest.testmod(module).failed == 0


class TestHarness:
    def test_session_values_are_unique_codes(self):
        """Values never repeat, so finding one in a view is an exact test."""
        rng, seen, counter = random.Random(0), set(), 0
        for _ in range(200):
            turns, writes = make_session(rng, 7, counter)
            counter += len(writes)
            assert all(stress_module.CODE_RE.fullmatch(v) for v in writes.values())
            assert not seen & set(writes.values())
            seen |= set(writes.values())

    def test_sessions_state_values_in_every_form_and_the_judge_sees_them(self):
        """Statements with spaces, without any (Japanese), against an underscore, in NFC and NFD,
        with CJK and accented values: the judge finds each one, so a redaction that misses one
        shows up as a resurrection (the old word-boundary redaction did)."""
        import unicodedata

        rng, forms, nfd, scripts = random.Random(0), set(), 0, set()
        for counter in range(300):
            turns, writes = make_session(rng, 7, counter * 2)
            for turn, (pred, value) in zip(turns[::2], writes.items()):
                text = turn["content"]
                forms |= {k for k, form in enumerate(stress_module.STATEMENT_FORMS) if form.split("{")[0] in text}
                nfd += text != unicodedata.normalize("NFC", text)
                scripts.add("cjk" if "\u3000" < value[0] else "ascii" if value.isascii() else "accented")
                assert stress_module.statements(text) == [(pred, value)]
                assert stress_module._seen(Snapshot("Ari", 0, 1, [], [{"session": 0, "turns": [turn]}])).codes == {value}
        assert forms == {0, 1, 2} and nfd > 0 and scripts == {"cjk", "ascii", "accented"}

    def test_gold_program_updates_known_predicates_and_evicts_when_full(self):
        ledger = [{"i": 0, "s": "Ari", "p": "city", "o": "Oslo-000000001", "prev": None, "v": 1, "born": 0, "t": 0,
                   "uses": 0}]
        turns = [{"role": "user", "content": "My city is Lima-000000002 now."},
                 {"role": "user", "content": "My pet is Cat-000000003 now."}]
        assert gold_program(ledger, "Ari", turns) == [
            {"op": "UPDATE", "i": 0, "s": "Ari", "p": "city", "o": "Lima-000000002"},
            {"op": "EVICT", "i": 0}, {"op": "ADD", "s": "Ari", "p": "pet", "o": "Cat-000000003"}]

    def test_bad_arguments_name_the_field(self, tmp_path):
        with pytest.raises(UserError, match="workers must be an int >= 1, got 0"):
            StressConfig(url=f"sqlite:///{tmp_path}/m.db", workers=0)
        with pytest.raises(UserError, match="seconds must be a finite number > 0, got -1"):
            StressConfig(url=f"sqlite:///{tmp_path}/m.db", seconds=-1)

    def test_a_cap_that_comes_first_fails_loudly(self, tmp_path, capsys):
        """Events not reached within --seconds: exit 1, a line saying the run proves nothing."""
        with pytest.raises(SystemExit) as err:
            clerk_main(["stress-forget", "--store", f"sqlite:///{tmp_path}/m.db", "--workers", "1",
                        "--forgetters", "1", "--events", "100000", "--seconds", "0.5"])
        assert err.value.code == 1
        out = capsys.readouterr()
        assert json.loads(out.out.splitlines()[-1])["events_reached"] is False
        assert "the 0.5 s cap came before 100000 of each event" in out.err and "proves nothing" in out.err
        with pytest.raises(UserError, match="events must be an int >= 1"):
            StressConfig(url=f"sqlite:///{tmp_path}/m.db", events=0)

    def test_a_store_with_subjects_is_refused(self, tmp_path, capsys):
        """The judge must own every subject, so the harness wants an empty store."""
        url = f"sqlite:///{tmp_path}/m.db"
        with open_store(url) as store:
            with store.consolidation("Ari") as c:
                c.publish([], [])
        with pytest.raises(SystemExit) as err:
            clerk_main(["stress-forget", "--store", url, "--seconds", "1"])
        assert err.value.code == 2
        assert "stress-forget needs an empty store, but it holds 1 subject(s)" in capsys.readouterr().err

    def test_help_explains_the_verbs(self, capsys):
        for verb in ("forget", "stress-forget"):
            with pytest.raises(SystemExit):
                clerk_main([verb, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "--no-fence" in out and "skip only the publish's re-proof of the erase generation" in out
        assert "omit to erase the whole subject" in out
