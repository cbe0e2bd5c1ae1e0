"""The policy's training-only wording: extra ADD, UPDATE and TOMBSTONE wordings of the catalogue's
predicates and extra small talk, read for the train split only (SPEC §2).

The held-out wording (``ood.yaml``, ``val.yaml``) differs from the catalogue's in structure more
than in vocabulary: its statements leave the predicate's word out, put the new value before the
old one, retract without a negation word, open with the value. ``clerk/phrasing/train_rewrites.yaml``
holds statements of the catalogue's predicates along those axes, written without sight of the
held-out files and filtered against them with the overlap measure of
:mod:`clerk.generator.wordings` (``tests/test_rewrites.py`` holds the file to it). Its ``chatter``
lines are small talk with no value and no predicate word: a policy that has learnt retractions
without a negation word must still leave an unfamiliar line of small talk alone.

With ``rewrites`` naming kinds (``data.train.rewrites``, ``clerk generate --rewrites add update``)
each of those lists of the file is appended to the same list of the built-in catalogue (a
predicate's, or the small talk) before the train split is worded, so every training line of that
kind is drawn from both.
Only the train split takes them: test keeps the catalogue's wording, test_ood and val_ood their own.

    python -c "from clerk.generator.rewrites import overlap; print(overlap())"
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.generator.catalogue import (
    _PREDICATE_TEMPLATES,
    PHRASING_DIR,
    Catalogue,
    _read_yaml,
    _templates,
    keyed_lists,
)

#: The training-only statement rewrites.
TRAIN_REWRITES = PHRASING_DIR / "train_rewrites.yaml"
#: The statement kinds a rewrite can be (the lists of a catalogue predicate that word a fact).
STATEMENT_KINDS = ("add", "update", "tombstone")
#: Every kind a train split can name: the statements, and the small talk (the catalogue's ``chatter``).
REWRITE_KINDS = (*STATEMENT_KINDS, "chatter")


@dataclass(frozen=True)
class Rewrites:
    """A loaded rewrites file: per predicate key its statement lists, and the small talk."""

    statements: dict[str, dict[str, tuple[str, ...]]]
    chatter: tuple[str, ...]


def load_rewrites(path: str | Path = TRAIN_REWRITES) -> Rewrites:
    """Read and check a rewrites file: a ``chatter`` list of lines without placeholders and a
    ``predicates`` list of ``{key, add, update, tombstone}``, each template with the catalogue's
    placeholders for its kind, keys unique.

    Raises:
        UserError: unreadable file, a missing key, a bad template, a repeated predicate key.
    """
    path = Path(path)
    data = _read_yaml(path)
    statements = keyed_lists(data, path, "rewrites file", {kind: _PREDICATE_TEMPLATES[kind] for kind in STATEMENT_KINDS})
    return Rewrites(statements, _templates(data, "chatter", f"rewrites file {path}", (), ()))


def check_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """``kinds`` as a tuple when each is a distinct kind of :data:`REWRITE_KINDS`.

    Raises:
        UserError: naming the first kind that is unknown or named twice.
    """
    seen: set[str] = set()
    for kind in kinds:
        if kind not in REWRITE_KINDS or kind in seen:
            why = "named twice" if kind in seen else "not a kind of the rewrites"
            raise UserError(f"rewrites: {kind!r} is {why}; allowed: {', '.join(REWRITE_KINDS)}, each at most once")
        seen.add(kind)
    return tuple(kinds)


def with_rewrites(catalogue: Catalogue, kinds: tuple[str, ...], path: str | Path = TRAIN_REWRITES) -> Catalogue:
    """``catalogue`` with the rewrites of ``kinds`` appended to its lists of those kinds (each
    predicate's statements; the small talk).

    Raises:
        UserError: a kind outside :data:`REWRITE_KINDS` (:func:`check_kinds`), or a catalogue predicate the file does not
            cover (or a file predicate the catalogue lacks).
    """
    kinds = check_kinds(kinds)
    loaded = load_rewrites(path)
    rewrites = loaded.statements
    keys = [p.key for p in catalogue.predicates]
    if sorted(rewrites) != sorted(keys):
        missing = sorted(set(keys) - set(rewrites)) or sorted(set(rewrites) - set(keys))
        raise UserError(f"rewrites file {path}: its predicates must be the catalogue's "
                        f"({catalogue.source}); differs at {missing[:5]}")
    statements = [k for k in kinds if k in STATEMENT_KINDS]
    preds = tuple(replace(p, **{kind: getattr(p, kind) + rewrites[p.key][kind] for kind in statements})
                  for p in catalogue.predicates)
    chatter = catalogue.chatter + (loaded.chatter if "chatter" in kinds else ())
    return replace(catalogue, predicates=preds, chatter=chatter, source=f"{catalogue.source} + {Path(path).name} ({', '.join(kinds)})")


def overlap(path: str | Path = TRAIN_REWRITES, kinds: tuple[str, ...] = STATEMENT_KINDS) -> dict[str, Any]:
    """How close the rewrites of ``kinds`` come to the same lists of each built-in split's file (the
    held-out test_ood and val_ood, and the catalogue): :func:`clerk.generator.wordings.overlap_report`
    (default: the statements; ``("chatter",)``: the small talk)."""
    from clerk.generator.wordings import overlap_report

    return overlap_report(path, against=("test_ood", "val_ood", "train"), kinds=kinds)
