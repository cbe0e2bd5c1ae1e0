# Base-model materialisation (once) and LoRA training (per seed), SPEC §5.


rule base_model:
    input:
        unpack(get_model_inputs),
    output:
        model=directory(MODEL_DIR),
    log:
        log_path("base_model", config["model"]["name"]),
    benchmark:
        benchmark_path("base_model", config["model"]["name"])
    conda:
        ENV
    resources:
        **rule_resources("base_model"),
    params:
        cfg=get_model_config,
    shell:
        "clerk materialize-model --config {params.cfg:q} --out {output.model:q} > {log:q} 2>&1"


rule train:
    input:
        sft="results/sft/{seed}",
        model=MODEL_DIR,
        code=code("train"),
    output:
        adapter=directory("results/train/{seed}"),
    log:
        log_path("train", "{seed}"),
    benchmark:
        benchmark_path("train", "{seed}")
    # Training gates every model job after it; see train_reader's priority for the order. The
    # curve seed first: its adapter also feeds the learning curve.
    priority: lambda wildcards: 11 if str(wildcards.seed) == str(CURVE_SEED) else 10
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("train"),
    params:
        cfg=get_train_config,
        # Checkpoints live outside the declared output: Snakemake deletes an interrupted job's
        # output directory before rerunning it, and the rerun resumes from here. `clerk train`
        # removes this directory once the adapter is written.
        checkpoints="resources/checkpoints/train/{seed}",
    shell:
        "clerk train --config {params.cfg:q} --sft {input.sft:q} --model {input.model:q}"
        " --seed {wildcards.seed:q} --threads 1 --checkpoint-dir {params.checkpoints:q}"
        " --out {output.adapter:q} > {log:q} 2>&1"


# The separate reader (evaluate.reader_model: reader): the same recipe on its ANSWER-only set.
rule train_reader:
    input:
        sft="results/sft_reader/{seed}",
        model=MODEL_DIR,
        code=code("train"),
    output:
        adapter=directory("results/train_reader/{seed}"),
    log:
        log_path("train_reader", "{seed}"),
    benchmark:
        benchmark_path("train_reader", "{seed}")
    # The reader gates every evaluate, erasure and LoCoMo job of every seed, so it starts in the
    # first slot; the policies next, before any job that can wait (docs/DECISIONS.md, "Scheduling").
    priority: 20
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("train_reader"),
    params:
        cfg=get_train_reader_config,
        checkpoints="resources/checkpoints/train_reader/{seed}",
    shell:
        "clerk train --config {params.cfg:q} --sft {input.sft:q} --model {input.model:q}"
        " --seed {wildcards.seed:q} --threads 1 --checkpoint-dir {params.checkpoints:q}"
        " --out {output.adapter:q} > {log:q} 2>&1"


rule learning_curve:
    input:
        timelines=f"results/data/{CURVE_SEED}/train.jsonl",
        sft=f"results/sft/{CURVE_SEED}",
        model=MODEL_DIR,
        adapter=f"results/train/{CURVE_SEED}",
        code=code("learning-curve"),
        phrasings=get_phrasings,
    output:
        csv="results/curve/learning_curve.csv",
    log:
        log_path("learning_curve"),
    benchmark:
        benchmark_path("learning_curve")
    conda:
        ENV
    threads: MODEL_JOB_THREADS
    resources:
        **rule_resources("learning_curve"),
    params:
        cfg=get_curve_config,
    shell:
        "clerk learning-curve --config {params.cfg:q} --timelines {input.timelines:q}"
        " --sft {input.sft:q} --model {input.model:q} --adapter {input.adapter:q}"
        " --threads 1 --out {output.csv:q} > {log:q} 2>&1"
