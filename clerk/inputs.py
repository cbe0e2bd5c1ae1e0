"""Reading a user's input file: every way it can be wrong is one UserError naming the argument.

A verb reads its files through these helpers, so a missing file, a folder, an empty or truncated
file, bytes that are not UTF-8 and JSON of the wrong shape each give one line naming the
argument, the value and what is allowed (``clerk`` prints it and exits 2), never a traceback.

    from clerk.inputs import read_json
    manifest = read_json(args.manifest, "--manifest", shape=dict)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clerk.errors import UserError


def read_text(path: str | Path, arg: str, what: str = "a UTF-8 text file") -> str:
    """The text of an existing, readable UTF-8 file; UserError naming ``arg`` otherwise.

    >>> read_text("/nonexistent/x.json", "--manifest", "a JSON file")
    Traceback (most recent call last):
    clerk.errors.UserError: --manifest must be a JSON file, got '/nonexistent/x.json', which does not exist
    """
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which is a folder")
    if not path.is_file():
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which does not exist")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which cannot be read ({err.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which is not UTF-8 "
                        f"(byte 0x{data[err.start]:02x} at offset {err.start})") from None


def read_json(path: str | Path, arg: str, shape: type = dict) -> Any:
    """A JSON file whose top level is a ``shape`` (dict or list); UserError naming ``arg`` when it
    is missing, a folder, not UTF-8, empty, truncated or another type."""
    text = read_text(path, arg, "a JSON file")
    if not text.strip():
        raise UserError(f"{arg} must be a JSON file, got {str(path)!r}, which is empty")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{arg} must be a JSON file, got {str(path)!r}, which is not valid JSON "
                        f"(line {err.lineno} column {err.colno}: {err.msg}; truncated?)") from None
    except (ValueError, RecursionError) as err:  # an int too long to convert, nesting too deep
        raise UserError(f"{arg} must be a JSON file, got {str(path)!r}, which cannot be read as JSON ({err})") from None
    if not isinstance(value, shape):
        raise UserError(f"{arg} must hold a JSON {_json_name(shape)}, got {_json_name(type(value))} in {str(path)!r}")
    return value


def _json_name(kind: type) -> str:
    return {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(kind, kind.__name__)


def require(ok: bool, arg: str, path: str | Path, message: str) -> None:
    """UserError ``"{arg} {path!r}: {message}"`` unless ``ok`` (shape checks of a file's content)."""
    if not ok:
        raise UserError(f"{arg} {str(path)!r}: {message}")


def check_model_dir(path: str | Path | None, arg: str, need: tuple[str, ...] = ("config.json",),
                    what: str = "a model folder (from clerk materialize-model)") -> None:
    """A model, adapter or tokenizer folder: exists, is a folder and holds the files ``need``
    (UserError naming ``arg`` otherwise). None (an optional folder not given) passes."""
    if path is None:
        return
    p = Path(path)
    if not p.exists():
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which does not exist")
    if not p.is_dir():
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which is a file")
    missing = [name for name in need if not (p / name).is_file()]
    if missing:
        raise UserError(f"{arg} must be {what}, got {str(path)!r}, which holds no {', '.join(missing)}")


def check_run_dirs(args: Any) -> None:
    """The model folders of a replay verb (``clerk evaluate``, ``clerk erasure``), checked before
    any work: ``--model`` (config.json), ``--adapter`` and ``--reader-adapter`` (adapter_config.json)."""
    check_model_dir(args.model, "--model")
    check_model_dir(getattr(args, "adapter", None), "--adapter", ("adapter_config.json",),
                    "a LoRA adapter folder (from clerk train)")
    check_model_dir(getattr(args, "reader_adapter", None), "--reader-adapter", ("adapter_config.json",),
                    "a LoRA adapter folder (from clerk train)")
