# Evaluation of every memory system on the test splits (SPEC §6) and the read-cost probe.


rule evaluate:
    input:
        unpack(reader_inputs),
        timelines="results/data/{seed}/{split}.jsonl",
        model=MODEL_DIR,
        adapter="results/train/{seed}",
        code=code("evaluate", "metrics", "scoring", "models", "prompts", "generator", "program"),
        systems=get_memory_code,
        phrasings=get_phrasings,
    output:
        metrics="results/eval/{seed}/{split}/metrics.json",
        predictions="results/eval/{seed}/{split}/predictions.jsonl",
        ledgers="results/eval/{seed}/{split}/ledgers.jsonl",
    log:
        "logs/evaluate/{seed}_{split}.log",
    benchmark:
        "benchmarks/runs/evaluate/{seed}_{split}.tsv"
    conda:
        "../../environment.yml"
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("evaluate"),
    params:
        outdir=lambda wc, output: Path(output.metrics).parent,
        systems=lambda wc: " ".join(config["evaluate"]["systems"]),
        window_k=lookup(dpath="evaluate/window_k", within=config),
        rag_k=lookup(dpath="evaluate/rag_k", within=config),
        max_new_tokens=lookup(dpath="evaluate/max_new_tokens", within=config),
        batch_size=lookup(dpath="evaluate/batch_size", within=config),
        reader_model=lookup(dpath="evaluate/reader_model", within=config),
        reader_pmi=lookup(dpath="evaluate/reader_pmi", within=config),
        constrained=lambda wc: "--constrained" if config["evaluate"]["constrained"] else "--no-constrained",
        phrasings=lambda wc: f"--phrasings {config['data']['phrasings']}" if config["data"].get("phrasings") else "",
        write_only=lambda wc: " ".join(config["evaluate"].get("write_only", [])),
        dtype=lookup(dpath="evaluate/dtype", within=config),
        reader_adapter=reader_flag,
    shell:
        "clerk evaluate --timelines {input.timelines} --model {input.model}"
        " --adapter {input.adapter} {params.reader_adapter} --systems {params.systems} --window-k {params.window_k}"
        " --rag-k {params.rag_k} --max-new-tokens {params.max_new_tokens}"
        " --batch-size {params.batch_size} --reader-model {params.reader_model} --reader-pmi {params.reader_pmi}"
        " {params.constrained} {params.phrasings} --write-only {params.write_only} --dtype {params.dtype}"
        " --threads 1 --quiet --out {params.outdir} > {log} 2>&1"


rule read_cost:
    input:
        timelines="results/data/{seed}/long.jsonl",
        model=MODEL_DIR,
        code=code("evaluate", "prompts"),
        systems=get_memory_code,
    output:
        csv="results/readcost/{seed}.csv",
    log:
        "logs/read_cost/{seed}.log",
    benchmark:
        "benchmarks/runs/read_cost/{seed}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("read_cost"),
    params:
        window_k=lookup(dpath="evaluate/window_k", within=config),
        rag_k=lookup(dpath="evaluate/rag_k", within=config),
    shell:
        "clerk read-cost --timelines {input.timelines} --tokenizer {input.model}"
        " --window-k {params.window_k} --rag-k {params.rag_k} --out {output.csv} > {log} 2>&1"
