"""``clerk`` driven in the test process, as a user would call it (shared by the bad-input and the
command-line property tests)."""

from __future__ import annotations

import contextlib
import io

from clerk.cli import main as clerk_main


def run(argv: list) -> tuple[int, str]:
    """``clerk ARGV`` in this process: (exit status, stderr). A traceback fails the test as itself."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            clerk_main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()
