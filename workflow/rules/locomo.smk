# LoCoMo-MC10 zero-shot transfer (SPEC §7): every memory system over every conversation, then
# table 2 aggregated over seeds. LoCoMo is CC BY-NC 4.0 and never committed, so these jobs join the
# DAG only when locomo_enabled() (common.smk): `locomo.path` is set or `locomo.download` is true.
#
# Setting the path on the command line (Snakemake 9): `--config locomo.path=FILE` is rejected
# ("Config entry must start with a valid identifier"); pass the nested block instead, which
# Snakemake merges key by key into config.yaml's `locomo` block (the other keys stay, the block
# stays schema-valid):
#   snakemake -n --config 'locomo={path: tests/fixtures/locomo/locomo10_mini.json}'
# (values given this way are strings: use it for `path`; set `download: true` in a config file.)
# The ledger budget on LoCoMo is the synthetic one (`data.budget`): the trained policy's budget.


rule locomo:
    input:
        unpack(get_locomo_inputs),
    output:
        metrics="results/locomo/{seed}/metrics.json",
        predictions="results/locomo/{seed}/predictions.jsonl",
        selection="results/locomo/{seed}/selection.json",
    log:
        "logs/locomo/{seed}.log",
    benchmark:
        "benchmarks/runs/locomo/{seed}.tsv"
    conda:
        "../../environment.yml"
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("locomo"),
    params:
        outdir=lambda wc, output: Path(output.metrics).parent,
        args=locomo_args,
        systems=lambda wc: " ".join(config["locomo"]["systems"]),
        max_questions=lookup(dpath="locomo/max_questions", within=config),
        budget=lookup(dpath="data/budget", within=config),
        max_new_tokens=lookup(dpath="evaluate/max_new_tokens", within=config),
        batch_size=lookup(dpath="evaluate/batch_size", within=config),
        reader_model=lookup(dpath="evaluate/reader_model", within=config),
        dtype=lookup(dpath="evaluate/dtype", within=config),
    shell:
        "clerk locomo {params.args} --model {input.model} --systems {params.systems}"
        " --max-questions {params.max_questions} --seed {wildcards.seed} --budget {params.budget}"
        " --max-new-tokens {params.max_new_tokens} --batch-size {params.batch_size}"
        " --reader-model {params.reader_model} --dtype {params.dtype} --threads 1 --quiet"
        " --out {params.outdir} > {log} 2>&1"


rule table_locomo:
    input:
        metrics=expand("results/locomo/{seed}/metrics.json", seed=SEEDS),
        code=code("locomo", "report"),
    output:
        csv="results/table2.csv",
        md="results/table2.md",
    log:
        "logs/table_locomo/table2.log",
    benchmark:
        # Report stage: kept out of benchmarks/runs/ (see report.smk).
        "benchmarks/report/table_locomo/table2.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_locomo"),
    shell:
        "clerk table-locomo --metrics {input.metrics} --out {output.csv}"
        " --markdown {output.md} > {log} 2>&1"
