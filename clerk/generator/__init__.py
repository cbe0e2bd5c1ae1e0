"""Synthetic evolving-session persona generator: timelines with exact gold programs (SPEC §2).

Each persona is a simulated user who, across ``sessions`` dialogue sessions, states facts (ADD),
changes them (UPDATE), retracts them (TOMBSTONE) and is asked multiple-choice questions about
them. Because we write the facts, we know the gold edit program for every session and the gold
ledger after it, so supervision and evaluation are exact.

    clerk generate --seed 137 --split train --out results/data/train_137.jsonl
    clerk generate --seed 137 --split test_ood --personas 5 --sessions 50 --out /tmp/long.jsonl

Modules, in dependency order:

* :mod:`clerk.generator.catalogue`: loading and validating a phrasings file (phrasings are data,
  in ``clerk/phrasing/``).
* :mod:`clerk.generator.config`: :class:`~clerk.generator.config.GeneratorConfig`, the knobs of a run.
* :mod:`clerk.generator.forgets`: forget requests for the erasure study (``--forgets K``).
* :mod:`clerk.generator.gold`: the gold edit program of a session's events.
* :mod:`clerk.generator.truth`: the persona's true history (:class:`~clerk.generator.truth.Fact`), apart from the ledger.
* :mod:`clerk.generator.questions`: the rule reader, the questions a session asks and their options.
* :mod:`clerk.generator.timelines`: one persona's sessions and the run (``generate``).
* :mod:`clerk.generator.files`: timeline files (JSON lines) and their summary statistics.
* :mod:`clerk.generator.cli`: the ``clerk generate`` verb (also ``python -m clerk.generator``).

Determinism: one string-seeded ``random.Random`` per run, no set iteration and no clock (see
:mod:`clerk.generator.timelines`). Files are written with :func:`clerk.ledger.dumps`, one persona a line.
"""
