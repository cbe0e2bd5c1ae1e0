"""Does the running environment match the recorded one? (``clerk verify`` warns when it does not.)

Two records: the package versions ``results/manifest.json`` took from the environment that
produced the shipped results (``packages``), and ``requirements.lock``, the exact environment
``make setup`` installs (every package, pinned by version and hash). A difference is a warning,
not a failure: the files and numbers still verify; a rerun may give other numbers.

    clerk verify        # prints "clerk verify: warning: ..." lines naming packages and versions
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def normalize(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``.

    >>> normalize("PyYAML"), normalize("typing_extensions")
    ('pyyaml', 'typing-extensions')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(path: str | Path) -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line of a requirements lock (names normalised)."""
    pins = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if match := _PIN.match(line):
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def installed_versions(names) -> dict[str, str | None]:
    """The running interpreter's version of each package name (None = not installed); ``python`` too."""
    from importlib import metadata

    found: dict[str, str | None] = {}
    for name in names:
        if name == "python":
            found[name] = sys.version.split()[0]
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def environment_diff(recorded: dict[str, str | None], running: dict[str, str | None]) -> list[str]:
    """One line per package whose running version is not the recorded one, by name.

    >>> environment_diff({"torch": "2.13.0+cpu", "numpy": "2.4.6", "gone": "1"},
    ...                  {"torch": "2.13.0+cpu", "numpy": "2.3.0", "gone": None})
    ['gone: recorded 1, running not installed', 'numpy: recorded 2.4.6, running 2.3.0']
    """
    lines = []
    for name in sorted(recorded):
        want, got = recorded[name], running.get(name)
        if want is not None and got != want:
            lines.append(f"{name}: recorded {want}, running {got or 'not installed'}")
    return lines


def environment_warnings(manifest: dict, lock: str | Path | None) -> list[str]:
    """``clerk verify``'s warnings: the running environment against the manifest's ``packages``
    and against the lock (when the file exists), one header line then one line per package."""
    warnings = []
    recorded = {k: v for k, v in (manifest.get("packages") or {}).items()}
    diff = environment_diff(recorded, installed_versions(recorded))
    if diff:
        warnings.append("warning: this environment differs from the one that produced the results "
                        "(manifest 'packages'; `make setup` installs requirements.lock):")
        warnings += [f"  {line}" for line in diff]
    if lock is not None and Path(lock).is_file():
        pins = lock_pins(lock)
        diff = environment_diff(pins, installed_versions(pins))
        if diff:
            warnings.append(f"warning: this environment differs from {lock} in {len(diff)} package(s):")
            warnings += [f"  {line}" for line in diff]
    return warnings
