"""Outputs that are either whole or absent: atomic writes, completion markers, output paths checked
up front.

A verb that writes outputs writes each one to a temporary name in the same folder and renames it
over the final name last (``os.replace``, atomic on POSIX), so a reader never sees a half-written
file and an interrupted run leaves the previous file or none. A verb whose folder has a
*completion marker* (``metrics.json`` of ``clerk evaluate``: its existence means the run
completed) removes a stale marker before anything else (:func:`start_outputs`), writes the other
outputs, and writes the marker last: a failed rerun leaves no marker, so the old one never vouches
for new, partial files.

    from clerk.atomic import atomic_write, start_outputs, write_text
    out = start_outputs(args.out, "--out", marker="metrics.json")   # checked before the run
    with atomic_write(out / "predictions.jsonl") as fh: ...
    write_text(out / "metrics.json", text)                        # the marker, last
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from clerk.errors import UserError


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", *, encoding: str | None = "utf-8",
                 newline: str | None = None) -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success flush, fsync and rename it to ``path``.

    On an exception the temporary file is removed and ``path`` is untouched (the previous file, or
    none). ``mode`` is ``"w"`` or ``"wb"``.

    >>> import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_write(d / "a.txt") as fh: _ = fh.write("whole")
    >>> try:
    ...     with atomic_write(d / "a.txt") as fh: _ = fh.write("half"); raise KeyboardInterrupt
    ... except KeyboardInterrupt: pass
    >>> (d / "a.txt").read_text(), sorted(p.name for p in d.iterdir())
    ('whole', ['a.txt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        binary = "b" in mode
        with os.fdopen(fd, mode, **({} if binary else {"encoding": encoding, "newline": newline})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""
    with atomic_write(path, encoding=encoding, newline="") as fh:
        fh.write(text)


def check_out_dir(path: str | Path, arg: str = "--out") -> Path:
    """An output folder: an existing writable folder, or one that can be created (its nearest
    existing ancestor is a writable folder; nothing is created here, the writes create it). A
    UserError naming ``arg`` otherwise. Call before any work, so a run never fails at its end."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{arg} must be a folder (it is created if missing), got {str(path)!r}, which is a file")
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UserError(f"{arg} must be a folder that can be created, got {str(path)!r}: {str(ancestor)!r} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UserError(f"{arg} must be a writable folder, got {str(path)!r} ({str(ancestor)!r} is not writable)")
    return path


def check_out_file(path: str | Path, arg: str = "--out") -> Path:
    """An output file path: not a folder, and its folder exists or can be created (UserError
    naming ``arg`` otherwise). Call before any work."""
    path = Path(path)
    if path.is_dir() or str(path).endswith(os.sep):
        raise UserError(f"{arg} must be a file path, got {str(path)!r}, which is a folder")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise UserError(f"{arg} must be a file path in a folder, got {str(path)!r}: {str(parent)!r} is a file")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"{arg} must be a file path whose folder can be created, got {str(path)!r} "
                        f"({err.strerror})") from None
    return path


def start_outputs(path: str | Path, arg: str = "--out", *, marker: str | None = None) -> Path:
    """Check the output folder (:func:`check_out_dir`) and remove a stale completion ``marker``
    in it before the run writes anything: a failed run must not leave an old marker behind."""
    out = check_out_dir(path, arg)
    if marker is not None:
        (out / marker).unlink(missing_ok=True)
    return out
