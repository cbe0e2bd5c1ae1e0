"""The policy's program language: one compact, key-addressed line per edit, compiled to SPEC ops.

SPEC §1 fixes the ops and their JSON form (files keep it). What a model writes is shorter:

    ADD <pred> <value>        fill the lowest free slot with (subject, pred, value)
    UPDATE <pred> <value>     supersede the slot holding (subject, pred)
    TOMBSTONE <pred>          the fact stopped being true (its value is kept)
    EVICT <pred>              free the slot holding (subject, pred)

Two method choices, stated in the paper's setup section:

* **One subject per ledger.** A persona's ledger holds that persona's facts only, so the subject
  is not repeated on every line; the compiler fills ``s`` from the persona's name.
* **Addressing by key.** The ledger keeps each (subject, pred) unique (SPEC §1), so naming the
  slot by its predicate is exact: the compiler resolves the key to the slot's index in the
  ledger *as it stands at that op* (the program applied so far with the lenient reducer). The
  model does no index arithmetic; which slot to EVICT is still the model's choice. A key that
  names no slot compiles to index -1, which the reducer rejects as out of range.

**The open language** (SPEC §1.7). Given a :class:`clerk.form.LedgerForm` in place of the
subject, a line may date its fact and, when the ledger has several known subjects, names the
subject as its first word after the keyword::

    ADD [@<when> ][<subject> ]<key> <value>
    UPDATE [@<when> ][<subject> ]<key> <value>
    TOMBSTONE [<subject> ]<key>
    EVICT [<subject> ]<key>

The compiler reads the syntax only; whether a subject is known, a key in normal form and a when
a date is the reducer's judgement under the same form (an op it rejects is an invalid op). With
one known subject and no dates the open language is the closed one, line for line.

Compilation is line by line and never raises: a line that is not one of the four forms is kept
in the program as its raw text (not a JSON object), so the lenient reducer records it as an
invalid op; a non-blank text in which no line compiles is a parse failure (SPEC §1.4: text with
no program in it gives an empty program and a recorded parse failure).

    >>> L0 = [{"i": 0, "s": "Ari", "p": "job", "o": "nurse", "prev": None, "v": 1, "born": 0, "t": 0, "uses": 0}, {"i": 1}]
    >>> compile_program("UPDATE job chef\\nEVICT job", L0, "Ari", now=1).program
    [{'op': 'UPDATE', 'i': 0, 's': 'Ari', 'p': 'job', 'o': 'chef'}, {'op': 'EVICT', 'i': 0}]
    >>> render_program(L0, [{"op": "TOMBSTONE", "i": 0}])
    'TOMBSTONE job'
    >>> from clerk.form import LedgerForm
    >>> two = LedgerForm(("Jo", "Al"))
    >>> compile_program("ADD @2023-05-07 Al went_to_paris with Jo", L.empty_ledger(1), two, now=1).program
    [{'op': 'ADD', 's': 'Al', 'p': 'went_to_paris', 'o': 'with Jo', 'w': '2023-05-07'}]

    python -m doctest clerk/program.py -v
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from clerk import ledger as L
from clerk.form import KEY_TOKEN, MAX_VALUE_CHARS, WHEN_REGEX, LedgerForm

__all__ = ["MAX_VALUE_CHARS", "Compiled", "compile_program", "program_grammar", "render_program"]

#: The four line forms: op keyword, predicate key, and (ADD/UPDATE) the value to the line's end.
_LINE = re.compile(r"^(ADD|UPDATE) ([a-z][a-z0-9_]*) (\S(?:.*\S)?)$|^(TOMBSTONE|EVICT) ([a-z][a-z0-9_]*)$")
#: The open language's line forms (with and without a subject word): keyword, optional ``@when``
#: (ADD/UPDATE), subject, key, value. Groups: ADD/UPDATE, when, TOMBSTONE/EVICT, subject, key, value.
_OPEN_LINE = {
    multi: re.compile(r"^(?:(ADD|UPDATE) (?:@(\S+) )?|(TOMBSTONE|EVICT) )" + (r"(\S+) " if multi else "()")
                      + r"([a-z][a-z0-9_]*)(?: (\S(?:.*\S)?))?$")
    for multi in (False, True)
}
#: Grammar character classes (Rust regex syntax) of a value's characters: ``_VALUE_CHAR`` excludes
#: every line boundary of ``str.splitlines``, ``_VALUE_END`` also every character ``str.strip``
#: removes (Unicode White_Space, ``\s``, plus the separators U+001C..U+001F), so a program the
#: grammar accepts compiles line for line.
_VALUE_CHAR = r"[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"
_VALUE_END = r"[^\s\x1c-\x1f]"


@dataclass
class Compiled:
    """A compiled program: SPEC ops (raw text for a line that did not compile), per-line errors."""

    program: list[Any]
    errors: list[str] = field(default_factory=list)
    parse_failed: bool = False


def _fact_text(slot_or_op: dict[str, Any], form: LedgerForm | None) -> str:
    """How a line names a fact: ``<key>``, or ``<subject> <key>`` when the form has several subjects."""
    return f"{slot_or_op['s']} {slot_or_op['p']}" if form is not None and form.multi else slot_or_op["p"]


def render_program(ledger: L.Ledger, program: L.Program, now: int = 0, *, form: LedgerForm | None = None) -> str:
    """The program language text of a (valid) SPEC program written against ``ledger``.

    Index ops are named by the predicate of the slot they touch at that point of the program. With
    a ``form`` the program is checked under it and written in the open language (``@<when>`` for a
    dated fact, the subject when the form has several).

    Raises:
        ledger.InvalidOpError: ``program`` does not apply strictly (gold programs always do).
    """
    lines, current = [], ledger
    for op in program:
        after, _ = L.reduce(current, [op], now, strict=True, form=form)  # first: an invalid op raises, whatever its fields
        kind = op["op"]
        if kind in ("ADD", "UPDATE"):
            when = f"@{op['w']} " if "w" in op else ""
            lines.append(f"{kind} {when}{_fact_text(op, form)} {op['o']}")
        else:
            lines.append(f"{kind} {_fact_text(current[op['i']], form)}")
        current = after
    return "\n".join(lines)


def _compile_line(line: str, ledger: L.Ledger, subject: str) -> dict[str, Any] | None:
    match = _LINE.match(line)
    if match is None:
        return None
    if match.group(1):
        kind, pred, value = match.group(1), match.group(2), match.group(3)
        if kind == "ADD":
            return {"op": "ADD", "s": subject, "p": pred, "o": value}
        index = L.find(ledger, subject, pred)
        return {"op": "UPDATE", "i": -1 if index is None else index, "s": subject, "p": pred, "o": value}
    index = L.find(ledger, subject, match.group(5))
    return {"op": match.group(4), "i": -1 if index is None else index}


def _compile_open_line(line: str, ledger: L.Ledger, form: LedgerForm) -> dict[str, Any] | None:
    match = _OPEN_LINE[form.multi].match(line)
    if match is None:
        return None
    edit, when, index_op, subject, key, value = match.groups()
    subject = subject if form.multi else form.subjects[0]
    index = L.find(ledger, subject, key)
    if index_op:
        return None if value is not None else {"op": index_op, "i": -1 if index is None else index}
    if value is None:
        return None
    op: dict[str, Any] = {"op": "ADD"} if edit == "ADD" else {"op": "UPDATE", "i": -1 if index is None else index}
    op.update(s=subject, p=key, o=value)
    if when is not None:
        op["w"] = when
    return op


def compile_program(text: Any, ledger: L.Ledger, subject: str | LedgerForm, now: int) -> Compiled:
    """Compile model text to SPEC ops against ``ledger``; never raises.

    Args:
        text: the writer's output (anything: non-text is a parse failure).
        ledger: the ledger the program was written against (not mutated).
        subject: the persona's name, the ``s`` of every op (the closed language); or the open
            ledger's form (the open language: SPEC §1.7).
        now: the session index (keys resolve against the ledger with the ops so far applied).

    Returns:
        :class:`Compiled`; ``parse_failed`` when the text is not blank and no line compiled.
    """
    form = subject if isinstance(subject, LedgerForm) else None
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return Compiled([], [f"expected text, got {type(text).__name__}"], True)
    program: list[Any] = []
    errors: list[str] = []
    current = ledger
    for number, raw in enumerate(text.strip().splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        op = _compile_line(line, current, subject) if form is None else _compile_open_line(line, current, form)
        if op is None:
            shape = "[<subject> ]" if form is not None and form.multi else ""
            when = "[@<when> ]" if form is not None else ""
            errors.append(f"line {number}: {line[:80]!r} is not ADD/UPDATE {when}{shape}<pred> <value> or "
                          f"TOMBSTONE/EVICT {shape}<pred>")
            program.append(line)
            continue
        program.append(op)
        current, _ = L.reduce(current, [op], now, strict=False, form=form)
    failed = bool(program) and all(isinstance(op, str) for op in program)
    return Compiled([] if failed else program, errors, failed)


def _alternatives(names: Iterable[str]) -> str:
    """A Lark alternation of string literals (JSON escaping is valid Lark string syntax)."""
    import json

    return " | ".join(json.dumps(name) for name in sorted(set(names)))


def _key_sets(ledger: L.Ledger, subject: str | LedgerForm, predicates: Iterable[str] | None) -> dict[str, str | None]:
    """The grammar's four fact sets (Lark bodies, None = empty): facts held, active (not
    tombstoned), fresh (an ADD may write) and any (what an op may name once the program added)."""
    if not isinstance(subject, LedgerForm):  # the closed language: one subject, keys only
        held = sorted(slot["p"] for slot in L.occupied(ledger) if slot["s"] == subject)
        active = sorted(slot["p"] for slot in L.occupied(ledger) if slot["s"] == subject and slot["v"] == 1)
        if predicates is None:
            fresh_key = any_key = "/[a-z][a-z0-9_]{0,30}/"
        else:
            fresh = sorted(set(predicates) - set(held))
            fresh_key = _alternatives(fresh) if fresh else None
            any_key = _alternatives(set(predicates) | set(held)) if set(predicates) | set(held) else None
        return {"held_key": _alternatives(held) if held else None,
                "active_key": _alternatives(active) if active else None, "fresh_key": fresh_key, "any_key": any_key}
    form = subject
    mine = [slot for slot in L.occupied(ledger) if slot["s"] in form.subjects]
    held = {_fact_text(slot, form) for slot in mine}
    active = {_fact_text(slot, form) for slot in mine if slot["v"] == 1}
    if form.keys is None:  # any key of the normal form (held ones included: an ADD of one is invalid)
        fresh_key = any_key = 'subject " " KEY' if form.multi else "KEY"
    else:
        every = {_fact_text({"s": s, "p": k}, form) for s in form.subjects for k in form.keys}
        fresh_key = _alternatives(every - held) if every - held else None
        any_key = _alternatives(every | held) if every | held else None
    return {"held_key": _alternatives(held) if held else None, "active_key": _alternatives(active) if active else None,
            "fresh_key": fresh_key, "any_key": any_key}


def program_grammar(ledger: L.Ledger, subject: str | LedgerForm, predicates: Iterable[str] | None = None) -> str:
    """A Lark grammar of the programs that are *well formed* against ``ledger`` (constrained decoding).

    UPDATE and EVICT may name only keys present in the ledger, TOMBSTONE only active ones, ADD
    only keys absent from it (from ``predicates`` when given: the catalogue's keys; else any
    snake_case key). Values are one line of at most :data:`MAX_VALUE_CHARS` characters. The
    grammar also counts free slots, so an ADD is only possible while one is free and an EVICT
    (of a slot the writer picks) frees one. Which facts to write, and which slot to evict to make
    room, stay the writer's choice.

    The key sets are those of the ledger *before* the program until the program itself changes
    which keys are held: after its first ADD, UPDATE/TOMBSTONE/EVICT may also name any key an ADD
    may write (the key just added, e.g. a gold program that adds a fact and then evicts it to make
    room for another); after its first EVICT, an ADD may also name a key held before (an evicted
    fact added back). Nonterminal ``p<f>_<e><a>`` is a program that may use ``f`` free slots,
    with ``e``/``a`` = whether an EVICT/ADD came before. Every gold program is accepted; a program
    can still hold an invalid op (e.g. a key evicted earlier in the same program).

    With a :class:`~clerk.form.LedgerForm` as ``subject`` (the open language, SPEC §1.7;
    ``predicates`` is then unused: the form's ``keys`` restrict them) a fact is named by
    ``<subject> <key>`` when the form has several subjects, only the form's subjects can be named,
    a coined key has the normal form (``KEY``), an ADD or UPDATE may carry ``@<when>`` (a date
    that exists), and values are at most the form's ``max_value_chars``.
    """
    form = subject if isinstance(subject, LedgerForm) else None
    keys = _key_sets(ledger, subject, predicates)
    # The op forms by phase: a0/a1 = before/after the program's first ADD, e0/e1 = before/after its first EVICT.
    dated = "" if form is None else "dated? "
    uses = {"update_a0": (f'"UPDATE " {dated}', "held_key", ' " " value'),
            "update_a1": (f'"UPDATE " {dated}', "any_key", ' " " value'),
            "tombstone_a0": ('"TOMBSTONE " ', "active_key", ""), "tombstone_a1": ('"TOMBSTONE " ', "any_key", ""),
            "evict_a0": ('"EVICT " ', "held_key", ""), "evict_a1": ('"EVICT " ', "any_key", ""),
            "add_e0": (f'"ADD " {dated}', "fresh_key", ' " " value'), "add_e1": (f'"ADD " {dated}', "any_key", ' " " value')}
    forms = {name: f"{head}{key}{tail}" for name, (head, key, tail) in uses.items() if keys[key]}
    budget, free = len(ledger), sum(1 for slot in ledger if L.is_free(slot))
    rules = [f"start: p{free}_00?"]
    for f in range(budget + 1):
        for e in (0, 1):
            for a in (0, 1):
                here = f"{e}{a}"
                steps = [f'{name} ("\\n" p{f}_{here})?' for name in (f"update_a{a}", f"tombstone_a{a}") if name in forms]
                if f"add_e{e}" in forms and f > 0:
                    steps.append(f'add_e{e} ("\\n" p{f - 1}_{e}1)?')
                if f"evict_a{a}" in forms and f < budget:
                    steps.append(f'evict_a{a} ("\\n" p{f + 1}_1{a})?')
                rules.append(f"p{f}_{here}: {' | '.join(steps)}" if steps else f'p{f}_{here}: "\\u0000"')
    rules += [f"{name}: {body}" for name, body in keys.items() if body]
    rules += [f"{name}: {body}" for name, body in forms.items()]
    # A value is one line as compile_program reads lines (str.splitlines, then strip): no line
    # boundary of Python's inside it, no whitespace of Python's at either end.
    longest = MAX_VALUE_CHARS if form is None else form.max_value_chars
    inner = f"({_VALUE_CHAR}{{0,{longest - 2}}}{_VALUE_END})?" if longest > 1 else ""
    rules.append(f"value: /{_VALUE_END}{inner}/")
    if form is not None:
        rules += ['dated: "@" WHEN " "', f"WHEN: /{WHEN_REGEX}/"]
        if form.keys is None:
            rules.append(f"KEY: {KEY_TOKEN}")
        if form.keys is None and form.multi:
            rules.append(f"subject: {_alternatives(form.subjects)}")
    return "\n".join(rules) + "\n"
