# Input functions and constants of the report stage (included by report.smk). Kept apart from
# the rules because `snakemake --lint` asks for functions and rules in separate files.
import os
import shlex

import yaml

# Which evaluation split each systems table summarises.
TABLE_SPLITS = {"table1": "test", "table3": "test_ood"}
# Pipeline stages in paper order: (rule, wildcard values of its benchmark file).
STAGES = {
    "generate": {"seed": SEEDS, "split": SPLITS},
    "build_sft": {"seed": SEEDS},
    "base_model": {},
    "train": {"seed": SEEDS},
    **({"build_sft_reader": {"seed": SEEDS}, "train_reader": {"seed": SEEDS}} if SEPARATE_READER else {}),
    "evaluate": {"seed": SEEDS, "split": EVAL_SPLITS},
    "read_cost": {"seed": SEEDS},
    "streams": {"seed": SEEDS},
    "eviction_study": {"seed": SEEDS},
    "generate_forget": {"seed": SEEDS},
    "erasure": {"seed": SEEDS},
    "learning_curve": {},
}
FIGURES = ["read_cost", "accuracy_by_type", "eviction", "loss", "state_f1", "learning_curve"]
PAPER_INCLUDES = {
    "table1": "results/table1.md",
    "table1_cost": "results/table1_cost.md",
    "table3": "results/table3.md",
    "table3_cost": "results/table3_cost.md",
    "table4": "results/table4.md",
    "table5": "results/table5.md",
    "table_paired": "results/table_paired.md",
    "setup": "results/setup.md",
    "benchmarks": "results/benchmarks.md",
    "environment": "results/environment.md",
    "rulegraph": "results/rulegraph.mmd",
}
# Template sections that must not contain hand-typed numbers (clerk render-paper --no-digits-in).
NO_DIGITS_IN = ["Abstract", "Setup", "Results", "Eviction study", "Erasure"]


def get_table_metrics(wildcards):
    """metrics.json of every seed for the split the table summarises."""
    split = TABLE_SPLITS[wildcards.table]
    return expand("results/eval/{seed}/{split}/metrics.json", seed=SEEDS, split=split)


def get_benchmark_inputs(wildcards):
    """The benchmark TSV of every pipeline job (stages whose rule is not defined are skipped)."""
    files = []
    stages = {**STAGES, "locomo": {"seed": SEEDS}} if locomo_enabled() else STAGES
    for stage, values in stages.items():
        if rules.has(stage):
            files += expand(getattr(rules, stage).benchmark, **values)
    return files


def get_numbers_sources(wildcards):
    """Every file paper/numbers.yaml reads: the spec itself decides the DAG inputs."""
    spec = yaml.safe_load(Path("paper/numbers.yaml").read_text(encoding="utf-8")) or {}
    items = [*(spec.get("numbers") or {}).values(), *(spec.get("foreach") or [])]
    return sorted({item["source"] for item in items})


def get_locomo_include():
    """The LoCoMo part of the paper: table 2 (locomo.smk) when enabled, else the not-run note."""
    # HOOK(LoCoMo numbers): to cite LoCoMo numbers in the prose, add a foreach over
    # results/table2.csv to paper/numbers.yaml (only valid for builds with LoCoMo on).
    if locomo_enabled():
        return "results/table2.md"
    return "results/locomo_status.md"


def get_paper_includes(wildcards):
    return {**PAPER_INCLUDES, "locomo": get_locomo_include()}


def include_args(wildcards, input):
    """--include NAME=FILE for every include of the paper."""
    names = list(PAPER_INCLUDES) + ["locomo"]
    return " ".join(f"--include {name}={input[name]}" for name in names)


def get_manifest_inputs(wildcards):
    """Everything the default target builds, but the manifest itself."""
    targets = get_final_output() + get_locomo_output()
    return [t for t in targets if t != "results/manifest.json"]


def get_workflow_sources(wildcards):
    """Snakefile, rule files and every loaded config file (the inputs of the rule graph)."""
    rule_files = Path(workflow.basedir, "rules").glob("*.smk")
    return {
        "snakefile": os.path.relpath(workflow.main_snakefile),
        "rules": sorted(os.path.relpath(p) for p in rule_files),
        "configs": [os.path.relpath(f) for f in workflow.configfiles],
    }


def config_args(wildcards):
    """This run's --configfile list and --config values, for a nested Snakemake that must see
    the same config (Snakemake passes --config on to its own job processes the same way).
    """
    args = []
    files = [os.path.relpath(f) for f in workflow.overwrite_configfiles]
    if files:
        args += ["--configfile", *files]
    values = workflow.config_settings.config_args or []
    if values:
        args += ["--config", *values]
    return " ".join(shlex.quote(a) for a in args)
