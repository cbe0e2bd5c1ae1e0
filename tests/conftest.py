"""Test-wide settings: offline hubs, quiet tokenizers, fixed thread counts; the one smoke run.

Nothing in the suite may reach a model hub: the offline variables make any accidental hub call
fail fast instead of hanging.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a test module: on a shared 2-core box, OpenMP spinning of tiny models
    is many times slower than one thread. Use with ``pytestmark = pytest.mark.usefixtures(...)``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def copy_sources(dest: Path) -> Path:
    """Copy the repository's tracked and untracked-not-ignored files to ``dest``, leaving out the
    shipped default-profile results (they must not leak into a smoke run)."""
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


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """A copy of the repository's sources (no shipped results) with the smoke workflow run to the
    end, once per session (tests/test_workflow.py inspects it; the resume test copies it)."""
    dest = copy_sources(tmp_path_factory.mktemp("smoke") / "repo")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(["snakemake", "--cores", "2", "--configfile", "config/smoke.yaml"],
                          cwd=dest, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return dest
