"""The reader's training-only question set and the template-overlap measure of the wording splits.

The catalogue's question templates mostly name the ledger key ("What is {name}'s job?"); the
out-of-distribution sets (``ood.yaml``, ``val.yaml``) mostly do not. A reader trained only on the
catalogue's wording reads the gold ledger worse on new wording, and that loss belongs to the
instrument, not to the memory it reads. ``clerk/phrasing/reader_questions.yaml`` holds question
templates for every catalogue predicate that vary the way people ask: without the key word,
indirect, fronted, in another register, with other words for "before". They were written without
sight of the two held-out files and are read **only** when the reader's SFT set is built
(``sft.reworded_questions``): no split is generated from them, so no test question is phrased
by them.

**Overlap measure** (the one the catalogue's own second round was filtered with): a template's
token set (lower-cased words, placeholders kept as words) and the Jaccard index of two sets. A
template of this set within ``MAX_JACCARD`` of any question template of a held-out file is not
allowed (:func:`overlap_report`; ``tests/test_wordings.py`` holds the file to it).

    python -c "from clerk.generator.wordings import overlap_report; print(overlap_report())"
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clerk.generator.catalogue import BUILTIN_PHRASINGS, PHRASING_DIR, _read_yaml, keyed_lists

#: The reader's training-only question set.
READER_QUESTIONS = PHRASING_DIR / "reader_questions.yaml"
#: Question kinds of the set: ``current`` (the present value; also asked for unknown, superseded and
#: negated facts) and ``temporal`` (the earlier value), as in the catalogue.
KINDS = ("current", "temporal")
#: Token-set Jaccard index at or above which two templates count as the same wording.
MAX_JACCARD = 0.6
#: Question type -> the kind of template that asks it (types outside the map are never reworded:
#: the forget splits' ``forgotten``, the open world's ``when``).
KIND_OF_TYPE = {"unknown": "current", "current": "current", "superseded": "current", "negated": "current",
                "temporal": "temporal"}


def tokens(text: str) -> set[str]:
    """Lower-cased word set of a template, placeholders kept as words.

    >>> sorted(tokens("What's {name}'s job?"))
    ["'s", 'job', "what's", '{name}']
    """
    return set(re.findall(r"[a-z']+|\{\w+\}", text.lower()))


def jaccard(ta: set[str], tb: set[str]) -> float:
    """Jaccard index of two word sets (from :func:`tokens`).

    >>> jaccard({"a", "b"}, {"b", "c"})
    0.3333333333333333
    """
    return len(ta & tb) / max(1, len(ta | tb))


@dataclass(frozen=True)
class QuestionSet:
    """Question templates per predicate key and kind (``current``, ``temporal``)."""

    templates: dict[str, dict[str, tuple[str, ...]]]

    def reword(self, question: dict[str, Any], name: str, share: float, rng: random.Random) -> str:
        """The question's text, or with probability ``share`` a template of this set for its
        predicate and type, filled with ``name``. One draw from ``rng`` per question that could be
        reworded (its type and predicate are in the set), two when it is reworded."""
        kind = KIND_OF_TYPE.get(question.get("type", ""))
        options = self.templates.get(question.get("pred", ""), {}).get(kind or "", ())
        if not options or rng.random() >= share:
            return question["question"]
        return rng.choice(options).format(name=name)


def load_question_set(path: str | Path = READER_QUESTIONS) -> QuestionSet:
    """Read and check a question set: a ``predicates`` list of ``{key, current, temporal}``, every
    template with ``{name}`` and no other placeholder, keys unique.

    Raises:
        UserError: unreadable file, a missing key, a bad template, a repeated predicate key.
    """
    path = Path(path)
    rules = {kind: (("name",), ("name",)) for kind in KINDS}
    return QuestionSet(keyed_lists(_read_yaml(path), path, "question set", rules))


def listed_templates(path: str | Path, kinds: tuple[str, ...] = KINDS) -> list[str]:
    """Every template of the lists ``kinds`` (default: the questions, ``current`` and ``temporal``)
    of a phrasing catalogue, question set or rewrites file: each predicate's lists of those kinds,
    then the file's top-level lists of those names (``chatter``)."""
    data = _read_yaml(Path(path))
    top = [t for kind in kinds if isinstance(data.get(kind), list) for t in data[kind]]  # e.g. chatter
    return [t for pred in data["predicates"] for kind in kinds for t in pred.get(kind, [])] + top


def overlap_report(path: str | Path = READER_QUESTIONS,
                   against: tuple[str | Path, ...] = ("test_ood", "val_ood", "train"),
                   kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """How close the file's templates of the lists ``kinds`` come to the same lists of each built-in
    split's file (a split name) or of another wording file (a Path, reported under its file name):
    per entry the largest Jaccard index of any pair, the mean over the file of each
    template's nearest one, the templates at or above ``MAX_JACCARD`` and the exact repeats
    (template texts only; the held-out files' texts are never returned). The default compares the
    reader's question set with every split's questions."""
    mine = [(t, tokens(t)) for t in listed_templates(path, kinds)]
    report: dict[str, Any] = {"templates": len(mine), "max_jaccard_allowed": MAX_JACCARD}
    for split in against:
        theirs = listed_templates(split if isinstance(split, Path) else BUILTIN_PHRASINGS[split], kinds)
        their_tokens = [tokens(t) for t in theirs]
        nearest = [max(jaccard(words, o) for o in their_tokens) for _, words in mine]
        report[split.name if isinstance(split, Path) else split] = {
            "templates": len(theirs),
            "max_jaccard": round(max(nearest), 4),
            "mean_nearest_jaccard": round(sum(nearest) / len(nearest), 4),
            "at_or_above_max": sum(n >= MAX_JACCARD for n in nearest),
            "exact_repeats": len({t for t, _ in mine} & set(theirs)),
        }
    return report
