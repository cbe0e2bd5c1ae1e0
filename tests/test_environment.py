"""The exact environment: requirements.lock pins what the shipped results were made with, and
`clerk verify` warns, naming packages and versions, when the running environment differs.

    python -m pytest tests/test_environment.py -q
"""

from __future__ import annotations

import doctest
import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from clerk.cli import main
from clerk.provenance.environment import environment_diff, lock_pins, normalize

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"


class TestLock:
    def test_pins_the_versions_recorded_with_the_results(self):
        """Every package version the shipped manifest recorded is the lock's pin (python: its minor version)."""
        manifest = ROOT / "results" / "manifest.json"
        if not manifest.is_file():
            pytest.skip("no shipped results in this checkout")
        recorded = json.loads(manifest.read_text())["packages"]
        pins = lock_pins(LOCK)
        assert recorded.pop("python").startswith("3.11.")  # the lock is resolved for Python 3.11
        assert {name: pins.get(normalize(name)) for name in recorded} == recorded

    def test_covers_every_declared_dependency(self):
        """Every dependency of pyproject.toml (and its dev extra) has a pin in the lock."""
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        declared = project["dependencies"] + [d for deps in project["optional-dependencies"].values() for d in deps]
        names = {normalize(re.match(r"[A-Za-z0-9._-]+", dep).group(0)) for dep in declared}
        assert names - set(lock_pins(LOCK)) == set()

    def test_cpu_torch_and_no_cuda_wheels(self):
        """torch is the pinned CPU build, and nothing of a CUDA build (nvidia-*, triton) is locked."""
        pins = lock_pins(LOCK)
        assert pins["torch"] == "2.13.0+cpu"
        assert [name for name in pins if name.startswith("nvidia-") or name == "triton"] == []

    def test_every_pin_is_hashed(self):
        """Each pinned package carries at least one sha256, so pip installs it in hash-checking mode."""
        blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text())
        pinned = [b for b in blocks if "==" in b.split("\n", 1)[0]]
        assert len(pinned) == len(lock_pins(LOCK)) > 100
        assert all("--hash=sha256:" in block for block in pinned)


class TestVerifyEnvironment:
    def _workdir(self, tmp_path: Path, packages: dict, lock: str) -> Path:
        # One real file and one number drawn from it: verify refuses a manifest with nothing to verify.
        source = tmp_path / "x.json"
        source.write_text(json.dumps({"a": 1}))
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        (tmp_path / "manifest.json").write_text(json.dumps(
            {"files": {"x.json": {"sha256": digest, "inputs": {}, "rule": "r"}}, "packages": packages}))
        (tmp_path / "numbers.json").write_text(json.dumps({"numbers": {"n": {
            "source": "x.json", "sha256": digest, "key": "/a", "format": "g", "text": "1", "value": 1}}}))
        (tmp_path / "requirements.lock").write_text(lock)
        return tmp_path

    def _verify(self, workdir: Path) -> None:
        main(["verify", "--manifest", str(workdir / "manifest.json"), "--numbers", str(workdir / "numbers.json"),
              "--paper", "none", "--workdir", str(workdir)])

    def test_warns_naming_packages_and_versions(self, tmp_path, capsys):
        """Another version than the manifest's or the lock's is a warning naming both versions; verify passes."""
        import pytest as installed

        workdir = self._workdir(tmp_path, {"pytest": "0.0.1", "no-such-package": "1.0"},
                                "pytest==0.0.2 \\\n    --hash=sha256:00\nPyYAML==0.1\n")
        self._verify(workdir)
        err = capsys.readouterr().err.splitlines()
        assert err == [
            "clerk verify: warning: this environment differs from the one that produced the results "
            "(manifest 'packages'; `make setup` installs requirements.lock):",
            "clerk verify:   no-such-package: recorded 1.0, running not installed",
            f"clerk verify:   pytest: recorded 0.0.1, running {installed.__version__}",
            f"clerk verify: warning: this environment differs from {workdir / 'requirements.lock'} in 2 package(s):",
            f"clerk verify:   pytest: recorded 0.0.2, running {installed.__version__}",
            f"clerk verify:   pyyaml: recorded 0.1, running {__import__('yaml').__version__}",
        ]

    def test_silent_when_the_same(self, tmp_path, capsys):
        """The running versions themselves give no warning."""
        import pytest as installed

        python = sys.version.split()[0]
        workdir = self._workdir(tmp_path, {"python": python, "pytest": installed.__version__},
                                f"pytest=={installed.__version__}\n")
        self._verify(workdir)
        assert "warning" not in capsys.readouterr().err

    def test_diff_and_doctests(self):
        """environment_diff lists only differing recorded packages; the module's examples hold."""
        assert environment_diff({"a": "1", "b": None}, {"a": "1", "b": "2"}) == []
        import clerk.provenance.environment as module

        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0
