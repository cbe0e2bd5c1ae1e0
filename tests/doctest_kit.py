"""Doctests of a package: the >>> examples of every module in it, so a module split into a package
keeps all its examples under one test.

    python -c "import sys; sys.path.insert(0, 'tests'); from doctest_kit import run_package_doctests; print(run_package_doctests('clerk.provenance'))"
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil


def run_package_doctests(name: str) -> doctest.TestResults:
    """Run :func:`doctest.testmod` on package ``name`` and each of its modules; the summed results."""
    package = importlib.import_module(name)
    modules = [package] + [importlib.import_module(info.name)
                           for info in pkgutil.iter_modules(package.__path__, prefix=f"{name}.")]
    failed = attempted = 0
    for module in modules:
        result = doctest.testmod(module)
        failed, attempted = failed + result.failed, attempted + result.attempted
    return doctest.TestResults(failed, attempted)
