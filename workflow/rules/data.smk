# Synthetic persona timelines (SPEC §2) and the SFT mixture built from them (SPEC §4).


rule generate:
    input:
        code=code("generate"),
        phrasings=get_phrasings,
        rewrites=get_rewrites,
    output:
        timelines="results/data/{seed}/{split}.jsonl",
    log:
        log_path("generate", "{seed}_{split}"),
    benchmark:
        benchmark_path("generate", "{seed}_{split}")
    conda:
        ENV
    resources:
        **rule_resources("generate"),
    params:
        cfg=get_generate_config,
    shell:
        "clerk generate --config {params.cfg:q} --seed {wildcards.seed:q}"
        " --out {output.timelines:q} > {log:q} 2>&1"


# The open world's training conversations of one seed (data.open; SPEC §2.9): two-person dated
# conversations over composed keys, mixed into the SFT sets below.
rule generate_open:
    input:
        code=code("generate"),
        phrasings=BUILTIN_PHRASINGS,
    output:
        timelines="results/data/{seed}/open_train.jsonl",
    log:
        log_path("generate_open", "{seed}"),
    benchmark:
        benchmark_path("generate_open", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("generate_open"),
    params:
        cfg=get_generate_open_config,
    shell:
        "clerk generate --config {params.cfg:q} --seed {wildcards.seed:q}"
        " --out {output.timelines:q} > {log:q} 2>&1"


rule build_sft:
    input:
        timelines=get_sft_timelines,
        # The tokenizer sizes the transcript views of the reader's ANSWER examples.
        model=MODEL_DIR,
        code=code("build-sft"),
        questions=READER_QUESTIONS,
    output:
        sft=directory("results/sft/{seed}"),
    log:
        log_path("build_sft", "{seed}"),
    benchmark:
        benchmark_path("build_sft", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("build_sft"),
    params:
        cfg=get_sft_config,
    shell:
        "clerk build-sft --config {params.cfg:q} --timelines {input.timelines:q}"
        " --tokenizer {input.model:q} --seed {wildcards.seed:q} --out {output.sft:q} > {log:q} 2>&1"


# The separate reader's SFT set (evaluate.reader_model: reader; common.smk SEPARATE_READER): ANSWER
# examples only, over the same persona split as the policy's.
rule build_sft_reader:
    input:
        timelines=get_sft_timelines,
        model=MODEL_DIR,
        code=code("build-sft"),
        questions=READER_QUESTIONS,
    output:
        sft=directory("results/sft_reader/{seed}"),
    log:
        log_path("build_sft_reader", "{seed}"),
    benchmark:
        benchmark_path("build_sft_reader", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("build_sft"),
    params:
        cfg=get_sft_reader_config,
    shell:
        "clerk build-sft --config {params.cfg:q} --timelines {input.timelines:q}"
        " --tokenizer {input.model:q} --seed {wildcards.seed:q} --out {output.sft:q} > {log:q} 2>&1"
