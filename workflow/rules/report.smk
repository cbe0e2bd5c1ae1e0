# Tables, figures, the paper and its provenance (SPEC §6, §8).
# Every number the paper prints comes from a table below via paper/numbers.yaml; the paper rule
# takes every file it cites (numbers.json sources, includes, figures) as a DAG input, and the
# manifest is written last. Every rule logs to logs/<rule>/ and benchmarks to
# logs/benchmarks/<rule>/ (clerk.wiring.log_path, benchmark_path); the stage wall-time table
# reads the pipeline stages' benchmarks only, so it never depends on itself.


include: "report_inputs.smk"


report: "../report/workflow.rst"


rule table_systems:
    input:
        metrics=get_table_metrics,
        code=code("table-systems"),
    output:
        csv=report(
            "results/{table}.csv",
            caption="../report/table_systems.rst",
            category="Tables",
        ),
        seeds="results/{table}_seeds.csv",
        md="results/{table}.md",
        cost="results/{table}_cost.md",
    log:
        log_path("table_systems", "{table}"),
    benchmark:
        benchmark_path("table_systems", "{table}")
    wildcard_constraints:
        table="|".join(TABLE_SPLITS),
    conda:
        ENV
    resources:
        **rule_resources("table_systems"),
    shell:
        "clerk table-systems --metrics {input.metrics:q} --out {output.csv:q}"
        " --seeds-out {output.seeds:q} --markdown {output.md:q}"
        " --markdown-cost {output.cost:q} > {log:q} 2>&1"


rule table_paired:
    input:
        predictions=expand(
            "results/eval/{seed}/{split}/predictions.jsonl",
            seed=SEEDS,
            split=EVAL_SPLITS,
        ),
        tolerances="paper/tolerances.yaml",
        code=code("table-paired"),
    output:
        csv=report(
            "results/table_paired.csv",
            caption="../report/table_paired.rst",
            category="Tables",
        ),
        md="results/table_paired.md",
    log:
        log_path("table_paired"),
    benchmark:
        benchmark_path("table_paired")
    conda:
        ENV
    resources:
        **rule_resources("table_paired"),
    shell:
        "clerk table-paired --predictions {input.predictions:q} --out {output.csv:q}"
        " --markdown {output.md:q} --tolerances {input.tolerances:q} > {log:q} 2>&1"


# Where the policy fails: its first error per session, by op and wording (the kept programs).
rule table_errors:
    input:
        timelines=expand(
            "results/data/{seed}/{split}.jsonl", seed=SEEDS, split=EVAL_SPLITS
        ),
        programs=expand(
            "results/eval/{seed}/{split}/programs.jsonl.gz",
            seed=SEEDS,
            split=EVAL_SPLITS,
        ),
        code=code("table-errors"),
    output:
        csv="results/table_errors.csv",
        md="results/table_errors.md",
    log:
        log_path("table_errors"),
    benchmark:
        benchmark_path("table_errors")
    conda:
        ENV
    resources:
        **rule_resources("table_errors"),
    shell:
        "clerk table-errors --timelines {input.timelines:q} --programs {input.programs:q}"
        " --out {output.csv:q} --markdown {output.md:q} > {log:q} 2>&1"


rule table_eviction:
    input:
        csv=expand("results/eviction/{seed}.csv", seed=SEEDS),
        code=code("table-eviction"),
    output:
        csv=report(
            "results/table4.csv",
            caption="../report/table_eviction.rst",
            category="Tables",
        ),
        seeds="results/table4_seeds.csv",
        md="results/table4.md",
    log:
        log_path("table_eviction", "table4"),
    benchmark:
        benchmark_path("table_eviction", "table4")
    conda:
        ENV
    resources:
        **rule_resources("table_eviction"),
    params:
        cfg=get_eviction_table_config,
    shell:
        "clerk table-eviction --config {params.cfg:q} --csv {input.csv:q} --out {output.csv:q}"
        " --seeds-out {output.seeds:q} --markdown {output.md:q} > {log:q} 2>&1"


rule table_read_cost:
    input:
        csv=expand("results/readcost/{seed}.csv", seed=SEEDS),
        code=code("table-read-cost"),
    output:
        csv="results/read_cost.csv",
    log:
        log_path("table_read_cost", "read_cost"),
    benchmark:
        benchmark_path("table_read_cost", "read_cost")
    conda:
        ENV
    resources:
        **rule_resources("table_read_cost"),
    shell:
        "clerk table-read-cost --csv {input.csv:q} --out {output.csv:q} > {log:q} 2>&1"


rule table_setup:
    input:
        timelines=expand("results/data/{seed}/{split}.jsonl", seed=SEEDS, split=SPLITS),
        metrics=expand(
            "results/eval/{seed}/{split}/metrics.json", seed=SEEDS, split=EVAL_SPLITS
        ),
        train=expand("results/train/{seed}", seed=SEEDS),
        reader=([f"results/train_reader/{READER_SEED}"] if SEPARATE_READER else []),
        streams=expand("results/streams/{seed}.json", seed=SEEDS),
        code=code("table-setup"),
    output:
        json="results/setup.json",
        md="results/setup.md",
    log:
        log_path("table_setup", "setup"),
    benchmark:
        benchmark_path("table_setup", "setup")
    conda:
        ENV
    resources:
        **rule_resources("table_setup"),
    shell:
        "clerk table-setup --timelines {input.timelines:q} --metrics {input.metrics:q}"
        " --train {input.train:q} --reader-train {input.reader:q} --streams {input.streams:q}"
        " --out {output.json:q} --markdown {output.md:q} > {log:q} 2>&1"


rule table_benchmarks:
    input:
        tsv=get_benchmark_inputs,
        code=code("table-benchmarks"),
    output:
        csv="results/benchmarks.csv",
        md="results/benchmarks.md",
    log:
        log_path("table_benchmarks", "benchmarks"),
    benchmark:
        benchmark_path("table_benchmarks", "benchmarks")
    conda:
        ENV
    resources:
        **rule_resources("table_benchmarks"),
    params:
        cfg=get_benchmarks_config,
    shell:
        "clerk table-benchmarks --config {params.cfg:q} --tsv {input.tsv:q}"
        " --out {output.csv:q} --markdown {output.md:q} > {log:q} 2>&1"


# Every figure of the paper (clerk.wiring.FIGURES: the `clerk figure` kind, inputs and options of
# each); the captions are workflow/report/figure.rst's, by name.
rule figure:
    input:
        tables=get_figure_inputs,
        code=code("figure"),
    output:
        pdf="results/figures/{figure}.pdf",
        png=report(
            "results/figures/{figure}.png",
            caption="../report/figure.rst",
            category="Figures",
        ),
    log:
        log_path("figure", "{figure}"),
    benchmark:
        benchmark_path("figure", "{figure}")
    wildcard_constraints:
        figure="|".join(FIGURES),
    conda:
        ENV
    resources:
        **rule_resources("figure"),
    params:
        kind=lambda wc: FIGURES[wc.figure]["kind"],
        cfg=get_figure_config,
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
    shell:
        "clerk figure {params.kind:q} --config {params.cfg:q} --inputs {input.tables:q}"
        " --out {params.base:q} > {log:q} 2>&1"


rule locomo_status:
    input:
        code=code("locomo-status"),
    output:
        md="results/locomo_status.md",
    log:
        log_path("locomo_status"),
    benchmark:
        benchmark_path("locomo_status")
    conda:
        ENV
    resources:
        **rule_resources("locomo_status"),
    params:
        cfg=get_locomo_status_config,
    shell:
        "clerk locomo-status --config {params.cfg:q} --out {output.md:q} > {log:q} 2>&1"


rule environment:
    # The record of the run: it takes the model jobs' outputs as inputs, so it is rewritten in the
    # run that (re)made them, at the commit that made them, and reads their own records (commit,
    # numerics pins, precision). A commit that changes no job's inputs reruns nothing here.
    input:
        train=expand("results/train/{seed}", seed=SEEDS),
        metrics=expand(
            "results/eval/{seed}/{split}/metrics.json", seed=SEEDS, split=EVAL_SPLITS
        ),
        code=code("environment"),
    output:
        md="results/environment.md",
    log:
        log_path("environment"),
    benchmark:
        benchmark_path("environment")
    conda:
        ENV
    resources:
        **rule_resources("environment"),
    shell:
        "clerk environment --train {input.train:q} --metrics {input.metrics:q}"
        " --out {output.md:q} > {log:q} 2>&1"


rule rulegraph:
    # The DAG's rule graph as mermaid, computed by a nested Snakemake on the same Snakefile and
    # --configfile list and --config values as this run (--nolock: the parent run holds the
    # lock). Target: the manifest, which depends on every other target (so the graph is
    # complete without the `all` node).
    # PYTHONHASHSEED=0: Snakemake orders the edges by set iteration; pin it for stable bytes.
    input:
        unpack(get_workflow_sources),
    output:
        mmd="results/rulegraph.mmd",
    log:
        log_path("rulegraph"),
    benchmark:
        benchmark_path("rulegraph")
    conda:
        ENV
    resources:
        **rule_resources("rulegraph"),
    params:
        # Already shell-quoted, one argument at a time (report_inputs.smk config_args).
        configs=config_args,
    shell:
        "PYTHONHASHSEED=0 snakemake results/manifest.json --snakefile {input.snakefile:q}"
        " {params.configs} --nolock --quiet all --rulegraph mermaid-js"
        " > {output.mmd:q} 2> {log:q}"


rule numbers:
    input:
        spec="paper/numbers.yaml",
        sources=get_numbers_sources,
        code=code("numbers"),
    output:
        json="results/numbers.json",
    log:
        log_path("numbers"),
    benchmark:
        benchmark_path("numbers")
    conda:
        ENV
    resources:
        **rule_resources("numbers"),
    shell:
        "clerk numbers --spec {input.spec:q} --out {output.json:q} > {log:q} 2>&1"


rule paper:
    input:
        unpack(get_paper_includes),
        template="paper/template.md",
        numbers="results/numbers.json",
        figures=expand("results/figures/{figure}.png", figure=FIGURES),
        code=code("render-paper"),
    output:
        md="paper/paper.md",
    log:
        log_path("paper"),
    benchmark:
        benchmark_path("paper")
    conda:
        ENV
    resources:
        **rule_resources("paper"),
    params:
        cfg=get_paper_config,
    shell:
        "clerk render-paper --config {params.cfg:q} --template {input.template:q}"
        " --numbers {input.numbers:q} --out {output.md:q} > {log:q} 2>&1"


rule manifest:
    input:
        paper="paper/paper.md",
        numbers="results/numbers.json",
        targets=get_manifest_inputs,
        code=code("manifest"),
    output:
        json="results/manifest.json",
    log:
        log_path("manifest"),
    benchmark:
        benchmark_path("manifest")
    conda:
        ENV
    resources:
        **rule_resources("manifest"),
    shell:
        "clerk manifest --root results --extra {input.paper:q} --out {output.json:q} > {log:q} 2>&1"
