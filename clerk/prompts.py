"""Every piece of text a model reads or is trained to write: the one source of prompt text.

SPEC §4. Two tasks share one chat format (ChatML, the format of SmolLM2 and Qwen2.5):

* CONSOLIDATE: (serialized ledger before, the session's user lines) -> an edit program in the
  program language of ``clerk.program``. The trained policy gets no instructions (it learned the
  task from examples: every token of a prompt costs in training and in every write); the
  prompted-ledger baseline gets instructions and worked examples (:data:`PROMPTED_SYSTEM`).
* ANSWER: (a memory view, question) -> answer text. The view is :func:`reader_ledger` for ledger
  systems and transcript text for the baselines; every system is read through this one prompt
  by the one reader.

Training (``clerk.sft``), evaluation (``clerk.evaluate``) and LoCoMo (``clerk.locomo``) build their
messages here and nowhere else.

    >>> m = answer_messages("city=Oslo", "Where does Ari live?")
    >>> [x["role"] for x in m]
    ['user']

    python -m doctest clerk/prompts.py -v
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clerk.form import LedgerForm

#: Gold answer for a predicate that was never stated (SPEC §2's fixed "I don't know" phrase). One
#: token: the MC reader's length-normalised score of a long fixed phrase is inflated by its
#: predictable continuation ("I" -> " don't know."), which then outscores a stated value
#: (docs/DECISIONS.md, "Short fixed answers").
UNKNOWN_ANSWER = "unknown"
#: Gold answer for a fact that was retracted (tombstoned): SPEC §2's fixed "no longer the case"
#: phrase, short for the same reason.
NEGATED_ANSWER = "no longer"

#: ChatML with ``{% generation %}`` markers around assistant content, so TRL's
#: ``assistant_only_loss`` can mask everything else. Used for every model (the GGUF's own template
#: lacks the markers; the scratch tokenizer has none).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{ '\\n' }}"
    "{%- else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)
#: Special tokens the template relies on (the scratch tokenizer must contain them).
SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")
END_OF_TURN = "<|im_end|>"

#: The prompted-ledger baseline's instructions, in the style of Mem0's memory-update prompt
#: (an LLM told which operations exist, when to use each, and shown worked examples), for the same
#: program language the trained policy writes (``clerk.program``). The trained policy gets no
#: instructions: it learned the task from examples.
PROMPTED_SYSTEM = (
    "You are a memory manager. You keep a fixed number of memory slots about the user and update "
    "them after every conversation. The memory names the user, then lists one slot per line: index, "
    "u<times used>, t<session of last change>, b<session added>, an x if the fact stopped being true, "
    "then fact=value and <previous value; its last line lists the free slots. Reply with one edit per line and "
    "nothing else:\n"
    "ADD <fact> <value> when the user states a new fact (it takes a free slot);\n"
    "UPDATE <fact> <value> when a remembered fact changed;\n"
    "TOMBSTONE <fact> when a remembered fact is no longer true;\n"
    "EVICT <fact> before an ADD when no slot is free: evict the first slot listed (the least used).\n"
    "Small talk changes nothing. Use the fact names of the memory and the examples."
)
#: Worked examples of the prompted baseline: (memory, user lines, program). Written for this prompt;
#: they use facts and values of no test persona's.
PROMPTED_EXAMPLES = (
    ("subject: Mia\n0 u0 t0 b0 job=nurse\nfree 2: 1 2",
     "Hi, Mia here.\nI quit nursing, I'm a chef now.\nThe weather is lovely.\nI live in Lisbon.",
     "UPDATE job chef\nADD city Lisbon"),
    ("subject: Tom\n2 u0 t1 b1 pet=a cat\n0 u1 t0 b0 city=Oslo\n1 u2 t1 b0 car=Fiat\nfree 0:",
     "Hello, it's Tom.\nMy cat passed away, I have no pet now.\nI started playing the piano.",
     "TOMBSTONE pet\nEVICT pet\nADD instrument piano"),
)


def session_header(index: int) -> str:
    """Header line opening one session in a transcript view (full, window, rag, add-only).

    >>> session_header(3)
    '[session 3]'
    """
    return f"[session {index}]"


def render_turns(turns: Iterable[dict[str, Any]], date: str | None = None) -> str:
    """Transcript text: one ``speaker: content`` line per turn, after an optional date line.

    >>> render_turns([{"role": "user", "content": "I moved to Oslo."}, {"role": "assistant", "content": "Noted."}])
    'user: I moved to Oslo.\\nassistant: Noted.'
    """
    lines = [f"date: {date}"] if date else []
    lines += [f"{turn['role']}: {turn['content']}" for turn in turns]
    return "\n".join(lines)


#: The roles of a user-assistant session (the closed benchmark); any other role is a speaker's name.
CHAT_ROLES = ("user", "assistant")


def policy_transcript(turns: Iterable[dict[str, Any]]) -> str:
    """What a ledger writer reads of a session. A user-assistant session (the closed benchmark):
    the user's lines, one per line (the assistant only acknowledges them; SPEC §2). A
    conversation between named speakers (the open world, SPEC §2.9; LoCoMo, §7): every turn as
    ``speaker: content`` and the date line, as :func:`render_turns` writes them, since each
    speaker is a subject and says something.

    >>> policy_transcript([{"role": "user", "content": "I moved to Oslo."}, {"role": "assistant", "content": "Noted."}])
    'I moved to Oslo.'
    >>> print(policy_transcript([{"role": "date", "content": "8 May 2023"}, {"role": "Ana", "content": "I moved."},
    ...                          {"role": "Ben", "content": "Nice!"}]))
    date: 8 May 2023
    Ana: I moved.
    Ben: Nice!
    """
    turns = list(turns)
    if any(turn["role"] not in CHAT_ROLES for turn in turns):
        return render_turns(turns)
    return "\n".join(turn["content"] for turn in turns if turn["role"] == "user")


def _consolidate_user(ledger_text: str, transcript: str) -> str:
    return f"{ledger_text}\n---\n{transcript}"


def consolidate_messages(ledger_text: str, transcript: str, program_text: str | None = None) -> list[dict[str, str]]:
    """The trained policy's CONSOLIDATE prompt: no instructions, the serialized ledger
    (``ledger.serialize``), a ``---`` line, the session's user lines; with ``program_text`` (the
    program language, ``clerk.program``) the assistant turn is included (SFT).

    >>> consolidate_messages("free 1: 0", "I live in Oslo.", "ADD city Oslo")[0]["content"]
    'free 1: 0\\n---\\nI live in Oslo.'
    """
    messages = [{"role": "user", "content": _consolidate_user(ledger_text, transcript)}]
    if program_text is not None:
        messages.append({"role": "assistant", "content": program_text})
    return messages


def prompted_messages(ledger_text: str, transcript: str) -> list[dict[str, str]]:
    """The prompted-ledger baseline's prompt: instructions, the worked examples as earlier turns,
    then the same user message as the trained policy's. Everything before the last user turn is
    the same for every write, so a decoder can encode it once."""
    messages = [{"role": "system", "content": PROMPTED_SYSTEM}]
    for memory, lines, program in PROMPTED_EXAMPLES:
        messages += [{"role": "user", "content": _consolidate_user(memory, lines)},
                     {"role": "assistant", "content": program}]
    return messages + [{"role": "user", "content": _consolidate_user(ledger_text, transcript)}]


def reader_ledger(ledger: list[dict[str, Any]], form: LedgerForm | None = None) -> str:
    """The reader's view of a ledger: one ``<fact>: <value>`` line per occupied slot in index order,
    the predicate key in words; `` (before: <prev>)`` after a superseded value; a tombstoned fact
    reads ``<fact>: no longer (was <value>)`` (the fixed phrase is :data:`NEGATED_ANSWER`). The
    policy reads the exact serialization instead (``ledger.serialize``); the reader needs only
    what answers a question, so its view is short (this length is the read cost reported).

    An open ledger (SPEC §1.7) adds what a question may need: ``on <when>`` for a dated fact, and,
    when its ``form`` has several subjects, the subject before the fact (``Jo / pet: cat``). A
    closed ledger's view is unchanged.

    >>> reader_ledger([{"i": 0, "s": "A", "p": "work_project", "o": "the portal", "prev": "the app", "v": 1, "born": 0, "t": 1, "uses": 0},
    ...                {"i": 1, "s": "A", "p": "pet", "o": "cat", "prev": None, "v": 0, "born": 0, "t": 1, "uses": 0}, {"i": 2}])
    'work project: the portal (before: the app)\\npet: no longer (was cat)'
    >>> from clerk.form import LedgerForm
    >>> reader_ledger([{"i": 0, "s": "Jo", "p": "trip", "o": "Paris", "w": "2023-05", "prev": "Rome", "v": 1, "born": 0, "t": 1, "uses": 0}],
    ...               LedgerForm(("Jo", "Al")))
    'Jo / trip: Paris (on 2023-05; before: Rome)'
    """
    lines = []
    for slot in ledger:
        if "s" not in slot:
            continue
        name = slot["p"].replace("_", " ")
        if form is not None and form.multi:
            name = f"{slot['s']} / {name}"
        notes = ([f"on {slot['w']}"] if "w" in slot else []) + ([] if slot["prev"] is None else [f"before: {slot['prev']}"])
        if slot["v"]:
            line = f"{name}: {slot['o']}" + (f" ({'; '.join(notes)})" if notes else "")
        else:
            was = "was " + slot["o"]
            line = f"{name}: {NEGATED_ANSWER} ({'; '.join([was, *notes])})"
        lines.append(line)
    return "\n".join(lines) if lines else EMPTY_MEMORY


#: The view of a memory that holds nothing yet.
EMPTY_MEMORY = "(nothing yet)"


def answer_messages(memory_text: str, question: str, answer: str | None = None) -> list[dict[str, str]]:
    """The ANSWER prompt over any memory view (ledger, transcript, retrieved turns, notes): no
    instructions, the view, then ``Q: <question>``; with ``answer`` the assistant turn (SFT).

    >>> answer_messages("job=chef", "What is Ari's job?")[0]["content"]
    "job=chef\\nQ: What is Ari's job?"
    """
    messages = [{"role": "user", "content": f"{memory_text or EMPTY_MEMORY}\n{QUESTION_MARK}{question}"}]
    if answer is not None:
        messages.append({"role": "assistant", "content": answer})
    return messages


def answer_turns(memory_text: str, qa: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Several questions over one view as one conversation (SFT): the first asked with the view
    (:func:`answer_messages`), each further one as a user turn ``Q: <question>`` after the
    previous answer. The reader is evaluated one question at a time, but the view, the costly part
    of an example, is then trained on once for all of a session's questions.

    >>> [m["content"] for m in answer_turns("city: Oslo", [("Where?", "Oslo"), ("Job?", "unknown")])]
    ['city: Oslo\\nQ: Where?', 'Oslo', 'Q: Job?', 'unknown']
    """
    (question, answer), rest = qa[0], qa[1:]
    messages = answer_messages(memory_text, question, answer)
    for question, answer in rest:
        messages += [{"role": "user", "content": f"{QUESTION_MARK}{question}"}, {"role": "assistant", "content": answer}]
    return messages


#: Where the per-question part of an answer prompt starts (after the view's last newline).
QUESTION_MARK = "Q: "
