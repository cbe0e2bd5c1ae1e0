# Evaluation of every memory system on the test splits (SPEC §6) and the read-cost probe.


rule evaluate:
    input:
        unpack(reader_inputs),
        timelines="results/data/{seed}/{split}.jsonl",
        model=MODEL_DIR,
        adapter="results/train/{seed}",
        code=code("evaluate"),
        phrasings=get_phrasings,
    output:
        metrics="results/eval/{seed}/{split}/metrics.json",
        predictions="results/eval/{seed}/{split}/predictions.jsonl",
        ledgers="results/eval/{seed}/{split}/ledgers.jsonl",
        programs="results/eval/{seed}/{split}/programs.jsonl.gz",
    log:
        log_path("evaluate", "{seed}_{split}"),
    benchmark:
        benchmark_path("evaluate", "{seed}_{split}")
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("evaluate"),
    params:
        cfg=get_evaluate_config,
        outdir=lambda wc, output: Path(output.metrics).parent,
    shell:
        "clerk evaluate --config {params.cfg:q} --timelines {input.timelines:q}"
        " --model {input.model:q} --adapter {input.adapter:q} --threads 1 --quiet"
        " --out {params.outdir:q} > {log:q} 2>&1"


rule read_cost:
    input:
        timelines="results/data/{seed}/long.jsonl",
        model=MODEL_DIR,
        code=code("read-cost"),
    output:
        csv="results/readcost/{seed}.csv",
    log:
        log_path("read_cost", "{seed}"),
    benchmark:
        benchmark_path("read_cost", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("read_cost"),
    params:
        cfg=get_read_cost_config,
    shell:
        "clerk read-cost --config {params.cfg:q} --timelines {input.timelines:q}"
        " --tokenizer {input.model:q} --out {output.csv:q} > {log:q} 2>&1"
