"""Report: seed aggregation, deterministic tables and figures, and paper rendering (SPEC §6, §8).

Per-seed metrics are aggregated over seeds (n, mean, sd with ddof=1, 95 % t-interval), written as
byte-stable CSV and Markdown, plotted with seaborn into PDF + PNG files whose bytes do not depend
on when they were rendered, and the paper template is filled from ``results/numbers.json``.
Every table is written twice: a long per-seed CSV (one row per seed and group, the values exactly
as the per-seed result files hold them) and the aggregated CSV built from it with
:func:`clerk.report.stats.aggregate_frame` (``<metric>_n/_mean/_sd/_ci_low/_ci_high``), so every
aggregated number traces back to the per-seed values it summarises. A compact Markdown rendering
(mean ± half-width of the interval) is what the paper includes. One concept per module:

* :mod:`clerk.report.stats`: aggregation over seeds and its statistics;
* :mod:`clerk.report.tabular`: reading result files, writing CSV and Markdown, table cells;
* the tables: :mod:`clerk.report.systems` (tables 1 and 3), :mod:`clerk.report.eviction`
  (table 4), :mod:`clerk.report.erasure` (table 5), :mod:`clerk.report.read_cost`,
  :mod:`clerk.report.benchmarks` (wall time per stage),
  :mod:`clerk.report.setup_facts` (the setup as the result files record it);
* :mod:`clerk.report.figures`: the paper's figures;
* :mod:`clerk.report.paper`: rendering the paper template (and the environment and LoCoMo
  paragraphs it includes);
* :mod:`clerk.report.cli`: the verbs.

    clerk table-systems --metrics results/eval/*/test/metrics.json --out results/table1.csv
    clerk figure accuracy --inputs results/table1_seeds.csv --out results/figures/accuracy_by_type
    clerk render-paper --template paper/template.md --numbers results/numbers.json \\
        --include table1=results/table1.md --out paper/paper.md
"""
