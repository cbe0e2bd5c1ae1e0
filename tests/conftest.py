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


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """A copy of the repository's sources (no shipped results) with the smoke workflow run to the
    end on the local machine: once per test session, shared by test_workflow.py and
    test_slurm.py (which compares its Slurm run's tables with these)."""
    from workflow_kit import SMOKE, copy_sources, run_snakemake

    dest = copy_sources(tmp_path_factory.mktemp("smoke") / "repo")
    proc = run_snakemake(dest, "--cores", "2", *SMOKE)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return dest
