"""Tests for reproducing a run: ``clerk compare``, its tolerances file and the CPU
numerics pins model jobs start with.

The compare tests copy the shipped ``results/`` tree, change one number, and run the real verb.
"""

import csv
import json
import shutil
from pathlib import Path

import pytest

from clerk.cli import main
from clerk.errors import UserError
from clerk.models.device import NUMERICS_MODES, NUMERICS_SWITCH, apply_reproducible_numerics
from clerk.provenance.compare import compare_artifacts, compare_trees, load_tolerances, rule_for

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "results"
TOLERANCES = ROOT / "paper" / "tolerances.yaml"


def _set_cell(path: Path, match: dict[str, str], column: str, value: str) -> None:
    """Rewrite one CSV cell (the row matching ``match``), keeping every other byte's meaning."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    hits = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(hits) == 1
    hits[0][column] = value
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _set_number(results: Path, number_id: str, value: float) -> None:
    numbers = json.loads((results / "numbers.json").read_text())
    numbers["numbers"][number_id]["value"] = value
    (results / "numbers.json").write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")


def _shipped_number(number_id: str) -> dict:
    """The shipped numbers.json entry of ``number_id`` (value and printed text)."""
    return json.loads((SHIPPED / "numbers.json").read_text())["numbers"][number_id]


@pytest.fixture
def rerun(tmp_path) -> Path:
    """A copy of the shipped results tree: a rerun that reproduced everything."""
    dest = tmp_path / "rerun"
    shutil.copytree(SHIPPED, dest)
    return dest


def _compare(rerun: Path, *extra: str) -> None:
    main(["compare", str(rerun), "--against", str(SHIPPED), "--tolerances", str(TOLERANCES), *extra])


class TestCompareCommand:
    def test_identical_copy_passes(self, rerun, capsys):
        """An unchanged copy: every number and cell equal, exit status 0."""
        _compare(rerun)
        out = capsys.readouterr().out
        assert "every number and cell equal or within its declared tolerance" in out
        assert "| paper numbers (numbers.json) |" in out and " 0 | 0 |" in out.splitlines()[4]

    def test_changed_metric_fails_naming_it(self, rerun, capsys):
        """One accuracy changed beyond its declared machine spread (table cell and paper number)
        exits non-zero and names both."""
        shipped = _shipped_number("t1.clerk.accuracy_mean")
        tolerance = rule_for(load_tolerances(TOLERANCES), "t1.clerk.accuracy_mean").abs
        changed = round(shipped["value"] - tolerance - 1e-3, 6)
        _set_cell(rerun / "table1.csv", {"split": "test", "system": "clerk"}, "accuracy_mean", f"{changed:.6f}")
        _set_number(rerun, "t1.clerk.accuracy_mean", changed)
        with pytest.raises(SystemExit) as exc:
            _compare(rerun)
        message = str(exc.value.code)
        assert message.startswith("clerk compare: 2 number(s)/cell(s) beyond tolerance: t1.clerk.accuracy_mean, ")
        assert message.endswith(":accuracy_mean") and ", table1.csv[system=clerk," in message
        out = capsys.readouterr().out
        printed = shipped["text"]
        assert (f"different  number t1.clerk.accuracy_mean: shipped {shipped['value']:g} (printed {printed}), "
                f"rerun {changed:g} (printed {printed}), |diff| {abs(changed - shipped['value']):.3g}") in out

    def test_change_within_the_machine_spread_passes(self, rerun, capsys):
        """A model-derived number moved by less than its declared machine spread is 'within'."""
        shipped = _shipped_number("t1.clerk.accuracy_mean")
        tolerance = rule_for(load_tolerances(TOLERANCES), "t1.clerk.accuracy_mean").abs
        assert 0 < tolerance < 0.1
        changed = round(shipped["value"] - tolerance / 2, 6)
        _set_cell(rerun / "table1.csv", {"split": "test", "system": "clerk"}, "accuracy_mean", f"{changed:.6f}")
        _set_number(rerun, "t1.clerk.accuracy_mean", changed)
        _compare(rerun)
        assert "every number and cell equal or within its declared tolerance" in capsys.readouterr().out

    def test_model_free_numbers_must_stay_identical(self, rerun):
        """The eviction study is model-free: the smallest change of one of its cells fails."""
        path = next(iter(sorted((rerun / "eviction").glob("*.csv"))))
        text = path.read_text().splitlines()
        header, first = text[0].split(","), text[1].split(",")
        col = next(k for k, v in enumerate(first) if v.replace(".", "", 1).isdigit() and header[k] not in ("seed",))
        first[col] = str(float(first[col]) + 1e-6)
        path.write_text("\n".join([text[0], ",".join(first), *text[2:]]) + "\n")
        with pytest.raises(SystemExit, match=r"beyond tolerance: eviction/"):
            _compare(rerun)

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
        with pytest.raises(SystemExit, match=r"beyond tolerance: table4_seeds\.csv$"):
            _compare(rerun)


class TestTolerances:
    def test_shipped_file_loads_and_ends_with_catch_all(self):
        """paper/tolerances.yaml parses; timing rules come first; everything else must be identical."""
        rules = load_tolerances(TOLERANCES)
        assert rules[-1].pattern == "*" and rules[-1].abs == 0 and not rules[-1].timing
        assert rule_for(rules, "bench.evaluate.wall_s_total").timing
        assert rule_for(rules, "table1.csv:wall_seconds_mean").timing
        assert not rule_for(rules, "bench.evaluate.jobs").timing
        assert not rule_for(rules, "table1.csv:accuracy_mean").timing

    def test_within_tolerance(self, rerun, tmp_path):
        """A difference within a declared absolute tolerance is 'within', not a failure."""
        (tmp_path / "tol.yaml").write_text('rules:\n  - {pattern: "t1.*", abs: 0.01, why: "test"}\n')
        _set_number(rerun, "t1.clerk.accuracy_mean", _shipped_number("t1.clerk.accuracy_mean")["value"] + 0.005)
        numbers, _, _ = compare_trees(SHIPPED, rerun, load_tolerances(tmp_path / "tol.yaml"))
        assert [(i.name, i.status) for i in numbers if i.status != "equal"] == [("t1.clerk.accuracy_mean", "within")]

    def test_rule_without_tolerance_is_named(self, tmp_path):
        """A rule with neither abs nor timing is a user error naming the rule."""
        (tmp_path / "tol.yaml").write_text('rules:\n  - {pattern: "x*", why: "no bound"}\n')
        with pytest.raises(UserError, match=r"rule 1 \('x\*'\): 'abs' must be a number >= 0"):
            load_tolerances(tmp_path / "tol.yaml")


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
        """No mode pins ATen to AVX2 any more (it gave no cross-machine identity, and it broke bf16)."""
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
