"""Provenance files: the sha256 of a file or a directory, and deterministic JSON files.

Every hash in numbers.json and manifest.json is :func:`sha256_path`; both files are written with
:func:`write_json` (sorted keys, so a rerun on the same inputs writes the same bytes).

    python -c "from clerk.provenance.files import sha256_path; print(sha256_path('config'))"
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from clerk.errors import UserError


def sha256_path(path: str | Path) -> str:
    """Hex sha256 of a file; of a directory, the sha256 of its sorted ``relpath<TAB>sha256`` lines.

    Raises:
        UserError: the path does not exist.
    """
    path = Path(path)
    if path.is_dir():
        lines = [f"{p.relative_to(path).as_posix()}\t{sha256_path(p)}\n"
                 for p in sorted(path.rglob("*")) if p.is_file()]
        return hashlib.sha256("".join(lines).encode()).hexdigest()
    if not path.is_file():
        raise UserError(f"file '{path}' does not exist")
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_json(path: str | Path, what: str) -> dict:
    """Read a JSON file; a missing file is a UserError naming ``what`` and the path."""
    if not Path(path).is_file():
        raise UserError(f"{what} file '{path}' does not exist")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(obj: Any, path: str | Path) -> None:
    """Deterministic JSON: sorted keys, one-space indent, trailing newline."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", encoding="utf-8")
