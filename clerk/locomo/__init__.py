"""LoCoMo zero-shot transfer: loading both public formats, evaluating memory systems.

SPEC §7. LoCoMo (Maharana et al., 2024, https://github.com/snap-research/locomo) holds 10 long
two-person conversations and 1,986 questions; licence CC BY-NC 4.0, so the data is never committed
(tests use invented fixtures in ``tests/fixtures/locomo/``). One concept per module:

* :mod:`clerk.locomo.data`: the in-memory form (sessions, questions, conversations), the
  corrected category names and the stage's config;
* :mod:`clerk.locomo.percena` and :mod:`clerk.locomo.locomo10`: the two file formats
  (Percena/locomo-mc10 JSON lines; the original ``locomo10.json``, whose 10-option questions are
  built here);
* :mod:`clerk.locomo.files`: locating the data file, telling its format, loading either;
* :mod:`clerk.locomo.subsets`: stratified subsets and summaries;
* :mod:`clerk.locomo.evaluation`: writers over sessions, then the multiple-choice reader;
* :mod:`clerk.locomo.cli`: the verbs; :mod:`clerk.locomo.bench`: the prefix-reuse benchmark;
  :mod:`clerk.locomo.inspection`: what a data file holds.

Table 2 over the ``metrics.json`` files this stage writes is the report stage's
(:mod:`clerk.report.locomo`).

    clerk locomo-inspect --data tests/fixtures/locomo/locomo10_mini.json
    clerk locomo --data locomo_mc10.json --model resources/models/smollm2-135m --adapter results/train/137 \\
        --max-questions 200 --seed 137 --out results/locomo/137
    clerk table-locomo --metrics results/locomo/*/metrics.json --out results/table2.csv --markdown results/table2.md
    clerk bench-locomo-prefix --data tests/fixtures/locomo/locomo10_mini.json --model resources/models/smollm2-135m
"""
