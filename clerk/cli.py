"""The ``clerk`` command line: the only entry point the Snakefile calls.

Every verb lives in the library module that owns the concept; this file only collects them.
A module takes part by defining ``register_cli(subparsers)``, which adds its verb(s) with
``parser.set_defaults(func=main)``; ``main(args)`` does the work. Modules keep torch,
transformers, trl and peft imports inside functions so ``clerk --help`` stays fast, and so that
:func:`~clerk.models.device.apply_reproducible_numerics` pins CPU kernel dispatch before torch
starts (``CLERK_NUMERICS=native`` leaves it to the libraries).

    clerk --help
    clerk generate --help
"""

from __future__ import annotations

import argparse
import importlib
import sys

from clerk.errors import UserError
from clerk.models.device import apply_reproducible_numerics

# Order is the order verbs appear in ``clerk --help``: the pipeline order.
_MODULES = (
    "clerk.generator.cli",
    "clerk.streams.cli",
    "clerk.sft.cli",
    "clerk.models.cli",
    "clerk.train.cli",
    "clerk.train.curve",
    "clerk.evaluate.cli",
    "clerk.evaluate.erasure",
    "clerk.scoring.bench",
    "clerk.locomo.cli",
    "clerk.report.cli",
    "clerk.report.paired",
    "clerk.provenance.cli",
    "clerk.store.cli",
)


def make_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with one sub-command per pipeline verb."""
    parser = argparse.ArgumentParser(
        prog="clerk",
        description="CLERK: fixed-budget write-time ledger memory. One verb per pipeline stage.",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name in _MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run the chosen verb; user errors exit with status 2 and one message."""
    args = make_parser().parse_args(argv)
    try:
        apply_reproducible_numerics()  # before any verb imports torch (docs/DECISIONS.md, "Reproducible CPU numerics")
        args.func(args)
    except UserError as err:
        print(f"clerk {args.verb}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
