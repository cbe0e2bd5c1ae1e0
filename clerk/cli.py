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
import json
import os
import re
import sys
from pathlib import Path

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


def _input_errors() -> tuple[type[BaseException], ...]:
    """What reading a bad input file raises where a verb reads it without a check of its own: an
    unreadable path, bytes that are not UTF-8, text that is not JSON, YAML or CSV."""
    errors: list[type[BaseException]] = [UnicodeError, json.JSONDecodeError, IsADirectoryError, NotADirectoryError,
                                         FileNotFoundError, PermissionError]
    if "yaml" in sys.modules:
        errors.append(sys.modules["yaml"].YAMLError)
    if "pandas" in sys.modules:
        errors += [sys.modules["pandas"].errors.EmptyDataError, sys.modules["pandas"].errors.ParserError]
    return tuple(errors)


def _path_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[tuple[str, str]]:
    """(how the user wrote the argument, value) of every string argument of the verb, in order."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.verb]
    out = []
    for action in sub._actions:
        value = getattr(args, action.dest, None)
        name = action.option_strings[-1] if action.option_strings else action.dest.upper()
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                out.append((name, item))
    return out


def _culprit(err: BaseException, candidates: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The argument whose file ``err`` came from, when it can be told."""
    filename = getattr(err, "filename", None)
    if isinstance(filename, (str, Path)):
        target = Path(filename)
        for name, value in candidates:
            if Path(value) == target or Path(value) in target.parents:
                return name, value
        return None
    for name, value in candidates:
        path = Path(value)
        try:
            if not path.is_file() or path.stat().st_size > 1 << 28:
                continue
            data = path.read_bytes()
        except (OSError, ValueError):
            continue
        if isinstance(err, UnicodeDecodeError):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return name, value
        elif isinstance(err, json.JSONDecodeError):
            text = data.decode("utf-8", "replace")
            if (err.doc and err.doc in text) or (not err.doc.strip() and not text.strip()):
                return name, value
    return None


def _input_error_line(err: BaseException, parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """One line for an input error: the argument, its value and what is wrong with it."""
    if isinstance(err, UnicodeDecodeError):
        what = "must be UTF-8 text; it is not"
    elif isinstance(err, UnicodeEncodeError):
        what = "must be valid UTF-8 text (the argument holds bytes that are not UTF-8)"
    elif isinstance(err, json.JSONDecodeError):
        what = f"must be valid JSON; it is not (line {err.lineno} column {err.colno}: {err.msg}; empty or truncated?)"
    elif isinstance(err, OSError):
        what = f"cannot be used: {err.strerror or err}"
        if isinstance(err, IsADirectoryError):
            what = "must be a file, but it is a folder"
        elif isinstance(err, NotADirectoryError):
            what = "must be a folder (or lie in one), but a part of it is a file"
        elif isinstance(err, FileNotFoundError):
            what = "does not exist"
    else:
        what = f"cannot be read: {type(err).__name__}: {' '.join(str(err).split())}"
    candidates = _path_arguments(parser, args)
    if isinstance(err, UnicodeEncodeError):
        bad = next(((n, v) for n, v in candidates if not _encodes(v)), None)
        culprit = bad
    else:
        culprit = _culprit(err, candidates)
    if culprit is None:
        line = f"an input {what} ({type(err).__name__}; CLERK_TRACEBACK=1 shows where)"
    else:
        line = f"{culprit[0]} {culprit[1]!r} {what}"
    return line if len(line) <= 400 else line[:397] + "..."


def _name_argument(message: str, parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``message`` led by the argument it is about, when it names a value of one but no option
    (a library error such as "'x.json': not a stream" becomes "--streams: 'x.json': not a stream")."""
    if re.search(r"(^|[\s(])--[a-z]", message):  # names an option already
        return message
    named = [name for name, value in _path_arguments(parser, args)
             if len(value) > 1 and value in message and (os.sep in value or Path(value).is_file())]
    return f"{named[0]}: {message}" if named else message


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run the chosen verb; user errors exit with status 2 and one message.

    A user error is a :class:`UserError`, or an input file that a verb read without a check of its
    own and found unreadable, not UTF-8 or not JSON/YAML/CSV (:func:`_input_errors`): one line
    naming the argument when it can be told (``CLERK_TRACEBACK=1`` re-raises, for debugging).
    """
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        apply_reproducible_numerics()  # before any verb imports torch (benchmarks/rerun-sources.md)
        args.func(args)
    except UserError as err:
        print(f"clerk {args.verb}: error: {_name_argument(' '.join(str(err).splitlines()), parser, args)}",
              file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as err:
        if not isinstance(err, _input_errors()) or os.environ.get("CLERK_TRACEBACK"):
            raise
        print(f"clerk {args.verb}: error: {_input_error_line(err, parser, args)}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
