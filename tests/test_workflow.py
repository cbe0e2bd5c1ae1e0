"""The real workflow: dry runs of every profile and one full smoke run through the paper.

The smoke run (the ``smoke_run`` fixture of conftest.py, shared with test_slurm.py and the resume
test) happens once per test session in a copy of the repository (the working tree's own
``results/`` is never touched) and the tests below inspect it: a second invocation has nothing to
do, forced re-rendering (in a copy of the run, beside the other tests) is byte-identical, every
number in the paper verifies and traces back to the ``generate`` rule, and one flipped byte is
caught by ``clerk verify``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from workflow_kit import ROOT, SMOKE, run_snakemake, shell_commands

from clerk import wiring

# Rules whose outputs must be byte-identical when re-run on the same inputs.
REPORT_RULES = [
    "table_systems", "table_eviction", "table_erasure", "table_read_cost", "table_setup", "figure", "table_locomo",
    "numbers", "paper",
]
_snakemake = run_snakemake


def _dry_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """Job counts per rule from a dry run's job-stats table."""
    proc = _snakemake(workdir, "-n", "--cores", "1", *args, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def AFTER_SMOKE_RUN(repo: Path) -> tuple[int, str, list[str]]:  # noqa: N802 (the name conftest.py looks for)
    """The report rules forced to rerun in a copy of the finished smoke run (conftest.py runs
    this in the background beside the other readers of the run): exit status, log tail, and the
    watched files whose bytes changed."""
    watched = sorted(
        p for p in (repo / "results").rglob("*")
        if p.is_file() and (p.parent.name == "figures" or p.name.startswith("table") or p.name == "numbers.json")
    ) + [repo / "paper/paper.md"]
    before = {p: _sha(p) for p in watched}
    proc = _snakemake(repo, "--cores", "2", *SMOKE, "--forcerun", *REPORT_RULES)
    changed = [str(p.relative_to(repo)) for p in watched if _sha(p) != before[p]]
    return proc.returncode, (proc.stdout + proc.stderr)[-3000:], changed


class TestDryRuns:
    def test_default_profile_lists_every_stage(self):
        """`snakemake -n` on the default profile schedules generation through the manifest."""
        jobs = _dry_jobs(ROOT, "--forceall")
        for rule in ("generate", "build_sft", "base_model", "train", "evaluate", "read_cost",
                     "streams", "eviction_study", "learning_curve", "figure", "numbers", "paper",
                     "manifest"):
            assert jobs.get(rule), rule
        assert jobs["generate"] == 12 + 1 and jobs["evaluate"] == 6  # 3 seeds x 4 splits, the reader seed's train split
        assert jobs["learning_curve"] == 1  # snapshots of one seed's run
        assert jobs["figure"] == len(wiring.FIGURES)

    def test_snapshots_only_for_the_curve_seed(self):
        """Only the first seed's training takes adapter snapshots (the learning curve reads them)."""
        import yaml

        proc = _snakemake(ROOT, "-n", "--cores", "1", "--forceall", "-p", timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        seeds = [str(s) for s in config["seeds"]]
        trains = shell_commands(out, "train")
        snaps = {a["seed"]: a["snapshot_steps"] for a in trains if a["sft"].startswith("results/sft/")}
        assert snaps == {int(seed): config["train"]["snapshot_steps"] if seed == seeds[0] else 0 for seed in seeds}
        # The separate reader: trained once, on its own seed's personas (none of an experiment seed),
        # the reader block's steps, no snapshots ...
        reader_seed = config["reader"]["seed"]
        assert str(reader_seed) not in seeds
        readers = [(a["seed"], a["max_steps"], a["snapshot_steps"], a["sft"]) for a in trains
                   if a["sft"].startswith("results/sft_reader/")]
        assert readers == [(reader_seed, config["reader"]["max_steps"], 0, f"results/sft_reader/{reader_seed}")]
        (reader_sft,) = [a for a in shell_commands(out, "build-sft") if a["out"].startswith("results/sft_reader/")]
        assert reader_sft["timelines"] == [f"results/data/{reader_seed}/train.jsonl"]  # one file (nargs="+")
        # ... and it reads every evaluation and erasure job of every seed, with the configured calibration.
        reads = shell_commands(out, "evaluate") + shell_commands(out, "erasure")
        assert len(reads) == 3 * len(seeds)
        assert {(a["reader_adapter"], a["reader_model"], a["reader_pmi"]) for a in reads} == {
            (f"results/train_reader/{reader_seed}", "reader", config["evaluate"]["reader_pmi"])}
        (curve,) = shell_commands(out, "learning-curve")
        assert curve["adapter"] == f"results/train/{seeds[0]}" and curve["curve_sessions"] == config["train"]["curve_sessions"]

    def test_training_jobs_start_first(self):
        """The reader, then the curve seed's policy, then the other policies outrank every other job
        (Snakemake starts the highest priority among the jobs ready; docs/DECISIONS.md, "Scheduling")."""
        import yaml

        proc = _snakemake(ROOT, "-n", "--cores", "4", "--forceall", timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        prio = {}
        for block in re.split(r"^(?:local)?rule ", out, flags=re.M)[1:]:
            rule = block.split(":", 1)[0]
            seed = re.search(r"^    wildcards: .*?seed=(\d+)", block, re.M)
            level = re.search(r"^    priority: (\d+)$", block, re.M)
            prio[(rule, seed.group(1) if seed else "")] = int(level.group(1)) if level else 0
        config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        seeds = [str(s) for s in config["seeds"]]
        reader, curve, others = ("train_reader", str(config["reader"]["seed"])), ("train", seeds[0]), seeds[1:]
        assert prio[reader] > prio[curve] > max(prio[("train", s)] for s in others)
        assert min(prio[("train", s)] for s in others) > max(p for job, p in prio.items()
                                                               if job[0] not in ("train", "train_reader"))

    def test_learning_curve_target_lists_only_its_ancestors(self):
        """The learning-curve figure needs one seed's data, SFT set, training run and curve, nothing else."""
        jobs = _dry_jobs(ROOT, "results/figures/learning_curve.png", "--forceall", *SMOKE)
        assert jobs == {"generate": 1, "generate_open": 1, "base_model": 1, "build_sft": 1, "train": 1,
                        "learning_curve": 1, "figure": 1}

    def test_paper_profile_dag_is_valid_with_gpu_on_train(self, tmp_path):
        """The paper profile builds a DAG; train and evaluate claim the GPU exactly when one is
        visible, and reserve one core each when the cores allow no more."""
        from clerk.models.device import nvidia_gpu_visible

        proc = _snakemake(ROOT, "-n", "--cores", "1", "--configfile", "config/paper.yaml", "--forceall")
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        for rule in ("train", "evaluate"):
            block = out.split(f"rule {rule}:")[1].split("\n\n")[0]
            assert f"gpu={int(nvidia_gpu_visible())}" in block, block
            assert "--threads 1" in block, block  # torch runs one thread per model job
        assert "Qwen/Qwen2.5-0.5B-Instruct" in out

    def test_table1_target_lists_only_its_ancestors(self):
        """`snakemake -n results/table1.csv` schedules table 1's ancestors and nothing else."""
        jobs = _dry_jobs(ROOT, "results/table1.csv", "--forceall", *SMOKE)
        assert jobs["table_systems"] == 1
        assert set(jobs) == {"generate", "generate_open", "build_sft", "base_model", "train", "build_sft_reader",
                             "train_reader", "evaluate", "table_systems"}
        assert jobs["evaluate"] == 2  # one test split per smoke seed, no test_ood


class TestShellQuoting:
    """Config values reach the shell only quoted: a rule hands its verb the config section as one
    JSON object (``--config {params.cfg:q}``) and quotes every path (``:q``)."""

    PAYLOAD = "x$(touch PWNED)"

    def test_config_values_never_run_as_shell(self, tmp_path):
        """With model.repo_id, data.phrasings and locomo.path holding ``$(touch PWNED)``, every
        shell command of the dry run, executed by bash with the programs replaced by ``true``,
        creates no file PWNED: the payload reaches each program as the text it is.

        The schema's patterns refuse such values first (tests/test_config_hostile.py); quoting is
        the second line of defence, so this test removes the patterns from a scratch copy's schema
        to reach it."""
        import shlex

        import yaml
        from workflow_kit import copy_sources

        repo = copy_sources(tmp_path / "repo")
        schema_file = repo / "workflow" / "schemas" / "config.schema.yaml"
        schema = yaml.safe_load(schema_file.read_text())

        def drop_patterns(node):
            if isinstance(node, dict):
                return {k: drop_patterns(v) for k, v in node.items() if k != "pattern"}
            return [drop_patterns(v) for v in node] if isinstance(node, list) else node

        schema_file.write_text(yaml.safe_dump(drop_patterns(schema), sort_keys=False))
        phrasings, locomo = f"{self.PAYLOAD}.yaml", f"{self.PAYLOAD}.json"
        for name in (phrasings, locomo):  # inputs must exist for the DAG to build
            (repo / name).write_text("{}\n")
        (repo / "config" / "evil.yaml").write_text(yaml.safe_dump({
            "model": {"name": "evil", "kind": "hf", "repo_id": f"org/{self.PAYLOAD}", "revision": "main"},
            "data": {"phrasings": phrasings, "train": {"rewrites": []}},  # own phrasings: no built-in rewrites
            "locomo": {"path": locomo},
        }))
        proc = _snakemake(repo, "-n", "-p", "--forceall", "--cores", "1", *SMOKE, "config/evil.yaml", timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        commands = [line.removeprefix("Shell command: ") for line in out.splitlines()
                    if line.startswith("Shell command: ") and line != "Shell command: None"]  # `all`
        hit = [c for c in commands if "PWNED" in c]
        verbs = {shlex.split(c)[1] for c in hit if c.startswith("clerk ")}
        # Every verb that takes the phrasings, the model spec or the LoCoMo file.
        assert {"generate", "materialize-model", "evaluate", "erasure", "learning-curve", "locomo"} <= verbs, verbs
        for command in hit:
            assert "$(touch PWNED)" not in re.sub(r"'[^']*'", "", command), command  # never outside quotes
        work = tmp_path / "sh"
        work.mkdir()
        for command in commands:
            line = command.split(" > ")[0]  # the job's log redirection: not here
            line = re.sub(r"^(PYTHONHASHSEED=0 )?(clerk|snakemake)\b", "true", line)
            subprocess.run(["bash", "-c", line], cwd=work, check=True)
        assert not (work / "PWNED").exists()
        # The check above would see an unquoted value: this one runs.
        subprocess.run(["bash", "-c", f"true --phrasings {phrasings}"], cwd=work, check=True)
        assert (work / "PWNED").exists()
        # ... and the verb sees the payload as the value itself.
        (generate, *_) = [g for g in shell_commands(out, "generate") if g["world"] == "closed"]
        assert generate["phrasings"] == phrasings
        (model,) = shell_commands(out, "materialize-model")
        assert model["repo_id"] == f"org/{self.PAYLOAD}"


class TestSmokeRun:
    def test_second_invocation_has_nothing_to_do(self, smoke_run):
        """Right after a complete run, Snakemake reports nothing to be done."""
        proc = _snakemake(smoke_run, "-n", "--cores", "1", *SMOKE, timeout=120)
        assert "Nothing to be done" in proc.stdout + proc.stderr

    def test_a_config_change_reruns_the_jobs_it_reaches(self, smoke_run, tmp_path):
        """A changed value of the evaluate or locomo block reruns exactly the jobs whose --config
        object holds it (Snakemake's params trigger): each such params function takes the
        wildcards only, since Snakemake neither records nor compares one that takes ``input``
        (snakemake/snakemake#3895)."""
        for block, value, rules in (("evaluate", {"teacher_forced": []}, {"evaluate": 4}),
                                    ("locomo", {"budget": 5}, {"locomo": 2, "locomo_shared": 1})):
            extra = tmp_path / f"{block}.yaml"
            extra.write_text(json.dumps({block: value}))
            proc = _snakemake(smoke_run, "-n", "--cores", "1", *SMOKE, str(extra), timeout=120)
            assert proc.returncode == 0, proc.stderr
            counts = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout, re.M))
            assert {rule: int(counts.get(rule, 0)) for rule in rules} == rules, proc.stdout[-3000:]
            assert "train" not in counts and "generate" not in counts

    def test_paper_numbers_verify(self, smoke_run):
        """`clerk verify` passes: every file hashes to the manifest, every paper number to its source."""
        proc = subprocess.run(["clerk", "verify"], cwd=smoke_run, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def test_every_paper_number_resolves(self, smoke_run):
        """Each footnoted number in paper.md is in numbers.json with an existing source of that sha256."""
        numbers = json.loads((smoke_run / "results/numbers.json").read_text())
        entries = numbers.get("numbers", numbers)
        paper = (smoke_run / "paper/paper.md").read_text()
        used = set(re.findall(r"\[\^num-([^\]]+)\]", paper))
        assert used, "the paper cites no numbers"
        for number_id in used:
            entry = entries[number_id]
            source = smoke_run / entry["source"]
            assert source.is_file(), number_id
            assert _sha(source) == entry["sha256"], number_id

    def test_trace_reaches_generate_for_each_seed(self, smoke_run):
        """Tracing a table-1 number walks back to the generate rule of every smoke seed, with hashes."""
        numbers = json.loads((smoke_run / "results/numbers.json").read_text())
        entries = numbers.get("numbers", numbers)
        number_id = next(k for k, v in entries.items() if v["source"] == "results/table1.csv")
        proc = subprocess.run(["clerk", "trace", number_id], cwd=smoke_run, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        for seed in ("137", "991"):
            assert f"results/data/{seed}/test.jsonl" in proc.stdout
        assert "generate" in proc.stdout
        assert re.search(r"[0-9a-f]{64}", proc.stdout)

    def test_stage_table_counts_every_pipeline_job(self, smoke_run):
        """results/benchmarks.csv has a row for every pipeline stage's folder of logs/benchmarks/
        (the learning curve and LoCoMo included; the report rules' folders are not stages) with that
        folder's job count."""
        import pandas as pd

        table = pd.read_csv(smoke_run / "results/benchmarks.csv").set_index("stage")
        runs = smoke_run / wiring.BENCHMARK_ROOT
        assert not (smoke_run / "benchmarks/runs").exists() and not (smoke_run / "benchmarks/report").exists()
        stages = wiring.stages(["137", "991"], reader_seed="31", locomo_seeded=True, locomo_shared=True,
                               open_world=True)
        on_disk = {d.name: len(list(d.rglob("*.tsv"))) for d in runs.iterdir() if d.is_dir() and d.name in stages}
        assert {"learning_curve", "locomo", "locomo_shared", "generate_open"} <= set(on_disk) == set(stages)
        assert {stage: int(table.loc[stage, "jobs"]) for stage in on_disk if stage in table.index} == on_disk
        assert int(table.loc["total", "jobs"]) == sum(on_disk.values())

    def test_open_world_joins_both_sft_sets(self, smoke_run):
        """With data.open (the smoke profile) each SFT set is one mixture of the closed benchmark's
        and the open world's training timelines, in that order, and both kinds of persona are in it."""
        for sft, seed in (("sft", "137"), ("sft_reader", "31")):
            stats = json.loads((smoke_run / f"results/{sft}/{seed}/sft_stats.json").read_text())
            files = [smoke_run / path for path in wiring.sft_timelines({"data": {"open": {"personas": 1}}}, seed)]
            assert stats["timelines_sha256"] == [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
            names = [n for split in stats["splits"].values() for n in split["personas"]]
            assert any("+" in n for n in names) and any("+" not in n for n in names)

    def test_forced_report_rerun_is_byte_identical(self, after_smoke_run):
        """Re-running the table, figure, numbers and paper rules reproduces identical bytes."""
        returncode, log, changed = after_smoke_run(__name__)
        assert returncode == 0, log
        assert changed == []

    def test_verify_names_a_changed_file(self, smoke_run, tmp_path):
        """Flipping one byte of a results file makes `clerk verify` fail and name that file."""
        target = smoke_run / "results/table4.csv"
        original = target.read_bytes()
        try:
            target.write_bytes(original[:-2] + bytes([original[-2] ^ 1]) + original[-1:])
            proc = subprocess.run(["clerk", "verify"], cwd=smoke_run, capture_output=True, text=True)
            assert proc.returncode != 0
            assert "results/table4.csv" in proc.stdout + proc.stderr
        finally:
            target.write_bytes(original)
