# The erasure study (SPEC §9): timelines with forget requests per seed, replayed through every
# memory system with the trained adapter (clerk erasure), then table 5 over the seeds.


rule generate_forget:
    input:
        code=code("generate"),
        phrasings=get_phrasings,
    output:
        timelines="results/data/{seed}/forget.jsonl",
    log:
        log_path("generate_forget", "{seed}"),
    benchmark:
        benchmark_path("generate_forget", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("generate_forget"),
    params:
        cfg=get_forget_config,
    shell:
        "clerk generate --config {params.cfg:q} --seed {wildcards.seed:q}"
        " --out {output.timelines:q} > {log:q} 2>&1"


rule erasure:
    input:
        unpack(reader_inputs),
        timelines="results/data/{seed}/forget.jsonl",
        model=MODEL_DIR,
        adapter="results/train/{seed}",
        code=code("erasure"),
        phrasings=get_phrasings,
    output:
        metrics="results/erasure/{seed}/metrics.json",
        views="results/erasure/{seed}/views.jsonl",
        programs="results/erasure/{seed}/programs.jsonl.gz",
    log:
        log_path("erasure", "{seed}"),
    benchmark:
        benchmark_path("erasure", "{seed}")
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("erasure"),
    params:
        cfg=get_erasure_config,
        outdir=lambda wc, output: Path(output.metrics).parent,
    shell:
        "clerk erasure --config {params.cfg:q} --timelines {input.timelines:q}"
        " --model {input.model:q} --adapter {input.adapter:q} --threads 1 --quiet"
        " --out {params.outdir:q} > {log:q} 2>&1"


rule table_erasure:
    input:
        metrics=expand("results/erasure/{seed}/metrics.json", seed=SEEDS),
        code=code("table-erasure"),
    output:
        csv=report(
            "results/table5.csv",
            caption="../report/table_erasure.rst",
            category="Tables",
        ),
        seeds="results/table5_seeds.csv",
        md="results/table5.md",
    log:
        log_path("table_erasure", "table5"),
    benchmark:
        benchmark_path("table_erasure", "table5")
    conda:
        ENV
    resources:
        **rule_resources("table_erasure"),
    shell:
        "clerk table-erasure --metrics {input.metrics:q} --out {output.csv:q}"
        " --seeds-out {output.seeds:q} --markdown {output.md:q} > {log:q} 2>&1"
