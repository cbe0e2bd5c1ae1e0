"""Running one ``clerk`` verb: its options from ``--config`` and flags, its errors as one line.

The shared part of every ``clerk VERB`` command, whatever module owns the verb (:mod:`clerk.cli`
only picks that module): each verb also takes ``--config JSON``, an object whose keys are the
verb's option names (the ``dest`` of a flag, e.g. ``max_steps`` for ``--max-steps``), the way the
workflow passes a config section (workflow/rules/common.smk, :mod:`clerk.wiring`). Precedence:
the verb's defaults < the ``--config`` object < flags given on the command line. An unknown key,
or a value of the wrong type or outside a flag's choices, is an error naming the key, the value
and what is allowed. :func:`run` pins CPU kernel dispatch
(:func:`~clerk.models.device.apply_reproducible_numerics`) before the verb can import torch, then
runs it; a user error exits with status 2 and one line.

Every rule's code inputs include this module and what it imports
(:mod:`clerk.provenance.code_inputs`): it runs in every job.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.models.device import apply_reproducible_numerics


def add_config_option(verb: argparse.ArgumentParser, suppress_defaults: bool = False) -> None:
    """Give a verb's parser ``--config``; its required options may come from ``--config`` instead
    (checked after the merge, :func:`run`). With ``suppress_defaults`` no option has a default, so
    a parse holds only the flags given."""
    verb.clerk_required = [a for a in verb._actions if a.required and a.option_strings]
    for action in verb.clerk_required:
        action.required = False
    verb.add_argument("--config", dest="config_json", metavar="JSON", default=None,
                      help="the verb's options as a JSON object (or a .json file) keyed by option name, "
                      "e.g. '{\"max_steps\": 8}'; flags given on the command line win (default: none)")
    if suppress_defaults:
        for action in verb._actions:
            action.default = argparse.SUPPRESS
        verb._defaults.clear()


def _load_config_json(text: str) -> dict[str, Any]:
    """``--config``: a JSON object, or the path of a file holding one."""
    if not text.lstrip().startswith("{") and Path(text).is_file():
        text = Path(text).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"--config must be a JSON object or a .json file, got {text[:80]!r} ({err})") from None
    if not isinstance(data, dict):
        raise UserError(f"--config must be a JSON object, got {type(data).__name__}: {data!r}")
    return data


def _config_value(action: argparse.Action, key: str, value: Any) -> Any:
    """A ``--config`` value checked against (and converted like) the flag it stands for."""
    where = f"--config key {key!r} (flag {'/'.join(action.option_strings)})"
    if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
        if type(value) is not bool:
            raise UserError(f"{where}: expected true or false, got {value!r}")
        return value
    if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
        if not isinstance(value, list) or (action.nargs == "+" and not value):
            raise UserError(f"{where}: expected a {'non-empty ' if action.nargs == '+' else ''}list, got {value!r}")
        return [_scalar_value(action, where, item) for item in value]
    if value is None and action.default is None:
        return None
    return _scalar_value(action, where, value)


def _scalar_value(action: argparse.Action, where: str, value: Any) -> Any:
    checked = action.type if hasattr(action.type, "problem") else None  # a setting's bounds
    kind = checked.base if checked is not None else action.type
    kind = None if kind is str else kind
    if kind is int and (type(value) is not int):
        raise UserError(f"{where}: expected an integer, got {value!r}")
    if kind is float:
        if type(value) not in (int, float):
            raise UserError(f"{where}: expected a number, got {value!r}")
        value = float(value)
    elif kind is None and not isinstance(value, str):
        raise UserError(f"{where}: expected a string, got {value!r}")
    elif kind not in (int, float, None):  # a converter (e.g. a comma list): text goes through it
        if isinstance(value, str):
            try:
                value = kind(value)
            except (argparse.ArgumentTypeError, ValueError) as err:  # as argparse reports the flag's text
                raise UserError(f"{where}: {err}") from None
        elif isinstance(value, list):
            value = tuple(value)
        elif value is None:  # the flag has a default, so null is no value of it
            raise UserError(f"{where}: expected a value as the flag takes it (its default: {action.default!r}), got null")
    problem = checked.problem(value) if checked is not None else None
    if problem:
        raise UserError(f"{where}: {problem}")
    if action.choices is not None and value not in action.choices:
        raise UserError(f"{where}: expected one of {', '.join(map(str, action.choices))}, got {value!r}")
    return value


def apply_config_json(args: argparse.Namespace, parser: argparse.ArgumentParser, given: set[str]) -> None:
    """Set ``args`` from its ``--config`` object, but for the flags in ``given`` (the command line
    wins). Every key must be an option of the verb.

    Raises:
        UserError: not a JSON object, an unknown key, a value of the wrong type or choice.
    """
    data = _load_config_json(args.config_json)
    actions = {a.dest: a for a in parser._actions
               if a.option_strings and a.dest not in ("help", "config_json")}
    unknown = sorted(set(data) - set(actions))
    if unknown:
        raise UserError(f"--config: unknown key(s) {', '.join(map(repr, unknown))} for clerk {args.verb}; "
                        f"allowed: {', '.join(sorted(actions))}")
    for key, value in data.items():
        if key not in given:
            setattr(args, key, _config_value(actions[key], key, value))


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


def run(parser: argparse.ArgumentParser, args: argparse.Namespace, given: set[str]) -> None:
    """Run the verb ``args.verb`` that ``parser`` parsed, ``given`` being the option names that
    its command line gave; user errors exit with status 2 and one message.

    A user error is a :class:`UserError`, or an input file that a verb read without a check of its
    own and found unreadable, not UTF-8 or not JSON/YAML/CSV (:func:`_input_errors`): one line
    naming the argument when it can be told (``CLERK_TRACEBACK=1`` re-raises, for debugging).
    """
    try:
        apply_reproducible_numerics()  # before any verb imports torch (docs/DECISIONS.md, "Reproducible CPU numerics")
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        verb = sub.choices[args.verb]
        if args.config_json is not None:
            apply_config_json(args, verb, given)
        missing = [a for a in verb.clerk_required if getattr(args, a.dest, None) is None]
        if missing:
            verb.error("the following arguments are required (as flags or --config keys): "
                       + ", ".join(f"{'/'.join(a.option_strings)} ({a.dest})" for a in missing))
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
