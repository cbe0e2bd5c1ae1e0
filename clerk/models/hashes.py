"""File digests: a file's sha256 checked against its pin, and every file of a model directory.

``source.json`` records the digest of every file (:func:`file_hashes`); a pinned source file is
checked with :func:`verify_sha256` before it is used.

    python -c "from clerk.models.hashes import file_hashes; print(file_hashes('clerk/phrasing'))"
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from clerk.errors import UserError

#: The record a materialised directory carries (written last; not part of its own file hashes).
SOURCE_FILE = "source.json"


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str) -> str:
    """Check a file's sha256 against the pinned value.

    Args:
        path: the file.
        expected: pinned hex digest (case-insensitive).

    Returns:
        The digest (lower-case hex).

    Raises:
        UserError: the digest differs (the message gives both digests and what to do).
    """
    got = sha256_file(path)
    if got != expected.lower():
        raise UserError(
            f"sha256 of {path} is {got}, expected {expected.lower()} (--sha256): the file is not the pinned "
            "source; reinstall the pinned package version or update the pinned sha256 in the config"
        )
    return got


def file_hashes(directory: str | Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` except ``source.json``, keyed by sorted relative path."""
    root = Path(directory)
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.name != SOURCE_FILE)
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in paths}
