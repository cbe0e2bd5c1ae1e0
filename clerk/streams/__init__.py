"""Foundational-versus-noise streams and the eviction-policy study (SPEC §3).

An LLM-free testbed for the question "which eviction rule keeps the facts that matter?". A stream
registers a few *foundational* facts at turn 1 and recalls them on a jittered spaced-repetition
schedule, while *noise* facts that are never recalled arrive every turn. Memory engines of fixed
capacity replay the stream under different eviction policies; the study reports the fraction of
recalls whose fact is still held and how much of the memory noise occupies.

    clerk streams --seed 137 --out results/streams/stream_137.json
    clerk eviction-study --streams results/streams/stream_137.json --capacities 8 16 32 \\
        --noise-grid 1 3 6 --out results/streams/eviction_137.csv

Modules, in dependency order:

* :mod:`clerk.streams.generation`: the stream file format, its generation and validation.
* :mod:`clerk.streams.engines`: the eviction engines and their one registry, :data:`POLICIES`.
* :mod:`clerk.streams.study`: replaying a stream through an engine, the sweep and its CSV.
* :mod:`clerk.streams.cli`: the ``clerk streams`` and ``clerk eviction-study`` verbs.
"""
