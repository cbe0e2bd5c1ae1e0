"""Device, CPU threads, CPU numerics and precision of a model job: CUDA when visible, else the
CPU with a set thread count; MKL's conditional numerical reproducibility; and the precision mode
(fp32, or bf16 frozen weights where the hardware has bf16 units).

ATen's kernel dispatch is no longer pinned to AVX2: the pin did not make runs
bit-identical across machines (an Intel rerun trained a different adapter from the AMD one on the
same SFT bytes) and it broke bf16 (SDPA's "pack_vnni2 is only supported when avx512 is supported").

    python -c "from clerk.models.device import nvidia_gpu_visible; print(nvidia_gpu_visible())"
    python -c "from clerk.models.device import apply_reproducible_numerics as a; print(a())"
    python -c "from clerk.models.device import bf16_units; print(bf16_units())"
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from clerk.errors import UserError

#: Environment set per ``CLERK_NUMERICS`` mode. Torch's libraries read these once, at start: set
#: them before torch is imported (:func:`apply_reproducible_numerics`, called by ``clerk`` before
#: any verb runs). Measured: ``docs/DECISIONS.md``.
NUMERICS_MODES: dict[str, dict[str, str]] = {
    # The default. MKL (every fp32 matmul): conditional numerical reproducibility, AUTO branch:
    # fixed cache sizes, deterministic reductions, static scheduling, so blocking no longer
    # follows the CPU's caches. ATen's own kernels take the CPU's widest instruction set
    # (AVX-512 where present): the AVX2 pin that reruns once took is gone (see above).
    "pinned": {"MKL_CBWR": "AUTO"},
    # Also across CPU vendors (Intel <-> AMD) for MKL: its COMPATIBLE branch (SSE2 code), the one
    # MKL documents as giving the same results on Intel and non-Intel CPUs. About 2.5x the CPU
    # time of reads and 2x of writes (measured).
    "strict": {"MKL_CBWR": "COMPATIBLE"},
    # Each library's own dispatch.
    "native": {},
}
#: The pins of the default mode.
REPRODUCIBLE_ENV = NUMERICS_MODES["pinned"]
#: Variables recorded with a job's numerics (set by a mode, or by the user, e.g. an AVX2 pin).
RECORDED_ENV = ("MKL_CBWR", "ATEN_CPU_CAPABILITY")
#: Environment variable choosing the mode (default ``pinned``).
NUMERICS_SWITCH = "CLERK_NUMERICS"
#: Precision modes of training (``clerk train --precision``): ``fp32`` everywhere; ``bf16-frozen``
#: = the frozen base weights stored in bf16 once at load, LoRA adapters (and their optimizer
#: state) in fp32, loss over fp32 logits; ``auto`` = ``bf16-frozen`` where the device has bf16
#: units (:func:`bf16_units`), else ``fp32``. Inference (readers, writers) has no trainable
#: weights: its ``bf16-frozen`` is a bf16 model (``--dtype auto``, :func:`resolve_inference_dtype`).
PRECISIONS = ("auto", "fp32", "bf16-frozen")
#: bf16 autocast modes of training on top of the precision (``train.bf16``): ``auto`` = where the
#: hardware has it.
BF16_MODES = ("auto", "on", "off")


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


#: The most intra-op threads a job may ask for (torch takes a C int; no CPU box has more cores).
MAX_THREADS = 4096


def set_torch_threads(threads: int) -> None:
    """Run torch with ``threads`` intra-op CPU threads; 0 leaves torch's default.

    Model jobs of the workflow pass 1: on a small CPU box one thread per job and several jobs
    side by side do more work than one job with all threads (see ``workflow/rules/common.smk``).

    Raises:
        UserError: ``threads`` < 0 or above :data:`MAX_THREADS`.
    """
    if not 0 <= threads <= MAX_THREADS:
        raise UserError(f"--threads must be a whole number from 0 (torch's default) to {MAX_THREADS}, got {threads}")
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
    capability and threads, deterministic-algorithms mode, the CPU model and its bf16 units."""
    import torch

    cpu = "unknown"
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"mode": os.environ.get(NUMERICS_SWITCH, "pinned"),
            "env": {k: os.environ.get(k) for k in RECORDED_ENV},
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_threads": torch.get_num_threads(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cpu": cpu,
            "bf16_units": bf16_units()}


def _cpu_flags() -> set[str]:
    """The ``flags`` of /proc/cpuinfo's first CPU (empty where there is none)."""
    try:
        line = next((x for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith("flags")), "")
    except OSError:
        return set()
    return set(line.partition(":")[2].split())


def bf16_units() -> dict[str, Any]:
    """Whether this CPU computes bf16 in hardware for torch: ``{"cpu_capability", "amx_bf16",
    "avx512_bf16", "available"}``.

    ``available`` needs a bf16 flag of the CPU (``amx_bf16`` or ``avx512_bf16``) *and* ATen
    dispatching to AVX-512 (or wider): under ``ATEN_CPU_CAPABILITY=avx2`` torch's bf16 kernels fall
    back to emulation, which is slower than fp32 and crashes SDPA on some builds.
    """
    import torch

    flags = _cpu_flags()
    capability = torch.backends.cpu.get_cpu_capability()
    amx, avx512 = "amx_bf16" in flags, "avx512_bf16" in flags
    wide = capability.upper().startswith(("AVX512", "AMX"))
    return {"cpu_capability": capability, "amx_bf16": amx, "avx512_bf16": avx512,
            "available": bool((amx or avx512) and wide)}


def resolve_precision(precision: str, device: str) -> str:
    """``auto`` -> ``bf16-frozen`` where ``device`` has bf16 units (CUDA with bf16 support; a CPU
    per :func:`bf16_units`), else ``fp32``; ``fp32``/``bf16-frozen`` are kept as given.

    Raises:
        UserError: ``precision`` is not one of :data:`PRECISIONS`.
    """
    if precision not in PRECISIONS:
        raise UserError(f"--precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision != "auto":
        return precision
    import torch

    if device.startswith("cuda"):
        return "bf16-frozen" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16-frozen" if bf16_units()["available"] else "fp32"


def resolve_inference_dtype(dtype: str | None, device: str) -> str:
    """The inference dtype of readers and writers: ``auto``/``None`` -> ``bfloat16`` where
    :func:`resolve_precision` gives ``bf16-frozen`` (every weight is frozen at inference), else
    ``float32``; ``float32``/``bfloat16`` are kept."""
    if dtype in (None, "auto"):
        return "bfloat16" if resolve_precision("auto", device) == "bf16-frozen" else "float32"
    return dtype
