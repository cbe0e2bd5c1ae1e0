"""Validation of the workflow configuration against ``workflow/schemas/config.schema.yaml``.

Snakemake's own ``validate`` reports only the failing value; a user editing a YAML file needs the
*field*. This module names the field's dotted path, the expected value (the schema's description
when it has one) and the value received, for every error at once, before any job runs.

    python -c "from clerk.config import load_and_validate; load_and_validate('config/smoke.yaml')"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SCHEMA = Path(__file__).resolve().parent.parent / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """The configuration does not match the schema; the message lists every problem."""


def validate_config(config: dict[str, Any], schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """Validate ``config`` in place (filling schema defaults) and return it.

    Args:
        config: the merged workflow configuration.
        schema_file: a JSON Schema (draft 2020-12) in YAML.

    Raises:
        ConfigError: one line per violation, ``config.<dotted.path>: <problem>``.
    """
    import jsonschema

    schema = yaml.safe_load(Path(schema_file).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        lines = [_describe(error) for error in errors]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    _fill_defaults(config, schema)
    return config


def load_and_validate(*config_files: str | Path, schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """Load YAML files, merge later over earlier (as Snakemake does) and validate the result."""
    merged: dict[str, Any] = {}
    for path in config_files:
        _merge(merged, yaml.safe_load(Path(path).read_text()) or {})
    return validate_config(merged, schema_file)


def _describe(error) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "<top level>"
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    if error.validator == "additionalProperties":
        return f"config.{path}: {error.message} (unknown keys are errors; check the spelling)"
    expected = f" (expected: {hint})" if hint else ""
    return f"config.{path}: {error.message}{expected}"


def _fill_defaults(node: Any, schema: dict[str, Any]) -> None:
    """Set ``default`` values of absent object properties, recursively."""
    if not isinstance(node, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if "default" in sub and key not in node:
            node[key] = sub["default"]
        if key in node:
            _fill_defaults(node[key], sub)


def _merge(base: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
