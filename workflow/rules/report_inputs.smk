# Input functions of the report stage (included by report.smk). Kept apart from the rules because
# `snakemake --lint` asks for functions and rules in separate files. The constants (figures, paper
# includes, stages) live in clerk/wiring.py, which the tests import too.
import os
import shlex

import yaml

from clerk.wiring import BENCHMARK_ROOT


def pipeline_stages():
    """Pipeline stages in paper order: rule -> wildcard values of its jobs (clerk.wiring.stages)."""
    return stages(SEEDS, READER_SEED, *locomo_parts(), open_world=OPEN_WORLD)


def get_table_metrics(wildcards):
    """metrics.json of every seed for the split the table summarises."""
    split = TABLE_SPLITS[wildcards.table]
    return expand("results/eval/{seed}/{split}/metrics.json", seed=SEEDS, split=split)


def get_benchmark_inputs(wildcards):
    """The benchmark TSV of every pipeline job (stages whose rule is not defined are skipped)."""
    files = []
    for stage, products in pipeline_stages().items():
        if rules.has(stage):
            for values in products:
                files += expand(getattr(rules, stage).benchmark, **values)
    return files


def get_benchmarks_config(wildcards):
    """`clerk table-benchmarks`: the benchmark root (the stage is a file's folder) and the order."""
    return json.dumps({"root": BENCHMARK_ROOT, "order": list(pipeline_stages())})


def get_figure_inputs(wildcards):
    """The files one figure draws (clerk.wiring.FIGURES), over every seed where it takes them."""
    files = []
    for pattern in FIGURES[wildcards.figure]["inputs"]:
        files += expand(pattern, seed=SEEDS) if "{seed}" in pattern else [pattern]
    return files


def get_figure_config(wildcards):
    return stage_json(config, "figure", figure=wildcards.figure)


def get_locomo_status_config(wildcards):
    return stage_json(config, "locomo_status")


def get_eviction_table_config(wildcards):
    return stage_json(config, "table_eviction")


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


def get_paper_config(wildcards):
    """`clerk render-paper`: --include NAME=FILE for every include, the no-digit sections (from
    the wildcards only, so that Snakemake records it: see _config_with_inputs)."""
    includes = get_paper_includes(wildcards)
    cfg = stage_config(config, "paper")
    cfg["include"] = [f"{name}={path}" for name, path in includes.items()]
    return json.dumps(cfg, ensure_ascii=False)


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
    the same config (Snakemake passes --config on to its own job processes the same way); each
    argument shell-quoted.
    """
    args = []
    files = [os.path.relpath(f) for f in workflow.overwrite_configfiles]
    if files:
        args += ["--configfile", *files]
    values = workflow.config_settings.config_args or []
    if values:
        args += ["--config", *values]
    return " ".join(shlex.quote(a) for a in args)
