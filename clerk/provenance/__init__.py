"""Provenance: number registry, sha256 manifest, ``trace`` and ``verify`` (SPEC §8).

Every number the paper prints is an entry of ``results/numbers.json``, read from a results file at
a *key*, formatted, and pinned to the file's sha256 and the Snakemake rule that wrote it. The
manifest lists every file under ``results/`` (and the paper) with sha256, size, producing rule,
wildcards, params and hashed inputs, so any number can be walked back to config and code.

Modules: :mod:`~clerk.provenance.files` (sha256 of files and directories, JSON files) ·
:mod:`~clerk.provenance.keys` (reading a number at a key) · :mod:`~clerk.provenance.records`
(Snakemake's per-output records) · :mod:`~clerk.provenance.numbers` (numbers.json) ·
:mod:`~clerk.provenance.manifest` (manifest.json) · :mod:`~clerk.provenance.verify` (trace and
verify) · :mod:`~clerk.provenance.compare` (a rerun against the shipped results, with the
tolerances of ``paper/tolerances.yaml``) · :mod:`~clerk.provenance.cells` (rows matched by key) ·
:mod:`~clerk.provenance.claims` (the paper's claims) · :mod:`~clerk.provenance.code_inputs` (a
rule's code inputs: the modules its verb imports) · :mod:`~clerk.provenance.cli` (the verbs).

    clerk numbers --spec paper/numbers.yaml --out results/numbers.json
    clerk manifest --root results --extra paper/paper.md --out results/manifest.json
    clerk trace main.clerk.test.accuracy_mean && clerk verify
    clerk compare /path/to/rerun/results
"""
