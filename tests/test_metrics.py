"""Tests for clerk.metrics: canonical ops, op P/R/F1, micro-averaging and ledger-state F1."""

from __future__ import annotations

import doctest

import pytest

import clerk.metrics as metrics
from clerk.ledger import empty_ledger, reduce
from clerk.metrics import canonical_ops, micro_op_scores, op_scores, prf, state_f1


def _ledger():
    """Ledger of 3 slots: 0 Ari/job=nurse, 1 Ari/city=Oslo (tombstoned), 2 free."""
    L, _ = reduce(empty_ledger(3), [
        {"op": "ADD", "s": "Ari", "p": "job", "o": "nurse"},
        {"op": "ADD", "s": "Ari", "p": "city", "o": "Oslo"},
        {"op": "TOMBSTONE", "i": 1},
    ], now=0)
    return L


def test_doctests():
    """The module's >>> examples hold."""
    assert doctest.testmod(metrics).failed == 0


class TestPrf:
    def test_empty_vs_empty_is_perfect(self):
        """Nothing to do and nothing done scores 1.0 everywhere."""
        assert prf(0, 0, 0) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}

    def test_empty_prediction_against_gold(self):
        """Predicting nothing when gold has ops scores 0 precision, recall and F1."""
        assert prf(0, 0, 2) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}

    def test_spurious_prediction_against_empty_gold(self):
        """Predicting ops when gold is empty scores 0."""
        assert prf(0, 3, 0) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}

    def test_values(self):
        """tp=3, fp=1, fn=2 gives P=.75, R=.6 and their harmonic mean."""
        s = prf(3, 1, 2)
        assert s["precision"] == 0.75 and s["recall"] == 0.6
        assert s["f1"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)


class TestCanonicalOps:
    def test_resolves_indices_to_facts(self):
        """Index-based ops resolve to the (s, p) of the slot they touch."""
        prog = [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"},
                {"op": "EVICT", "i": 1}, {"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"},
                {"op": "TOMBSTONE", "i": 1}]
        assert canonical_ops(_ledger(), prog, 2) == [
            ("UPDATE", "Ari", "job", "chef"), ("EVICT", "Ari", "city"),
            ("ADD", "Ari", "pet", "cat"), ("TOMBSTONE", "Ari", "pet")]

    def test_same_fact_at_different_indices_is_equal(self):
        """A TOMBSTONE of the same fact at different slot positions canonicalises identically."""
        a, _ = reduce(empty_ledger(3), [{"op": "ADD", "s": "B", "p": "pet", "o": "dog"}], 0)
        b, _ = reduce(empty_ledger(3), [{"op": "ADD", "s": "B", "p": "x", "o": "y"},
                                        {"op": "ADD", "s": "B", "p": "pet", "o": "dog"}], 0)
        assert canonical_ops(a, [{"op": "TOMBSTONE", "i": 0}], 1) == \
            canonical_ops(b, [{"op": "TOMBSTONE", "i": 1}], 1)

    def test_invalid_ops(self):
        """Invalid, unknown and non-dict ops become INVALID tuples with the claimed kind."""
        prog = [{"op": "TOMBSTONE", "i": 1}, {"op": "FLY"}, 7, {"op": "EVICT", "i": 99}]
        assert canonical_ops(_ledger(), prog, 1) == [
            ("INVALID", "TOMBSTONE", '{"op":"TOMBSTONE","i":1}'), ("INVALID", "", '{"op":"FLY"}'),
            ("INVALID", "", "7"), ("INVALID", "EVICT", '{"op":"EVICT","i":99}')]

    def test_unhashable_op_kind(self):
        """An op whose kind is a JSON list or object is an INVALID op of no kind; it does not raise
        (the reducer's own check covers it, test_ledger.py::TestAnyOp::test_unhashable_op_kind)."""
        prog = [{"op": ["ADD"]}, {"op": {}}, {"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}]
        assert canonical_ops(_ledger(), prog, 1) == [
            ("INVALID", "", '{"op":["ADD"]}'), ("INVALID", "", '{"op":{}}'), ("ADD", "Ari", "pet", "cat")]
        assert op_scores(_ledger(), prog, prog[2:], 1)["n_invalid"] == 2

    def test_non_list_program(self):
        """A program that is not a list is one INVALID op."""
        assert canonical_ops(_ledger(), {"op": "ADD"}, 1) == [("INVALID", "", '{"op":"ADD"}')]

    def test_input_not_mutated(self):
        """The input ledger is left unchanged."""
        L = _ledger()
        before = repr(L)
        canonical_ops(L, [{"op": "EVICT", "i": 0}], 1)
        assert repr(L) == before


class TestOpScores:
    def test_perfect(self):
        """A prediction equal to gold scores 1.0 with all counts in tp."""
        gold = [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}, {"op": "EVICT", "i": 1}]
        s = op_scores(_ledger(), gold, gold, 1)
        assert (s["tp"], s["fp"], s["fn"], s["f1"], s["n_invalid"]) == (2, 0, 0, 1.0, 0)
        assert s["by_type"]["UPDATE"]["tp"] == 1 and s["by_type"]["EVICT"]["tp"] == 1
        assert s["by_type"]["ADD"] == {"tp": 0, "fp": 0, "fn": 0, "precision": 1.0, "recall": 1.0, "f1": 1.0}

    def test_empty_vs_empty(self):
        """Empty prediction against an empty gold program is perfect."""
        s = op_scores(_ledger(), [], [], 1)
        assert (s["tp"], s["fp"], s["fn"], s["precision"], s["recall"], s["f1"]) == (0, 0, 0, 1.0, 1.0, 1.0)

    def test_wrong_value_is_fp_and_fn(self):
        """An UPDATE to the wrong value is one false positive and one false negative."""
        gold = [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}]
        pred = [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "pilot"}]
        s = op_scores(_ledger(), pred, gold, 1)
        assert (s["tp"], s["fp"], s["fn"], s["f1"]) == (0, 1, 1, 0.0)
        assert (s["by_type"]["UPDATE"]["fp"], s["by_type"]["UPDATE"]["fn"]) == (1, 1)

    def test_invalid_counts_as_fp_under_claimed_kind(self):
        """An invalid TOMBSTONE is a false positive overall and for TOMBSTONE."""
        s = op_scores(_ledger(), [{"op": "TOMBSTONE", "i": 2}], [], 1)
        assert (s["tp"], s["fp"], s["fn"], s["n_invalid"]) == (0, 1, 0, 1)
        assert s["by_type"]["TOMBSTONE"]["fp"] == 1

    def test_multiset_duplicates(self):
        """A repeated op matches gold only once; the repeat (invalid on a full key) is a false positive."""
        add = {"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}
        s = op_scores(_ledger(), [add, add], [add], 1)
        assert (s["tp"], s["fp"], s["fn"]) == (1, 1, 0)

    def test_order_changes_resolution(self):
        """Ops resolve against the ledger as it stands at their position, so EVICT then ADD reuses slot 2."""
        gold = [{"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}, {"op": "EVICT", "i": 2}]
        pred = [{"op": "ADD", "s": "Ari", "p": "pet", "o": "cat"}, {"op": "EVICT", "i": 2}]
        assert op_scores(_ledger(), pred, gold, 1)["by_type"]["EVICT"]["tp"] == 1


class TestMicroOpScores:
    def test_sums_counts(self):
        """Micro scores recompute P/R/F1 from summed counts, per type too."""
        L = _ledger()
        gold = [{"op": "UPDATE", "i": 0, "s": "Ari", "p": "job", "o": "chef"}]
        a = op_scores(L, gold, gold, 1)
        b = op_scores(L, [], gold, 1)
        m = micro_op_scores([a, b])
        assert (m["tp"], m["fp"], m["fn"], m["precision"], m["recall"]) == (1, 0, 1, 1.0, 0.5)
        assert m["by_type"]["UPDATE"]["recall"] == 0.5

    def test_empty(self):
        """No sessions at all averages to the empty-vs-empty convention."""
        m = micro_op_scores([])
        assert (m["f1"], m["n_invalid"], m["by_type"]["ADD"]["f1"]) == (1.0, 0, 1.0)


class TestStateF1:
    def test_positions_and_bookkeeping_ignored(self):
        """The same facts at different slots with different uses/t score 1.0."""
        a, _ = reduce(empty_ledger(3), [{"op": "ADD", "s": "A", "p": "x", "o": "1"}], 0)
        b, _ = reduce(empty_ledger(3), [{"op": "ADD", "s": "A", "p": "y", "o": "2"},
                                        {"op": "ADD", "s": "A", "p": "x", "o": "1"}, {"op": "EVICT", "i": 0}], 4)
        assert state_f1(a, b) == 1.0

    def test_validity_counts(self):
        """A tombstoned fact does not match the same fact still valid."""
        L = _ledger()
        live, _ = reduce(L, [{"op": "UPDATE", "i": 1, "s": "Ari", "p": "city", "o": "Oslo2"}], 1)
        assert state_f1(L, live) == pytest.approx(0.5)

    def test_empty_ledgers(self):
        """Two empty ledgers score 1.0; empty vs non-empty scores 0.0."""
        assert state_f1(empty_ledger(2), empty_ledger(2)) == 1.0
        assert state_f1(empty_ledger(3), _ledger()) == 0.0


class TestOpScoresDriftedLedger:
    def test_gold_resolved_on_its_own_ledger(self):
        """With gold_ledger_before, the gold program resolves on the gold ledger and matches by fact."""
        gold_L, _ = reduce(empty_ledger(3), [{"op": "ADD", "s": "A", "p": "x", "o": "1"},
                                             {"op": "ADD", "s": "A", "p": "pet", "o": "cat"}], 0)
        own_L, _ = reduce(empty_ledger(3), [{"op": "ADD", "s": "A", "p": "pet", "o": "cat"}], 0)
        s = op_scores(own_L, [{"op": "TOMBSTONE", "i": 0}], [{"op": "TOMBSTONE", "i": 1}], 1,
                      gold_ledger_before=gold_L)
        assert (s["tp"], s["fp"], s["fn"]) == (1, 0, 0)
