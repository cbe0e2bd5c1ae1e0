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
    params:
        args=model_args(),
        timelines=lambda wc, input: (
            f"--timelines {input.timelines}" if "timelines" in input.keys() else ""
        ),
    shell:
        "clerk materialize-model {params.args} {params.timelines} --out {output.model} > {log} 2>&1"
