"""Snakemake's records: which rule wrote a file, with which inputs, params and wildcards.

Rules come from Snakemake's own records: with the default file persistence backend Snakemake 9
writes ``.snakemake/metadata/<urlsafe-base64 of output path>`` (split into ``@``-prefixed folders
beyond NAME_MAX), a JSON object with ``rule``, ``input``, ``log``, ``params`` (sorted ``repr``
strings, no names), ``shellcmd``, ``input_checksums`` (files up to --max-checksum-file-size), times
and ``record_format_version`` (6 in 9.27). We read them directly: no lock, no Snakemake process,
works inside a running job. Wildcards are not recorded, so they come from matching the path against
the rule's output patterns (Snakefile loaded through Snakemake's API; ``glob_wildcards`` matches).
``--drop-metadata`` or ``--persistence-backend db`` runs leave no records: rules are then null.

    python -c "from clerk.provenance.records import snakemake_records; print(len(snakemake_records('.')))"
"""

from __future__ import annotations

import json
import os
from base64 import urlsafe_b64decode
from pathlib import Path

from clerk.errors import UserError


def snakemake_records(workdir: Path) -> dict[str, dict]:
    """Snakemake's per-output metadata records under ``workdir/.snakemake/metadata``.

    Returns:
        Normalised output path (as Snakemake saw it, relative to ``workdir``) -> record dict.
    """
    base = Path(workdir) / ".snakemake" / "metadata"
    records = {}
    for rec in sorted(base.rglob("*")) if base.is_dir() else []:
        if not rec.is_file():
            continue
        parts = rec.relative_to(base).parts
        name = "".join(p[1:] if p.startswith("@") else p for p in parts)
        try:
            path = urlsafe_b64decode(name.encode()).decode()
            records[os.path.normpath(path)] = json.loads(rec.read_text(encoding="utf-8"))
        except ValueError:  # not a record (or one being written): Snakemake skips these too
            continue
    return records


def find_record(records: dict[str, dict], path: str) -> tuple[str | None, dict | None]:
    """The record of ``path`` or of the ``directory()`` output that contains it."""
    here = os.path.normpath(path)
    while here not in ("", ".", "/"):
        if here in records:
            return here, records[here]
        here = os.path.dirname(here)
    return None, None


def rule_output_patterns(snakefile: Path, workdir: Path) -> dict[str, list[str]]:
    """Rule name -> output file patterns, from loading the Snakefile with Snakemake's API.

    ``WorkflowApi._workflow`` (checked against Snakemake 9.27) parses the workflow without
    building a DAG; the API changes into ``workdir`` and back.
    """
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import OutputSettings, Quietness, ResourceSettings

    if not Path(snakefile).is_file():
        raise UserError(f"--snakefile: file '{snakefile}' does not exist")
    quiet = OutputSettings(quiet={Quietness.ALL}, enable_file_logging=False)  # no .snakemake/log
    with SnakemakeApi(quiet) as api:
        try:
            wf = api.workflow(resource_settings=ResourceSettings(),
                              snakefile=Path(snakefile).resolve(), workdir=Path(workdir).resolve())
            rules = wf._workflow.rules
        except Exception as err:  # Snakemake runs the file as Python: any error of its code, reported as such
            raise UserError(f"--snakefile '{snakefile}' cannot be loaded by Snakemake: {type(err).__name__}: "
                            f"{' '.join(str(err).split())[:300]}") from None
        return {r.name: [str(o) for o in r.output] for r in rules}


def wildcards_for(path: str, patterns: list[str]) -> dict[str, str]:
    """Wildcard values of ``path`` under the first matching output pattern ({} if none)."""
    from snakemake.io import glob_wildcards

    for pattern in patterns:
        found = glob_wildcards(pattern, files=[path])._asdict()
        if found and all(len(v) == 1 for v in found.values()):
            return {k: v[0] for k, v in sorted(found.items())}
    return {}
