# Tables, figures, the paper and its provenance (SPEC §6, §8).
# Every number the paper prints comes from a table below via paper/numbers.yaml; the paper rule
# takes every file it cites (numbers.json sources, includes, figures) as a DAG input, and the
# manifest is written last. Report-stage benchmarks live in benchmarks/report/ so that the stage
# wall-time table (benchmarks/runs/ only) never depends on itself.


include: "report_inputs.smk"


report: "../report/workflow.rst"


rule table_systems:
    input:
        metrics=get_table_metrics,
        code=code("report"),
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
        "logs/table_systems/{table}.log",
    benchmark:
        "benchmarks/report/table_systems/{table}.tsv"
    wildcard_constraints:
        table="|".join(TABLE_SPLITS),
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_systems"),
    shell:
        "clerk table-systems --metrics {input.metrics} --out {output.csv}"
        " --seeds-out {output.seeds} --markdown {output.md} --markdown-cost {output.cost}"
        " > {log} 2>&1"


rule table_paired:
    input:
        predictions=expand(
            "results/eval/{seed}/{split}/predictions.jsonl", seed=SEEDS, split=EVAL_SPLITS
        ),
        code=code("report"),
    output:
        csv=report(
            "results/table_paired.csv",
            caption="../report/table_paired.rst",
            category="Tables",
        ),
        md="results/table_paired.md",
    log:
        "logs/table_paired/table_paired.log",
    benchmark:
        "benchmarks/report/table_paired/table_paired.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_paired"),
    shell:
        "clerk table-paired --predictions {input.predictions} --out {output.csv}"
        " --markdown {output.md} > {log} 2>&1"


rule table_eviction:
    input:
        csv=expand("results/eviction/{seed}.csv", seed=SEEDS),
        code=code("report", "streams"),
    output:
        csv=report(
            "results/table4.csv",
            caption="../report/table_eviction.rst",
            category="Tables",
        ),
        seeds="results/table4_seeds.csv",
        md="results/table4.md",
    log:
        "logs/table_eviction/table4.log",
    benchmark:
        "benchmarks/report/table_eviction/table4.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_eviction"),
    params:
        capacity=lookup(dpath="streams/default_capacity", within=config),
        noise=lookup(dpath="streams/noise", within=config),
    shell:
        "clerk table-eviction --csv {input.csv} --default-capacity {params.capacity}"
        " --default-noise {params.noise} --out {output.csv} --seeds-out {output.seeds}"
        " --markdown {output.md} > {log} 2>&1"


rule table_read_cost:
    input:
        csv=expand("results/readcost/{seed}.csv", seed=SEEDS),
        code=code("report"),
    output:
        csv="results/read_cost.csv",
    log:
        "logs/table_read_cost/read_cost.log",
    benchmark:
        "benchmarks/report/table_read_cost/read_cost.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_read_cost"),
    shell:
        "clerk table-read-cost --csv {input.csv} --out {output.csv} > {log} 2>&1"


rule table_setup:
    input:
        timelines=expand("results/data/{seed}/{split}.jsonl", seed=SEEDS, split=SPLITS),
        metrics=expand(
            "results/eval/{seed}/{split}/metrics.json", seed=SEEDS, split=EVAL_SPLITS
        ),
        train=expand("results/train/{seed}", seed=SEEDS),
        reader=expand("results/train_reader/{seed}", seed=SEEDS) if SEPARATE_READER else [],
        streams=expand("results/streams/{seed}.json", seed=SEEDS),
        code=code("report"),
    output:
        json="results/setup.json",
        md="results/setup.md",
    log:
        "logs/table_setup/setup.log",
    benchmark:
        "benchmarks/report/table_setup/setup.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_setup"),
    shell:
        "clerk table-setup --timelines {input.timelines} --metrics {input.metrics}"
        " --train {input.train} --reader-train {input.reader} --streams {input.streams} --out {output.json}"
        " --markdown {output.md} > {log} 2>&1"


rule table_benchmarks:
    input:
        tsv=get_benchmark_inputs,
        code=code("report"),
    output:
        csv="results/benchmarks.csv",
        md="results/benchmarks.md",
    log:
        "logs/table_benchmarks/benchmarks.log",
    benchmark:
        "benchmarks/report/table_benchmarks/benchmarks.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("table_benchmarks"),
    params:
        order=" ".join([*STAGES, "locomo"]),
    shell:
        "clerk table-benchmarks --tsv {input.tsv} --root benchmarks/runs --order {params.order}"
        " --out {output.csv} --markdown {output.md} > {log} 2>&1"


rule figure_read_cost:
    input:
        table="results/read_cost.csv",
        code=code("report"),
    output:
        pdf="results/figures/read_cost.pdf",
        png=report(
            "results/figures/read_cost.png",
            caption="../report/read_cost.rst",
            category="Figures",
        ),
    log:
        "logs/figure_read_cost/read_cost.log",
    benchmark:
        "benchmarks/report/figure_read_cost/read_cost.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("figure_read_cost"),
    params:
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
    shell:
        "clerk figure read-cost --inputs {input.table} --out {params.base} > {log} 2>&1"


rule figure_accuracy:
    input:
        table="results/table1_seeds.csv",
        code=code("report"),
    output:
        pdf="results/figures/accuracy_by_type.pdf",
        png=report(
            "results/figures/accuracy_by_type.png",
            caption="../report/accuracy_by_type.rst",
            category="Figures",
        ),
    log:
        "logs/figure_accuracy/accuracy_by_type.log",
    benchmark:
        "benchmarks/report/figure_accuracy/accuracy_by_type.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("figure_accuracy"),
    params:
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
    shell:
        "clerk figure accuracy --inputs {input.table} --split test --out {params.base}"
        " > {log} 2>&1"


rule figure_eviction:
    input:
        table="results/table4.csv",
        code=code("report", "streams"),
    output:
        pdf="results/figures/eviction.pdf",
        png=report(
            "results/figures/eviction.png",
            caption="../report/eviction.rst",
            category="Figures",
        ),
    log:
        "logs/figure_eviction/eviction.log",
    benchmark:
        "benchmarks/report/figure_eviction/eviction.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("figure_eviction"),
    params:
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
        noise=lookup(dpath="streams/noise", within=config),
    shell:
        "clerk figure eviction --inputs {input.table} --noise {params.noise}"
        " --out {params.base} > {log} 2>&1"


rule figure_loss:
    input:
        train=expand("results/train/{seed}", seed=SEEDS),
        code=code("report"),
    output:
        pdf="results/figures/loss.pdf",
        png=report(
            "results/figures/loss.png",
            caption="../report/loss.rst",
            category="Figures",
        ),
    log:
        "logs/figure_loss/loss.log",
    benchmark:
        "benchmarks/report/figure_loss/loss.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("figure_loss"),
    params:
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
    shell:
        "clerk figure loss --inputs {input.train} --out {params.base} > {log} 2>&1"


rule figure_state_f1:
    input:
        ledgers=expand("results/eval/{seed}/test/ledgers.jsonl", seed=SEEDS),
        code=code("report"),
    output:
        pdf="results/figures/state_f1.pdf",
        png=report(
            "results/figures/state_f1.png",
            caption="../report/state_f1.rst",
            category="Figures",
        ),
    log:
        "logs/figure_state_f1/state_f1.log",
    benchmark:
        "benchmarks/report/figure_state_f1/state_f1.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("figure_state_f1"),
    params:
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
    shell:
        "clerk figure state-f1 --inputs {input.ledgers} --out {params.base} > {log} 2>&1"


rule locomo_status:
    input:
        code=code("report"),
    output:
        md="results/locomo_status.md",
    log:
        "logs/locomo_status/locomo_status.log",
    benchmark:
        "benchmarks/report/locomo_status/locomo_status.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("locomo_status"),
    params:
        path=lambda wc: config["locomo"]["path"] or "",
        download=lambda wc: str(config["locomo"]["download"]).lower(),
    shell:
        "clerk locomo-status --path '{params.path}' --download {params.download}"
        " --out {output.md} > {log} 2>&1"


rule environment:
    # The record of the run: it takes the model jobs' outputs as inputs, so it is rewritten in the
    # run that (re)made them, at the commit that made them, and reads their own records (commit,
    # numerics pins, precision). A commit that changes no job's inputs reruns nothing here.
    input:
        train=expand("results/train/{seed}", seed=SEEDS),
        metrics=expand(
            "results/eval/{seed}/{split}/metrics.json", seed=SEEDS, split=EVAL_SPLITS
        ),
        code=code("report", "provenance", "models"),
    output:
        md="results/environment.md",
    log:
        "logs/environment/environment.log",
    benchmark:
        "benchmarks/report/environment/environment.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("environment"),
    shell:
        "clerk environment --train {input.train} --metrics {input.metrics}"
        " --out {output.md} > {log} 2>&1"


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
        "logs/rulegraph/rulegraph.log",
    benchmark:
        "benchmarks/report/rulegraph/rulegraph.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("rulegraph"),
    params:
        configs=config_args,
    shell:
        "PYTHONHASHSEED=0 snakemake results/manifest.json --snakefile {input.snakefile}"
        " {params.configs} --nolock --quiet all --rulegraph mermaid-js"
        " > {output.mmd} 2> {log}"


rule numbers:
    input:
        spec="paper/numbers.yaml",
        sources=get_numbers_sources,
        code=code("provenance"),
    output:
        json="results/numbers.json",
    log:
        "logs/numbers/numbers.log",
    benchmark:
        "benchmarks/report/numbers/numbers.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("numbers"),
    shell:
        "clerk numbers --spec {input.spec} --out {output.json} > {log} 2>&1"


rule paper:
    input:
        unpack(get_paper_includes),
        template="paper/template.md",
        numbers="results/numbers.json",
        figures=expand("results/figures/{figure}.png", figure=FIGURES),
        code=code("report", "provenance"),
    output:
        md="paper/paper.md",
    log:
        "logs/paper/paper.log",
    benchmark:
        "benchmarks/report/paper/paper.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("paper"),
    params:
        includes=include_args,
        sections=" ".join(f"--no-digits-in '{s}'" for s in NO_DIGITS_IN),
    shell:
        "clerk render-paper --template {input.template} --numbers {input.numbers}"
        " {params.includes} {params.sections} --out {output.md} > {log} 2>&1"


rule manifest:
    input:
        paper="paper/paper.md",
        numbers="results/numbers.json",
        targets=get_manifest_inputs,
        code=code("provenance"),
    output:
        json="results/manifest.json",
    log:
        "logs/manifest/manifest.log",
    benchmark:
        "benchmarks/report/manifest/manifest.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("manifest"),
    shell:
        "clerk manifest --root results --extra {input.paper} --out {output.json} > {log} 2>&1"


rule figure_learning_curve:
    input:
        table="results/curve/learning_curve.csv",
        code=code("report"),
    output:
        pdf="results/figures/learning_curve.pdf",
        png=report(
            "results/figures/learning_curve.png",
            caption="../report/learning_curve.rst",
            category="Figures",
        ),
    log:
        "logs/figure_learning_curve/learning_curve.log",
    benchmark:
        "benchmarks/report/figure_learning_curve/learning_curve.tsv"
    conda:
        "../../environment.yml"
    resources:
        **rule_resources("figure_learning_curve"),
    params:
        base=lambda wc, output: output.pdf.removesuffix(".pdf"),
    shell:
        "clerk figure learning-curve --inputs {input.table} --out {params.base} > {log} 2>&1"
