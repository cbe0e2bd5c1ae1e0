"""Device and CPU threads of a model job: CUDA when visible, else the CPU with a set thread count.

    python -c "from clerk.models.device import nvidia_gpu_visible; print(nvidia_gpu_visible())"
"""

from __future__ import annotations

from pathlib import Path

from clerk.errors import UserError


def pick_device() -> str:
    """``"cuda"`` when a CUDA device is available, else ``"cpu"``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def nvidia_gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible to this process, without importing torch (fast enough for
    Snakemake's DAG construction, which uses it to decide whether a model job claims ``gpu=1``).

    True when the NVIDIA driver lists at least one GPU under ``/proc/driver/nvidia/gpus`` and
    ``CUDA_VISIBLE_DEVICES`` does not hide them all (``""`` or ``"-1"``). It agrees with
    :func:`pick_device` on ordinary machines; a job always picks its device with
    :func:`pick_device`, so a disagreement only changes scheduling, never a result.
    """
    import os

    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def set_torch_threads(threads: int) -> None:
    """Run torch with ``threads`` intra-op CPU threads; 0 leaves torch's default.

    Model jobs of the workflow pass 1: on a small CPU box one thread per job and several jobs
    side by side do more work than one job with all threads (see ``workflow/rules/common.smk``).

    Raises:
        UserError: ``threads`` < 0.
    """
    if threads < 0:
        raise UserError(f"--threads must be >= 0, got {threads}")
    if threads:
        import torch

        torch.set_num_threads(threads)
