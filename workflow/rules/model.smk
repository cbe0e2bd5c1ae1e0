# Base-model materialisation (once) and LoRA training (per seed), SPEC §5.


rule base_model:
    input:
        unpack(get_model_inputs),
    output:
        model=directory(MODEL_DIR),
    log:
        f"logs/base_model/{config['model']['name']}.log",
    benchmark:
        f"benchmarks/runs/base_model/{config['model']['name']}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("base_model"),
    params:
        args=model_args(),
        timelines=lambda wc, input: (
            f"--timelines {input.timelines}" if "timelines" in input.keys() else ""
        ),
    shell:
        "clerk materialize-model {params.args} {params.timelines} --out {output.model} > {log} 2>&1"


rule train:
    input:
        sft="results/sft/{seed}",
        model=MODEL_DIR,
        code=code("train", "models", "prompts"),
    output:
        adapter=directory("results/train/{seed}"),
    log:
        "logs/train/{seed}.log",
    benchmark:
        "benchmarks/runs/train/{seed}.tsv"
    conda:
        "../../environment.yml"
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("train"),
    params:
        args=train_args,
        # Checkpoints live outside the declared output: Snakemake deletes an interrupted job's
        # output directory before rerunning it, and the rerun resumes from here. `clerk train`
        # removes this directory once the adapter is written.
        checkpoints="resources/checkpoints/train/{seed}",
    shell:
        "clerk train --sft {input.sft} --model {input.model} --seed {wildcards.seed}"
        " {params.args} --threads 1 --checkpoint-dir {params.checkpoints}"
        " --out {output.adapter} > {log} 2>&1"


# The separate reader (evaluate.reader_model: reader): the same recipe on its ANSWER-only set.
rule train_reader:
    input:
        sft="results/sft_reader/{seed}",
        model=MODEL_DIR,
        code=code("train", "models", "prompts"),
    output:
        adapter=directory("results/train_reader/{seed}"),
    log:
        "logs/train_reader/{seed}.log",
    benchmark:
        "benchmarks/runs/train_reader/{seed}.tsv"
    conda:
        "../../environment.yml"
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("train_reader"),
    params:
        args=reader_train_args,
        checkpoints="resources/checkpoints/train_reader/{seed}",
    shell:
        "clerk train --sft {input.sft} --model {input.model} --seed {wildcards.seed}"
        " {params.args} --threads 1 --checkpoint-dir {params.checkpoints}"
        " --out {output.adapter} > {log} 2>&1"


rule learning_curve:
    input:
        timelines=f"results/data/{CURVE_SEED}/train.jsonl",
        sft=f"results/sft/{CURVE_SEED}",
        model=MODEL_DIR,
        adapter=f"results/train/{CURVE_SEED}",
        code=code("train", "models", "prompts", "program", "metrics"),
        systems=get_memory_code,
        phrasings=get_phrasings,
    output:
        csv="results/curve/learning_curve.csv",
    log:
        "logs/learning_curve/learning_curve.log",
    benchmark:
        "benchmarks/runs/learning_curve/learning_curve.tsv"
    conda:
        "../../environment.yml"
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("learning_curve"),
    params:
        sessions=lookup(dpath="train/curve_sessions", within=config),
        max_new_tokens=lookup(dpath="evaluate/max_new_tokens", within=config),
        batch_size=lookup(dpath="evaluate/batch_size", within=config),
        phrasings=lambda wc: f"--phrasings {config['data']['phrasings']}" if config["data"].get("phrasings") else "",
        dtype=lookup(dpath="evaluate/dtype", within=config),
    shell:
        "clerk learning-curve --timelines {input.timelines} --sft {input.sft} --model {input.model}"
        " --adapter {input.adapter} --sessions {params.sessions} --max-new-tokens {params.max_new_tokens}"
        " --batch-size {params.batch_size} {params.phrasings} --dtype {params.dtype}"
        " --threads 1 --out {output.csv} > {log} 2>&1"
