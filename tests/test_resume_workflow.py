"""Resume under the workflow: a `snakemake` run killed (SIGKILL) during `train` resumes on rerun.

Snakemake deletes an interrupted job's output directory before it reruns the job, so the train
rule keeps its checkpoints outside it (``resources/checkpoints/train/{seed}``, not an output).
The test reruns only the train rule of one seed, in a copy of the session's smoke run (whose
adapter, trained without interruption, is the reference); the smoke profile checkpoints at
step 8 of 16.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from signal_kit import wait_signalled

SEED = "137"
TARGET = f"results/train/{SEED}"
CHECKPOINTS = Path(f"resources/checkpoints/train/{SEED}")
# The target comes first: --configfile takes every word after it as a file.
ARGS = ["--cores", "2", "--configfile", "config/smoke.yaml"]

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "OMP_NUM_THREADS": "1"}


def _snakemake(repo: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["snakemake", *args, *ARGS], cwd=repo, capture_output=True, text=True, timeout=600,
                          env=_env())
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc


def _kill_during_train(repo: Path) -> None:
    """Rerun the train rule; a watcher process (signal_kit.py) SIGKILLs the whole process group
    as soon as the step-8 checkpoint is complete."""
    marker = repo / CHECKPOINTS / "checkpoint-8" / "clerk_complete"
    output = repo / "kill_during_train.log"
    with output.open("w") as sink:
        proc = subprocess.Popen(["snakemake", TARGET, "--forcerun", "train", *ARGS], cwd=repo, env=_env(),
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    # snakemake, its job's shell and `clerk train` share the new session's process group.
    watched = wait_signalled(proc, marker, signal.SIGKILL, group=True)
    if proc.returncode != -signal.SIGKILL:
        pytest.fail(f"the workflow ended (rc {proc.returncode}, watcher rc {watched}) without being "
                    f"killed at step 8's checkpoint; its output:\n" + output.read_text()[-4000:])
    for _ in range(500):  # the orphaned `clerk train` is gone too (reaped by init)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    else:
        pytest.fail("a process of the killed workflow is still running")
    assert marker.exists(), "no checkpoint was written before the kill"
    assert not (repo / TARGET / "metrics.json").exists(), "training finished before the kill"


def AFTER_SMOKE_RUN(repo: Path) -> dict:  # noqa: N802 (the name conftest.py looks for)
    """In a copy of the finished smoke run (``repo``): its train job of one seed killed mid-run,
    then rerun to the end. conftest.py runs this in the background as soon as the smoke run ends,
    beside the other tests that read the smoke run."""
    reference = {name: (repo / TARGET / name).read_bytes() for name in ("adapter_model.safetensors", "train_log.csv")}
    _kill_during_train(repo)
    _snakemake(repo, "--unlock")
    rerun = _snakemake(repo, TARGET)
    return {
        "reference": reference,
        "rerun": rerun.stdout + rerun.stderr,
        "log": (repo / f"logs/train/{SEED}.log").read_text(),
        "metrics": json.loads((repo / TARGET / "metrics.json").read_text()),
        "train_log": (repo / TARGET / "train_log.csv").read_text(),
        "adapter": (repo / TARGET / "adapter_model.safetensors").read_bytes(),
        "checkpoints_left": (repo / CHECKPOINTS).exists(),
    }


@pytest.fixture(scope="module")
def resumed(after_smoke_run) -> dict:
    """The outcome of :func:`AFTER_SMOKE_RUN` (its failure, if any, raised here)."""
    return after_smoke_run(__name__)


class TestResumeUnderWorkflow:
    def test_rerun_resumes_from_the_checkpoint(self, resumed):
        """The rerun's `clerk train` log says it resumed from the checkpoint outside the output."""
        assert "train" in resumed["rerun"]  # Snakemake reran the (incomplete) train job
        expected = f"clerk train: resuming from checkpoint {CHECKPOINTS / 'checkpoint-8'} (step 8)"
        assert expected in resumed["log"]
        assert resumed["metrics"]["resumed_from_step"] == 8

    def test_resumed_adapter_equals_uninterrupted(self, resumed):
        """The resumed adapter is byte-identical to the uninterrupted smoke run's (CPU, fp32)."""
        assert resumed["adapter"] == resumed["reference"]["adapter_model.safetensors"]

    def test_log_survives_the_deleted_output(self, resumed):
        """train_log.csv keeps the row logged before the kill (restored from the checkpoint's copy)
        and matches the uninterrupted log in steps, learning rates and tokens seen; losses match
        but at step 10, whose logged mean covers only steps 9-10 after a resume at step 8
        (transformers restarts its logging window at the checkpoint)."""
        ours = [line.split(",") for line in resumed["train_log"].splitlines()]
        ref = [line.split(",") for line in resumed["reference"]["train_log.csv"].decode().splitlines()]
        assert [row[0] for row in ours] == [row[0] for row in ref] == ["step", "5", "10", "15"]
        assert [(r[0], r[2], r[3]) for r in ours] == [(r[0], r[2], r[3]) for r in ref]
        assert [r[1] for r in ours if r[0] != "10"] == [r[1] for r in ref if r[0] != "10"]

    def test_checkpoints_cleaned_once_complete(self, resumed):
        """The checkpoint directory is removed once the adapter is written."""
        assert not resumed["checkpoints_left"]
