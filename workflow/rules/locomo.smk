# LoCoMo-MC10 zero-shot transfer (SPEC §7): every memory system over every conversation, then
# table 2 aggregated over seeds. LoCoMo is CC BY-NC 4.0 and never committed, so these jobs join the
# DAG only when locomo_enabled() (common.smk): `locomo.path` is set or `locomo.download` is true.
# The smoke profile points `locomo.path` at the project's mini fixture (tests/fixtures/locomo).
#
# Setting the path on the command line (Snakemake 9): `--config locomo.path=FILE` is rejected
# ("Config entry must start with a valid identifier"); pass the nested block instead, which
# Snakemake merges key by key into config.yaml's `locomo` block (the other keys stay, the block
# stays schema-valid):
#   snakemake -n --config 'locomo={path: tests/fixtures/locomo/locomo10_mini.json}'
# (values given this way are strings: use it for `path`; set `download: true` in a config file.)
# The ledger systems' form, budget and write cap on LoCoMo are its own (`locomo.ledger`,
# `locomo.budget`, `locomo.max_new_tokens`), not the synthetic data's.
# Every system is read by the synthetic evaluation's instrument (`evaluate.reader_model`: with
# `reader`, the separate reader adapter; `evaluate.reader_pmi`).
# Jobs: `locomo` runs the systems the seed's policy writes (clerk) once per seed; `locomo_shared`
# runs the others (the base model writes, the one reader reads) once per run
# (clerk.wiring.locomo_systems). Every job answers the same questions (`locomo.subset_seed`).
# programs.jsonl.gz (the model writers' text, ops, verdicts and ledgers) holds conversation text:
# like predictions.jsonl it stays out of git; only metrics.json (counts) is committed.


rule locomo:
    input:
        unpack(get_locomo_inputs),
    output:
        metrics="results/locomo/{seed}/metrics.json",
        predictions="results/locomo/{seed}/predictions.jsonl",
        programs="results/locomo/{seed}/programs.jsonl.gz",
        selection="results/locomo/{seed}/selection.json",
    log:
        log_path("locomo", "{seed}"),
    benchmark:
        benchmark_path("locomo", "{seed}")
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("locomo"),
    params:
        cfg=get_locomo_config,
        outdir=lambda wc, output: Path(output.metrics).parent,
    shell:
        "clerk locomo --config {params.cfg:q} --model {input.model:q} --seed {wildcards.seed:q}"
        " --threads 1 --quiet --out {params.outdir:q} > {log:q} 2>&1"


rule locomo_shared:
    input:
        unpack(get_locomo_inputs),
    output:
        metrics="results/locomo/shared/metrics.json",
        predictions="results/locomo/shared/predictions.jsonl",
        programs="results/locomo/shared/programs.jsonl.gz",
        selection="results/locomo/shared/selection.json",
    log:
        log_path("locomo_shared", "shared"),
    benchmark:
        benchmark_path("locomo_shared", "shared")
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("locomo_shared"),
    params:
        cfg=get_locomo_shared_config,
        seed=config["locomo"]["subset_seed"],
        outdir=lambda wc, output: Path(output.metrics).parent,
    shell:
        "clerk locomo --config {params.cfg:q} --model {input.model:q} --seed {params.seed:q}"
        " --threads 1 --quiet --out {params.outdir:q} > {log:q} 2>&1"


rule table_locomo:
    input:
        metrics=get_locomo_metrics,
        predictions=get_locomo_predictions,
        tolerances="paper/tolerances.yaml",
        code=code("table-locomo"),
    output:
        csv="results/table2.csv",
        md="results/table2.md",
        paired="results/table2_paired.csv",
    log:
        log_path("table_locomo", "table2"),
    benchmark:
        benchmark_path("table_locomo", "table2")
    conda:
        ENV
    resources:
        **rule_resources("table_locomo"),
    shell:
        "clerk table-locomo --metrics {input.metrics:q} --out {output.csv:q}"
        " --markdown {output.md:q} --predictions {input.predictions:q}"
        " --paired-out {output.paired:q} --tolerances {input.tolerances:q} > {log:q} 2>&1"
