"""Tests for reproducing a run: ``clerk compare`` (claims, then cells matched by key), its
tolerances file and the CPU numerics pins model jobs start with.

The compare tests copy the shipped ``results/`` tree, edit a few cells of it, and run the real verb.
"""

import csv
import json
import shutil
from pathlib import Path

import pytest

from clerk.cli import main
from clerk.errors import UserError
from clerk.models.device import NUMERICS_MODES, NUMERICS_SWITCH, apply_reproducible_numerics
from clerk.provenance.cells import load_tables
from clerk.provenance.claims import abstract_numbers
from clerk.provenance.compare import compare_artifacts, compare_trees, load_spec, load_tolerances, rule_for

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "results"
TOLERANCES = ROOT / "paper" / "tolerances.yaml"
PAPER = ROOT / "paper" / "paper.md"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _write(path: Path, rows: list[dict[str, str]], header: list[str]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _set_cell(path: Path, match: dict[str, str], column: str, value: str) -> None:
    """Rewrite one CSV cell (the row matching ``match``), keeping every other byte's meaning."""
    rows = _rows(path)
    hits = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(hits) == 1
    hits[0][column] = value
    _write(path, rows, list(rows[0]))


def _cell(path: Path, match: dict[str, str], column: str) -> float:
    (row,) = [r for r in _rows(path) if all(r[k] == v for k, v in match.items())]
    return float(row[column])


def _set_number(results: Path, number_id: str, value: float) -> None:
    numbers = json.loads((results / "numbers.json").read_text())
    numbers["numbers"][number_id]["value"] = value
    (results / "numbers.json").write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")


def _shipped_number(number_id: str) -> dict:
    """The shipped numbers.json entry of ``number_id`` (value and printed text)."""
    return json.loads((SHIPPED / "numbers.json").read_text())["numbers"][number_id]


def _keep_seeds(results: Path, seeds: set[str]) -> None:
    """Turn a copy of the shipped tree into the tables of a rerun of ``seeds`` only: per-seed rows
    and files of other seeds dropped, every aggregate row relabelled as over ``seeds``."""
    for path in sorted(results.rglob("*.csv")):
        if path.stem.isdigit() and path.stem not in seeds:
            path.unlink()
            continue
        rows = _rows(path)
        if not rows:
            continue
        header = list(rows[0])
        if "seed" in header:
            rows = [r for r in rows if r["seed"] in seeds]
        for row in rows:
            if "seeds" in row and row["seeds"] != "0":
                row["seeds"], row["n_seeds"] = ";".join(sorted(seeds)), str(len(seeds))
            elif "n_seeds" in row and "seeds" not in row:
                row["n_seeds"] = str(len(seeds))
        _write(path, rows, header)


@pytest.fixture
def rerun(tmp_path) -> Path:
    """A copy of the shipped results tree: a rerun that reproduced everything."""
    dest = tmp_path / "rerun"
    shutil.copytree(SHIPPED, dest)
    return dest


def _compare(rerun: Path, *extra: str) -> None:
    main(["compare", str(rerun), "--against", str(SHIPPED), "--tolerances", str(TOLERANCES),
          "--paper", str(PAPER), *extra])


def _fails(rerun: Path, *extra: str) -> str:
    with pytest.raises(SystemExit) as exc:
        _compare(rerun, *extra)
    return str(exc.value.code)


class TestCompareCommand:
    def test_identical_copy_passes(self, rerun, capsys):
        """An unchanged copy: every claim holds, every number and cell equal, exit status 0."""
        _compare(rerun)
        out = capsys.readouterr().out
        assert "every claim holds; every number and cell equal or within its declared tolerance" in out
        assert "0 skipped, 0 failed, 0 missing" in out
        assert "| paper numbers (numbers.json) |" in out and out.index("claims (") < out.index("| compared |")
        numbers_line = next(line for line in out.splitlines() if line.startswith("| paper numbers"))
        assert numbers_line.endswith("| 0 | 0 | 0 |")  # skipped, different, missing

    def test_rows_are_matched_by_key_not_position(self, rerun, capsys):
        """The same rows in another order are the same table."""
        for name in ("table1_seeds.csv", "table_paired.csv", "eviction/137.csv"):
            rows = _rows(rerun / name)
            _write(rerun / name, rows[::-1], list(rows[0]))
        _compare(rerun)
        assert "every claim holds; every number and cell equal" in capsys.readouterr().out

    def test_one_seed_accuracy_drop_fails_naming_the_cell(self, rerun, capsys):
        """One seed's overall clerk accuracy 0.2 lower fails, though a per-type cell may move as far."""
        match = {"split": "test", "system": "clerk", "seed": "137"}
        dropped = _cell(SHIPPED / "table1_seeds.csv", match, "accuracy") - 0.2
        _set_cell(rerun / "table1_seeds.csv", match, "accuracy", f"{dropped:.6f}")
        message = _fails(rerun)
        assert message == ("clerk compare: 1 number(s)/cell(s) beyond tolerance: "
                           "table1_seeds.csv[split=test,system=clerk,seed=137]:accuracy")
        out = capsys.readouterr().out
        assert "different  cell table1_seeds.csv[split=test,system=clerk,seed=137]:accuracy: " in out
        assert "|diff| 0.2 (tolerance 0.066, rule 'table[13]_seeds.csv:accuracy' [system in clerk, prompted-ledger]" in out

    def test_three_seed_clerk_mean_drop_fails(self, rerun, capsys):
        """The three-seed clerk mean 0.05 lower (table cell and paper number) fails the headline
        claim and both items."""
        shipped = _shipped_number("t1.clerk.accuracy_mean")
        changed = round(shipped["value"] - 0.05, 6)
        _set_cell(rerun / "table1.csv", {"split": "test", "system": "clerk"}, "accuracy_mean", f"{changed:.6f}")
        _set_number(rerun, "t1.clerk.accuracy_mean", changed)
        message = _fails(rerun)
        assert message.startswith("clerk compare: 1 claim(s) failed: headline t1.clerk.accuracy_mean; "
                                  "2 number(s)/cell(s) beyond tolerance: t1.clerk.accuracy_mean, ")
        assert message.endswith("table1.csv[split=test,system=clerk]:accuracy_mean")
        out = capsys.readouterr().out
        assert (f" failed  headline t1.clerk.accuracy_mean: shipped {shipped['value']:g} (printed {shipped['text']}), "
                f"rerun {changed:g}") in out

    def test_change_within_the_machine_spread_passes(self, rerun, capsys):
        """A model-derived number moved by less than its declared spread is 'within'."""
        shipped = _shipped_number("t1.clerk.accuracy_mean")
        tolerance = rule_for(load_tolerances(TOLERANCES), "table1.csv:accuracy_mean", {"system": "clerk"}).abs
        assert 0 < tolerance < 0.05
        changed = round(shipped["value"] - tolerance / 2, 6)
        _set_cell(rerun / "table1.csv", {"split": "test", "system": "clerk"}, "accuracy_mean", f"{changed:.6f}")
        _set_number(rerun, "t1.clerk.accuracy_mean", changed)
        _compare(rerun)
        out = capsys.readouterr().out
        assert "   within  number t1.clerk.accuracy_mean: " in out and "every claim holds;" in out

    def test_subset_of_seeds_compares_those_rows_and_names_the_skipped_aggregates(self, rerun, capsys):
        """A rerun of seed 137 alone: its rows compared by key (not against other seeds' or systems'
        rows), every aggregate over three seeds skipped with a note, exit status 0."""
        _keep_seeds(rerun, {"137"})
        _compare(rerun)
        out = capsys.readouterr().out
        assert "seeds: shipped 137, 991, 4242; rerun 137: compared on the rerun's seeds" in out
        assert "table1.csv: 7 rows skipped (aggregates over seeds 137;991;4242 in the shipped run, over 137 in the rerun)" in out
        assert "table1_seeds.csv: 14 rows skipped (rows of seeds 991, 4242, not in the rerun)" in out
        assert "table_paired.csv: 12 rows skipped (aggregates over 3 seeds in the shipped run, over 1 in the rerun)" in out
        assert "eviction/991.csv: 105 rows skipped (per-seed file of seed 991, not in the rerun)" in out
        assert ("skipped  verdict table_paired.csv[test: clerk - full]: shipped +0.211 [+0.185, +0.237] conclusive; "
                "not checked: aggregates over 3 seeds") in out
        assert "  holds  ranking table1_seeds.csv (test, seed 137), accuracy: " in out
        assert "skipped  headline t1.clerk.accuracy_mean: " in out
        assert "every number and cell equal or within its declared tolerance" in out

    def test_subset_rerun_still_judges_its_seed(self, rerun):
        """In a one-seed rerun that seed's rows are compared: a 0.2 drop there fails."""
        _keep_seeds(rerun, {"137"})
        match = {"split": "test_ood", "system": "clerk", "seed": "137"}
        _set_cell(rerun / "table3_seeds.csv", match, "accuracy",
                  f"{_cell(SHIPPED / 'table3_seeds.csv', match, 'accuracy') - 0.2:.6f}")
        assert _fails(rerun).endswith("beyond tolerance: table3_seeds.csv[split=test_ood,system=clerk,seed=137]:accuracy")

    def test_row_missing_from_a_rerun_seed_is_reported(self, rerun, capsys):
        """A seed-137 rerun lacking the clerk row of seed 137 fails naming it; --partial lists it."""
        _keep_seeds(rerun, {"137"})
        rows = _rows(rerun / "table1_seeds.csv")
        _write(rerun / "table1_seeds.csv", [r for r in rows if r["system"] != "clerk"], list(rows[0]))
        assert _fails(rerun).endswith("beyond tolerance: table1_seeds.csv[split=test,system=clerk,seed=137]")
        _compare(rerun, "--partial")
        out = capsys.readouterr().out
        assert "  missing  cell table1_seeds.csv[split=test,system=clerk,seed=137]: shipped 'row', rerun absent" in out

    def test_flipped_conclusive_verdict_fails(self, rerun, capsys):
        """A conclusive paired difference that is no longer conclusive fails its claim, saying by
        how much it moved."""
        match = {"split": "test_ood", "system": "window"}
        for column, value in (("delta", "0.020000"), ("boot_low", "-0.020000"), ("boot_high", "0.060000"),
                              ("conclusive", "False"), ("seed_mean", "0.020000")):
            _set_cell(rerun / "table_paired.csv", match, column, value)
        message = _fails(rerun)
        assert message.startswith("clerk compare: 1 claim(s) failed: verdict table_paired.csv[test_ood: clerk - window]; ")
        out = capsys.readouterr().out
        assert (" failed  verdict table_paired.csv[test_ood: clerk - window]: no longer conclusive: shipped +0.136 "
                "[+0.094, +0.177] conclusive; rerun +0.020 [-0.020, +0.060] not conclusive (delta moved -0.116)") in out

    def test_reversed_ranking_fails(self, rerun, capsys):
        """Two systems further apart than their tolerances that swap places fail the ranking claim."""
        match = {"split": "test", "system": "window"}
        _set_cell(rerun / "table1.csv", match, "accuracy_mean", "0.750000")  # above full's 0.716
        message = _fails(rerun)
        assert "claim(s) failed: ranking table1.csv (test), accuracy over seeds;" in message
        assert "full > window (shipped gap +0.074, margin 0.070; rerun gap -0.034)" in capsys.readouterr().out

    def test_model_free_numbers_must_stay_identical(self, rerun):
        """The eviction study is model-free: the smallest change of one of its cells fails."""
        path = rerun / "eviction" / "137.csv"
        rows = _rows(path)
        rows[0]["recall_hit_rate"] = str(float(rows[0]["recall_hit_rate"]) + 1e-6)
        _write(path, rows, list(rows[0]))
        assert "beyond tolerance: eviction/137.csv[seed=137," in _fails(rerun)

    def test_timing_differences_pass(self, rerun, capsys):
        """Wall seconds are declared timing: changed, they are listed with --verbose, never failed."""
        shipped = _shipped_number("bench.train.wall_s_total")
        _set_cell(rerun / "benchmarks.csv", {"stage": "train"}, "wall_s_total", "9999.99")
        _set_number(rerun, "bench.train.wall_s_total", 9999.99)
        _compare(rerun, "--verbose")
        out = capsys.readouterr().out
        assert (f"   timing  number bench.train.wall_s_total: shipped {shipped['value']:g} "
                f"(printed {shipped['text']}), rerun 9999.99") in out

    def test_missing_table_fails(self, rerun):
        """A table the shipped run has and the rerun lacks is a failure naming the file."""
        (rerun / "table4_seeds.csv").unlink()
        assert _fails(rerun).endswith("beyond tolerance: table4_seeds.csv")


class TestTolerances:
    def test_shipped_file_loads_and_ends_with_catch_all(self):
        """paper/tolerances.yaml parses; timing rules come first; everything else must be identical."""
        rules = load_tolerances(TOLERANCES)
        assert rules[-1].pattern == "*" and rules[-1].abs == 0 and not rules[-1].timing
        assert rule_for(rules, "bench.evaluate.wall_s_total").timing
        assert rule_for(rules, "table1.csv:wall_seconds_mean").timing
        assert not rule_for(rules, "bench.evaluate.jobs").timing
        assert not rule_for(rules, "table1.csv:accuracy_mean", {"system": "clerk"}).timing

    def test_families_at_the_level_they_describe(self):
        """A seed's overall accuracy is judged apart from (and tighter than) its per-type cells, a
        model-written ledger apart from a transcript view, a mean apart from its interval bounds."""
        rules = load_tolerances(TOLERANCES)
        clerk, full = {"system": "clerk"}, {"system": "full"}
        overall = rule_for(rules, "table1_seeds.csv:accuracy", clerk)
        per_type = rule_for(rules, "table1_seeds.csv:accuracy_negated", clerk)
        assert overall.abs < 0.2 and overall.abs < per_type.abs and overall.pattern != per_type.pattern
        assert rule_for(rules, "table1_seeds.csv:accuracy", full).where != overall.where
        mean = rule_for(rules, "table1.csv:accuracy_mean", clerk)
        assert mean.abs < 0.05 and rule_for(rules, "table1.csv:accuracy_ci_low", clerk).pattern != mean.pattern
        for column in ("op_f1", "state_f1"):
            assert rule_for(rules, f"table3_seeds.csv:{column}", clerk).abs < rule_for(
                rules, "table3_seeds.csv:op_evict_f1", clerk).abs

    def test_every_model_derived_rule_names_its_record(self):
        """Every tolerance above zero says where it was measured (a record of
        benchmarks/machine-spread.md or docs/DECISIONS.md), and which measures crossed code."""
        for rule in load_tolerances(TOLERANCES):
            if rule.abs > 0:
                assert "record" in rule.why or "DECISIONS" in rule.why, rule.pattern
        text = TOLERANCES.read_text()
        assert "ACROSS DIFFERENT CODE" in text and "across different code" in text

    def test_declared_keys_tell_the_shipped_rows_apart(self):
        """Every CSV of the shipped results has a key that identifies its rows."""
        tables = load_tables(SHIPPED, load_spec(TOLERANCES).keys)
        assert tables["table1_seeds.csv"].key == ["split", "system", "seed"]
        assert all(len(t.index()) == len(t.rows) for t in tables.values())

    def test_abstract_numbers_are_read_from_the_paper(self):
        """The headline claims are the abstract's number ids."""
        ids = abstract_numbers(PAPER)
        assert "t1.clerk.accuracy_mean" in ids and "pd.test.full.delta" in ids and "t3.clerk.op_f1_mean" in ids

    def test_within_tolerance(self, rerun, tmp_path):
        """A difference within a declared absolute tolerance is 'within', not a failure."""
        (tmp_path / "tol.yaml").write_text('rules:\n  - {pattern: "t1.*", abs: 0.01, why: "test"}\n')
        _set_number(rerun, "setup.budget", 12.005)
        (tmp_path / "tol.yaml").write_text('rules:\n  - {pattern: "setup.budget", abs: 0.01, why: "test"}\n')
        found = compare_trees(SHIPPED, rerun, load_spec(tmp_path / "tol.yaml"))
        assert [(i.name, i.status) for i in found.numbers if i.status != "equal"] == [("setup.budget", "within")]

    def test_rule_without_tolerance_is_named(self, tmp_path):
        """A rule with neither abs nor timing is a user error naming the rule."""
        (tmp_path / "tol.yaml").write_text('rules:\n  - {pattern: "x*", why: "no bound"}\n')
        with pytest.raises(UserError, match=r"rule 1 \('x\*'\): 'abs' must be a number >= 0"):
            load_tolerances(tmp_path / "tol.yaml")

    def test_key_that_does_not_tell_rows_apart_is_named(self, tmp_path):
        """A declared key under which two rows coincide is a user error naming the file."""
        (tmp_path / "tol.yaml").write_text('keys:\n  "table1_seeds.csv": [split, system]\nrules: []\n')
        with pytest.raises(UserError, match=r"table1_seeds\.csv: key \(split, system\) does not tell its rows apart"):
            compare_trees(SHIPPED, SHIPPED, load_spec(tmp_path / "tol.yaml"))


class TestCompareArtifacts:
    def test_directory_per_file_and_legacy_digest(self):
        """Listed directories compare file by file; an old manifest's digest (with Snakemake's
        marker) still matches the same files listed by a new one."""
        listed = {"sha256": "new", "files": {"a.bin": "1" * 64, "b.json": "2" * 64}}
        changed = {"sha256": "x", "files": {"a.bin": "1" * 64, "b.json": "3" * 64}}
        assert compare_artifacts({"files": {"m": listed}}, {"files": {"m": changed}}) == [
            ("m/a.bin", "equal"), ("m/b.json", "different")]
        from clerk.provenance.files import legacy_dir_digest

        legacy = {"sha256": legacy_dir_digest(listed["files"])}
        assert compare_artifacts({"files": {"m": legacy}}, {"files": {"m": listed}}) == [("m", "equal")]


class TestNumericsPins:
    def test_default_mode_sets_unset_variables(self):
        """The default mode sets every pin the environment lacks and keeps a user's own value."""
        environ = {"MKL_CBWR": "COMPATIBLE"}
        got = apply_reproducible_numerics(environ)
        assert got == {**NUMERICS_MODES["pinned"], "MKL_CBWR": "COMPATIBLE"} == environ

    @pytest.mark.parametrize("mode", ["pinned", "strict"])
    def test_kernel_dispatch_is_not_pinned_to_avx2(self, mode):
        """No mode pins ATen to AVX2 any more (the pin gave no cross-machine identity, and it broke bf16)."""
        environ = {NUMERICS_SWITCH: mode}
        apply_reproducible_numerics(environ)
        assert "ATEN_CPU_CAPABILITY" not in environ and environ["MKL_CBWR"]

    def test_native_mode_sets_nothing(self):
        """CLERK_NUMERICS=native leaves the libraries' own dispatch."""
        environ = {NUMERICS_SWITCH: "native"}
        assert apply_reproducible_numerics(environ) == {k: None for k in NUMERICS_MODES["pinned"]}
        assert environ == {NUMERICS_SWITCH: "native"}

    def test_unknown_mode_is_user_error(self):
        """An unknown mode names the variable and the known modes."""
        with pytest.raises(UserError, match="CLERK_NUMERICS must be one of pinned, strict, native, got 'fast'"):
            apply_reproducible_numerics({NUMERICS_SWITCH: "fast"})
