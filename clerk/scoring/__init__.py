"""Multiple-choice log-likelihood scoring (the reader of SPEC §6), its prefix caches and its benchmark.

Modules: :mod:`~clerk.scoring.mc` (the public API: score options as continuations of a prompt,
optionally after a shared encoded prefix) · :mod:`~clerk.scoring.prefix` (prefix KV caches and
model plumbing) · :mod:`~clerk.scoring.bench` (``clerk bench-scoring``).

    clerk bench-scoring --model resources/models/smollm2-135m --cases 20
"""
