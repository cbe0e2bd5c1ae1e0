# Synthetic persona timelines (SPEC §2) and the SFT mixture built from them (SPEC §4).


rule generate:
    input:
        code=code("generator", "prompts"),
        phrasings=get_phrasings,
    output:
        timelines="results/data/{seed}/{split}.jsonl",
    log:
        "logs/generate/{seed}_{split}.log",
    benchmark:
        "benchmarks/runs/generate/{seed}_{split}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("generate"),
    params:
        args=generate_args,
    shell:
        "clerk generate --seed {wildcards.seed} {params.args} --out {output.timelines} > {log} 2>&1"


rule build_sft:
    input:
        timelines="results/data/{seed}/train.jsonl",
        # The tokenizer sizes the transcript views of the reader's ANSWER examples.
        model=MODEL_DIR,
        code=code("sft", "prompts", "program"),
        systems=get_memory_code,
    output:
        sft=directory("results/sft/{seed}"),
    log:
        "logs/build_sft/{seed}.log",
    benchmark:
        "benchmarks/runs/build_sft/{seed}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("build_sft"),
    params:
        answer_ratio=lookup(dpath="sft/answer_ratio", within=config),
        val_fraction=lookup(dpath="sft/val_fraction", within=config),
        answer_views=lambda wc: ",".join(f"{k}={v}" for k, v in config["sft"]["answer_views"].items()),
        evict_weight=lookup(dpath="sft/evict_weight", within=config),
        window_k=lookup(dpath="evaluate/window_k", within=config),
        rag_k=lookup(dpath="evaluate/rag_k", within=config),
    shell:
        "clerk build-sft --timelines {input.timelines} --tokenizer {input.model} --seed {wildcards.seed}"
        " --answer-ratio {params.answer_ratio} --val-fraction {params.val_fraction}"
        " --answer-views {params.answer_views} --evict-weight {params.evict_weight}"
        " --window-k {params.window_k} --rag-k {params.rag_k} --out {output.sft} > {log} 2>&1"
