"""Test-wide settings: offline hubs, quiet tokenizers, fixed thread counts; the one smoke run.

Nothing in the suite may reach a model hub: the offline variables make any accidental hub call
fail fast instead of hanging.
"""

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One OpenMP thread per process: the smoke run (two single-threaded jobs) runs in the background
# beside the unit tests on a 2-core box, where spinning OpenMP threads of tiny models fight.
os.environ.setdefault("OMP_NUM_THREADS", "1")
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


class _SmokeRun:
    """The smoke workflow run of this test session, started in the background as soon as the
    collection shows a test that needs it, so that it runs beside the unit tests instead of
    after them (it is the largest single item of the suite: about two minutes on two cores).
    :meth:`result` waits for it; a failed run fails every test that needs it, with its log."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self.base: Path | None = None
        self.log = None

    def start(self) -> None:
        from workflow_kit import OFFLINE, SMOKE, copy_sources

        self.base = Path(tempfile.mkdtemp(prefix="clerk-smoke-"))
        self.dest = copy_sources(self.base / "repo")
        self.log = (self.base / "snakemake.log").open("w")
        try:
            self.proc = subprocess.Popen(["snakemake", "--cores", "2", *SMOKE], cwd=self.dest, stdout=self.log,
                                         stderr=subprocess.STDOUT, env={**os.environ, **OFFLINE},
                                         start_new_session=True)
        except OSError as exc:  # no snakemake on PATH: the tests that need the run fail saying so
            self.error = f"could not start the smoke workflow run: {exc} (is the venv's bin on PATH?)"

    def result(self) -> Path:
        if self.proc is None and self.error is None:  # not announced by the collection
            self.start()
        if self.error is not None:
            pytest.fail(self.error)
        returncode = self.proc.wait(timeout=900)
        log = (self.base / "snakemake.log").read_text()
        assert returncode == 0, f"the smoke workflow run failed (exit {returncode}):\n{log[-6000:]}"
        return self.dest

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)
        if self.log is not None:
            self.log.close()
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)


_SMOKE_RUN = _SmokeRun()


def _needs_smoke_run(item) -> bool:
    return "smoke_run" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config, items):
    """The modules with a test that needs the smoke run go last (each kept whole and in order),
    so every other test runs while the smoke run is still going in the background."""
    late = {item.module.__name__ for item in items if _needs_smoke_run(item)}
    items.sort(key=lambda item: item.module.__name__ in late)  # stable: order kept within each part


def pytest_collection_finish(session):
    """Start the smoke run now if any selected test needs it (directly or through a fixture)."""
    if not session.config.option.collectonly and any(_needs_smoke_run(item) for item in session.items):
        _SMOKE_RUN.start()


def pytest_unconfigure(config):
    _SMOKE_RUN.stop()


@pytest.fixture(scope="session")
def smoke_run():
    """A copy of the repository's sources (no shipped results) with the smoke workflow run to the
    end on the local machine: once per test session (started in the background at collection),
    shared by test_workflow.py, test_resume_workflow.py and test_slurm.py (which compares its
    Slurm run's tables with these)."""
    return _SMOKE_RUN.result()
