# Foundational-versus-noise streams and the eviction-policy study (SPEC §3).


rule streams:
    input:
        code=code("streams"),
    output:
        stream="results/streams/{seed}.json",
    log:
        "logs/streams/{seed}.log",
    benchmark:
        "benchmarks/runs/streams/{seed}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("streams"),
    params:
        length=lookup(dpath="streams/length", within=config),
        foundational=lookup(dpath="streams/foundational", within=config),
        recalls=lookup(dpath="streams/recalls", within=config),
        noise=lookup(dpath="streams/noise", within=config),
    shell:
        "clerk streams --seed {wildcards.seed} --length {params.length}"
        " --foundational {params.foundational} --recalls {params.recalls}"
        " --noise {params.noise} --out {output.stream} > {log} 2>&1"


rule eviction_study:
    input:
        stream="results/streams/{seed}.json",
        code=code("streams"),
    output:
        csv="results/eviction/{seed}.csv",
    log:
        "logs/eviction_study/{seed}.log",
    benchmark:
        "benchmarks/runs/eviction_study/{seed}.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("eviction_study"),
    params:
        capacities=lambda wc: " ".join(map(str, config["streams"]["capacities"])),
        noise_grid=lambda wc: " ".join(map(str, config["streams"]["noise_grid"])),
        policies=lambda wc: " ".join(config["streams"]["policies"]),
        default_capacity=lookup(dpath="streams/default_capacity", within=config),
    shell:
        "clerk eviction-study --streams {input.stream} --capacities {params.capacities}"
        " --noise-grid {params.noise_grid} --policies {params.policies}"
        " --default-capacity {params.default_capacity} --out {output.csv} > {log} 2>&1"
