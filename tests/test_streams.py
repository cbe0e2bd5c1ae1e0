"""Tests for clerk.streams (package): stream generation, eviction engines, replay metrics, the study, the CLI.

    python -m pytest tests/test_streams.py -q -x
"""

from __future__ import annotations

import copy
import csv
import doctest
import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clerk.cli import main as clerk_main
from clerk.errors import UserError
from clerk.ledger import dumps, salience_key
from clerk.streams import cli as streams_cli
from clerk.streams import engines, generation, study
from clerk.streams.engines import POLICIES, DecayEngine, Engine, SalienceEngine, get_policy, register_policy
from clerk.streams.generation import (
    BASE_OFFSETS,
    StreamConfig,
    load_stream,
    make_stream,
    schedule_recalls,
    validate_stream,
)
from clerk.streams.study import CSV_FIELDS, eviction_study, replay, rows_to_csv

ALL_POLICIES = ["decay", "fifo", "lfu", "lru", "random", "salience", "unbounded"]


def hand_stream(length: int, events: list[list], foundational: list[str] | None = None) -> dict:
    """A hand-built stream in the file format; foundational ids default to those flagged True."""
    if foundational is None:
        foundational = list(dict.fromkeys(e[2] for e in events if e[3]))
    stream = {"seed": 0, "config": {"length": length, "num_foundational": len(foundational),
                                    "recalls_per_foundational": 0, "noise_per_turn": 0},
              "foundational": foundational, "events": events}
    validate_stream(stream)
    return stream


def recall_turns(stream: dict) -> dict[str, list[int]]:
    """Recall turns per foundational fact, in stream order."""
    out: dict[str, list[int]] = {fact: [] for fact in stream["foundational"]}
    for turn, kind, item, _ in stream["events"]:
        if kind == "recall":
            out[item].append(turn)
    return out


class TestDoctests:
    def test_module_doctests_pass(self):
        """Every >>> example in the clerk.streams modules runs and gives the shown output."""
        results = [doctest.testmod(module) for module in (generation, engines, study, streams_cli)]
        assert sum(r.attempted for r in results) >= 8 and sum(r.failed for r in results) == 0


class TestStreamConfig:
    def test_defaults(self):
        """The documented defaults: 100 turns, 10 foundational facts, 4 recalls, 3 noise per turn."""
        assert StreamConfig() == StreamConfig(100, 10, 4, 3)

    def test_length_must_be_positive(self):
        """A zero length names the field, the expected range and the value."""
        with pytest.raises(UserError, match=r"^length must be an int >= 1, got 0$"):
            StreamConfig(length=0)

    def test_recalls_bounded_by_offsets(self):
        """More recalls than base offsets is rejected with the range."""
        with pytest.raises(UserError, match=r"^recalls_per_foundational must be an int in 0\.\.6, got 7$"):
            StreamConfig(recalls_per_foundational=7)

    def test_noise_must_be_int(self):
        """A float noise rate is rejected."""
        with pytest.raises(UserError, match=r"^noise_per_turn must be an int >= 0, got 1\.5$"):
            StreamConfig(noise_per_turn=1.5)


class TestScheduleRecalls:
    def test_clamps_to_strictly_increasing(self):
        """A recall landing on or before the previous one moves to the turn after it."""
        assert schedule_recalls([3, 2, 3], start=1, length=100) == [4, 5, 6]

    def test_clamps_to_length_then_drops(self):
        """A late recall is clamped to the last turn; any after it cannot fit and are dropped."""
        assert schedule_recalls([5, 200, 300], start=1, length=50) == [6, 50]

    def test_no_room_after_start(self):
        """Registration on the last turn leaves no room for recalls."""
        assert schedule_recalls([3, 8], start=10, length=10) == []


class TestMakeStream:
    def test_same_seed_same_bytes(self):
        """Two streams from one seed serialise to identical bytes."""
        assert dumps(make_stream(137)) == dumps(make_stream(137))

    def test_different_seed_different_stream(self):
        """Different seeds give different recall schedules."""
        assert make_stream(137)["events"] != make_stream(991)["events"]

    def test_file_format(self):
        """The stream has exactly the SPEC keys, its config, and validates."""
        stream = make_stream(5, length=30, num_foundational=3, recalls_per_foundational=2, noise_per_turn=1)
        assert list(stream) == ["seed", "config", "foundational", "events"]
        assert stream["seed"] == 5
        assert stream["config"] == {"length": 30, "num_foundational": 3,
                                    "recalls_per_foundational": 2, "noise_per_turn": 1}
        assert stream["foundational"] == ["f0", "f1", "f2"]
        validate_stream(stream)
        assert json.loads(dumps(stream)) == stream

    def test_events_sorted_registrations_first(self):
        """Events are sorted by turn, registrations before recalls within a turn, foundational first."""
        stream = make_stream(3)
        keys = [(turn, kind == "recall") for turn, kind, _, _ in stream["events"]]
        assert keys == sorted(keys)
        assert [e[2] for e in stream["events"][:12]] == [f"f{k}" for k in range(10)] + ["n1.0", "n1.1"]

    def test_foundational_registered_once_at_turn_one(self):
        """Each foundational fact is registered exactly once, at turn 1, flagged foundational."""
        stream = make_stream(11)
        regs = [e for e in stream["events"] if e[1] == "register" and e[3]]
        assert regs == [[1, "register", f"f{k}", True] for k in range(10)]

    def test_noise_count_per_turn(self):
        """Exactly noise_per_turn noise facts are registered every turn, and none is ever recalled."""
        stream = make_stream(4, length=40, noise_per_turn=5)
        counts = {turn: 0 for turn in range(1, 41)}
        for turn, kind, item, flag in stream["events"]:
            if kind == "register" and not flag:
                counts[turn] += 1
            if kind == "recall":
                assert flag and item in stream["foundational"]
        assert set(counts.values()) == {5}

    @pytest.mark.parametrize("length,recalls", [(100, 4), (100, 6), (60, 6), (12, 6)])
    def test_recall_turns_increase_within_length(self, length, recalls):
        """Recall turns of each fact strictly increase, lie in 2..length, and number at most R."""
        for seed in range(30):
            stream = make_stream(seed, length=length, recalls_per_foundational=recalls)
            for turns in recall_turns(stream).values():
                assert turns == sorted(set(turns))
                assert all(2 <= turn <= length for turn in turns)
                assert len(turns) <= recalls

    def test_defaults_never_drop_a_recall(self):
        """With the defaults every fact gets all 4 recalls (the latest possible is turn 60)."""
        for seed in range(30):
            assert all(len(t) == 4 for t in recall_turns(make_stream(seed)).values())

    def test_offsets_follow_jittered_schedule(self):
        """Offset/base ratios lie in [0.7, 1.3] up to rounding and clamping, and cover that range."""
        ratios: dict[int, list[float]] = {base: [] for base in BASE_OFFSETS}
        length = 400  # long enough that offset 150 x 1.3 is never clamped
        for seed in range(60):
            stream = make_stream(seed, length=length, recalls_per_foundational=6, noise_per_turn=0)
            for turns in recall_turns(stream).values():
                assert len(turns) == 6
                previous = 1
                for base, turn in zip(BASE_OFFSETS, turns):
                    offset = turn - 1
                    clamped = turn == previous + 1
                    if not clamped:
                        assert 0.7 - 0.5 / base <= offset / base <= 1.3 + 0.5 / base, (seed, base, turn)
                    ratios[base].append(offset / base)
                    previous = turn
        for base in (45, 90, 150):  # rounding is negligible there: the draw spans the full range
            assert min(ratios[base]) < 0.75 and max(ratios[base]) > 1.25

    def test_schedule_independent_of_noise_and_prefix_in_recalls(self):
        """Changing the noise rate keeps the recall schedule; fewer recalls keep a prefix of it."""
        base = recall_turns(make_stream(8, recalls_per_foundational=4, noise_per_turn=3))
        assert recall_turns(make_stream(8, recalls_per_foundational=4, noise_per_turn=0)) == base
        two = recall_turns(make_stream(8, recalls_per_foundational=2, noise_per_turn=6))
        assert two == {fact: turns[:2] for fact, turns in base.items()}

    def test_seed_must_be_int(self):
        """A string seed is rejected naming the field."""
        with pytest.raises(UserError, match=r"^seed must be an int, got '7'$"):
            make_stream("7")


class TestValidateStream:
    def test_rejects_recall_before_registration_in_turn(self):
        """A recall listed before a registration of the same turn is out of order."""
        stream = hand_stream(2, [[1, "register", "a", True]])
        stream["events"] += [[2, "recall", "a", True], [2, "register", "b", False]]
        with pytest.raises(UserError) as err:
            validate_stream(stream, where="s")
        assert str(err.value) == ("s: event 2 [2, 'register', 'b', False] is out of order "
                                  "(events are sorted by turn, registrations before recalls)")

    def test_rejects_turn_past_length(self):
        """An event after the last turn names the allowed range."""
        stream = hand_stream(2, [[1, "register", "a", True]])
        stream["events"].append([3, "recall", "a", True])
        with pytest.raises(UserError, match=r"^x\.json: event 1 turn must be in 1\.\.2, got 3$"):
            validate_stream(stream, where="x.json")

    def test_rejects_wrong_flag(self):
        """A noise flag on a foundational id is reported."""
        stream = hand_stream(1, [[1, "register", "a", True]])
        stream["events"][0][3] = False
        with pytest.raises(UserError, match="disagrees with the foundational list for 'a'"):
            validate_stream(stream)


class TestRegistry:
    def test_all_policies_registered(self):
        """The seven SPEC policies are registered, salience first."""
        assert sorted(POLICIES) == ALL_POLICIES
        assert next(iter(POLICIES)) == "salience"

    def test_unknown_policy_lists_known_names(self):
        """An unknown name raises with the sorted known names."""
        with pytest.raises(UserError) as err:
            get_policy("mru")
        assert str(err.value) == ("unknown policy 'mru' (known: decay, fifo, lfu, lru, random, "
                                  "salience, unbounded)")

    def test_local_registry_and_duplicates(self):
        """A local registry takes new policies and refuses a duplicate name."""
        local: dict = {}

        @register_policy("newest", registry=local)
        class NewestEngine(Engine):
            def _victim(self, turn):
                return list(self._held)[-1]

        assert get_policy("newest", registry=local) is NewestEngine and "newest" not in POLICIES
        with pytest.raises(ValueError, match="policy 'newest' is already registered"):
            register_policy("newest", registry=local)(NewestEngine)


class TestEngineContract:
    @settings(max_examples=40, deadline=None)
    @given(seed=st.integers(0, 10_000), length=st.integers(1, 30), found=st.integers(0, 6),
           recalls=st.integers(0, 6), noise=st.integers(0, 4), capacity=st.integers(1, 10),
           policy=st.sampled_from(ALL_POLICIES[:-1]))
    def test_never_exceeds_capacity(self, seed, length, found, recalls, noise, capacity, policy):
        """After every event a bounded engine holds at most its capacity, and misses never re-insert."""
        stream = make_stream(seed, length, found, recalls, noise)
        engine = get_policy(policy)(capacity, seed)
        for turn, kind, item, flag in stream["events"]:
            if kind == "register":
                engine.register(item, turn, flag)
            elif not engine.recall(item, turn):
                assert item not in engine
            assert len(engine) <= capacity

    def test_unbounded_hits_everything(self):
        """The unbounded reference holds every registered fact: hit rate 100 %."""
        result = replay(make_stream(137), get_policy("unbounded")(8, 137))
        assert result.recalls == 40 and result.hits == 40 and result.recall_hit_rate == 1.0
        assert result.evictions == []

    def test_register_twice_is_an_error(self):
        """Registering an id that is already held raises."""
        engine = get_policy("lru")(2)
        engine.register("a", 1, True)
        with pytest.raises(ValueError, match="^item 'a' is already held$"):
            engine.register("a", 2, True)

    def test_capacity_must_be_positive(self):
        """A zero capacity names the field."""
        with pytest.raises(UserError, match=r"^capacity must be an int >= 1, got 0$"):
            get_policy("fifo")(0)


# Capacity 2: a and b arrive, a is recalled, c and d arrive, then a is recalled again.
RECENCY_EVENTS = [[1, "register", "a", True], [1, "register", "b", True], [2, "recall", "a", True],
                  [3, "register", "c", False], [4, "register", "d", False], [5, "recall", "a", True]]


class TestLRU:
    def test_evicts_least_recently_used(self):
        """The recall of a protects it from the first eviction (b goes), then a is oldest again."""
        result = replay(hand_stream(5, copy.deepcopy(RECENCY_EVENTS)), get_policy("lru")(2))
        assert result.evictions == [(3, "b"), (4, "a")]
        assert (result.hits, result.recalls) == (1, 2)


class TestFIFO:
    def test_evicts_first_in_regardless_of_hits(self):
        """FIFO ignores the recall: a goes first, then b; the later recall of a misses."""
        result = replay(hand_stream(5, copy.deepcopy(RECENCY_EVENTS)), get_policy("fifo")(2))
        assert result.evictions == [(3, "a"), (4, "b")]
        assert (result.hits, result.recalls) == (1, 2)


class TestLFU:
    def test_evicts_least_frequent_then_least_recent(self):
        """b (1 hit, recent) goes before a (2 hits); then c (0 hits) goes before a."""
        events = [[1, "register", "a", True], [1, "register", "b", True], [2, "recall", "a", True],
                  [3, "recall", "a", True], [4, "recall", "b", True], [5, "register", "c", False],
                  [6, "register", "d", False]]
        result = replay(hand_stream(6, events), get_policy("lfu")(2))
        assert result.evictions == [(5, "b"), (6, "c")]
        lru = replay(hand_stream(6, copy.deepcopy(events)), get_policy("lru")(2))
        assert lru.evictions == [(5, "a"), (6, "b")]

    def test_ties_evict_least_recently_accessed(self):
        """With equal hit counts the item accessed longest ago goes."""
        events = [[1, "register", "a", True], [1, "register", "b", True], [2, "recall", "b", True],
                  [3, "recall", "a", True], [4, "register", "c", False]]
        assert replay(hand_stream(4, events), get_policy("lfu")(2)).evictions == [(4, "b")]


class TestSalience:
    def test_lowest_free_index_and_bookkeeping(self):
        """New items take the lowest free slot; uses count hits; t is the registration turn."""
        engine = SalienceEngine(3)
        engine.register("a", 1, True)
        engine.register("b", 2, False)
        engine.recall("a", 5)
        engine.register("c", 6, False)
        assert engine.slots == [{"i": 0, "id": "a", "foundational": True, "uses": 1, "t": 1},
                                {"i": 1, "id": "b", "foundational": False, "uses": 0, "t": 2},
                                {"i": 2, "id": "c", "foundational": False, "uses": 0, "t": 6}]
        assert engine.register("d", 7, False) == "b"  # (0, 2, 1) is the smallest salience key
        assert engine.slots[1] == {"i": 1, "id": "d", "foundational": False, "uses": 0, "t": 7}

    def test_slot_index_breaks_ties_unlike_lfu(self):
        """z reuses slot 0 in the same turn, so salience evicts z (lower i) where LFU evicts y."""
        events = [[1, "register", "x", False], [1, "register", "y", False],
                  [1, "register", "z", False], [1, "register", "w", False]]
        salience = replay(hand_stream(1, events), SalienceEngine(2))
        assert salience.evictions == [(1, "x"), (1, "z")]
        lfu = replay(hand_stream(1, copy.deepcopy(events)), get_policy("lfu")(2))
        assert lfu.evictions == [(1, "x"), (1, "y")]

    @settings(max_examples=30, deadline=None)
    @given(seed=st.integers(0, 10_000), capacity=st.integers(1, 12), noise=st.integers(0, 3))
    def test_victim_is_min_salience_key(self, seed, capacity, noise):
        """Every eviction removes the slot with the smallest clerk.ledger.salience_key."""
        stream = make_stream(seed, length=40, num_foundational=6, recalls_per_foundational=4,
                             noise_per_turn=noise)
        engine = SalienceEngine(capacity, seed)
        for turn, kind, item, flag in stream["events"]:
            if kind == "recall":
                engine.recall(item, turn)
                continue
            before = copy.deepcopy(engine.slots)
            victim = engine.register(item, turn, flag)
            if len([s for s in before if "id" in s]) == capacity:
                assert victim == min((s for s in before if "id" in s), key=salience_key)["id"]
            else:
                assert victim is None


class TestRandom:
    def test_seeded_and_derived_from_stream_seed(self):
        """The same seed gives the same evictions; some other seed gives different ones."""
        stream = make_stream(1, length=30, noise_per_turn=2)
        first = replay(stream, get_policy("random")(8, 1)).evictions
        assert replay(stream, get_policy("random")(8, 1)).evictions == first
        assert any(replay(stream, get_policy("random")(8, s)).evictions != first for s in (2, 3))


class TestDecay:
    def test_strength_halves_per_half_life_and_is_reinforced(self):
        """Strength halves after HALF_LIFE turns and a recall adds REINFORCE to the decayed value."""
        engine = DecayEngine(4)
        engine.register("a", 1, True)
        assert engine.strength("a", 1 + 10) == pytest.approx(0.5)
        engine.recall("a", 11)
        assert engine.strength("a", 11) == pytest.approx(1.5)
        assert engine.strength("a", 21) == pytest.approx(0.75)

    def test_evicts_weakest_unlike_lru(self):
        """a, recalled once, outweighs the newer but never-recalled b, which LRU would keep."""
        events = [[1, "register", "a", True], [2, "recall", "a", True], [3, "register", "b", False],
                  [5, "register", "c", False]]
        assert replay(hand_stream(5, events), DecayEngine(2)).evictions == [(5, "b")]
        assert replay(hand_stream(5, copy.deepcopy(events)), get_policy("lru")(2)).evictions == [(5, "a")]


class TestReplay:
    def test_noise_occupancy_bounded(self):
        """Fraction of capacity held by noise, averaged over turns after each turn's events."""
        events = [[1, "register", "f", True], [1, "register", "n1", False], [2, "register", "n2", False]]
        assert replay(hand_stream(2, events), get_policy("fifo")(2)).noise_occupancy == pytest.approx(0.75)

    def test_noise_occupancy_unbounded(self):
        """For the unbounded reference it is the fraction of held items that are noise."""
        events = [[1, "register", "f", True], [1, "register", "n1", False], [2, "register", "n2", False],
                  [3, "register", "n3", False]]
        result = replay(hand_stream(4, events), get_policy("unbounded")())
        assert result.noise_occupancy == pytest.approx((1 / 2 + 2 / 3 + 3 / 4 + 3 / 4) / 4)

    def test_no_recalls_gives_nan(self):
        """A stream without recall events has an undefined hit rate."""
        result = replay(make_stream(1, length=5, recalls_per_foundational=0), get_policy("lru")(4))
        assert result.recalls == 0 and math.isnan(result.recall_hit_rate)


class TestEvictionStudy:
    def test_rows_cover_grid_sorted(self):
        """One row per (seed, policy, capacity, noise), sorted by those keys."""
        streams_ = [make_stream(2, length=40), make_stream(1, length=40)]
        rows = eviction_study(streams_, ["lru", "salience"], [16, 8], [3, 1])
        keys = [(r["seed"], r["policy"], r["capacity"], r["noise_per_turn"]) for r in rows]
        assert keys == sorted(keys) and len(set(keys)) == 2 * 2 * 2 * 2 == len(rows)
        assert set(rows[0]) == set(CSV_FIELDS)

    def test_deterministic_csv(self):
        """Running the study twice gives byte-identical CSV text."""
        def run():
            return rows_to_csv(eviction_study([make_stream(5, length=50)], ALL_POLICIES, [4, 8], [0, 2]))
        assert run() == run()

    def test_other_noise_rates_regenerate_the_stream(self):
        """A row at another noise rate equals a replay of make_stream with only the noise replaced."""
        own = make_stream(9, length=50, noise_per_turn=3)
        rows = eviction_study([own], ["fifo"], [8], [1, 3])
        other = replay(make_stream(9, length=50, noise_per_turn=1), get_policy("fifo")(8, 9))
        same = replay(own, get_policy("fifo")(8, 9))
        assert [(r["hits"], r["noise_occupancy"]) for r in rows] == [
            (other.hits, other.noise_occupancy), (same.hits, same.noise_occupancy)]

    def test_unbounded_and_capacity_effect(self):
        """Unbounded hits every recall; a larger capacity never hurts FIFO on these streams."""
        rows = eviction_study([make_stream(3)], ["unbounded", "fifo"], [8, 32], [3])
        assert [r["recall_hit_rate"] for r in rows if r["policy"] == "unbounded"] == [1.0, 1.0]
        fifo = [r["hits"] for r in rows if r["policy"] == "fifo"]
        assert fifo[0] <= fifo[1]

    def test_repeated_seed_rejected(self):
        """Two streams with one seed would collide in the rows."""
        with pytest.raises(UserError, match=r"seed\(s\) \[4\] more than once"):
            eviction_study([make_stream(4, length=5), make_stream(4, length=5)], ["lru"], [2], [1])

    def test_csv_float_format(self):
        """Floats are written with six decimals, NaN as 'nan'."""
        text = rows_to_csv([{"seed": 1, "policy": "lru", "capacity": 2, "noise_per_turn": 0, "hits": 0,
                             "recalls": 0, "recall_hit_rate": math.nan, "noise_occupancy": 1 / 3}])
        assert text == ("seed,policy,capacity,noise_per_turn,hits,recalls,recall_hit_rate,noise_occupancy\n"
                        "1,lru,2,0,0,0,nan,0.333333\n")


class TestCLI:
    def test_streams_round_trip(self, tmp_path):
        """`clerk streams` writes dumps(make_stream(...)) plus a newline, readable by load_stream."""
        out = tmp_path / "s" / "stream.json"
        clerk_main(["streams", "--seed", "42", "--length", "60", "--foundational", "5", "--recalls", "3",
                    "--noise", "2", "--out", str(out)])
        expected = make_stream(42, length=60, num_foundational=5, recalls_per_foundational=3, noise_per_turn=2)
        assert out.read_text(encoding="utf-8") == dumps(expected) + "\n"
        assert load_stream(out) == expected

    def test_eviction_study_round_trip(self, tmp_path, capsys):
        """`clerk eviction-study` writes the study CSV and prints a per-policy table."""
        paths = []
        for seed in (1, 2):
            paths.append(str(tmp_path / f"stream_{seed}.json"))
            clerk_main(["streams", "--seed", str(seed), "--length", "50", "--out", paths[-1]])
        out = tmp_path / "study.csv"
        clerk_main(["eviction-study", "--streams", *paths, "--capacities", "8", "16", "--noise-grid", "1", "3",
                    "--policies", "salience", "lru", "unbounded", "--default-capacity", "16", "--out", str(out)])
        rows = eviction_study([make_stream(1, length=50), make_stream(2, length=50)],
                              ["salience", "lru", "unbounded"], [8, 16], [1, 3])
        assert out.read_text(encoding="utf-8") == rows_to_csv(rows)
        parsed = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
        assert len(parsed) == 2 * 3 * 2 * 2
        table = capsys.readouterr().out.splitlines()
        assert table[0] == "recall hit rate at capacity 16, noise 3/turn (mean over 2 seed(s))"
        assert [line.split()[0] for line in table[2:]] == ["salience", "lru", "unbounded"]
        assert table[4].split()[1] == "1.000"

    def test_bad_value_exits_2_with_message(self, tmp_path, capsys):
        """A bad knob exits with status 2 and one line naming the field."""
        with pytest.raises(SystemExit) as exit_:
            clerk_main(["streams", "--seed", "1", "--length", "0", "--out", str(tmp_path / "x.json")])
        assert exit_.value.code == 2
        assert capsys.readouterr().err == "clerk streams: error: argument --length: must be >= 2, got 0\n"

    def test_unknown_policy_and_missing_file(self, tmp_path, capsys):
        """Unknown policies and missing stream files are user errors."""
        path = tmp_path / "s.json"
        clerk_main(["streams", "--seed", "1", "--length", "5", "--out", str(path)])
        with pytest.raises(SystemExit):
            clerk_main(["eviction-study", "--streams", str(path), "--policies", "mru", "--out",
                        str(tmp_path / "o.csv")])
        assert "unknown policy 'mru' (known: decay, fifo" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            clerk_main(["eviction-study", "--streams", str(tmp_path / "none.json"), "--out",
                        str(tmp_path / "o.csv")])
        assert capsys.readouterr().err.endswith("none.json' does not exist\n")

    def test_default_capacity_must_be_in_grid(self, tmp_path, capsys):
        """--default-capacity outside --capacities is rejected with both values."""
        path = tmp_path / "s.json"
        clerk_main(["streams", "--seed", "1", "--length", "5", "--out", str(path)])
        with pytest.raises(SystemExit):
            clerk_main(["eviction-study", "--streams", str(path), "--capacities", "8", "16",
                        "--default-capacity", "4", "--out", str(tmp_path / "o.csv")])
        assert capsys.readouterr().err == ("clerk eviction-study: error: --default-capacity must be one "
                                           "of --capacities [8, 16], got 4\n")
