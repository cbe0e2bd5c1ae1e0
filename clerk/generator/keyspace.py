"""The open world's compositional key space: keys composed from relation heads and objects (SPEC §2.9).

``clerk/phrasing/open_world.yaml`` lists *heads* (``favourite``, ``learning``, ``went_to`` ...)
and *objects* (``food``, ``instrument``, ``concert`` ...). Each head names the objects it takes,
and a key is the two joined in normal form (``favourite_food``, ``learning_instrument``), so the
keys are composed, never listed. A head is used by every split (``train``) or held out for one
out-of-distribution split (``val_ood`` or ``test_ood``): keys of a held-out head never occur in
training, and the policy has to coin them. A *dated* head states events that happened on a day
(``went_to_concert``): their ADD and UPDATE carry the date and they are never retracted.

    python -c "from clerk.generator.keyspace import load_keyspace; print(len(load_keyspace().keys))"
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.form import normalise_key
from clerk.generator.catalogue import N_OPTIONS, PHRASING_DIR, SPLITS, _read_yaml

#: The built-in key space.
OPEN_WORLD_FILE = PHRASING_DIR / "open_world.yaml"
#: Splits a head may be held out for (``train`` = used by every split).
HEAD_SPLITS = ("train", "val_ood", "test_ood")
#: Template lists of a head: name -> (placeholders required, placeholders allowed).
_STATEMENTS = {"add": ("value",), "update": ("value",), "tombstone": ("value",)}
_ALLOWED = {"value", "old", "noun", "time", "time_cap", "name"}
_QUESTIONS = {"ask": ("name",), "ask_before": ("name",), "ask_when": ("name",)}
#: Top-level speech lists: name -> placeholders allowed.
_SPEECH = {"greetings": {"other"}, "reactions": set(), "chatter": set(), "about_others": {"noun", "value"}}


@dataclass(frozen=True)
class OpenKey:
    """One composed key: its head and object, the object's noun and values, the head's templates."""

    key: str
    head: str
    object: str
    noun: str
    split: str
    dated: bool
    values: tuple[str, ...]
    add: tuple[str, ...]
    update: tuple[str, ...]
    tombstone: tuple[str, ...]
    ask: tuple[str, ...]
    ask_before: tuple[str, ...]
    ask_when: tuple[str, ...]


@dataclass(frozen=True)
class KeySpace:
    """Every composed key (in file order: heads, then each head's objects) and the speech lists."""

    keys: tuple[OpenKey, ...]
    greetings: tuple[str, ...]
    reactions: tuple[str, ...]
    chatter: tuple[str, ...]
    about_others: tuple[str, ...]

    def key(self, name: str) -> OpenKey:
        """The key called ``name`` (KeyError if there is none)."""
        for key in self.keys:
            if key.key == name:
                return key
        raise KeyError(name)

    def for_split(self, split: str) -> tuple[list[OpenKey], list[OpenKey]]:
        """(keys of the training heads, keys held out for ``split``: empty for train and test)."""
        if split not in SPLITS:
            raise UserError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        return ([k for k in self.keys if k.split == "train"], [k for k in self.keys if k.split == split])


def _placeholders(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def _strings(raw: dict, name: str, where: str, required: tuple[str, ...], allowed: set[str],
             minimum: int = 1) -> tuple[str, ...]:
    items = raw.get(name, [])
    if not isinstance(items, list) or len(items) < minimum or not all(isinstance(t, str) and t.strip() for t in items):
        raise UserError(f"{where}: key {name!r} must be a list of at least {minimum} non-empty strings, got {items!r:.80}")
    for template in items:
        try:
            fields = _placeholders(template)
        except ValueError as err:
            raise UserError(f"{where}: {name} template {template!r} is not a format string ({err})") from None
        missing, extra = set(required) - fields, fields - allowed
        if missing or extra:
            raise UserError(f"{where}: {name} template {template!r} must use {{{', '.join(required)}}} and may use "
                            f"only {sorted(allowed)}, got {sorted(fields)}")
    return tuple(items)


def _parse_objects(raw: Any, where: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"{where}: 'objects' must be a non-empty mapping of object name -> {{noun, values}}")
    out = {}
    for name, spec in raw.items():
        at = f"{where}: object {name!r}"
        if not isinstance(spec, dict) or not isinstance(spec.get("noun"), str):
            raise UserError(f"{at}: needs a string 'noun' and a list 'values'")
        values = spec.get("values")
        if not isinstance(values, list) or len(set(map(str, values))) < N_OPTIONS - 2 or not all(isinstance(v, str) for v in values):
            raise UserError(f"{at}: 'values' must hold at least {N_OPTIONS - 2} distinct strings, got {values!r:.80}")
        out[name] = (spec["noun"], tuple(values))
    return out


def _parse_head(name: str, spec: Any, objects: dict, where: str) -> list[OpenKey]:
    at = f"{where}: head {name!r}"
    if not isinstance(spec, dict):
        raise UserError(f"{at}: must be a mapping")
    split, dated = spec.get("split"), spec.get("dated", False)
    if split not in HEAD_SPLITS:
        raise UserError(f"{at}: 'split' must be one of {', '.join(HEAD_SPLITS)}, got {split!r}")
    if not isinstance(dated, bool):
        raise UserError(f"{at}: 'dated' must be true or false, got {dated!r}")
    names = spec.get("objects")
    if not isinstance(names, list) or not names or any(o not in objects for o in names):
        raise UserError(f"{at}: 'objects' must list objects of the file ({', '.join(objects)}), got {names!r:.80}")
    allowed = _ALLOWED - {"name"} if dated else _ALLOWED - {"name", "time", "time_cap"}
    parts = {kind: _strings(spec, kind, at, required, allowed) for kind, required in _STATEMENTS.items()
             if not (dated and kind == "tombstone")}
    if dated:
        if "tombstone" in spec:
            raise UserError(f"{at}: a dated head states events that happened; it has no 'tombstone' templates")
        for template in (*parts["add"], *parts["update"]):
            if not _placeholders(template) & {"time", "time_cap"}:
                raise UserError(f"{at}: dated template {template!r} must say when ({{time}} or {{time_cap}})")
    for kind, required in _QUESTIONS.items():
        if kind == "ask_when" and not dated:
            if kind in spec:
                raise UserError(f"{at}: 'ask_when' needs 'dated: true'")
            continue
        parts[kind] = _strings(spec, kind, at, required, {"name", "noun"})
    keys = []
    for obj in names:
        key = normalise_key(f"{name}_{obj}")
        if key != f"{name}_{obj}":
            raise UserError(f"{at}: key {name}_{obj!s} is not in normal form (it would be {key!r})")
        noun, values = objects[obj]
        keys.append(OpenKey(key=key, head=name, object=obj, noun=noun, split=split, dated=dated, values=values,
                            add=parts["add"], update=parts["update"], tombstone=parts.get("tombstone", ()),
                            ask=parts["ask"], ask_before=parts["ask_before"], ask_when=parts.get("ask_when", ())))
    return keys


def load_keyspace(path: str | Path | None = None) -> KeySpace:
    """Read and check a key-space file (default: the built-in ``clerk/phrasing/open_world.yaml``).

    Raises:
        UserError: naming the file, the head or object and the rule broken.
    """
    path = Path(path) if path is not None else OPEN_WORLD_FILE
    where = str(path)
    raw = _read_yaml(path)
    if not isinstance(raw, dict):
        raise UserError(f"{where}: must be a mapping with 'objects', 'heads' and the speech lists")
    objects = _parse_objects(raw.get("objects"), where)
    heads = raw.get("heads")
    if not isinstance(heads, dict) or not heads:
        raise UserError(f"{where}: 'heads' must be a non-empty mapping of head name -> its objects and templates")
    keys = [key for name, spec in heads.items() for key in _parse_head(name, spec, objects, where)]
    seen: dict[str, str] = {}
    for name, spec in heads.items():  # one head per template string, so held-out wording stays unseen
        for kind in (*_STATEMENTS, *_QUESTIONS):
            for template in spec.get(kind, []):
                if seen.setdefault(template, name) != name:
                    raise UserError(f"{where}: template {template!r} is used by heads {seen[template]!r} and {name!r}")
    if len({k.key for k in keys}) != len(keys):
        raise UserError(f"{where}: two heads compose the same key")
    if not any(k.split == "train" for k in keys):
        raise UserError(f"{where}: no head has 'split: train'")
    speech = {name: _strings(raw, name, where, (), allowed) for name, allowed in _SPEECH.items()}
    return KeySpace(keys=tuple(keys), **speech)
