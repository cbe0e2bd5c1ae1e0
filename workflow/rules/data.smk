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
        args=sft_args("policy"),
    shell:
        "clerk build-sft --timelines {input.timelines} --tokenizer {input.model} --seed {wildcards.seed}"
        " {params.args} --out {output.sft} > {log} 2>&1"


# The separate reader's SFT set (evaluate.reader_model: reader; common.smk SEPARATE_READER): ANSWER
# examples only, over the same persona split as the policy's.
rule build_sft_reader:
    input:
        timelines="results/data/{seed}/train.jsonl",
        model=MODEL_DIR,
        code=code("sft", "prompts", "program"),
        systems=get_memory_code,
    output:
        sft=directory("results/sft_reader/{seed}"),
    log:
        "logs/build_sft_reader/{seed}.log",
    benchmark:
        "benchmarks/runs/build_sft_reader/{seed}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("build_sft"),
    params:
        args=sft_args("reader"),
    shell:
        "clerk build-sft --timelines {input.timelines} --tokenizer {input.model} --seed {wildcards.seed}"
        " {params.args} --out {output.sft} > {log} 2>&1"
