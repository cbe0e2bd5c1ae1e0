"""Synthetic evaluation (SPEC §6): the runner (``clerk evaluate``), its record formats and metrics,
the read-cost probe (``clerk read-cost``) and the learning curve (``clerk learning-curve``).

Modules: :mod:`~clerk.evaluate.runner` (replay timelines through memory systems, write the three
result files) · :mod:`~clerk.evaluate.schemas` (record formats, validated on write) ·
:mod:`~clerk.evaluate.summary` (per-write and per-system metrics) ·
:mod:`~clerk.evaluate.teacher` (teacher-forced op scores of the model writers) ·
:mod:`~clerk.evaluate.read_cost` (read tokens per view, tokenizer only) ·
:mod:`~clerk.evaluate.erasure` (the erasure study, ``clerk erasure``) ·
:mod:`~clerk.evaluate.curve` (validation op-F1 of a training run's snapshots) ·
:mod:`~clerk.evaluate.cli` (the verbs).

    clerk evaluate --timelines results/data/test_137.jsonl --model resources/models/smollm2-135m \\
        --adapter results/train/adapter_137 --systems clerk oracle full window rag add-only --out results/eval/test_137
    clerk read-cost --timelines long.jsonl --tokenizer M --out results/read_cost.csv
"""
