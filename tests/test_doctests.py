"""The examples in the library's docstrings run and print what they say (``doctest``)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

CLERK = Path(__file__).resolve().parent.parent / "clerk"
MODULES = sorted(".".join(p.relative_to(CLERK.parent).with_suffix("").parts) for p in CLERK.rglob("*.py"))


@pytest.mark.parametrize("name", [m for m in MODULES if ">>>" in (CLERK.parent / (m.replace(".", "/") + ".py")).read_text(encoding="utf-8")])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed"
