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
