# Foundational-versus-noise streams and the eviction-policy study (SPEC §3).


rule streams:
    input:
        code=code("streams"),
    output:
        stream="results/streams/{seed}.json",
    log:
        log_path("streams", "{seed}"),
    benchmark:
        benchmark_path("streams", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("streams"),
    params:
        cfg=get_streams_config,
    shell:
        "clerk streams --config {params.cfg:q} --seed {wildcards.seed:q}"
        " --out {output.stream:q} > {log:q} 2>&1"


rule eviction_study:
    input:
        stream="results/streams/{seed}.json",
        code=code("eviction-study"),
    output:
        csv="results/eviction/{seed}.csv",
    log:
        log_path("eviction_study", "{seed}"),
    benchmark:
        benchmark_path("eviction_study", "{seed}")
    conda:
        ENV
    resources:
        **rule_resources("eviction_study"),
    params:
        cfg=get_eviction_config,
    shell:
        "clerk eviction-study --config {params.cfg:q} --streams {input.stream:q}"
        " --out {output.csv:q} > {log:q} 2>&1"
