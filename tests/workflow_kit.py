"""Helpers of the workflow tests: run Snakemake, copy the repository's sources into a scratch
directory (the working tree's own ``results/`` is never touched).

Used by ``conftest.py`` (the session's one local smoke run), ``test_workflow.py`` and
``test_slurm.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ["--configfile", "config/smoke.yaml"]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def run_snakemake(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` in ``workdir`` with the hubs offline; output captured as text."""
    return subprocess.run(
        ["snakemake", *args], cwd=workdir, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **OFFLINE},
    )


def shell_commands(text: str, verb: str) -> list[dict]:
    """The effective options of every ``clerk VERB`` shell command a ``snakemake -p`` run printed:
    each command line parsed by the ``clerk`` parser with its ``--config`` object applied (flags
    win), exactly as the verb sees them."""
    import shlex

    from clerk.cli import apply_config_json, given_flags, make_parser, verb_parser

    found = []
    for line in text.splitlines():
        if not line.startswith(f"Shell command: clerk {verb} "):
            continue
        argv = shlex.split(line.removeprefix("Shell command: ").split(" > ")[0])[1:]
        parser = make_parser()
        args = parser.parse_args(argv)
        if args.config_json is not None:
            apply_config_json(args, verb_parser(parser, args.verb), given_flags(argv))
        found.append({k: v for k, v in vars(args).items() if k not in ("func", "config_json")})
    return found


def copy_sources(dest: Path) -> Path:
    """Copy the repository's tracked and untracked-but-not-ignored files to ``dest``, without the
    shipped results (``results/`` and the rendered paper), which must not leak into a new run."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if rel.startswith("results/") or rel == "paper/paper.md":
            continue
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest
