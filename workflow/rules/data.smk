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
        code=code("sft", "prompts"),
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
    shell:
        "clerk build-sft --timelines {input.timelines} --seed {wildcards.seed}"
        " --answer-ratio {params.answer_ratio} --val-fraction {params.val_fraction}"
        " --out {output.sft} > {log} 2>&1"
