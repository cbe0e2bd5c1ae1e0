"""The manifest: every file under ``results/`` (and the paper) with sha256, size, producing rule,
wildcards, params and hashed inputs, plus the code version and package versions.

A directory output (base model, SFT dataset, adapter) is an entry too: its sha256 is the digest of
every file in it (:func:`~clerk.provenance.files.dir_digest`), ``bytes`` their total size and
``files`` the sha256 of each, so a rerun can tell which file of an adapter differs.

Inputs that a rule produced are listed too (transitively), so ``clerk trace`` can walk from any
listed file down to the files no rule wrote (config, code, package data).

    clerk manifest --root results --extra paper/paper.md --out results/manifest.json
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from clerk.errors import UserError
from clerk.provenance.files import dir_digest, dir_files, sha256_path
from clerk.provenance.records import find_record, rule_output_patterns, snakemake_records, wildcards_for

#: Packages whose versions the manifest records (missing ones are recorded as null).
PACKAGES = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "snakemake",
            "pandas", "numpy", "scipy", "matplotlib", "seaborn")


#: What decides a run's outputs: a change here from the commit makes the code "dirty". The run's own
#: outputs (results/, paper/paper.md), benchmarks, docs and the README may differ freely.
CODE_PATHS = ("clerk", "workflow", "config", "paper/template.md", "paper/numbers.yaml",
              "paper/tolerances.yaml", "pyproject.toml", "requirements.lock", "Makefile")


def code_version(root: Path | None = None) -> dict:
    """The clerk version and the git commit of its checkout (null outside a git checkout).

    ``git_dirty``: a tracked file of :data:`CODE_PATHS` differs from the commit (worktree or
    index); changes elsewhere, such as the ``results/`` files a run rewrites, do not count.
    ``root``: the checkout (default: the one clerk is imported from).
    """
    import clerk

    root = Path(clerk.__file__).resolve().parent.parent if root is None else Path(root)
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # read-only: never refresh the index

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                                  text=True, env=env, check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    return {"clerk": clerk.__version__, "git_commit": commit,
            "git_dirty": None if commit is None else bool(dirty)}


def package_versions() -> dict[str, str | None]:
    """Installed versions of :data:`PACKAGES` and Python."""
    from importlib import metadata

    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _file_entry(workdir: Path, path: str, records: dict, patterns: dict, listed: bool,
                listing_of: Callable[[Path], dict[str, str]]) -> dict:
    full, (output, record) = workdir / path, find_record(records, path)
    if not full.exists() and (listed or record is None):
        raise UserError(f"manifest: file '{path}' does not exist")
    # An unlisted input that is gone was a temp() output: keep its record, with no hash.
    def digest_of(path: Path) -> str:
        return dir_digest(listing_of(path)) if path.is_dir() else sha256_path(path)

    entry = {"sha256": digest_of(full) if full.exists() else None,
             "bytes": full.stat().st_size if full.is_file() else None,
             "rule": None, "wildcards": {}, "params": [], "shellcmd": None, "log": [], "inputs": {}}
    if full.is_dir():  # every file of a directory output, and their total size
        entry["files"] = listing_of(full)
        entry["bytes"] = sum((full / rel).stat().st_size for rel in entry["files"])
    if record is None:
        return entry
    if record.get("incomplete"):
        raise UserError(f"manifest: '{output}' is marked incomplete by Snakemake; rerun the workflow")
    checksums = record.get("input_checksums") or {}
    for inp in record.get("input") or []:
        if inp.startswith("<"):  # "<pipe>" / "<service>": nothing on disk to hash
            continue
        digest = digest_of(workdir / inp) if (workdir / inp).exists() else None
        recorded = str(checksums.get(inp, f"sha256:{digest}"))
        if digest and (recorded if ":" in recorded else f"sha256:{recorded}") != f"sha256:{digest}":
            raise UserError(f"manifest: input '{inp}' changed after rule {record['rule']} wrote "
                            f"'{output}' (stale output); rerun the workflow")
        entry["inputs"][os.path.normpath(inp)] = digest
    entry.update(rule=record["rule"], params=record.get("params") or [],
                 shellcmd=record.get("shellcmd"), log=record.get("log") or [],
                 wildcards=wildcards_for(output, patterns.get(record["rule"], [])))
    if output != os.path.normpath(path):
        entry["output"] = output  # the directory() output the file lives in
    return entry


def build_manifest(workdir: Path, roots: list[str], extras: list[str],
                   exclude: list[str], snakefile: Path | None) -> dict:
    """Hash every file under ``roots`` (but dotfiles) plus ``extras``, with Snakemake's record of each.

    Inputs that Snakemake produced are added too (transitively), so ``trace`` can walk from any
    listed file down to files no rule wrote (config, code, package data); inputs deleted since
    (``temp()``) keep their record with a null sha256.

    Raises:
        UserError: a missing file or input, an incomplete record, or an input whose sha256
            differs from the checksum Snakemake recorded when it ran the rule (stale output).
    """
    workdir = Path(workdir)
    records = snakemake_records(workdir)
    patterns = rule_output_patterns(snakefile, workdir) if snakefile else {}
    skip = {os.path.normpath(p) for p in exclude}
    queue = [os.path.normpath(p.relative_to(workdir)) for root in roots  # no dotfiles (.gitkeep)
             for p in sorted((workdir / root).rglob("*")) if p.is_file() and not p.name.startswith(".")]
    queue += [os.path.normpath(p) for p in extras]
    listed, files = set(queue), {}
    listing_of = functools.lru_cache(maxsize=None)(dir_files)  # a model dir is an input of many jobs
    while queue:
        path = queue.pop(0)
        if path in files or path in skip:
            continue
        files[path] = _file_entry(workdir, path, records, patterns, path in listed, listing_of)
        queue += [i for i in files[path]["inputs"] if find_record(records, i)[1] is not None]
    return {"code": code_version(), "packages": package_versions(),
            "files": {Path(k).as_posix(): v for k, v in sorted(files.items())}}
