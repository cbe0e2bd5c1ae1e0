# Shared wiring: config validation, input functions, the verbs' --config objects and the final
# targets. Constants the tests need too (splits, figures, paper includes, stages, paths of logs and
# benchmarks) and the --config objects live in clerk/wiring.py, which the tests import.
#
# One way to pass config: a rule hands its verb the config section as one JSON object,
#   params: cfg=get_<stage>_config   ...   shell: "clerk VERB --config {params.cfg:q} ..."
# and every value that reaches a shell is quoted with :q.
import json
import math
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError

from clerk.config import validate_config
from clerk.models.device import nvidia_gpu_visible
from clerk.cli import VERBS
from clerk.provenance.code_inputs import module_code
from clerk.wiring import (
    EVAL_SPLITS,
    FIGURES,
    MODEL_RULES,
    PAPER_INCLUDES,
    SPLITS,
    TABLE_SPLITS,
    TABLES,
    benchmark_path,
    final_targets,
    locomo_systems,
    log_path,
    open_world,
    reader_seed,
    sft_timelines,
    stage_config,
    stage_json,
    stages,
)

validate_config(config, workflow.source_path("../schemas/config.schema.yaml"))

SEEDS = [str(seed) for seed in config["seeds"]]
# The conda environment of every rule.
ENV = "../../environment.yml"
MODEL_DIR = f"resources/models/{config['model']['name']}"
# The learning curve (validation op-F1 against examples seen) comes from snapshots of one run.
CURVE_SEED = SEEDS[0]
# Who reads every system (SPEC §6: one instrument): with `evaluate.reader_model: reader` one reader
# adapter of its own, trained once on the training personas of its own seed `reader.seed` (none of
# them in any experiment seed's data) and shared by every seed (rules build_sft_reader,
# train_reader: ANSWER examples only, the `reader` block's ratio and steps); the policy's adapter
# trains on CONSOLIDATE examples only. With `adapter` the two share one adapter per seed.
READER_SEED = reader_seed(config)
# Open-world training conversations (data.open; SPEC §2.9) join the policy's and the reader's SFT
# sets, one file per seed (rule generate_open).
OPEN_WORLD = open_world(config)
SEPARATE_READER = READER_SEED is not None
# Model jobs (train, evaluate, locomo) run torch with one thread, on a GPU when one is visible.
# On a GPU they claim `gpu=1`, so `--resources gpu=1` serialises them. On a CPU-only machine they
# claim no GPU and instead reserve `--cores` / CPUs cores each, so that at most one runs per CPU
# (on this 2-core box two 1-thread jobs side by side do ~1.25x the work of one 2-thread job, and
# a third would only add memory). Lightweight rules fill the gaps.
GPU_CLAIM = 1 if nvidia_gpu_visible() else 0


# The `gpu` cap (`--resources gpu=1`, the default profile) applies to local execution, where all
# jobs share this machine's GPU. On a cluster (workflow/profiles/slurm; Snakemake still loads the
# default profile) each job is allocated its own, so the cap must not count across jobs.
resource_scopes:
    gpu="local",


CPUS = len(os.sched_getaffinity(0))


def model_job_threads():
    """Cores a model job reserves (see above); 1 when Snakemake runs without --cores (a
    summary or listing call, which runs no job)."""
    if GPU_CLAIM:
        return 1
    try:
        cores = workflow.cores
    except WorkflowError:
        return 1
    return max(1, cores // CPUS)


MODEL_JOB_THREADS = model_job_threads()

# What the rules ask a scheduler for. Each declares `resources: **rule_resources("<name>")`, so
# the sizing lives here only. Locally only `gpu` counts (`--resources gpu=1`); on a cluster
# (workflow/profiles/slurm) `mem_mb` becomes --mem and `runtime` -t (minutes), limits a job is
# killed for outgrowing. CPUs are the rule's `threads` (--cpus-per-task): 1, Snakemake's default,
# for every rule but the model jobs, which declare MODEL_JOB_THREADS (the Slurm profile sets 1).
# MEASURED: (longest job's wall s, peak RSS MB over the rule's jobs) of the shipped default run
# (config/config.yaml, 3 seeds, 2 CPU cores; results/benchmarks.csv, benchmarks/default-run.md).
# Headroom, the same for all: 1.5 x peak RSS + 512 MB for the Snakemake process that wraps each
# cluster job, rounded up to 256 MB (benchmark RSS is sampled while the job runs and can miss a
# spike); 2 x wall + 5 min of start-up, rounded up to 5 min, at least 10 min.
# Missing from MEASURED, hence UNMEASURED (2048 MB, 15 min), are today the report rules (tables,
# figures, paper, manifest; at most 236 MB and 9 s each in a smoke run; they read small files).
# At paper scale (config/paper.yaml) the model jobs need other numbers: --set-resources.
MEASURED = {
    "generate": (3.18, 40.49),
    "build_sft": (29.25, 387.31),
    # RSS: 1.6 GB when dequantising SmolLM2 under /usr/bin/time (benchmarks/bench_train.md);
    # the benchmark's samples saw 465 MB.
    "base_model": (43.63, 1600.0),
    # Measured at 600 steps (1109.6 s, 1878.5 MB; the run of 2026-12-02); 1200 steps take twice that.
    "train": (2219.2, 1878.5),
    "evaluate": (1364.87, 5710.12),
    "read_cost": (62.64, 376.14),
    "streams": (0.88, 24.82),
    "eviction_study": (1.6, 30.56),
    # Not measured at the default scale (no LoCoMo data in the shipped run): estimated from
    # benchmarks/bench_locomo_prefix.md (2.6 GB peak, ~16 s per question on a real-length
    # conversation, 200 questions, plus the model writers' consolidation as in evaluate).
    "locomo": (9000.0, 2628.0),
    "locomo_shared": (9000.0, 2628.0),
    # Estimate kept as the allocation: the 600-step run measured 183.9 s and 2394 MB (three
    # snapshots, 40 validation sessions each; results/benchmarks.csv).
    "learning_curve": (600.0, 1800.0),
    "erasure": (219.09, 2498.74),
    "generate_forget": (1.22, 31.0),
    "build_sft_reader": (31.96, 386.58),
    # Measured at 1200 steps in the run of 2026-12-04 (a slower VM than 2026-12-03's).
    "train_reader": (1961.2, 3418.9),
}
UNMEASURED = (300.0, 1024.0)
# Model jobs (clerk.wiring.MODEL_RULES) claim the GPU (see GPU_CLAIM above); others never do.


def rule_resources(name):
    """Scheduler resources of one rule: mem_mb and runtime from MEASURED (UNMEASURED for a rule
    not in it) with the headroom above, plus `gpu` for the model rules.

    E.g. train: 3584 MB, 80 min (tests/test_slurm.py checks them in a dry run).
    """
    wall_s, rss_mb = MEASURED.get(name, UNMEASURED)
    resources = {
        "mem_mb": 256 * math.ceil((1.5 * rss_mb + 512) / 256),
        "runtime": max(10, 5 * math.ceil((2 * wall_s / 60 + 5) / 5)),
    }
    if name in MODEL_RULES:
        resources["gpu"] = GPU_CLAIM
    return resources


def code(verb):
    """The library files a job of `clerk VERB` runs, declared as its inputs so that a change to
    one of them, and only to one of them, reruns the job: the clerk modules the verb's command
    imports (clerk.cli.VERBS names its module), read from the source once per workflow load
    (clerk.provenance.code_inputs).
    """
    if verb not in VERBS:
        raise WorkflowError(
            f"code({verb!r}): not a clerk verb; known: {', '.join(VERBS)}"
        )
    return module_code(VERBS[verb][0])


# The policy's training-only wording: an input of a split whose `rewrites` names a kind.
TRAIN_REWRITES = "clerk/phrasing/train_rewrites.yaml"
# The reader's training-only question set: read by build-sft, not by generate.
READER_QUESTIONS = "clerk/phrasing/reader_questions.yaml"
# The acceptance wording: read by no rule (a held-out split worded by hand, once, at acceptance).
ACCEPTANCE_PHRASINGS = "clerk/phrasing/acceptance.yaml"
# The built-in phrasing data generate reads (the catalogue, its held-out wordings and the open
# world's key space).
BUILTIN_PHRASINGS = sorted(
    str(p)
    for p in Path("clerk/phrasing").glob("*.yaml")
    if str(p) not in (TRAIN_REWRITES, READER_QUESTIONS, ACCEPTANCE_PHRASINGS)
)


def get_phrasings(wildcards):
    """A user phrasing catalogue if configured, else the built-in data files."""
    if config["data"].get("phrasings"):
        return [config["data"]["phrasings"]]
    return BUILTIN_PHRASINGS


def get_rewrites(wildcards):
    """The rewrites file where the split's `rewrites` names a kind, else nothing."""
    return [TRAIN_REWRITES] if config["data"][wildcards.split].get("rewrites") else []


def _config_with_inputs(stage, inputs, **paths):
    """The stage's --config JSON plus input paths (key -> input name) where the job has them.

    ``inputs`` is the job's input dict from the rule's own input function, called with the
    wildcards: a params function that takes ``input`` is "derived" to Snakemake, which then
    neither records it nor reruns the job when it changes (snakemake/snakemake#3895), so every
    --config function here takes the wildcards only."""
    cfg = stage_config(config, stage)
    cfg.update({key: inputs[name] for key, name in paths.items() if name in inputs})
    return json.dumps(cfg, ensure_ascii=False)


def get_generate_config(wildcards):
    """`clerk generate` of one split: sizes, budget, initial facts, phrasings if configured."""
    return stage_json(config, "generate", split=wildcards.split, seed=wildcards.seed)


def get_forget_config(wildcards):
    """`clerk generate` of the erasure study's forget timelines (the `erasure` block's sizes)."""
    return stage_json(config, "generate_forget")


def get_generate_open_config(wildcards):
    """`clerk generate --world open` of one seed's training conversations (the `data.open` block)."""
    return stage_json(config, "generate_open")


def get_sft_timelines(wildcards):
    """The training timelines of one seed's SFT set: the closed benchmark's, then the open
    world's with data.open (clerk.wiring.sft_timelines)."""
    return sft_timelines(config, wildcards.seed)


def get_sft_config(wildcards):
    """`clerk build-sft` of the policy: the `sft` block (CONSOLIDATE only beside a separate reader)."""
    return stage_json(config, "build_sft")


def get_sft_reader_config(wildcards):
    """`clerk build-sft` of the separate reader: ANSWER examples, the `reader` block's ratio."""
    return stage_json(config, "build_sft_reader")


def get_model_config(wildcards):
    """`clerk materialize-model`: the chosen kind's keys of the `model` block (and the scratch
    model's tokenizer timelines)."""
    return _config_with_inputs(
        "base_model", get_model_inputs(wildcards), timelines="timelines"
    )


def get_train_config(wildcards):
    """`clerk train` of the policy: the `train` block (snapshots on CURVE_SEED only)."""
    return stage_json(config, "train", seed=wildcards.seed)


def get_train_reader_config(wildcards):
    """`clerk train` of the separate reader: the `reader` block's steps, no snapshots."""
    return stage_json(config, "train_reader")


def get_curve_config(wildcards):
    return stage_json(config, "learning_curve")


def get_evaluate_config(wildcards):
    """`clerk evaluate`: the `evaluate` block, and the reader adapter when one reads."""
    return _config_with_inputs(
        "evaluate", reader_inputs(wildcards), reader_adapter="reader_adapter"
    )


def get_erasure_config(wildcards):
    """`clerk erasure`: the `erasure` block's systems, the `evaluate` block's knobs."""
    return _config_with_inputs(
        "erasure", reader_inputs(wildcards), reader_adapter="reader_adapter"
    )


def get_read_cost_config(wildcards):
    return stage_json(config, "read_cost")


def get_streams_config(wildcards):
    return stage_json(config, "streams")


def get_eviction_config(wildcards):
    return stage_json(config, "eviction_study")


def get_locomo_config(wildcards):
    """`clerk locomo` of one seed: the `locomo` block with the seed's systems
    (clerk.wiring.locomo_systems), the evaluation's reader and writers, and the data file and
    adapters the job has as inputs (a path wins over a download)."""
    return _config_with_inputs(
        "locomo",
        get_locomo_inputs(wildcards),
        data="data",
        adapter="adapter",
        reader_adapter="reader_adapter",
    )


def get_locomo_shared_config(wildcards):
    """`clerk locomo` of the systems that do not depend on the seed, once per run."""
    return _config_with_inputs(
        "locomo_shared",
        get_locomo_inputs(wildcards),
        data="data",
        reader_adapter="reader_adapter",
    )


def reader_inputs(wildcards):
    """The separate reader's adapter for the jobs that read (evaluate, erasure), when configured."""
    return (
        {"reader_adapter": f"results/train_reader/{READER_SEED}"}
        if SEPARATE_READER
        else {}
    )


def get_model_inputs(wildcards):
    """The scratch model trains its tokenizer on the first seed's training split."""
    inputs = {"code": code("materialize-model")}
    if config["model"]["kind"] == "scratch":
        inputs["timelines"] = f"results/data/{SEEDS[0]}/train.jsonl"
    return inputs


def locomo_enabled():
    """LoCoMo runs only when data is configured (a path or an allowed download)."""
    return bool(config["locomo"]["path"]) or config["locomo"]["download"]


def locomo_parts():
    """(LoCoMo has per-seed jobs, LoCoMo has a once-per-run job) in this run."""
    if not locomo_enabled():
        return False, False
    seeded, shared = locomo_systems(config)
    return bool(seeded), bool(shared)


def get_locomo_metrics(wildcards):
    """The metrics files table 2 aggregates: one per seed, plus the once-per-run job's."""
    seeded, shared = locomo_parts()
    files = expand("results/locomo/{seed}/metrics.json", seed=SEEDS) if seeded else []
    return files + (["results/locomo/shared/metrics.json"] if shared else [])


def get_locomo_predictions(wildcards):
    """The predictions beside each metrics file of table 2 (the paired comparisons)."""
    return [
        f.replace("metrics.json", "predictions.jsonl")
        for f in get_locomo_metrics(wildcards)
    ]


def get_final_output():
    """Every artifact of the paper: the targets of the default target (clerk.wiring.final_targets;
    LoCoMo's come from get_locomo_output() when enabled)."""
    return final_targets(SEEDS, READER_SEED, OPEN_WORLD)


def get_locomo_inputs(wildcards):
    """Model and code; the data file when configured; the seed's policy adapter
    for the per-seed job (none for the once-per-run job: its systems never read it)."""
    inputs = {
        "model": MODEL_DIR,
        "code": code("locomo"),
    }
    if config["locomo"]["path"]:
        inputs["data"] = config["locomo"]["path"]
    if "seed" in wildcards.keys():
        inputs["adapter"] = f"results/train/{wildcards.seed}"
    # The one instrument of every system (SPEC §6), as in evaluate: the separate reader adapter.
    inputs.update(reader_inputs(wildcards))
    return inputs


def get_locomo_output():
    """Table 2 (CSV + Markdown) when LoCoMo is enabled, else nothing."""
    if not locomo_enabled():
        return []
    return ["results/table2.csv", "results/table2.md"]
