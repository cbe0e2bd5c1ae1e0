"""Test-wide settings: offline hubs, quiet tokenizers, fixed thread counts; the one smoke run.

Nothing in the suite may reach a model hub: the offline variables make any accidental hub call
fail fast instead of hanging.
"""

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
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
# A TorchInductor cache of the suite's own (llguidance compiles its token-mask kernel with
# torch.compile): a cache that a workflow run on this machine filled under the `clerk` CLI's
# pinned kernel dispatch (ATEN_CPU_CAPABILITY=avx2) aborted the suite's in-process decoding on an
# AVX-512 CPU (`Fatal Python error: Aborted` in test_locomo, 2026-12-02). Subprocesses inherit it.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="clerk-tests-inductor-")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)


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
    :meth:`result` waits for it; a failed run fails every test that needs it, with its log.

    A test module may also define ``AFTER_SMOKE_RUN(copy: Path) -> object``: work on its own copy
    of the finished run (taken before any test can touch the run) that goes on in a background
    thread (one per module, side by side) while the other smoke tests run; :meth:`follower` waits
    for its result or exception.
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self.base: Path | None = None
        self.log = None
        self.thread: threading.Thread | None = None
        self.copied = threading.Event()  # set once the run ended and every follower has its copy
        self.pool: ThreadPoolExecutor | None = None
        self.followers: dict[str, Future] = {}

    def start(self, followers: dict | None = None) -> None:
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
            return
        self.thread = threading.Thread(target=self._follow, args=(followers or {},), daemon=True)
        self.thread.start()

    def _follow(self, followers: dict) -> None:
        """After a successful run: copy it for each follower and start its work on the copy (all
        side by side), then release :meth:`result`."""
        try:
            if self.proc.wait() == 0 and followers:
                self.pool = ThreadPoolExecutor(max_workers=len(followers))
                for name, work in followers.items():
                    copy = self.base / f"after-{name}"
                    shutil.copytree(self.dest, copy, symlinks=True)
                    self.followers[name] = self.pool.submit(work, copy)
        finally:
            self.copied.set()

    def result(self) -> Path:
        if self.proc is None and self.error is None:  # not announced by the collection
            self.start()
        if self.error is not None:
            pytest.fail(self.error)
        returncode = self.proc.wait(timeout=900)
        self.copied.wait(timeout=300)
        log = (self.base / "snakemake.log").read_text()
        assert returncode == 0, f"the smoke workflow run failed (exit {returncode}):\n{log[-6000:]}"
        return self.dest

    def follower(self, name: str):
        """The result of module ``name``'s AFTER_SMOKE_RUN (its exception re-raised)."""
        self.result()
        if name not in self.followers:
            pytest.fail(f"{name}.AFTER_SMOKE_RUN was not started at collection")
        return self.followers[name].result(timeout=900)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=60)
        if self.thread is not None:
            self.thread.join(timeout=300)
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        if self.log is not None:
            self.log.close()
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)


_SMOKE_RUN = _SmokeRun()


def _needs_smoke_run(item) -> bool:
    return "smoke_run" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config, items):
    """The tests that need the smoke run go last (in their order), so that every other test runs
    while the smoke run is still going in the background; a module's other tests stay ahead. Those
    that wait for AFTER_SMOKE_RUN work come at the very end, after the ones that read the run
    while that work goes on."""
    items.sort(key=lambda item: (_needs_smoke_run(item), "after_smoke_run" in getattr(item, "fixturenames", ())))


def pytest_collection_finish(session):
    """Start the smoke run now if any selected test needs it (directly or through a fixture), with
    the AFTER_SMOKE_RUN work of the selected tests' modules."""
    if session.config.option.collectonly or not any(_needs_smoke_run(item) for item in session.items):
        return
    followers = {item.module.__name__: item.module.AFTER_SMOKE_RUN for item in session.items
                 if _needs_smoke_run(item) and hasattr(item.module, "AFTER_SMOKE_RUN")}
    _SMOKE_RUN.start(followers)


def pytest_unconfigure(config):
    _SMOKE_RUN.stop()


@pytest.fixture(scope="session")
def smoke_run():
    """A copy of the repository's sources (no shipped results) with the smoke workflow run to the
    end on the local machine: once per test session (started in the background at collection),
    shared by test_workflow.py, test_slurm.py (which compares its Slurm run's tables with these)
    and test_resume_workflow.py (whose AFTER_SMOKE_RUN kills and reruns a train job in its own
    copy, beside the other readers)."""
    return _SMOKE_RUN.result()


@pytest.fixture(scope="session")
def after_smoke_run(smoke_run):
    """``after_smoke_run(module_name)``: the result of that module's AFTER_SMOKE_RUN work (which
    the collection started; a test using this fixture counts as one that needs the smoke run)."""
    return _SMOKE_RUN.follower
