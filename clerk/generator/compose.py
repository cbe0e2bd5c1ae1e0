"""Compositional wording: a session's user lines rebuilt from parts (SPEC §2.8).

A catalogue template states one fact in one sentence. People also open with a filler, state two
facts in one breath, correct a value they just gave, and mention facts about somebody else. With
``compose`` > 0 (the probability each rewrite is tried), :class:`Composer` rewrites a session's
lines so the policy sees the structure, not only the templates:

* **opener**: a filler before the line ("By the way, my job ...").
* **pair**: two adjacent fact lines joined into one ("I'm a nurse, and on top of that I ...");
  both facts keep their gold ops, in transcript order.
* **correction**: an ADD or UPDATE first stated with a wrong value, corrected in the same line
  ("... a chef. Sorry, I misspoke: nurse, not chef."); the gold op writes the corrected value.
* **someone else**: an extra line stating a catalogue fact about a relative or friend; no op.

The gold program and every fact stay those of the uncomposed session: only the wording changes.
The composer draws from its own ``random.Random`` (seeded from the run's seed string), so the
personas, events and questions of a composed run equal those of a plain one, and with
``compose`` 0 nothing is drawn and the output is byte-identical to a run without the option.

    >>> lines = Composer(0.0, "s").session([{"text": "I'm a nurse.", "kind": "ADD", "value": "nurse"}], None)
    >>> lines[0].text
    "I'm a nurse."
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

OPENERS = ("By the way,", "Oh, and", "Anyway,", "Before I forget,", "Right, so", "Also,",
           "One more thing:", "Just so it's said,", "While I think of it,", "Okay, so")
JOINERS = ("and on top of that", "and also", "plus", "and while we're at it,", "and another thing:")
CORRECTIONS = ("Sorry, I misspoke: {value}, not {wrong}.", "No wait, I mean {value}, not {wrong}.",
               "Scratch that, it's {value}, not {wrong}.", "Let me correct that: {value}, not {wrong}.")
RELATIONS = ("sister", "brother", "neighbour", "colleague", "cousin", "best friend", "mum", "dad", "flatmate")
SOMEONE_ELSE = ("My {relation}'s {phrase} is {value}, funnily enough.", "Not about me, but my {relation}'s {phrase} is {value}.",
                "My {relation} told me their {phrase} is {value}.", "Talking of others: my {relation}'s {phrase} is {value}.")


@dataclass
class Line:
    """One user line of a session and the events it states (none for small talk)."""

    text: str
    events: list[dict[str, Any]] = field(default_factory=list)
    corrected: bool = False  # a correction ends the line: it is not joined to another


def _lower_first(text: str, keep: tuple[str, ...]) -> str:
    """``text`` with its first letter lowercased, unless it starts with 'I' as a word or a value."""
    word = text.split(" ", 1)[0]
    if word == "I" or word.startswith("I'") or any(text.startswith(v) for v in keep):
        return text
    return text[:1].lower() + text[1:]


class Composer:
    """Rewrites the user lines of one run's sessions (see the module docstring).

    Args:
        rate: probability that each rewrite is tried on a line (0 = none, no RNG use).
        rng_seed: the run's seed string; the composer's stream is derived from it.
    """

    def __init__(self, rate: float, rng_seed: str) -> None:
        self.rate = rate
        self.rng = random.Random(f"clerk.generator.compose:{rng_seed}")

    def _try(self) -> bool:
        return self.rng.random() < self.rate

    def session(self, items: list[Any], catalogue) -> list[Line]:
        """The session's user lines after the greeting, from its shuffled events (dicts with
        ``text``) and small-talk strings; ``catalogue`` supplies values and phrases."""
        lines = [Line(item["text"], [item]) if isinstance(item, dict) else Line(item) for item in items]
        if not self.rate:
            return lines
        for line in lines:
            if len(line.events) == 1 and line.events[0]["kind"] in ("ADD", "UPDATE") and self._try():
                self._correct(line, catalogue)
        lines = self._pair(lines)
        for line in lines:
            if self._try():
                values = tuple(e["value"] for e in line.events if e.get("value"))
                line.text = f"{self.rng.choice(OPENERS)} {_lower_first(line.text, values)}"
        if self._try():
            lines.insert(self.rng.randint(0, len(lines)), self._someone_else(catalogue))
        return lines

    def extra_acknowledgements(self, count: int, catalogue) -> list[str]:
        """Assistant replies for the ``count`` lines a composed session has beyond its planned
        items (none when ``count`` <= 0), drawn from the composer's stream, not the run's."""
        return [self.rng.choice(catalogue.acknowledgements) for _ in range(count)]

    def _correct(self, line: Line, catalogue) -> None:
        """State the fact with a wrong value first, then correct it in the same line."""
        event = line.events[0]
        pred = catalogue.predicate(event["pred"])
        wrong = [v for v in pred.values if v not in (event["value"], event.get("old"))]
        if not wrong or event["value"] not in line.text:
            return
        pick = self.rng.choice(wrong)
        line.text = (line.text.replace(event["value"], pick) + " "
                     + self.rng.choice(CORRECTIONS).format(value=event["value"], wrong=pick))
        line.corrected = True

    def _pair(self, lines: list[Line]) -> list[Line]:
        """Join adjacent one-fact lines into two-fact lines, each pair with probability ``rate``."""
        out: list[Line] = []
        for line in lines:
            last = out[-1] if out else None
            if (last is not None and len(last.events) == 1 and len(line.events) == 1
                    and not (last.corrected or line.corrected) and self._try()):
                first = last.text.rstrip(".!")
                second = _lower_first(line.text, (line.events[0]["value"],))
                out[-1] = Line(f"{first}, {self.rng.choice(JOINERS)} {second}", last.events + line.events)
            else:
                out.append(line)
        return out

    def _someone_else(self, catalogue) -> Line:
        """A catalogue fact about somebody else: no op, a distractor the policy must not write."""
        pred = self.rng.choice(catalogue.predicates)
        return Line(self.rng.choice(SOMEONE_ELSE).format(relation=self.rng.choice(RELATIONS), phrase=pred.phrase,
                                                         value=self.rng.choice(pred.values)))
