"""Validation of the workflow configuration against ``workflow/schemas/config.schema.yaml``.

Snakemake's own ``validate`` reports only the failing value; a user editing a YAML file needs the
*field*. This module names the field's dotted path, the expected value (the schema's description
when it has one) and the value received, for every error at once, before any job runs.

Every name the code keeps a registry or fixed set for (memory systems, LoCoMo systems, eviction
policies, model kinds, dtypes, readers, precision modes) is checked against the code's own set:
:func:`registry_enums` replaces the schema's enums before validating, so the two cannot drift.
Cross-field facts a schema cannot state (the default capacity is one of the swept capacities,
...) are checked after it (:func:`_cross_checks`).

    python -c "from clerk.config import load_and_validate; load_and_validate('config/smoke.yaml')"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SCHEMA = Path(__file__).resolve().parent.parent / "workflow" / "schemas" / "config.schema.yaml"


#: Session fields of the synthetic timelines (clerk.generator); a memory system that needs any
#: other (``session_fields``, e.g. summary-rag's LoCoMo summaries) cannot serve table 1.
SYNTHETIC_SESSION_FIELDS = frozenset(
    {"index", "turns", "events", "questions", "gold_ops", "ledger_before", "ledger_after"})


class ConfigError(ValueError):
    """The configuration does not match the schema; the message lists every problem."""


def registry_enums() -> dict[str, list[str]]:
    """The allowed names of each registry-backed ``$defs`` entry of the schema, from the code.

    >>> sorted(registry_enums())
    ['bf16_mode', 'dtype', 'eviction_policy', 'locomo_system', 'memory_system', 'model_kind', 'reader_model', 'view_kind']
    >>> "summary-rag" in registry_enums()["memory_system"], "summary-rag" in registry_enums()["locomo_system"]
    (False, True)
    """
    # Light imports only (no torch): this runs inside every `snakemake -n`.
    from clerk.locomo.data import LOCOMO_SYSTEMS
    from clerk.memory import MEMORY_REGISTRY
    from clerk.memory.base import DTYPES, READER_MODELS
    from clerk.memory.views import VIEW_KINDS
    from clerk.models.spec import KINDS
    from clerk.streams.engines import POLICIES
    from clerk.train.config import BF16_MODES

    def serves_synthetic(name: str) -> bool:
        return set(getattr(MEMORY_REGISTRY.get(name), "session_fields", ())) <= SYNTHETIC_SESSION_FIELDS

    return {
        "memory_system": [name for name in MEMORY_REGISTRY.names() if serves_synthetic(name)],
        "locomo_system": list(LOCOMO_SYSTEMS),
        "eviction_policy": sorted(POLICIES),
        "model_kind": list(KINDS),
        "dtype": list(DTYPES),
        "reader_model": list(READER_MODELS),
        "bf16_mode": list(BF16_MODES),
        "view_kind": list(VIEW_KINDS),
    }


def load_schema(schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """The schema with every registry-backed enum replaced by the code's set (:func:`registry_enums`)."""
    schema = yaml.safe_load(Path(schema_file).read_text())
    for name, names in registry_enums().items():
        schema.setdefault("$defs", {}).setdefault(name, {})["enum"] = names
    return schema


def validate_config(config: dict[str, Any], schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """Validate ``config`` in place (filling schema defaults) and return it.

    Args:
        config: the merged workflow configuration.
        schema_file: a JSON Schema (draft 2020-12) in YAML.

    Raises:
        ConfigError: one line per violation, ``config.<dotted.path>: <problem>``.
    """
    import jsonschema

    schema = load_schema(schema_file)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    lines = [_describe(error) for error in errors] + _cross_checks(config)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    _fill_defaults(config, schema)
    return config


def load_and_validate(*config_files: str | Path, schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """Load YAML files, merge later over earlier (as Snakemake does) and validate the result."""
    merged: dict[str, Any] = {}
    for path in config_files:
        _merge(merged, yaml.safe_load(Path(path).read_text()) or {})
    return validate_config(merged, schema_file)


def _cross_checks(config: dict[str, Any]) -> list[str]:
    """Facts that tie two fields together, each checked only where both fields have the right type.

    >>> _cross_checks({"streams": {"default_capacity": 20, "capacities": [8, 16], "noise": 3, "noise_grid": [3]}})
    ['config.streams.default_capacity: 20 is not one of config.streams.capacities [8, 16] (table 4 reports that setting)']
    """
    problems = []

    def get(*path: str) -> Any:
        node: Any = config
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    for one, grid, why in (("default_capacity", "capacities", "table 4 reports that setting"),
                           ("noise", "noise_grid", "table 4 and the eviction figure report that rate")):
        value, values = get("streams", one), get("streams", grid)
        if isinstance(value, int) and isinstance(values, list) and value not in values:
            problems.append(f"config.streams.{one}: {value!r} is not one of config.streams.{grid} {values} ({why})")
    systems, write_only = get("evaluate", "systems"), get("evaluate", "write_only")
    if isinstance(systems, list) and isinstance(write_only, list):
        stray = [name for name in write_only if name not in systems]
        if stray:
            problems.append(f"config.evaluate.write_only: {stray} not in config.evaluate.systems {systems} "
                            "(a write-only system is one of the evaluated systems)")
    forgets, sessions = get("erasure", "forgets"), get("erasure", "sessions")
    if isinstance(forgets, int) and isinstance(sessions, int) and forgets > sessions - 1:
        problems.append(f"config.erasure.forgets: {forgets} is more than config.erasure.sessions - 1 = "
                        f"{sessions - 1} (one forget request per session >= 1)")
    model = get("model") or {}
    if model.get("kind") == "scratch":
        hidden, heads = model.get("hidden"), model.get("heads")
        if isinstance(hidden, int) and isinstance(heads, int) and heads > 0 and hidden % heads:
            problems.append(f"config.model.hidden: {hidden} is not divisible by config.model.heads {heads} "
                            "(attention heads split the hidden size)")
    if model.get("kind") == "local" and isinstance(model.get("path"), str) and not Path(model["path"]).is_dir():
        problems.append(f"config.model.path: {model['path']!r} is not an existing directory (kind local: a model "
                        "directory with config.json and safetensors)")
    return problems


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
