"""Provenance files: the sha256 of a file or a directory, and deterministic JSON files.

Every hash in numbers.json and manifest.json is :func:`sha256_path`; both files are written with
:func:`write_json` (sorted keys, so a rerun on the same inputs writes the same bytes). A
directory's digest covers the relative path and content of every file in it (:func:`dir_files`)
but Snakemake's own marker, so a directory made by hand and one made by a rule hash alike.

    python -c "from clerk.provenance.files import sha256_path; print(sha256_path('config'))"
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from clerk.errors import UserError

#: Files Snakemake itself writes into a ``directory()`` output (an empty timestamp marker): not
#: part of the output's content, so left out of its digest and file list.
SNAKEMAKE_MARKERS = frozenset({".snakemake_timestamp"})


def dir_files(path: str | Path) -> dict[str, str]:
    """``relpath -> sha256`` of every file under a directory (POSIX paths, sorted), markers excluded."""
    path = Path(path)
    return {p.relative_to(path).as_posix(): sha256_path(p) for p in sorted(path.rglob("*"))
            if p.is_file() and p.name not in SNAKEMAKE_MARKERS}


def dir_digest(files: dict[str, str]) -> str:
    """The digest of a directory from its :func:`dir_files`: sha256 of its ``relpath<TAB>sha256`` lines,
    sorted by path components (the order of ``sorted(Path.rglob())``, as manifests always used).

    >>> dir_digest({}) == hashlib.sha256(b"").hexdigest()
    True
    """
    lines = [f"{rel}\t{files[rel]}\n" for rel in sorted(files, key=lambda rel: rel.split("/"))]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def legacy_dir_digest(files: dict[str, str]) -> str:
    """The digest manifests made before the marker was excluded recorded for a Snakemake directory
    output: the same lines plus the (empty) ``.snakemake_timestamp``. Lets a current listing be
    checked against such a manifest."""
    empty = hashlib.sha256(b"").hexdigest()
    return dir_digest({**files, **{name: empty for name in SNAKEMAKE_MARKERS}})


def sha256_path(path: str | Path) -> str:
    """Hex sha256 of a file; of a directory, :func:`dir_digest` of its :func:`dir_files`.

    Raises:
        UserError: the path does not exist.
    """
    path = Path(path)
    if path.is_dir():
        return dir_digest(dir_files(path))
    if not path.is_file():
        raise UserError(f"file '{path}' does not exist")
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_json(path: str | Path, what: str) -> dict:
    """Read a JSON object file; a missing, empty, truncated, non-UTF-8 or non-object file (or a
    folder) is a UserError naming ``what`` and the path (:func:`clerk.inputs.read_json`)."""
    from clerk.inputs import read_json

    return read_json(path, what, shape=dict)


def write_json(obj: Any, path: str | Path) -> None:
    """Deterministic JSON: sorted keys, one-space indent, trailing newline."""
    from clerk.atomic import write_text

    write_text(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")  # whole or absent
