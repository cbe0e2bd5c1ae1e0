"""What a memory system does with a forget request: the shared pieces (SPEC §9, the erasure study).

A forget request (:mod:`clerk.generator.forgets`) names a predicate and every value it ever held.
Every system implements ``MemorySystem.forget(state, timeline, pred, values)`` with these pieces:

* **ledger systems** (clerk, oracle, prompted-ledger) free the predicate's slots
  (:func:`clerk.scrub.free_predicate`): value and ``prev`` are gone. The memory is one
  persona's, so every slot of the predicate goes, whatever subject string the writer put in it;
  a value the writer filed under another predicate key is another slot and stays (the erasure
  study counts it as a leak).
* **transcript systems** (full, window, rag, add-only, summary-rag) redact every forgotten value
  from the text they keep (turns, notes, summaries) and from their retrieval index input, with the
  store's redaction (:func:`clerk.scrub.redact`: by text, in any case or normal form, replaced by
  ``[forgotten]``), so the view and the index are what they would be had the values never been
  said.
* ``null`` keeps nothing, so there is nothing to erase.

:data:`FORGET_ACTIONS` names these three behaviours (a system's ``forget_action``), for tables.

    python -c "import doctest, clerk.memory.forgetting as m; print(doctest.testmod(m))"
"""

from __future__ import annotations

from clerk.scrub import REDACTED, free_predicate, free_values, redact, value_pattern

__all__ = ["FORGET_ACTIONS", "REDACTED", "free_predicate", "free_values", "redact", "redact_indexed", "scrub_session", "value_pattern"]

#: ``MemorySystem.forget_action`` values -> what the paper's table calls them.
FORGET_ACTIONS = {"free-slot": "slot freed", "redact": "values redacted", "nothing": "nothing stored"}

#: Text fields of a remembered session besides its turns (LoCoMo sessions carry these).
_TEXT_FIELDS = ("date", "summary")


def scrub_session(session: dict, values: list[str]) -> dict:
    """A remembered session with ``values`` redacted from its turns (and date/summary, when present).

    The copy keeps what a transcript memory holds of a session (``index``, ``turns``, ``date``,
    ``summary``); the generator's gold fields that the runner hands in with a session (events,
    questions, gold programs, ledgers) are not part of a transcript memory and are left out. The
    input is not mutated.

    >>> s = {"index": 2, "turns": [{"role": "user", "content": "I moved to Oslo."}], "events": []}
    >>> scrub_session(s, ["oslo"])
    {'index': 2, 'turns': [{'role': 'user', 'content': 'I moved to [forgotten].'}]}
    """
    pattern = value_pattern(values)
    out = {"index": session["index"],
           "turns": [{**turn, "content": redact(turn["content"], pattern)} for turn in session["turns"]]}
    for name in _TEXT_FIELDS:
        if isinstance(session.get(name), str):
            out[name] = redact(session[name], pattern)
    return out


def redact_indexed(texts: list[str], tokens: list[list[str]], values: list[str], content, tokenize):
    """Redact ``values`` from indexed texts and re-tokenize the changed ones for the BM25 index.

    Args:
        texts: the remembered texts (rag's turn lines, summary-rag's summary blocks).
        tokens: their index tokens, one list per text.
        values: the forgotten values.
        content: text -> the part the index holds (the line after its header).
        tokenize: texts -> token lists (the system's BM25 tokenizer).

    Returns:
        (redacted texts, their tokens); unchanged texts keep their tokens.
    """
    pattern = value_pattern(values)
    out_texts, out_tokens = [], []
    for text, toks in zip(texts, tokens):
        scrubbed = redact(text, pattern)
        out_texts.append(scrubbed)
        out_tokens.append(toks if scrubbed == text else tokenize([content(scrubbed)])[0])
    return out_texts, out_tokens
