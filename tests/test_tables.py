"""Tests for the tables and figures of clerk.report: per-seed and aggregated tables, figures, and the
paper template's numbers.

Metrics files are built here following ``clerk.evaluate.SCHEMAS`` (and validated against it);
timelines, streams and eviction rows come from the real generators at a tiny size.
"""

import csv
import hashlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from clerk import wiring
from clerk.cli import main
from clerk.errors import UserError
from clerk.evaluate.curve import COLUMNS as CURVE_COLUMNS
from clerk.evaluate.schemas import validate_record
from clerk.generator.files import write_timelines
from clerk.generator.timelines import generate
from clerk.provenance.numbers import build_numbers, expand_spec
from clerk.report.benchmarks import benchmarks_table
from clerk.report.eviction import eviction_tables
from clerk.report.figures import (
    figure_accuracy,
    figure_eviction,
    figure_learning_curve,
    figure_loss,
    figure_read_cost,
    figure_state_f1,
)
from clerk.report.paper import render_paper, template_literal_digits
from clerk.report.read_cost import read_cost_table
from clerk.report.setup_facts import setup_facts, setup_markdown
from clerk.report.systems import system_rows, systems_markdown, systems_tables
from clerk.report.tabular import mean_pm, write_csv
from clerk.streams.engines import POLICIES
from clerk.streams.generation import make_stream
from clerk.streams.study import eviction_study, rows_to_csv

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "paper" / "template.md"
SPEC = ROOT / "paper" / "numbers.yaml"
SYSTEMS = ("clerk", "oracle", "prompted-ledger", "full", "window", "rag", "add-only")
LEDGER = {"clerk", "oracle", "prompted-ledger"}
VIEWS = ("oracle", "full", "window", "rag", "add-only")
# Student t quantile with 2 dof has a closed form: (2p-1)/sqrt(2p(1-p)) at p = 0.975.
T2 = (2 * 0.975 - 1) / math.sqrt(2 * 0.975 * (1 - 0.975))


# ---- builders --------------------------------------------------------------------------------

def _op(f1: float) -> dict:
    counts = {"tp": 3, "fp": 1, "fn": 1, "precision": 0.75, "recall": 0.75, "f1": f1}
    by_type = {k: dict(counts, f1=f1 / (n + 1)) for n, k in enumerate(("ADD", "UPDATE", "TOMBSTONE", "EVICT"))}
    return {**counts, "n_invalid": 1, "by_type": by_type}


def system_record(acc: float, is_ledger: bool = True, reader: str = "adapter",
                  negated: float | None = 0.5, forced: bool = False) -> dict:
    """A ``metrics.system`` record with accuracy ``acc``; per-type values derived from it; with
    ``forced`` (a model writer) teacher-forced op scores too."""
    by_type = {"unknown": acc, "current": acc / 2, "superseded": acc / 4, "negated": negated,
               "temporal": 0.0}
    rec = {
        "version": "1", "is_ledger": is_ledger, "reader": {"method": "mc", "model": reader},
        "n_questions": 20, "accuracy": acc, "accuracy_by_type": by_type,
        "n_by_type": {t: 4 if v is not None else 0 for t, v in by_type.items()},
        "stale_error_rate": 1 - acc, "n_superseded": 4, "stale_error_rate_negated": 0.0,
        "read_tokens_mean": 100.0 + 10 * acc, "truncated_rate": 0.0, "n_writes": 8,
        "write_tokens_mean": 40.0 if is_ledger else 0.0, "wall_seconds": 2.5,
        "op": _op(acc) if is_ledger else None, "state_f1_mean": acc if is_ledger else None,
        "state_exact_rate": acc / 2 if is_ledger else None,
        "invalid_op_rate": 0.1 if is_ledger else None, "parse_failure_rate": 0.0 if is_ledger else None,
        "n_ops": 10 if is_ledger else None, "invalid_reasons": {"key_held": 1} if is_ledger else None,
        "drift_rate": (0.25 if forced else 0.0) if is_ledger else None,
        "op_teacher_forced": _op(min(1.0, acc + 0.2)) if forced else None,
        "teacher_forced_writes": 2 if forced else None, "teacher_forced_seconds": 0.5 if forced else None,
    }
    validate_record("metrics.system", rec)
    return rec


def metrics_record(seed: int, split: str, accs: dict[str, float], negated: float | None = 0.5) -> dict:
    """A metrics.json record of one seed and split for systems name -> accuracy."""
    systems = {name: system_record(acc, name in LEDGER, "adapter" if name in ("clerk", "oracle") else "base",
                                   negated, forced=name in ("clerk", "prompted-ledger")) for name, acc in accs.items()}
    rec = {"schema": "clerk.evaluate.metrics/1",
           "input": {"path": f"results/data/{seed}/{split}.jsonl", "sha256": "0" * 64, "n_personas": 5,
                     "n_slice_personas": 1, "splits": [split], "seeds": [seed]},
           "config": {"systems": list(accs), "model": "resources/models/tiny", "adapter": f"results/train/{seed}",
                      "window_k": 2, "rag_k": 4, "max_new_tokens": 48, "batch_size": 8, "reader": "mc",
                      "reader_model": "base", "reader_pmi": 0.25, "max_read_tokens": -1, "add_only_budget": -1},
           "versions": {"clerk": "0.1.0", **{n: "1" for n in accs}},
           "systems": systems, "wall_seconds": 9.0}
    validate_record("metrics", rec)
    return rec


def write_metrics(root: Path, seed: int, split: str, accs: dict[str, float], **kw) -> str:
    path = root / "results" / "eval" / str(seed) / split / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics_record(seed, split, accs, **kw), indent=2))
    return str(path)


SEED_ACCS = {137: 0.5, 991: 0.6, 4242: 0.8}


def all_systems(acc: float) -> dict[str, float]:
    return {name: round(acc - 0.05 * k, 4) for k, name in enumerate(SYSTEMS)}


@pytest.fixture(scope="module")
def eviction_csvs(tmp_path_factory) -> list[str]:
    """Real eviction-study CSVs for two seeds (capacities 4, 8; noise 1, 2)."""
    root = tmp_path_factory.mktemp("eviction")
    paths = []
    for seed in (137, 991):
        stream = make_stream(seed, length=30, num_foundational=4, recalls_per_foundational=2, noise_per_turn=2)
        rows = eviction_study([stream], list(POLICIES), [4, 8], [1, 2])
        path = root / f"{seed}.csv"
        path.write_text(rows_to_csv(rows))
        paths.append(str(path))
    return paths


def write_read_cost(root: Path) -> list[str]:
    paths = []
    for k, seed in enumerate((137, 991)):
        rows = [{"session": s, "view": v, "mean_read_tokens": 50.0 * s * (i + 1) + k, "n": 3}
                for s in (1, 2, 3) for i, v in enumerate(VIEWS)]
        path = root / "readcost" / f"{seed}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(path, index=False, lineterminator="\n")
        paths.append(str(path))
    return paths


def write_benchmarks(root: Path) -> list[str]:
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    jobs = {"generate/137_test": (2.0, "30.5", 1.0), "generate/991_test": (3.0, "NA", 1.5),
            "train/137": (60.0, "500.0", 55.0)}
    paths = []
    for job, (secs, rss, cpu) in jobs.items():
        path = root / "benchmarks" / "runs" / f"{job}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{secs}\t0:00:0{int(secs) % 10}\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")
        paths.append(str(path))
    return paths


def write_train(root: Path, seed: int, losses: list[float], kind: str = "train") -> str:
    folder = root / kind / str(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{5 * (k + 1)},{loss:.6f},1.0e-04,{100 * (k + 1)},{2.0 * (k + 1):.2f}\n"
                   for k, loss in enumerate(losses))
    (folder / "train_log.csv").write_text("step,loss,lr,tokens_seen,seconds\n" + rows)
    cfg = {"seed": seed, "lr": 0.003, "epochs": 1.0, "max_steps": 30, "batch_size": 4, "grad_accum": 1,
           "max_length": 512, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0,
           "lora_targets": ["q_proj", "v_proj"], "modules_to_save": [], "warmup": 0.05, "scheduler": "cosine"}
    (folder / "train_config.json").write_text(json.dumps({"config": cfg, "device": "cpu", "bf16": False,
                                                          "trainable_params": 1234}))
    (folder / "metrics.json").write_text(json.dumps({"train_loss": losses[-1], "steps": 5 * len(losses)}))
    return str(folder)


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---- systems tables --------------------------------------------------------------------------

class TestSystemRows:
    def test_one_row_per_system_with_every_metric(self):
        """A schema-valid metrics.json gives one row per system with its values copied exactly."""
        rows = system_rows(metrics_record(137, "test", {"clerk": 0.5, "full": 0.25}))
        assert [r["system"] for r in rows] == ["clerk", "full"]
        clerk, full = rows
        assert (clerk["split"], clerk["seed"], clerk["reader"], clerk["is_ledger"]) == ("test", 137, "mc:adapter", True)
        assert clerk["accuracy"] == 0.5 and clerk["accuracy_current"] == 0.25 and clerk["op_f1"] == 0.5
        assert clerk["op_update_f1"] == 0.25 and clerk["state_f1"] == 0.5 and clerk["n_questions"] == 20.0
        assert full["reader"] == "mc:base" and math.isnan(full["op_f1"]) and math.isnan(full["state_f1"])
        assert clerk["n_personas"] == 4.0 and clerk["n_slice_personas"] == 1.0  # the slice is not asked

    def test_teacher_forced_and_gold_evict_columns(self):
        """Model writers get teacher-forced op columns (overall and per kind) beside the closed-loop
        ones; every ledger system gets the gold EVICT count (tp + fn of EVICT) and its drift rate;
        the others get NaN."""
        rec = metrics_record(137, "test", {"clerk": 0.5, "oracle": 1.0, "full": 0.25})
        clerk, oracle, full = system_rows(rec)
        assert clerk["op_tf_f1"] == 0.7 and clerk["op_f1"] == 0.5 and clerk["op_tf_update_f1"] == 0.35
        assert clerk["op_tf_evict_f1"] == pytest.approx(0.7 / 4) and clerk["drift_rate"] == 0.25
        assert clerk["tf_wall_seconds"] == 0.5 and clerk["n_gold_evict"] == oracle["n_gold_evict"] == 4.0
        assert math.isnan(oracle["op_tf_f1"]) and oracle["drift_rate"] == 0.0
        assert all(math.isnan(full[c]) for c in ("op_tf_f1", "n_gold_evict", "drift_rate", "tf_wall_seconds"))

    def test_metrics_written_before_teacher_forcing_still_read(self):
        """A metrics.json without the issue-46 keys (the shipped run's) gives NaN in the new columns."""
        rec = metrics_record(137, "test", {"clerk": 0.5})
        for key in ("drift_rate", "op_teacher_forced", "teacher_forced_writes", "teacher_forced_seconds"):
            del rec["systems"]["clerk"][key]
        del rec["input"]["n_slice_personas"]
        (clerk,) = system_rows(rec)
        assert clerk["op_f1"] == 0.5 and math.isnan(clerk["op_tf_f1"]) and clerk["n_personas"] == 5.0

    def test_file_with_two_seeds_is_rejected(self):
        """A metrics file that mixes seeds cannot be one per-seed value: the error names the file."""
        rec = metrics_record(137, "test", {"clerk": 0.5})
        rec["input"]["seeds"] = [137, 991]
        with pytest.raises(UserError, match=r"^--metrics: 'm.json' covers seeds \[137, 991\] and splits "
                                            r"\['test'\]; expected exactly one seed and one split per file$"):
            system_rows(rec, "m.json")


class TestSystemsTables:
    def test_aggregate_equals_hand_computation(self, tmp_path):
        """Mean, sd (ddof=1) and the 95 % t-interval over three seeds match a hand computation."""
        paths = [write_metrics(tmp_path, s, "test", {"clerk": a, "full": a / 2}) for s, a in SEED_ACCS.items()]
        per_seed, agg, order = systems_tables(paths)
        assert order == ["clerk", "full"] and len(per_seed) == 6
        row = agg[agg["system"] == "clerk"].iloc[0]
        xs = [0.5, 0.6, 0.8]
        mean = sum(xs) / 3
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / 2)
        half = T2 * sd / math.sqrt(3)
        assert row["n_seeds"] == 3 and row["seeds"] == "137;991;4242" and row["accuracy_n"] == 3
        assert row["accuracy_mean"] == pytest.approx(mean, abs=1e-12)
        assert row["accuracy_sd"] == pytest.approx(sd, abs=1e-12)
        assert row["accuracy_ci_low"] == pytest.approx(mean - half, abs=1e-9)
        assert row["accuracy_ci_high"] == pytest.approx(mean + half, abs=1e-9)
        assert row["read_tokens_mean"] == pytest.approx(100 + 10 * mean, abs=1e-9)

    def test_per_seed_table_keeps_each_seed_value(self, tmp_path):
        """The long table holds exactly the per-seed values the aggregate summarises."""
        paths = [write_metrics(tmp_path, s, "test", {"clerk": a}) for s, a in SEED_ACCS.items()]
        per_seed, _, _ = systems_tables(paths)
        assert dict(zip(per_seed["seed"], per_seed["accuracy"])) == SEED_ACCS

    def test_missing_question_type_counts_fewer_seeds(self, tmp_path):
        """A seed without negated questions is left out of that metric only (its _n is smaller)."""
        paths = [write_metrics(tmp_path, 137, "test", {"clerk": 0.5}, negated=None),
                 write_metrics(tmp_path, 991, "test", {"clerk": 0.6}, negated=0.25),
                 write_metrics(tmp_path, 4242, "test", {"clerk": 0.8}, negated=0.75)]
        _, agg, _ = systems_tables(paths)
        row = agg.iloc[0]
        assert row["accuracy_negated_n"] == 2 and row["accuracy_negated_mean"] == pytest.approx(0.5)
        assert row["accuracy_n"] == 3
        assert mean_pm(row.to_dict(), "accuracy_negated", ".2f").endswith("(n=2)")

    def test_same_seed_twice_is_an_error(self, tmp_path):
        """Two files for the same (split, system, seed) would double-count a seed."""
        a = write_metrics(tmp_path / "a", 137, "test", {"clerk": 0.5})
        b = write_metrics(tmp_path / "b", 137, "test", {"clerk": 0.6})
        with pytest.raises(UserError, match=r"^aggregate: duplicate \['split', 'system', 'reader', 'is_ledger', 'seed'\]"):
            systems_tables([a, b])

    def test_markdown_rows_follow_config_order(self, tmp_path):
        """Markdown rows follow the evaluated systems' order and show mean ± half-interval."""
        paths = [write_metrics(tmp_path, s, "test", {"rag": a, "clerk": a}) for s, a in SEED_ACCS.items()]
        _, agg, order = systems_tables(paths)
        md = systems_markdown(agg, order)
        lines = md.splitlines()
        assert lines[0].startswith("| system | reader | accuracy | unknown |")
        assert lines[2].startswith("| rag | base model | 0.633 ± 0.379 |")
        assert lines[3].startswith("| clerk | trained adapter | 0.633 ± 0.379 |")
        assert "over n = 3 seeds (137, 991, 4242)" in md


class TestTableSystemsCli:
    def test_outputs_are_byte_identical_across_runs(self, tmp_path):
        """Two runs of `clerk table-systems` on the same files write the same bytes."""
        paths = [write_metrics(tmp_path, s, "test_ood", all_systems(a)) for s, a in SEED_ACCS.items()]
        digests = []
        for run in ("one", "two"):
            out = tmp_path / run
            main(["table-systems", "--metrics", *paths, "--out", str(out / "table3.csv"),
                  "--markdown", str(out / "table3.md"), "--markdown-cost", str(out / "table3_cost.md")])
            digests.append([_sha(out / n) for n in ("table3.csv", "table3_seeds.csv", "table3.md", "table3_cost.md")])
        assert digests[0] == digests[1]
        seeds = pd.read_csv(tmp_path / "one" / "table3_seeds.csv")
        assert len(seeds) == 3 * len(SYSTEMS) and set(seeds["split"]) == {"test_ood"}

    def test_cost_table_adds_teacher_forced_columns_and_the_gold_evict_counts(self, tmp_path):
        """The write-quality table keeps its columns, the teacher-forced ones follow the closed-loop
        ones, and a line names each seed's gold EVICT count (varied here per seed) and the slice."""
        paths = []
        for k, (seed, acc) in enumerate(SEED_ACCS.items()):
            rec = metrics_record(seed, "test", all_systems(acc))
            for m in rec["systems"].values():
                if m["op"] is not None:
                    m["op"]["by_type"]["EVICT"]["fn"] = 100 + k  # gold EVICT ops = tp 3 + fn
            path = tmp_path / str(seed) / "metrics.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(rec))
            paths.append(str(path))
        main(["table-systems", "--metrics", *paths, "--out", str(tmp_path / "table1.csv"),
              "--markdown", str(tmp_path / "table1.md"), "--markdown-cost", str(tmp_path / "table1_cost.md")])
        md = (tmp_path / "table1_cost.md").read_text()
        assert md.splitlines()[0] == (
            "| system | op-F1 | ADD | UPDATE | TOMBSTONE | EVICT | TF op-F1 | TF ADD | TF UPDATE | TF TOMBSTONE | "
            "TF EVICT | state-F1 | invalid ops | parse failures | read tok./question | write tok./session | wall s |")
        clerk = next(line for line in md.splitlines() if line.startswith("| clerk |")).split(" | ")
        oracle = next(line for line in md.splitlines() if line.startswith("| oracle |")).split(" | ")
        assert clerk[6] != "n/a" and oracle[6:11] == ["n/a"] * 5  # teacher-forced: model writers only
        assert md.endswith("Gold EVICT ops that EVICT F1 and TF EVICT are measured on, per seed: test: 103 (seed 137), "
                           "104 (seed 991), 105 (seed 4242), with an eviction-pressure slice of 1 persona a seed (no "
                           "questions: their edits count in the op and state columns, not in accuracy).\n")
        answers = (tmp_path / "table1.md").read_text()
        assert "Gold EVICT" not in answers and "TF" not in answers  # the answer table is unchanged
        agg = pd.read_csv(tmp_path / "table1.csv")
        clerk_row = agg[agg["system"] == "clerk"].iloc[0]
        assert clerk_row["n_gold_evict_mean"] == 104 and clerk_row["n_personas_mean"] == 4

    def test_no_files_is_a_user_error(self, tmp_path, capsys):
        """A metrics path that does not exist exits with status 2 and names it."""
        with pytest.raises(SystemExit) as err:
            main(["table-systems", "--metrics", str(tmp_path / "nope.json"), "--out", str(tmp_path / "t.csv")])
        assert err.value.code == 2
        assert f"--metrics must be a JSON file, got '{tmp_path / 'nope.json'}', which does not exist" in capsys.readouterr().err


# ---- eviction, read cost, benchmarks ---------------------------------------------------------

class TestEvictionTables:
    def test_aggregate_equals_per_seed_mean(self, eviction_csvs):
        """Hit rate per (policy, capacity, noise) is the mean of the two seeds' values."""
        per_seed, agg = eviction_tables(eviction_csvs, 8, 2)
        raw = pd.concat([pd.read_csv(p) for p in eviction_csvs])
        cell = raw[(raw["policy"] == "lru") & (raw["capacity"] == 4) & (raw["noise_per_turn"] == 1)]
        row = agg[(agg["policy"] == "lru") & (agg["capacity"] == 4) & (agg["noise_per_turn"] == 1)].iloc[0]
        assert row["recall_hit_rate_mean"] == pytest.approx(cell["recall_hit_rate"].mean(), abs=1e-12)
        assert row["recall_hit_rate_sd"] == pytest.approx(cell["recall_hit_rate"].std(ddof=1), abs=1e-12)
        assert len(per_seed) == len(raw) and len(agg) == len(POLICIES) * 4

    def test_default_setting_is_marked(self, eviction_csvs):
        """Exactly the rows at the default capacity and noise rate are marked `default`."""
        _, agg = eviction_tables(eviction_csvs, 8, 2)
        default = agg[agg["setting"] == "default"]
        assert sorted(default["policy"]) == sorted(POLICIES)
        assert set(default["capacity"]) == {8} and set(default["noise_per_turn"]) == {2}

    def test_unknown_default_setting_is_rejected(self, eviction_csvs):
        """A default capacity the study did not sweep is an error naming what it did sweep."""
        with pytest.raises(UserError, match=r"^--default-capacity 16 / --default-noise 2: no such setting in the "
                                            r"study \(capacities \[4, 8\], noise rates \[1, 2\]\)$"):
            eviction_tables(eviction_csvs, 16, 2)


class TestReadCostTable:
    def test_mean_over_seeds_and_final_session(self, tmp_path):
        """Per (view, session) the mean over seed files; `final` marks each view's last session."""
        agg = read_cost_table(write_read_cost(tmp_path))
        row = agg[(agg["view"] == "full") & (agg["session"] == 3)].iloc[0]
        assert row["mean_read_tokens_mean"] == pytest.approx((300.0 + 301.0) / 2)
        assert row["seeds"] == "137;991" and bool(row["final"])
        assert sorted(agg[agg["final"]]["view"]) == sorted(VIEWS)
        assert not agg[agg["session"] < 3]["final"].any()


class TestBenchmarksTable:
    def test_stage_sums_and_total(self, tmp_path):
        """Wall seconds are summed per stage; unmeasured memory (NA) is ignored; a total row closes it."""
        table = benchmarks_table(write_benchmarks(tmp_path), str(tmp_path / "benchmarks" / "runs"))
        rows = {r["stage"]: r for r in table.to_dict("records")}
        assert list(rows) == ["generate", "train", "total"]
        assert rows["generate"]["jobs"] == 2 and rows["generate"]["wall_s_total"] == 5.0
        assert rows["generate"]["max_rss_mb"] == 30.5 and rows["train"]["cpu_s_total"] == 55.0
        assert rows["total"]["wall_s_total"] == 65.0 and rows["total"]["jobs"] == 3

    def test_file_outside_root_is_rejected(self, tmp_path):
        """A TSV that is not <rule>/<job>.tsv under the root cannot name its stage."""
        paths = write_benchmarks(tmp_path)
        with pytest.raises(UserError, match=r"is not a '<rule>/<job>.tsv' file under --root"):
            benchmarks_table(paths, str(tmp_path / "benchmarks" / "runs" / "train"))


# ---- setup facts -----------------------------------------------------------------------------

def write_world(root: Path) -> dict[str, list[str]]:
    """Timelines, metrics, training folders and streams of two seeds, as the workflow lays them out."""
    files: dict[str, list[str]] = {"timelines": [], "metrics": [], "train": [], "reader_train": [], "streams": []}
    for seed in (137, 991):
        for split, size in (("train", 3), ("test", 2), ("test_ood", 2), ("long", 1)):
            path = root / "results" / "data" / str(seed) / f"{split}.jsonl"
            gen_split = "test" if split == "long" else split
            sessions = 6 if split == "long" else 3
            write_timelines(path, generate(seed, gen_split, personas=size, sessions=sessions, budget=5, n_init=2,
                                           evict_personas=1 if split == "test" else 0))
            files["timelines"].append(str(path))
        for split in ("test", "test_ood"):
            files["metrics"].append(write_metrics(root, seed, split, all_systems(SEED_ACCS[seed])))
        files["train"].append(write_train(root / "results", seed, [3.0, 2.0, 1.5 + seed / 10000]))
        stream = make_stream(seed, length=30, num_foundational=4, recalls_per_foundational=2, noise_per_turn=2)
        path = root / "results" / "streams" / f"{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stream))
        files["streams"].append(str(path))
    # The one reader, of a seed of its own.
    files["reader_train"].append(write_train(root / "results", 31, [2.0, 1.0, 0.5, 0.25], "train_reader"))
    return files


class TestSetupFacts:
    def test_settings_come_from_the_files(self, tmp_path):
        """Seeds, split sizes, budget, options, training and stream settings are read from the runs' files."""
        facts = setup_facts(**write_world(tmp_path))
        assert facts["reader"]["steps_mean"] == 20 and facts["reader"]["train_loss_mean"] == 0.25
        assert facts["reader"]["seeds"] == [31]  # the reader's own seed is not an experiment seed
        assert facts["seeds"] == [137, 991] and facts["n_seeds"] == 2 and facts["budget"] == 5
        assert facts["options"] == 10 and facts["chance"] == 0.1 and facts["ci_level"] == 0.95
        assert facts["data"]["train"] == {"personas": 3, "evict_personas": 0, "sessions": 3}
        assert facts["data"]["long"] == {"personas": 1, "evict_personas": 0, "sessions": 6}
        # The eviction-pressure slice is counted apart from the personas that are asked questions.
        assert (facts["data"]["test"]["personas"], facts["data"]["test"]["evict_personas"]) == (2, 1)
        assert "| test: personas × sessions | 2 × 3 |\n| test: eviction-pressure personas (no questions) | 1 |" \
            in setup_markdown(facts)
        assert facts["data"]["test"]["questions_per_seed_mean"] == 20
        assert facts["train"]["lora_r"] == 8 and facts["train"]["steps_mean"] == 15
        assert facts["train"]["train_loss_mean"] == pytest.approx(1.5 + (137 + 991) / 20000)
        assert facts["evaluate"]["window_k"] == 2 and facts["model"] == "tiny"
        assert facts["streams"] == {"length": 30, "num_foundational": 4, "recalls_per_foundational": 2,
                                    "noise_per_turn": 2}

    def test_settings_that_differ_between_seeds_are_rejected(self, tmp_path):
        """A training setting that differs between seeds cannot be reported as one value."""
        files = write_world(tmp_path)
        cfg_path = Path(files["train"][1]) / "train_config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["config"]["lora_r"] = 16
        cfg_path.write_text(json.dumps(cfg))
        with pytest.raises(UserError, match=r"^training config differs between files: "):
            setup_facts(**files)


# ---- figures ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def figure_inputs(tmp_path_factory, eviction_csvs) -> dict[str, list[str]]:
    """Small inputs for the six figures, built with the table functions (and a learning-curve CSV)."""
    root = tmp_path_factory.mktemp("figures_in")
    paths = [write_metrics(root, s, "test", all_systems(a)) for s, a in SEED_ACCS.items()]
    per_seed, _, _ = systems_tables(paths)
    write_csv(per_seed, root / "table1_seeds.csv")
    _, table4 = eviction_tables(eviction_csvs, 8, 2)
    write_csv(table4, root / "table4.csv")
    write_csv(read_cost_table(write_read_cost(root)), root / "read_cost.csv")
    train = [write_train(root, s, [3.0, 2.2, 1.9 + k / 10]) for k, s in enumerate((137, 991))]
    ledgers = []
    for seed in (137, 991):
        path = root / f"ledgers_{seed}.jsonl"
        rows = [{"system": sys_, "persona": p, "seed": seed, "session": s, "state_f1": f1}
                for sys_, f1 in (("clerk", 0.6 + seed / 10000), ("oracle", 1.0))
                for p in ("Ana", "Bo") for s in range(3)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        ledgers.append(str(path))
    from clerk.evaluate.curve import COLUMNS

    curve = root / "learning_curve.csv"
    with curve.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for k, step in enumerate((8, 16, 24)):
            writer.writerow({"step": step, "examples_seen": 4 * step, "sessions": 8, "op_f1": 0.2 + k / 5,
                             "add_f1": 0.3 + k / 5, "update_f1": 0.1 * k, "tombstone_f1": "" if k == 0 else 0.5,
                             "evict_f1": 0.0, "parse_failure_rate": 0.1})
    return {"read-cost": [str(root / "read_cost.csv")], "accuracy": [str(root / "table1_seeds.csv")],
            "eviction": [str(root / "table4.csv")], "loss": train, "state-f1": ledgers,
            "learning-curve": [str(curve)]}


RENDER = {"read-cost": lambda i, o: figure_read_cost(i[0], o), "accuracy": lambda i, o: figure_accuracy(i[0], o),
          "eviction": lambda i, o: figure_eviction(i[0], o), "loss": figure_loss, "state-f1": figure_state_f1,
          "learning-curve": lambda i, o: figure_learning_curve(i[0], o)}


class TestFigures:
    @pytest.mark.parametrize("kind", list(RENDER))
    def test_render_twice_same_bytes(self, kind, figure_inputs, tmp_path):
        """Each figure renders to a PDF and PNG whose bytes do not change between renders."""
        first = RENDER[kind](figure_inputs[kind], str(tmp_path / "a" / "fig"))
        second = RENDER[kind](figure_inputs[kind], str(tmp_path / "b" / "fig"))
        assert [p.suffix for p in first] == [".pdf", ".png"]
        assert [_sha(p) for p in first] == [_sha(p) for p in second]
        assert b"CreationDate" not in first[0].read_bytes()

    def test_cli_in_a_fresh_process_matches(self, figure_inputs, tmp_path):
        """`clerk figure` in a new process writes the same bytes as a render in this one."""
        here = figure_accuracy(figure_inputs["accuracy"][0], str(tmp_path / "here"))
        subprocess.run([sys.executable, "-m", "clerk.cli", "figure", "accuracy", "--inputs",
                        *figure_inputs["accuracy"], "--out", str(tmp_path / "there")], check=True)
        assert [_sha(p) for p in here] == [_sha(tmp_path / f"there{p.suffix}") for p in here]

    def test_every_figure_kind_is_tested(self):
        """Each kind `clerk figure` draws is rendered by the byte-stability test above."""
        from clerk.report.figures import FIGURES

        assert set(RENDER) == set(FIGURES)

    def test_workflow_draws_every_kind(self):
        """The workflow's figure rule (clerk.wiring.FIGURES) draws each kind once, by name."""
        from clerk.report.figures import FIGURES

        assert sorted(spec["kind"] for spec in wiring.FIGURES.values()) == sorted(FIGURES)

    def test_eviction_noise_not_in_table(self, figure_inputs, tmp_path):
        """Asking for a noise rate the table lacks names it."""
        with pytest.raises(UserError, match=r"^--noise: no rows with noise_per_turn 9 in "):
            figure_eviction(figure_inputs["eviction"][0], str(tmp_path / "f"), noise=9)


# ---- the paper template and its numbers ------------------------------------------------------

def write_erasure_metrics(root: Path, seed: int) -> str:
    """A ``clerk erasure`` metrics.json of one seed (the default profile's systems and modes),
    following ``clerk.evaluate.erasure.SCHEMAS`` and validated against it."""
    from clerk.evaluate.erasure import ERASURE_SCHEMA_ID
    from clerk.evaluate.erasure import SCHEMAS as ERASURE_SCHEMAS

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["erasure"]
    keys = [(s, "forget") for s in cfg["systems"]] + [(s, "ignore") for s in cfg["ignore_forget"]]
    rows = []
    for name, mode in keys:
        ledger = name in ("clerk", "oracle", "prompted-ledger")
        rows.append({"system": name, "mode": mode, "version": "1", "is_ledger": ledger,
                     "forget_action": "ignored" if mode == "ignore" else ("free-slot" if ledger else "redact"),
                     "reader": {"method": "mc", "model": "adapter" if ledger else "base"},
                     "n_views": 40, "n_leaks": 20 if mode == "ignore" else 0,
                     "leak_rate": 0.5 if mode == "ignore" else 0.0, "leak_rate_substring": 0.5 if mode == "ignore" else 0.0,
                     "n_forgotten": 10, "accuracy_forgotten": 0.6, "forgotten_value_rate": 0.1 if mode == "ignore" else 0.0,
                     "wall_seconds": 1.0, "invalid_reasons": {} if name == "clerk" else None})
    metrics = {"schema": ERASURE_SCHEMA_ID,
               "input": {"path": f"results/data/{seed}/forget.jsonl", "sha256": "0" * 64, "n_personas": 6,
                         "splits": ["test"], "seeds": [seed], "n_sessions": 8, "n_forget_requests": 12},
               "config": {"systems": cfg["systems"], "ignore_forget": cfg["ignore_forget"]},
               "versions": {"clerk": "0"}, "rows": rows, "wall_seconds": 2.0}
    validate_record("metrics", metrics, ERASURE_SCHEMAS)
    for row in rows:
        validate_record("metrics.row", row, ERASURE_SCHEMAS)
    path = root / "results" / "erasure" / str(seed) / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics))
    return str(path)


@pytest.fixture(scope="module")
def results_world(tmp_path_factory, eviction_csvs) -> Path:
    """A workdir holding every file paper/numbers.yaml reads, built by this module's verbs."""
    root = tmp_path_factory.mktemp("world")
    files = write_world(root)
    res = root / "results"
    for table, split in (("table1", "test"), ("table3", "test_ood")):
        metrics = [m for m in files["metrics"] if f"/{split}/" in m]
        main(["table-systems", "--metrics", *metrics, "--out", str(res / f"{table}.csv")])
    main(["table-eviction", "--csv", *eviction_csvs, "--default-capacity", "8", "--default-noise", "2",
          "--out", str(res / "table4.csv")])
    main(["table-read-cost", "--csv", *write_read_cost(root), "--out", str(res / "read_cost.csv")])
    main(["table-benchmarks", "--tsv", *write_benchmarks(root), "--root", str(root / "benchmarks" / "runs"),
          "--out", str(res / "benchmarks.csv")])
    main(["table-setup", *(a for k, v in files.items() for a in (f"--{k.replace('_', '-')}", *v)),
          "--out", str(res / "setup.json")])
    main(["table-erasure", "--metrics", *(write_erasure_metrics(root, seed) for seed in (137, 991)),
          "--out", str(res / "table5.csv")])
    # The paired table and the learning curve, written here (their verbs need predictions and
    # adapters); the curve's header is the verb's own COLUMNS.
    rows = ["split,system,n_personas,n_questions,delta,boot_low,boot_high,seed_ci_low,seed_ci_high,margin,conclusive"]
    bounds = {"oracle": (-0.2, -0.1), "full": (0.1, 0.3), "window": (0.01, 0.2)}  # behind, ahead, within the margin
    rows += [f"{split},{system},4,40,-0.100000,{low:.6f},{high:.6f},-0.300000,0.100000,0.050000,{low > 0.05 or high < -0.05}"
             for split in ("test", "test_ood") for system in ("oracle", "prompted-ledger", "full", "window", "rag", "add-only")
             for low, high in [bounds.get(system, (-0.2, 0.0))]]
    (res / "table_paired.csv").write_text("\n".join(rows) + "\n")
    (res / "curve").mkdir()
    (res / "curve" / "learning_curve.csv").write_text(
        ",".join(CURVE_COLUMNS) + "\n"
        "snapshot,8,8,True,4,0.1,0.2,0.0,0.0,0.0,0.0\nfinal,16,16,True,4,0.5,0.6,0.4,0.3,0.2,0.0\n"
        "free,16,16,False,4,0.4,0.5,0.3,0.2,0.1,0.25\n")
    return root


class TestTemplate:
    def test_checked_sections_have_no_typed_numbers(self):
        """The sections the paper rule checks (--no-digits-in) contain no hand-typed number."""
        sections = wiring.NO_DIGITS_IN
        assert {"Abstract", "Setup", "Results", "Eviction study"} <= set(sections)
        assert template_literal_digits(TEMPLATE.read_text(), sections) == []

    def test_checked_sections_exist(self):
        """Every section named for the digit check is a heading of the template (a typo would check nothing)."""
        headings = {re.sub(r"^[\d.]+\s*", "", h).strip().lower()
                    for h in re.findall(r"^#+\s+(.*)$", TEMPLATE.read_text(), re.M)}
        assert {s.lower() for s in wiring.NO_DIGITS_IN} <= headings

    def test_includes_match_the_paper_rule(self):
        """The template's includes are exactly those the paper rule passes."""
        used = set(re.findall(r"\{\{include:([^}]+)\}\}", TEMPLATE.read_text()))
        assert used == set(wiring.PAPER_INCLUDES) | {"locomo"}

    def test_every_reference_is_produced_by_the_spec(self, results_world):
        """Expanding numbers.yaml over schema-valid results yields every id the template uses."""
        spec = yaml.safe_load(SPEC.read_text())
        ids = set(expand_spec(spec, results_world))
        used = set(re.findall(r"\{\{num:([^}]+)\}\}", TEMPLATE.read_text()))
        assert used and used <= ids, sorted(used - ids)

    def test_paper_renders_from_resolved_numbers(self, results_world):
        """numbers.json resolves (every value numeric, rule from the spec) and the template renders."""
        numbers = build_numbers(yaml.safe_load(SPEC.read_text()), results_world)
        nums = numbers["numbers"]
        assert nums["t1.clerk.accuracy_mean"]["text"] == "0.550"  # seeds 137 and 991: (0.5 + 0.6) / 2
        assert nums["setup.n_seeds"]["text"] == "2" and nums["setup.chance"]["text"] == "10%"
        assert nums["t4.salience.capacity"]["text"] == "8" and nums["rc.full.session"]["text"] == "3"
        assert nums["t1.full.op_f1_mean"]["text"] == "n/a"  # not a ledger system
        assert nums["t5.full.ignore.leak_rate_mean"]["text"] == "0.500" and nums["t5.clerk.forget.n_seeds"]["text"] == "2"
        includes = {name: f"<{name}>" for name in [*wiring.PAPER_INCLUDES, "locomo"]}
        paper = render_paper(TEMPLATE.read_text(), numbers, includes)
        assert "{{" not in paper and "<table1>" in paper
        assert f"[^num-t1.clerk.accuracy_mean]: `t1.clerk.accuracy_mean` = {nums['t1.clerk.accuracy_mean']['text']}" in paper

    def test_verdicts_are_computed_from_the_numbers(self, results_world):
        """The template's verdicts follow the paired intervals: the fixture's verdicts appear, and
        moving one interval across zero changes the rendered claim (nothing is typed by hand)."""
        numbers = build_numbers(yaml.safe_load(SPEC.read_text()), results_world)
        includes = {name: f"<{name}>" for name in [*wiring.PAPER_INCLUDES, "locomo"]}
        paper = render_paper(TEMPLATE.read_text(), numbers, includes)
        assert ("CLERK is conclusively ahead of `full`, conclusively behind `oracle`, and not conclusively apart "
                "from `prompted-ledger`, `window`, `rag` and `add-only`") in paper
        assert "not conclusive: its interval clears zero by less than the machine margin" not in paper
        assert paper.count("conclusive beyond the machine margin of 0.050[^num-pd.test.full.margin]") == 1
        nums = numbers["numbers"]
        for bound, value in (("boot_low", 0.01), ("boot_high", 0.02)):
            nums[f"pd.test_ood.full.{bound}"] = dict(nums[f"pd.test_ood.full.{bound}"], value=value)
        moved = render_paper(TEMPLATE.read_text(), numbers, includes)
        assert moved.count("not conclusive: its interval clears zero by less than the machine margin of "
                           "0.050[^num-pd.test_ood.full.margin]") == 3  # abstract, OOD paragraph, limitations

    def test_checked_sections_state_no_verdict_by_hand(self):
        """Outside the placeholders, the checked sections hold no verdict words (conclusive or not,
        an interval including zero, ahead of or behind a system) except the rule's definition."""
        text = TEMPLATE.read_text()
        prose = re.sub(r"\{\{.*?\}\}|<!--.*?-->", " ", text, flags=re.S)
        found = re.findall(r"(?i)\b(?:not conclusive|conclusively|is conclusive|(?:includes|excludes|reaches) zero|"
                           r"ahead of|behind|lead shrinks)\b", prose)
        assert found == []

    def test_spec_sources_are_workflow_outputs(self):
        """Every file numbers.yaml reads is one of the workflow's final targets."""
        spec = yaml.safe_load(SPEC.read_text())
        sources = {i["source"] for i in [*spec["numbers"].values(), *spec["foreach"]]}
        # The default target's list (clerk.wiring.final_targets, which common.smk's get_final_output returns).
        targets = set(wiring.final_targets(["137", "991"], reader_seed="31"))
        assert sources <= targets, sorted(sources - targets)


class TestLocomoStatus:
    def test_paragraph_states_the_configuration(self, tmp_path):
        """The not-run paragraph says LoCoMo was not run and why."""
        main(["locomo-status", "--out", str(tmp_path / "l.md")])
        text = (tmp_path / "l.md").read_text()
        assert text.startswith("**LoCoMo-MC10 was not run for this build.**")
        assert "`locomo.path` is empty" in text and "`locomo.download` is false" in text


@pytest.mark.slow
class TestWorkflowDryRun:
    def test_smoke_dag_ends_at_the_manifest(self):
        """`snakemake -n` with the smoke profile schedules every report rule, the paper and the manifest."""
        # Forced: shipped default-profile results in the checkout must not hide report jobs.
        done = subprocess.run(["snakemake", "-n", "--forceall", "--quiet", "rules", "--configfile", "config/smoke.yaml"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        for rule in ("table_systems", "table_eviction", "table_read_cost", "table_setup", "table_benchmarks",
                     "learning_curve", "locomo", "table_locomo", "environment", "rulegraph", "numbers", "paper", "manifest"):
            assert re.search(rf"^{rule}\s+\d+$", done.stdout, re.M), rule
        # One rule draws every figure ({figure} wildcard): one job per figure.
        assert re.search(rf"^figure\s+{len(wiring.FIGURES)}$", done.stdout, re.M), done.stdout


def test_paired_verdict_needs_to_clear_the_machine_spread():
    """A paired difference is conclusive only when its bootstrap interval clears zero by more than
    the declared machine spread of the bounds; the margin comes from tolerances.yaml."""
    from clerk.provenance.compare import load_tolerances, rule_for
    from clerk.report.paired import machine_margin, not_conclusive_reason, paired_from_units

    units = {("test", 1, f"p{k}"): {"clerk": {q: q % 10 != 0 for q in range(40)},
                                    "full": {q: q % 5 != 0 for q in range(40)}} for k in range(12)}
    (plain,) = paired_from_units(units, n_boot=300)
    assert plain["delta"] == pytest.approx(0.1) and plain["boot_low"] > 0 and plain["conclusive"]
    (strict,) = paired_from_units(units, n_boot=300, margin=0.2)
    assert not strict["conclusive"] and strict["margin"] == 0.2
    assert not_conclusive_reason(strict) == "no (interval clears 0 by less than the machine spread)"
    tolerances = ROOT / "paper" / "tolerances.yaml"
    declared = rule_for(load_tolerances(tolerances), "table_paired.csv:boot_low").abs
    assert machine_margin(str(tolerances)) == declared > 0 and machine_margin(None) == 0.0
