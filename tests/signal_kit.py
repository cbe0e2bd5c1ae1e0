"""Signal a process the moment a file appears, from a watcher process of its own.

The resume tests kill a training run once a checkpoint is complete. A poll in a thread of the
test process shares the GIL with whatever else runs there (the smoke run's background work, the
test itself): in CI, one was held off for the whole few seconds between two checkpoints and the
run finished unkilled. A separate process polls on time however busy the test process is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

# argv: marker, pid, signal number, 1 to signal the process group, seconds to wait.
# Exit 0: signalled; 3: the deadline passed first.
_WATCHER = """
import os, sys, time
marker, pid, sig, group = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
deadline = time.monotonic() + float(sys.argv[5])
while time.monotonic() < deadline:
    if os.path.exists(marker):
        (os.killpg if group else os.kill)(pid, sig)
        sys.exit(0)
    time.sleep(0.005)
sys.exit(3)
"""


def wait_signalled(proc: subprocess.Popen, marker: Path, sig: int, *, group: bool = False,
                   deadline: float = 300) -> int:
    """Wait for ``proc`` while a watcher process sends it ``sig`` (its process group with
    ``group``) the moment ``marker`` exists. Returns the watcher's exit status: 0 when it
    signalled, 3 when ``deadline`` seconds passed first, negative when ``proc`` ended first and the
    watcher was stopped. A ``proc`` still running 30 s after ``deadline`` is killed (its group with
    ``group``) and :class:`subprocess.TimeoutExpired` raised."""
    watcher = subprocess.Popen([sys.executable, "-c", _WATCHER, str(marker), str(proc.pid), str(int(sig)),
                                "1" if group else "0", str(deadline)])
    try:
        proc.wait(timeout=deadline + 30)
    except subprocess.TimeoutExpired:
        (os.killpg if group else os.kill)(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        raise
    finally:
        if watcher.poll() is None:
            watcher.kill()
        watcher.wait(timeout=60)
    return watcher.returncode
