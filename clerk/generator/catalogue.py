"""Phrasings catalogue: load and validate a phrasings file (SPEC §2).

**Phrasings are data.** ``clerk/phrasing/catalogue.yaml`` (train and test splits) and
``clerk/phrasing/ood.yaml`` (the ``test_ood`` split; no template string in common with the first)
and ``clerk/phrasing/val.yaml`` (the ``val_ood`` split: a third set sharing no template
string with either, on which recipe choices are judged instead of ``test_ood``) hold the predicates, value pools, phrasings, question templates, small talk and persona names.
The schema is documented at the top of ``catalogue.yaml``; ``--phrasings FILE`` replaces the
built-in file with your own (it may omit ``names``, then the built-in name lists are used).

    python -c "from clerk.generator.catalogue import load_catalogue; print(len(load_catalogue().predicates))"
"""

from __future__ import annotations

import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk import prompts
from clerk.errors import UserError

SPLITS = ("train", "test", "test_ood", "val_ood")
N_OPTIONS = 10
#: The built-in phrasings files live in ``clerk/phrasing/``, next to this package.
PHRASING_DIR = Path(__file__).resolve().parents[1] / "phrasing"
BUILTIN_PHRASINGS = {
    "train": PHRASING_DIR / "catalogue.yaml",
    "test": PHRASING_DIR / "catalogue.yaml",
    "test_ood": PHRASING_DIR / "ood.yaml",
    "val_ood": PHRASING_DIR / "val.yaml",
}

#: Template lists: key -> (placeholders that must appear, placeholders allowed).
_PREDICATE_TEMPLATES = {
    "add": (("value",), ("value",)),
    "update": (("value",), ("value", "old")),
    "tombstone": ((), ("value",)),
    "current": (("name",), ("name",)),
    "temporal": (("name",), ("name",)),
}
_TOP_TEMPLATES = {
    "greetings": (("name",), ("name",)),
    "welcomes": ((), ()),
    "chatter": ((), ()),
    "acknowledgements": ((), ()),
}


@dataclass(frozen=True)
class Predicate:
    """One catalogue predicate: its key, human phrase, value pool and phrasings."""

    key: str
    phrase: str
    values: tuple[str, ...]
    add: tuple[str, ...]
    update: tuple[str, ...]
    tombstone: tuple[str, ...]
    current: tuple[str, ...]
    temporal: tuple[str, ...]


@dataclass(frozen=True)
class Catalogue:
    """A loaded, validated phrasings file (see the schema in ``phrasing/catalogue.yaml``)."""

    predicates: tuple[Predicate, ...]
    greetings: tuple[str, ...]
    welcomes: tuple[str, ...]
    chatter: tuple[str, ...]
    acknowledgements: tuple[str, ...]
    names: dict[str, tuple[str, ...]]
    source: str

    def predicate(self, key: str) -> Predicate:
        """The predicate with ``key``; raises KeyError if absent."""
        for pred in self.predicates:
            if pred.key == key:
                return pred
        raise KeyError(key)

    def templates(self) -> list[str]:
        """Every template string in the file (phrasings, questions, small talk), in file order."""
        out: list[str] = []
        for pred in self.predicates:
            for key in _PREDICATE_TEMPLATES:
                out.extend(getattr(pred, key))
        for key in _TOP_TEMPLATES:
            out.extend(getattr(self, key))
        return out


def load_catalogue(path: str | Path | None = None, split: str = "train") -> Catalogue:
    """Load and validate a phrasings file.

    Args:
        path: a YAML file in the catalogue schema; None = the built-in file for ``split``.
        split: picks the built-in file when ``path`` is None (``test_ood`` -> ``ood.yaml``, ``val_ood`` -> ``val.yaml``).

    Returns:
        The validated :class:`Catalogue`. When the file has no ``names``, the built-in
        ``catalogue.yaml`` name lists are used.

    Raises:
        UserError: unreadable file, invalid YAML, a missing key (named in the message), a wrong
            type, a bad placeholder, or train/test name lists that overlap.
    """
    if path is None:
        if split not in SPLITS:
            raise UserError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        path = BUILTIN_PHRASINGS[split]
    path = Path(path)
    data = _read_yaml(path)
    where = f"phrasings file {path}"
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    raw_preds = _require(data, "predicates", where)
    if not isinstance(raw_preds, list) or not raw_preds:
        raise UserError(f"{where}: key 'predicates' must be a non-empty list, got {_brief(raw_preds)}")
    preds = [_parse_predicate(raw, f"{where}: predicates[{n}]") for n, raw in enumerate(raw_preds)]
    keys = [p.key for p in preds]
    dupes = sorted(k for k, c in Counter(keys).items() if c > 1)
    if dupes:
        raise UserError(f"{where}: predicate keys must be unique, repeated: {dupes}")
    top = {key: _templates(data, key, where, *rule) for key, rule in _TOP_TEMPLATES.items()}
    if "names" in data or path.resolve() == BUILTIN_PHRASINGS["train"]:
        names = _parse_names(_require(data, "names", where), where)
    else:  # names are not phrasings: a user or OOD file may leave them to the built-in lists
        names = load_catalogue(BUILTIN_PHRASINGS["train"]).names
    distinct = {v for p in preds for v in p.values}
    if len(distinct) < N_OPTIONS - 2:
        raise UserError(
            f"{where}: key 'values' must hold at least {N_OPTIONS - 2} distinct values over all "
            f"predicates (to build {N_OPTIONS} options), got {len(distinct)}"
        )
    return Catalogue(tuple(preds), names=names, source=str(path), **top)


def _read_yaml(path: Path) -> Any:
    import yaml  # only needed when a catalogue is loaded

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"phrasings file {path}: cannot read it ({err.strerror})") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as err:
        raise UserError(f"phrasings file {path}: not valid YAML ({' '.join(str(err).split())})") from None


def _require(mapping: dict, key: str, where: str) -> Any:
    if key not in mapping:
        raise UserError(f"{where} is missing key {key!r}")
    return mapping[key]


def _brief(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _strings(mapping: dict, key: str, where: str, minimum: int = 1) -> tuple[str, ...]:
    value = _require(mapping, key, where)
    if (
        not isinstance(value, list)
        or len(value) < minimum
        or not all(isinstance(x, str) and x.strip() for x in value)
    ):
        raise UserError(
            f"{where}: key {key!r} must be a list of at least {minimum} non-empty strings, got {_brief(value)}"
        )
    return tuple(value)


def _templates(mapping: dict, key: str, where: str, required: tuple, allowed: tuple) -> tuple[str, ...]:
    out = _strings(mapping, key, where)
    for template in out:
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        except ValueError as err:
            raise UserError(f"{where}: key {key!r} has a malformed template {template!r} ({err})") from None
        bad = [f for f in fields if f not in allowed]
        if bad:
            allowed_text = ", ".join("{" + a + "}" for a in allowed) or "none"
            raise UserError(
                f"{where}: key {key!r} template {template!r} uses placeholder {{{bad[0]}}}; "
                f"allowed: {allowed_text}"
            )
        for name in required:
            if name not in fields:
                raise UserError(f"{where}: key {key!r} template {template!r} must contain {{{name}}}")
    return out


def keyed_lists(data: Any, path: Path, label: str,
                rules: dict[str, tuple[tuple, tuple]]) -> dict[str, dict[str, tuple[str, ...]]]:
    """A read file's (``data``, from ``path``) ``predicates`` list of ``{key, <kind>: [templates]}`` (the reader's question set,
    the policy's rewrites): per key, each kind of ``rules`` checked with its (required, allowed)
    placeholders; keys unique. ``label`` names the file in errors ("question set", "rewrites file").

    Raises:
        UserError: no non-empty ``predicates`` list, an entry without a string ``key``, a repeated
            key, a missing or bad template list.
    """
    if not isinstance(data, dict) or not isinstance(data.get("predicates"), list) or not data["predicates"]:
        raise UserError(f"{label} {path}: expected a mapping with a non-empty 'predicates' list")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for i, raw in enumerate(data["predicates"]):
        where = f"{label} {path}: predicates[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("key"), str):
            raise UserError(f"{where}: expected a mapping with a string 'key'")
        if raw["key"] in out:
            raise UserError(f"{where}: predicate key {raw['key']!r} appears twice")
        out[raw["key"]] = {kind: _templates(raw, kind, where, *rule) for kind, rule in rules.items()}
    return out


def _parse_predicate(raw: Any, where: str) -> Predicate:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a mapping, got {_brief(raw)}")
    key = _require(raw, "key", where)
    if not isinstance(key, str) or not key.isidentifier() or key != key.lower():
        raise UserError(f"{where}: key 'key' must be a snake_case name, got {_brief(key)}")
    where = f"{where} ({key})"
    phrase = _require(raw, "phrase", where)
    if not isinstance(phrase, str) or not phrase.strip():
        raise UserError(f"{where}: key 'phrase' must be a non-empty string, got {_brief(phrase)}")
    values = _strings(raw, "values", where, minimum=2)
    if len(set(values)) != len(values):
        raise UserError(f"{where}: key 'values' must not repeat a value")
    fixed = [v for v in values if v in (prompts.UNKNOWN_ANSWER, prompts.NEGATED_ANSWER)]
    if fixed:
        raise UserError(f"{where}: key 'values' must not contain the fixed answer {fixed[0]!r}")
    lists = {name: _templates(raw, name, where, *rule) for name, rule in _PREDICATE_TEMPLATES.items()}
    return Predicate(key=key, phrase=phrase, values=values, **lists)


def _parse_names(raw: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: key 'names' must be a mapping with 'train' and 'test', got {_brief(raw)}")
    names = {split: _strings(raw, split, f"{where}: names") for split in ("train", "test")}
    for split, listed in names.items():
        if len(set(listed)) != len(listed):
            raise UserError(f"{where}: names: key {split!r} must not repeat a name")
    overlap = sorted(set(names["train"]) & set(names["test"]))
    if overlap:
        raise UserError(f"{where}: names: train and test must be disjoint, both contain {overlap[:5]}")
    return names
