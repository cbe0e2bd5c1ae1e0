"""Trace and verify: walk a number or file back to its inputs, and re-check everything.

:func:`trace` prints the chain number -> file (sha256) -> rule (params) -> inputs, recursively,
from the manifest and numbers.json. :func:`verify` re-hashes every file the manifest records,
re-resolves every number and checks that the paper prints each number with its footnote.

    clerk trace main.clerk.test.accuracy_mean && clerk verify
"""

from __future__ import annotations

import math
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.files import dir_digest, dir_files, legacy_dir_digest, sha256_path
from clerk.provenance.keys import format_value, resolve
from clerk.provenance.numbers import footnote, reference

#: ``check_hash(path, want, what, listing=None)``: compare a file's (or a directory's) sha256 with
#: the recorded one; ``listing`` is a directory entry's recorded ``files`` (relpath -> sha256).
_HashCheck = Callable[..., None]


def trace(target: str, manifest: dict, numbers: dict) -> list[str]:
    """Lines of the chain number -> file -> rule (params) -> inputs -> ..., down to leaf inputs.

    Raises:
        UserError: ``target`` is neither a number id nor a file in the manifest.
    """
    files, lines, seen = manifest["files"], [], set()

    def walk(path: str, digest: str, depth: int) -> None:
        pad = "  " * depth + ("<- " if depth else "")
        digest = digest or "n/a (deleted after use: temp())"
        entry = files.get(path)
        if entry is None or entry["rule"] is None:
            lines.append(f"{pad}{path}  sha256 {digest}  (not produced by a rule)")
            return
        wc = ", ".join(f"{k}={v}" for k, v in entry["wildcards"].items())
        lines.append(f"{pad}{path}  sha256 {digest}  rule {entry['rule']}  wildcards {{{wc}}}  "
                     f"params [{', '.join(entry['params'])}]")
        if path in seen:
            lines.append("  " * (depth + 1) + "(inputs listed above)")
            return
        seen.add(path)
        lines.append("  " * (depth + 1) + f"shell: {entry['shellcmd']}")
        for inp, inp_digest in entry["inputs"].items():
            walk(inp, inp_digest, depth + 1)

    target_path = os.path.normpath(target)
    if target in numbers.get("numbers", {}):
        num = numbers["numbers"][target]
        lines.append(f"number {target} = {num['text']} (value {num['value']}, format "
                     f"'{num['format']}', key '{num['key']}')")
        walk(num["source"], num["sha256"], 1)
    elif Path(target_path).as_posix() in files:
        path = Path(target_path).as_posix()
        walk(path, files[path]["sha256"], 0)
    else:
        raise UserError(f"'{target}' is neither a number id in numbers.json nor a file in the manifest")
    return lines


def _git_ignored(workdir: Path, path: str) -> bool:
    """True when git ignores ``path`` (relative to ``workdir``): untracked and matching an ignore
    rule. Tracked files are never ignored, so a deleted committed file stays a problem."""
    try:
        proc = subprocess.run(["git", "check-ignore", "-q", path], cwd=workdir,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def verify(workdir: Path, manifest: dict | None, numbers: dict | None,
           paper: Path | None, *, absent: list[str] | None = None,
           strict: bool = False) -> list[str]:
    """Re-hash and re-resolve everything; return one message per mismatch ([] = all good).

    Checks: every manifest file and leaf input still has its sha256; every number's
    source still has the recorded sha256, the value at its key and its text; every number the
    paper references is in numbers.json and printed as ``reference(id, text)`` with its footnote.

    A clean clone lacks the large git-ignored outputs (base model, adapters) that the manifest
    records: unless ``strict``, a missing file that git ignores is appended to ``absent``
    instead of being a problem (it cannot be re-hashed here; its recorded sha256 still pins it).
    Any file that is present must match, and a missing file git does not ignore is a problem.
    A directory present here is checked file by file against the manifest's ``files`` listing
    (each missing, extra or changed file is named); a manifest without one (written before
    directories were listed) is checked on the digest, with or without Snakemake's marker.
    """
    workdir, problems = Path(workdir), []

    def check_hash(path: str, want: str | None, what: str, listing: dict | None = None) -> None:
        full = workdir / path
        if want is None:  # was already gone (temp()) when the manifest was made
            return
        if not full.exists() and not strict and _git_ignored(workdir, path):
            if absent is not None and path not in absent:
                absent.append(path)
        elif not full.exists():
            problems.append(f"{path}: missing ({what})")
        elif full.is_dir():
            problems.extend(_dir_problems(path, dir_files(full), want, listing, what))
        elif (got := sha256_path(full)) != want:
            problems.append(f"{path}: sha256 {got} != {want} recorded in {what}")

    files = (manifest or {}).get("files", {})
    _check_manifest(files, check_hash)
    nums = (numbers or {}).get("numbers", {})
    _check_numbers(workdir, files, nums, check_hash, problems)
    if paper is not None:
        problems += _paper_problems(paper, nums)
    return problems


def _dir_problems(path: str, got: dict[str, str], want: str, listing: dict | None, what: str) -> list[str]:
    """A present directory against its record: per file when ``listing`` is known, else the digest."""
    if listing is None:
        if want in (dir_digest(got), legacy_dir_digest(got)):
            return []
        return [f"{path}: directory sha256 {dir_digest(got)} != {want} recorded in {what}"]
    problems = [f"{path}/{rel}: missing (listed in {what})" for rel in sorted(set(listing) - set(got))]
    problems += [f"{path}/{rel}: not listed in {what}" for rel in sorted(set(got) - set(listing))]
    problems += [f"{path}/{rel}: sha256 {got[rel]} != {listing[rel]} recorded in {what}"
                 for rel in sorted(set(got) & set(listing)) if got[rel] != listing[rel]]
    if not problems and dir_digest(got) != want:  # a listing that disagrees with its own digest
        problems.append(f"{path}: directory sha256 {dir_digest(got)} != {want} recorded in {what}")
    return problems


def _check_manifest(files: dict, check_hash: _HashCheck) -> None:
    """Every manifest file, then every leaf input (one no rule wrote), by path."""
    leaves: dict[str, tuple[str, str]] = {}
    for path, entry in files.items():
        check_hash(path, entry["sha256"], "the manifest", entry.get("files"))
        for inp, digest in entry["inputs"].items():
            if inp not in files:
                leaves.setdefault(inp, (digest, path))
    for inp, (digest, parent) in sorted(leaves.items()):
        check_hash(inp, digest, f"the manifest as input of {parent}")


def _check_numbers(workdir: Path, files: dict, nums: dict, check_hash: _HashCheck,
                   problems: list[str]) -> None:
    """Every number's source pin (in numbers.json and the manifest), value and text."""
    for number_id, num in nums.items():
        src = num["source"]
        if src in files and files[src]["sha256"] != num["sha256"]:
            problems.append(f"number '{number_id}': numbers.json pins {src} at sha256 "
                            f"{num['sha256']} but the manifest has {files[src]['sha256']}")
        if not (workdir / src).is_file():
            problems.append(f"{src}: missing (source of number '{number_id}')")
            continue
        check_hash(src, num["sha256"], f"numbers.json for '{number_id}'")
        try:
            value = resolve(workdir / src, num["key"], f"number '{number_id}': ")
        except UserError as err:
            problems.append(str(err))
            continue
        text = format_value(value, num["format"])
        stored = math.nan if num["value"] is None else num["value"]
        same = (value == stored) or (math.isnan(value) and math.isnan(stored))
        if not same or text != num["text"]:
            problems.append(f"number '{number_id}': {src} key '{num['key']}' now gives {text} "
                            f"({value!r}); numbers.json has {num['text']} ({num['value']!r})")


def _paper_problems(paper: Path, nums: dict) -> list[str]:
    """Every number the paper refers to is in numbers.json, printed with its text and footnote."""
    text_md = Path(paper).read_text(encoding="utf-8") if Path(paper).is_file() else None
    if text_md is None:
        return [f"{paper}: missing (paper)"]
    problems = []
    for number_id in dict.fromkeys(re.findall(r"\[\^num-([A-Za-z0-9_.-]+)\](?!:)", text_md)):
        if number_id not in nums:
            problems.append(f"{paper}: refers to number '{number_id}', not in numbers.json")
        elif reference(number_id, nums[number_id]["text"]) not in text_md:
            problems.append(f"{paper}: number '{number_id}' is not printed as "
                            f"{nums[number_id]['text']}")
        elif footnote(number_id, nums[number_id]) not in text_md.splitlines():
            problems.append(f"{paper}: footnote of number '{number_id}' is missing or stale")
    return problems
