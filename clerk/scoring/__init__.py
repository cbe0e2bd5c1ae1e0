"""Multiple-choice log-likelihood scoring (the reader of SPEC §6), its prefix caches and its benchmark.

Modules: :mod:`~clerk.scoring.mc` (the public API: score options as continuations of a prompt,
optionally after a shared encoded prefix) · :mod:`~clerk.scoring.tree` (all questions and options
over one view in one forward) · :mod:`~clerk.scoring.bench` (``clerk bench-scoring``). The prefix
KV caches they score on are model plumbing the writers' decoding shares (:mod:`clerk.models.prefix`).

    clerk bench-scoring --model resources/models/smollm2-135m --cases 20
"""
