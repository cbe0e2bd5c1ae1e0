# The erasure study (SPEC §9): timelines with forget requests per seed, replayed through every
# memory system with the trained adapter (clerk erasure), then table 5 over the seeds.


rule generate_forget:
    input:
        code=code("generator", "prompts", "store"),
        phrasings=get_phrasings,
    output:
        timelines="results/data/{seed}/forget.jsonl",
    log:
        "logs/generate_forget/{seed}.log",
    benchmark:
        "benchmarks/runs/generate_forget/{seed}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("generate_forget"),
    params:
        args=forget_generate_args,
    shell:
        "clerk generate --seed {wildcards.seed} {params.args} --out {output.timelines} > {log} 2>&1"


rule erasure:
    input:
        unpack(reader_inputs),
        timelines="results/data/{seed}/forget.jsonl",
        model=MODEL_DIR,
        adapter="results/train/{seed}",
        code=code(
            "evaluate", "metrics", "scoring", "models", "prompts", "generator", "store", "program"
        ),
        systems=get_memory_code,
        phrasings=get_phrasings,
    output:
        metrics="results/erasure/{seed}/metrics.json",
        views="results/erasure/{seed}/views.jsonl",
    log:
        "logs/erasure/{seed}.log",
    benchmark:
        "benchmarks/runs/erasure/{seed}.tsv"
    conda:
        "../../environment.yml"
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("erasure"),
    params:
        outdir=lambda wc, output: Path(output.metrics).parent,
        systems=lambda wc: " ".join(config["erasure"]["systems"]),
        ignore=lambda wc: " ".join(config["erasure"]["ignore_forget"]),
        window_k=lookup(dpath="evaluate/window_k", within=config),
        rag_k=lookup(dpath="evaluate/rag_k", within=config),
        max_new_tokens=lookup(dpath="evaluate/max_new_tokens", within=config),
        batch_size=lookup(dpath="evaluate/batch_size", within=config),
        reader_model=lookup(dpath="evaluate/reader_model", within=config),
        reader_pmi=lookup(dpath="evaluate/reader_pmi", within=config),
        constrained=lambda wc: "--constrained" if config["evaluate"]["constrained"] else "--no-constrained",
        phrasings=lambda wc: f"--phrasings {config['data']['phrasings']}" if config["data"].get("phrasings") else "",
        dtype=lookup(dpath="evaluate/dtype", within=config),
        reader_adapter=reader_flag,
    shell:
        "clerk erasure --timelines {input.timelines} --model {input.model}"
        " --adapter {input.adapter} {params.reader_adapter} --systems {params.systems} --ignore-forget {params.ignore}"
        " --window-k {params.window_k} --rag-k {params.rag_k}"
        " --max-new-tokens {params.max_new_tokens} --batch-size {params.batch_size}"
        " --reader-model {params.reader_model} --reader-pmi {params.reader_pmi} {params.constrained} {params.phrasings} --dtype {params.dtype}"
        " --threads 1 --quiet --out {params.outdir} > {log} 2>&1"


rule table_erasure:
    input:
        metrics=expand("results/erasure/{seed}/metrics.json", seed=SEEDS),
        code=code("report"),
    output:
        csv=report(
            "results/table5.csv",
            caption="../report/table_erasure.rst",
            category="Tables",
        ),
        seeds="results/table5_seeds.csv",
        md="results/table5.md",
    log:
        "logs/table_erasure/table5.log",
    benchmark:
        "benchmarks/report/table_erasure/table5.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_erasure"),
    shell:
        "clerk table-erasure --metrics {input.metrics} --out {output.csv}"
        " --seeds-out {output.seeds} --markdown {output.md} > {log} 2>&1"
