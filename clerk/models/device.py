"""Device, CPU threads and CPU numerics of a model job: CUDA when visible, else the CPU with a set
thread count and kernel dispatch pinned to one x86 instruction set, so that a rerun on another
x86-64 machine computes the same bits (issue 14; measured: ``docs/DECISIONS.md``).

    python -c "from clerk.models.device import nvidia_gpu_visible; print(nvidia_gpu_visible())"
    python -c "from clerk.models.device import apply_reproducible_numerics as a; print(a())"
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, MutableMapping

from clerk.errors import UserError

#: Environment that pins CPU kernel dispatch, per ``CLERK_NUMERICS`` mode. Torch's libraries read
#: these once, at start: set them before torch is imported (:func:`apply_reproducible_numerics`,
#: called by ``clerk`` before any verb runs). Measured: ``docs/DECISIONS.md``. They
#: pin fp32 work; bf16 is not reproducible across CPUs with and without bf16 units whatever the
#: pins (oneDNN's bf16 kernels there, ATen's own fallback here), so reproducible runs use fp32.
#: (``ONEDNN_MAX_CPU_ISA`` is left alone: no effect on fp32, measured.)
NUMERICS_MODES: dict[str, dict[str, str]] = {
    # The default: free on this AVX2 machine (reads, writes and training at the same CPU time).
    "pinned": {
        # ATen's vectorised kernels (softmax, RMSNorm, SiLU, exp/log, reductions, CPU attention):
        # the AVX2 build everywhere, not AVX-512 where the CPU has it (another vector width is
        # another summation order). Measured: `default` vs `avx2` changes scores and adapters.
        "ATEN_CPU_CAPABILITY": "avx2",
        # MKL (every fp32 matmul): conditional numerical reproducibility, AUTO branch: fixed cache
        # sizes, deterministic reductions, static scheduling, so blocking no longer follows the
        # CPU's caches. The kernel stays MKL's choice: by ISA on Intel CPUs; on AMD its one path
        # for non-Intel CPUs (MKL_VERBOSE names no ISA there; MKL_CBWR=AVX2 falls back to AUTO).
        "MKL_CBWR": "AUTO",
    },
    # Also across CPU vendors (Intel <-> AMD): MKL's COMPATIBLE branch (SSE2 code), the one MKL
    # documents as giving the same results on Intel and non-Intel CPUs. About 2.5x the CPU time
    # of reads and 2x of writes (measured).
    "strict": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"},
    # Each library's own dispatch: fastest on AVX-512 machines; results then depend on the CPU.
    "native": {},
}
#: The pins of the default mode.
REPRODUCIBLE_ENV = NUMERICS_MODES["pinned"]
#: Environment variable choosing the mode (default ``pinned``).
NUMERICS_SWITCH = "CLERK_NUMERICS"


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


def apply_reproducible_numerics(environ: MutableMapping[str, str] | None = None) -> dict[str, str | None]:
    """Set the pins of the ``CLERK_NUMERICS`` mode (default ``pinned``, see :data:`NUMERICS_MODES`)
    in ``environ`` (default ``os.environ``); a variable the user already set keeps its value.

    Returns:
        The values of the pinned variables now in effect (``None`` = unset).

    When torch is already imported in this process (a test calling ``clerk.cli.main``), nothing is
    set: torch's libraries may have read their environment, so a late pin would be recorded without
    being in force; :func:`numerics_record` then shows what is.

    Raises:
        UserError: ``CLERK_NUMERICS`` is not a key of :data:`NUMERICS_MODES`.
    """
    environ = os.environ if environ is None else environ
    mode = environ.get(NUMERICS_SWITCH, "pinned")
    if mode not in NUMERICS_MODES:
        raise UserError(f"{NUMERICS_SWITCH} must be one of {', '.join(NUMERICS_MODES)}, got {mode!r}")
    if not (environ is os.environ and "torch" in sys.modules):
        for key, value in NUMERICS_MODES[mode].items():
            environ.setdefault(key, value)
    return {k: environ.get(k) for k in REPRODUCIBLE_ENV}


def numerics_record() -> dict[str, Any]:
    """What decides a model job's CPU bits, for its outputs: the pins in effect, torch's kernel
    capability and threads, deterministic-algorithms mode and the CPU model."""
    import torch

    cpu = "unknown"
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"mode": os.environ.get(NUMERICS_SWITCH, "pinned"),
            "env": {k: os.environ.get(k) for k in REPRODUCIBLE_ENV},
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_threads": torch.get_num_threads(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cpu": cpu}
