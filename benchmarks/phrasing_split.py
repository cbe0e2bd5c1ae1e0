"""Phrasing-diversity lever (the out-of-distribution gap of reader and policy), its catalogues.

The in-distribution catalogue (``clerk/phrasing/catalogue.yaml``) has 2-3 templates per predicate
and kind; the policy and the reader trained on it do not transfer to the disjoint phrasings of
``test_ood``. This script takes NEW templates (``benchmarks/phrasing-diversity/new.yaml``: per
predicate 6 add, 6 update, 6 tombstone, 6 current, 5 temporal, written for this lever without
sight of ``ood.yaml``), drops any that is too close to a template of ``ood.yaml`` or of the
catalogue (token-set Jaccard >= ``--max-jaccard``; only the scores are printed, never the OOD
text), then splits them per predicate and kind, seeded, into:

* ``held``: 2 per kind (1 where fewer than 3 survive the filter), never trained on: ``heldout.yaml`` has ONLY these (plus the catalogue's
  small talk and names), so validation personas generated from it are phrased unseen by every
  adapter of the study: a validation stand-in for ``test_ood`` that never reads a test split;
* ``train``: the rest, appended to the catalogue's own lists in ``diverse.yaml`` (the treatment's
  training catalogue); ``full.yaml`` appends all of them (the recipe a next run would ship).

    python benchmarks/phrasing_split.py --new benchmarks/phrasing-diversity/new.yaml --out DIR
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

import yaml

from clerk.generator.catalogue import BUILTIN_PHRASINGS, load_catalogue

KINDS = ("add", "update", "tombstone", "current", "temporal")
HELD_PER_KIND = 2


def tokens(text: str) -> set[str]:
    """Lower-cased word set of a template, placeholders kept as words."""
    return set(re.findall(r"[a-z']+|\{\w+\}", text.lower()))


def jaccard(ta: set[str], tb: set[str]) -> float:
    """Jaccard index of two word sets (from :func:`tokens`)."""
    return len(ta & tb) / max(1, len(ta | tb))


def append_to_catalogue(text: str, additions: dict[str, dict[str, list[str]]]) -> str:
    """``catalogue.yaml``'s text with each predicate's kind lists extended by ``additions``
    (key -> kind -> templates), its comments and layout kept: each new template goes after the
    last item of its list, as a double-quoted scalar (JSON string syntax, valid YAML)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    key = kind = None
    pending: list[str] = []

    def flush() -> None:
        nonlocal pending
        out.extend(f"      - {json.dumps(t)}\n" for t in pending)
        pending = []

    for line in lines:
        stripped = line.strip()
        is_item = line.startswith("      - ")
        if pending and not is_item:
            flush()
        match = re.match(r"  - key: (\w+)", line)
        if match:
            key, kind = match.group(1), None
        elif key and re.match(r"    (\w+):\s*$", line) and stripped[:-1] in KINDS:
            kind = stripped[:-1]
            pending = list(additions.get(key, {}).get(kind, []))
        out.append(line)
    flush()
    return "".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--new", type=Path, required=True, help="YAML list: key + the five template lists")
    ap.add_argument("--out", type=Path, required=True, help="folder for diverse.yaml, heldout.yaml, full.yaml")
    ap.add_argument("--seed", type=int, default=137, help="seed of the held-out draw")
    ap.add_argument("--patch-catalogue", type=Path, default=None, metavar="FILE",
                    help="also write FILE: catalogue.yaml with every kept template appended (the next run's catalogue)")
    ap.add_argument("--max-jaccard", type=float, default=0.6,
                    help="drop a new template this close (or closer) to an ood.yaml or catalogue template")
    args = ap.parse_args()

    base = yaml.safe_load(BUILTIN_PHRASINGS["train"].read_text())
    ood = yaml.safe_load(BUILTIN_PHRASINGS["test_ood"].read_text())
    new = {entry["key"]: entry for entry in yaml.safe_load(args.new.read_text())}
    keys = [p["key"] for p in base["predicates"]]
    missing = sorted(set(keys) - set(new))
    if missing:
        raise SystemExit(f"--new {args.new}: no templates for predicates {missing}")

    ood_words = [tokens(t) for p in ood["predicates"] for k in KINDS for t in p.get(k, [])]
    rng = random.Random(f"phrasing-split:{args.seed}")
    report = {"dropped_ood": 0, "dropped_catalogue": 0, "max_jaccard_ood": 0.0, "kept": 0, "held": 0}
    diverse, heldout, full = [], [], []
    additions: dict[str, dict[str, list[str]]] = {}
    for pred in base["predicates"]:
        key = pred["key"]
        own_words = [tokens(t) for k in KINDS for t in pred[k]]
        d_pred, h_pred, f_pred = dict(pred), {k: v for k, v in pred.items() if k not in KINDS}, dict(pred)
        for kind in KINDS:
            kept = []
            for text in new[key][kind]:
                words = tokens(text)
                near_ood = max(jaccard(words, o) for o in ood_words)
                near_own = max(jaccard(words, o) for o in own_words)
                report["max_jaccard_ood"] = max(report["max_jaccard_ood"], near_ood)
                if near_ood >= args.max_jaccard:
                    report["dropped_ood"] += 1
                elif near_own >= args.max_jaccard:
                    report["dropped_catalogue"] += 1
                else:
                    kept.append(text)
            rng.shuffle(kept)
            if not kept:
                raise SystemExit(f"{key}.{kind}: no new template kept after the similarity filter")
            # Two held out where three or more survive the filter, else one (the rest trains).
            n_held = HELD_PER_KIND if len(kept) > HELD_PER_KIND else 1
            held, extra = kept[:n_held], kept[n_held:]
            report["kept"] += len(kept)
            report["held"] += len(held)
            d_pred[kind] = list(pred[kind]) + extra
            h_pred[kind] = held
            in_order = sorted(kept, key=new[key][kind].index)
            f_pred[kind] = list(pred[kind]) + in_order
            additions.setdefault(key, {})[kind] = in_order
        diverse.append(d_pred)
        heldout.append(h_pred)
        full.append(f_pred)

    args.out.mkdir(parents=True, exist_ok=True)
    rest = {k: v for k, v in base.items() if k != "predicates"}
    for name, preds in (("diverse", diverse), ("heldout", heldout), ("full", full)):
        text = yaml.safe_dump({"predicates": preds, **rest}, sort_keys=False, allow_unicode=True, width=120)
        (args.out / f"{name}.yaml").write_text(text)
        load_catalogue(args.out / f"{name}.yaml")  # the generator's own validation (UserError if invalid)
    if args.patch_catalogue:
        patched = append_to_catalogue(BUILTIN_PHRASINGS["train"].read_text(), additions)
        if yaml.safe_load(patched)["predicates"] != full:
            raise SystemExit("the patched catalogue.yaml does not parse to the full catalogue")
        args.patch_catalogue.write_text(patched)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
