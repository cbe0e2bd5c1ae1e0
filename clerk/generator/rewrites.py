"""The policy's training-only statement rewrites: extra ADD, UPDATE and TOMBSTONE wordings of the
catalogue's predicates, read for the train split only (SPEC §2).

The held-out wording (``ood.yaml``, ``val.yaml``) differs from the catalogue's in structure more
than in vocabulary: its statements leave the predicate's word out, put the new value before the
old one, retract without a negation word, open with the value. ``clerk/phrasing/train_rewrites.yaml``
holds statements of the catalogue's predicates along those axes, written without sight of the
held-out files and filtered against them with the overlap measure of
:mod:`clerk.generator.wordings` (``tests/test_rewrites.py`` holds the file to it).

With ``rewrites`` naming kinds (``data.train.rewrites``, ``clerk generate --rewrites add update``)
each of those lists of the file is appended to the same predicate's list of the built-in catalogue
before the train split is worded, so every training statement of that kind is drawn from both.
Only the train split takes them: test keeps the catalogue's wording, test_ood and val_ood their own.

    python -c "from clerk.generator.rewrites import overlap; print(overlap())"
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from clerk.errors import UserError
from clerk.generator.catalogue import _PREDICATE_TEMPLATES, PHRASING_DIR, Catalogue, _read_yaml, _templates

#: The training-only statement rewrites.
TRAIN_REWRITES = PHRASING_DIR / "train_rewrites.yaml"
#: The statement kinds a rewrite can be (the lists of a catalogue predicate that word a fact).
REWRITE_KINDS = ("add", "update", "tombstone")


def load_rewrites(path: str | Path = TRAIN_REWRITES) -> dict[str, dict[str, tuple[str, ...]]]:
    """Read and check a rewrites file: a ``predicates`` list of ``{key, add, update, tombstone}``,
    each template with the catalogue's placeholders for its kind, keys unique.

    Returns:
        predicate key -> kind -> templates, in file order.

    Raises:
        UserError: unreadable file, a missing key, a bad template, a repeated predicate key.
    """
    path = Path(path)
    data = _read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("predicates"), list) or not data["predicates"]:
        raise UserError(f"rewrites file {path}: expected a mapping with a non-empty 'predicates' list")
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for i, raw in enumerate(data["predicates"]):
        where = f"rewrites file {path}: predicates[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("key"), str):
            raise UserError(f"{where}: expected a mapping with a string 'key'")
        if raw["key"] in out:
            raise UserError(f"{where}: predicate key {raw['key']!r} appears twice")
        out[raw["key"]] = {kind: _templates(raw, kind, where, *_PREDICATE_TEMPLATES[kind]) for kind in REWRITE_KINDS}
    return out


def with_rewrites(catalogue: Catalogue, kinds: tuple[str, ...], path: str | Path = TRAIN_REWRITES) -> Catalogue:
    """``catalogue`` with the rewrites of ``kinds`` appended to each predicate's lists of those kinds.

    Raises:
        UserError: a kind outside :data:`REWRITE_KINDS`, or a catalogue predicate the file does not
            cover (or a file predicate the catalogue lacks).
    """
    bad = [k for k in kinds if k not in REWRITE_KINDS]
    if bad:
        raise UserError(f"rewrites: {bad[0]!r} is not a statement kind; allowed: {', '.join(REWRITE_KINDS)}")
    rewrites = load_rewrites(path)
    keys = [p.key for p in catalogue.predicates]
    if sorted(rewrites) != sorted(keys):
        missing = sorted(set(keys) - set(rewrites)) or sorted(set(rewrites) - set(keys))
        raise UserError(f"rewrites file {path}: its predicates must be the catalogue's "
                        f"({catalogue.source}); differs at {missing[:5]}")
    preds = tuple(replace(p, **{kind: getattr(p, kind) + rewrites[p.key][kind] for kind in kinds})
                  for p in catalogue.predicates)
    return replace(catalogue, predicates=preds, source=f"{catalogue.source} + {Path(path).name} ({', '.join(kinds)})")


def overlap(path: str | Path = TRAIN_REWRITES) -> dict[str, Any]:
    """How close the rewrites come to the statements of each built-in split's file (the held-out
    test_ood and val_ood, and the catalogue): :func:`clerk.generator.wordings.overlap_report` over
    the add, update and tombstone lists."""
    from clerk.generator.wordings import overlap_report

    return overlap_report(path, against=("test_ood", "val_ood", "train"), kinds=REWRITE_KINDS)
