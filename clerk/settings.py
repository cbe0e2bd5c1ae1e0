"""Settings declared once, as typed dataclass fields, and everything derived from them.

Each section of the workflow config (``config/config.yaml``: ``data``, ``sft``, ``train``...) is
one dataclass, its *section* (e.g. :class:`clerk.train.config.TrainSection`), declared in the
config module of the stage that owns it. A field is one setting: its annotation is the type, its
default the one default (the default profile's value), and :func:`setting` adds the help text,
the allowed values, bounds and the verbs that take it as an option. From these:

- :func:`section_schema`: the JSON-schema fragment of a section (properties, types, defaults,
  allowed values, required keys), which :func:`clerk.config.load_schema` puts into the schema
  ``snakemake -n`` validates against;
- :func:`add_settings`: the ``clerk VERB`` flags of the settings a verb takes (type, choices,
  default and help from the field), so a verb's ``--config`` object (a projection of sections,
  :mod:`clerk.wiring`) and its flags are the same names.

Adding a setting: a field in its section (with :func:`setting`) and, if the default profile
states it, its line in ``config/config.yaml``. Light imports only: this runs in every dry run and
in ``clerk --help``.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     k: int = setting(2, help="sessions shown", minimum=1, verbs=("evaluate",))
    >>> section_schema(Demo)["properties"]["k"]
    {'type': 'integer', 'default': 2, 'description': 'sessions shown', 'minimum': 1}
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import types
import typing
from typing import Any

#: The largest sizes a generated data set may ask for (the paper profile's are 1,000 personas of
#: 12 sessions): a bound on every size setting, so that a typo (an extra digit or ten) is an error
#: naming the setting rather than a run that never ends or exhausts memory.
MAX_PERSONAS, MAX_SESSIONS, MAX_BUDGET = 100_000, 1_000, 1_000

#: JSON-schema keywords :func:`setting` accepts by their Python names.
_KEYWORDS = {"minimum": "minimum", "maximum": "maximum", "exclusive_minimum": "exclusiveMinimum",
             "exclusive_maximum": "exclusiveMaximum", "min_items": "minItems", "unique": "uniqueItems"}


def setting(default: Any = dataclasses.MISSING, *, help: str, choices: tuple | str | None = None,
            verbs: tuple[str, ...] = (), items: dict | None = None, schema: dict | None = None,
            flag_type: Any = None, metavar: str | None = None, **bounds: Any) -> Any:
    """One setting: a dataclass field carrying its help, allowed values and verbs.

    Args:
        default: the one default (a list or dict default is copied per instance); none = required.
        help: one line on what the setting does (the flag's help, the schema's description).
        choices: the allowed values, or the name of a registry-backed ``$defs`` entry of the
            schema (``"memory_system"``, ``"dtype"``...: :func:`clerk.memory.choices.registry_enums`).
        verbs: the ``clerk`` verbs that take the setting as an option (flag ``--name-with-dashes``).
        items: the schema of each item of a list, or of each value of a mapping.
        schema: further JSON-schema keywords (e.g. ``{"$ref": "#/$defs/path"}``, ``{"not": ...}``).
        flag_type: the flag's text converter when not the annotation's type (e.g. ``LOW-HIGH``).
        metavar: the flag's metavar.
        bounds: ``minimum``, ``maximum``, ``exclusive_minimum``, ``exclusive_maximum``,
            ``min_items``, ``unique``.
    """
    unknown = set(bounds) - set(_KEYWORDS)
    if unknown:
        raise TypeError(f"setting(): unknown keyword(s) {sorted(unknown)}")
    metadata = {"help": help, "choices": choices, "verbs": tuple(verbs), "items": items,
                "schema": {**{_KEYWORDS[k]: v for k, v in bounds.items()}, **(schema or {})},
                "flag_type": flag_type, "metavar": metavar}
    if isinstance(default, (list, dict)) or dataclasses.is_dataclass(default):
        value = default
        return dataclasses.field(default_factory=lambda: _copy(value), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _copy(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return dataclasses.replace(value)
    return type(value)(value)


def settings(cls: type) -> list[tuple[dataclasses.Field, Any]]:
    """(field, resolved type) of every setting of a section, in declaration order."""
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if "help" in f.metadata]


def default_of(field: dataclasses.Field) -> Any:
    """A field's default in its config form (tuples as lists, sections as mappings), or MISSING."""
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return dataclasses.MISSING
    return as_config(value)


def as_config(value: Any) -> Any:
    """A value in the form the config files write it: lists for tuples, mappings for sections."""
    if dataclasses.is_dataclass(value):
        return {f.name: as_config(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [as_config(v) for v in value]
    if isinstance(value, dict):
        return {k: as_config(v) for k, v in value.items()}
    return value


# ---- JSON schema -------------------------------------------------------------------------------

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def section_schema(cls: type, description: str | None = None) -> dict[str, Any]:
    """The JSON-schema fragment of a section: an object of exactly its settings (unknown keys
    are errors), required where a setting has no default, each with its type, default,
    description, allowed values and bounds. A nested section is a nested object."""
    properties, required = {}, []
    for field, hint in settings(cls):
        meta = field.metadata
        prop = _type_schema(hint, meta)
        default = default_of(field)
        if default is dataclasses.MISSING:
            required.append(field.name)
        else:
            prop["default"] = default
        prop["description"] = meta["help"]
        prop.update(meta["schema"])
        properties[field.name] = prop
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if description or cls.__doc__:
        out["description"] = description or " ".join(cls.__doc__.split("\n\n")[0].split())
    if required:
        out["required"] = required
    out["properties"] = properties
    out.update(getattr(cls, "SCHEMA_EXTRA", {}))
    return out


def _type_schema(hint: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """The schema of one annotation (with the field's choices and item schema)."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        out = _type_schema(inner, meta)
        if "type" in out:
            out["type"] = [out["type"], "null"]
        else:  # a nested section or a $ref: either it or null
            out = {"anyOf": [out, {"type": "null"}]}
        return out
    if dataclasses.is_dataclass(hint):
        return section_schema(hint)
    if origin in (tuple, list):
        out: dict[str, Any] = {"type": "array"}
        item = args[0] if args else str
        if origin is tuple and args and args[-1] is not Ellipsis:
            out.update(minItems=len(args), maxItems=len(args))
        out["items"] = meta["items"] or _scalar_schema(item, meta["choices"])
        return out
    if origin is dict:
        out = {"type": "object", "additionalProperties": meta["items"] or _scalar_schema(args[1], None)}
        if meta["choices"] is not None:
            out["propertyNames"] = _choice_schema(meta["choices"])
        return out
    return _scalar_schema(hint, meta["choices"])


def _scalar_schema(hint: Any, choices: tuple | str | None) -> dict[str, Any]:
    if choices is not None:
        return _choice_schema(choices)
    if hint not in _JSON_TYPES:
        raise TypeError(f"no JSON type for {hint!r}")
    return {"type": _JSON_TYPES[hint]}


def _choice_schema(choices: tuple | str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{choices}"} if isinstance(choices, str) else {"enum": list(choices)}


# ---- command-line flags ------------------------------------------------------------------------


def verb_settings(verb: str, *sections: type) -> list[tuple[dataclasses.Field, Any]]:
    """The settings of ``sections`` that ``verb`` takes, the first of each name."""
    seen, out = set(), []
    for cls in sections:
        for field, hint in settings(cls):
            if verb in field.metadata["verbs"] and field.name not in seen:
                seen.add(field.name)
                out.append((field, hint))
    return out


def add_settings(parser: Any, verb: str, *sections: type, registries: dict[str, list] | None = None,
                 notes: dict[str, str] | None = None, **defaults: Any) -> None:
    """Add a flag ``--name`` (dest ``name``) for every setting of ``sections`` that ``verb`` takes.

    The flag's type, choices, default and help come from the field; a setting with no default is
    a required flag. ``defaults`` replaces the default of the named flags where the verb's own
    meaning of "not given" differs (e.g. ``personas=None``: the split's default size), and
    ``notes`` says what such a default means in the flag's help. ``registries``: the allowed names
    of each registry-backed choice (:func:`clerk.memory.choices.add_settings` passes the code's; a verb of an earlier stage passes the sets it needs).
    """
    for field, hint in verb_settings(verb, *sections):
        meta = field.metadata
        default = defaults.get(field.name, default_of(field))
        kwargs: dict[str, Any] = {"dest": field.name}
        inner, _ = strip_optional(hint)
        origin = typing.get_origin(inner)
        if inner is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif meta["flag_type"] is not None:
            kwargs["type"] = meta["flag_type"]
        elif origin in (tuple, list) and typing.get_args(inner)[-1:] == (Ellipsis,) or origin is list:
            item = typing.get_args(inner)[0]
            kwargs.update(nargs="+" if meta["schema"].get("minItems") else "*", type=None if item is str else item)
        elif inner in (int, float) or (inner is str and _BOUND_KEYS & set(meta["schema"])):
            kwargs["type"] = Checked(inner, meta["schema"])
        if default is dataclasses.MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = tuple(default) if isinstance(default, list) and "type" in kwargs \
                and "nargs" not in kwargs else default
        choices = meta["choices"]
        if origin in (tuple, list, dict):  # each item is checked by the verb, naming the bad one
            kwargs["metavar"] = "NAME" if choices is not None else kwargs.get("metavar")
        elif choices is not None and inner is not bool:
            if isinstance(choices, str) and choices not in (registries or {}):
                raise KeyError(f"--{field.name.replace('_', '-')} of {verb!r}: its allowed values are the "
                               f"registry set {choices!r}, which the verb did not pass (registries=)")
            kwargs["choices"] = tuple(registries[choices] if isinstance(choices, str) else choices)
        if meta["metavar"]:
            kwargs["metavar"] = meta["metavar"]
        note = "" if default is dataclasses.MISSING else \
            f" (default: {(notes or {}).get(field.name) or _as_flag_text(default, meta['flag_type'])})"
        kwargs["help"] = (meta["help"] + note).replace("%", "%%")
        action = parser.add_argument("--" + field.name.replace("_", "-"), **kwargs)
        action.clerk_setting = field  # the field the flag stands for (tests match flags to settings)


#: The schema keywords of a scalar setting that :class:`Checked` holds a flag's value to.
_BOUND_KEYS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "not", "pattern", "maxLength"}


class Checked:
    """A setting's flag converter (``int``, ``float`` or ``str``) that also holds the value to the
    field's bounds, so that the flag refuses what the config schema refuses for the same setting
    (a number must be finite: the schema's ``number`` is, :func:`clerk.config._validator`).

    >>> Checked(int, {"minimum": 1})("3"), Checked(int, {"minimum": 1}).problem(0)
    (3, 'must be >= 1, got 0')
    >>> Checked(float, {"minimum": 0, "exclusiveMaximum": 1}).problem(float("nan"))
    'must be a finite number, got nan'
    """

    def __init__(self, base: type, schema: dict[str, Any]):
        self.base, self.schema = base, {k: v for k, v in schema.items() if k in _BOUND_KEYS}
        self.__name__ = base.__name__  # argparse names the type in "invalid int value"

    def __call__(self, text: str) -> Any:
        value = self.base(text)
        problem = self.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (already of the base type), or None."""
        bounds = self.schema
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, got {value!r}"
        for key, ok, sign in (("minimum", lambda v, b: v >= b, ">="), ("maximum", lambda v, b: v <= b, "<="),
                              ("exclusiveMinimum", lambda v, b: v > b, ">"),
                              ("exclusiveMaximum", lambda v, b: v < b, "<")):
            if key in bounds and not ok(value, bounds[key]):
                return f"must be {sign} {bounds[key]}, got {value!r}"
        if "const" in bounds.get("not", {}) and value == bounds["not"]["const"]:
            return f"must not be {bounds['not']['const']!r}"
        if "maxLength" in bounds and len(value) > bounds["maxLength"]:
            return f"must be at most {bounds['maxLength']} characters, got {len(value)}"
        if "pattern" in bounds and not re.search(bounds["pattern"], value):
            return f"must match {bounds['pattern']}, got {value!r}"
        return None


def _as_flag_text(value: Any, converted: bool) -> str:
    """A default as the help shows it: as written on the command line (a converted flag's list
    as a comma list, a mapping as ``k=v,...``), ``none`` for nothing, on/off for a switch.

    >>> _as_flag_text(["q_proj", "v_proj"], True), _as_flag_text([8, 16], False), _as_flag_text(False, False)
    ('q_proj,v_proj', '8 16', 'off')
    """
    if value in (None, [], ()):
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ("," if converted else " ").join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def nested_section(cls: type, path: list[str]) -> type:
    """The dataclass of a nested section: ``path`` names fields of ``cls`` whose type is one."""
    for name in path:
        cls = strip_optional(typing.get_type_hints(cls)[name])[0]
    return cls


def strip_optional(hint: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed too) of an annotation ``T`` or ``T | None``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return inner, True
    return hint, False
