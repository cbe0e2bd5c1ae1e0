"""Every piece of text a model reads or is trained to write: the one source of prompt text.

SPEC §4. Two tasks share one chat format (ChatML, the format of SmolLM2 and Qwen2.5):

* CONSOLIDATE: (serialized ledger before, session index, transcript) -> edit program as JSON.
* ANSWER: (a memory view, question) -> answer text. The memory view is the ledger for ledger
  systems and transcript text for the baselines, so all systems share one answer prompt.

Training (``clerk.sft``), evaluation (``clerk.evaluate``) and LoCoMo (``clerk.locomo``) build their
messages here and nowhere else.

    >>> m = answer_messages("[0]", "Where does Ari live?")
    >>> [x["role"] for x in m]
    ['system', 'user']
"""

from __future__ import annotations

from typing import Any, Iterable

#: Gold answer for a predicate that was never stated.
UNKNOWN_ANSWER = "I don't know."
#: Gold answer for a fact that was retracted (tombstoned).
NEGATED_ANSWER = "That is no longer the case."

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

CONSOLIDATE_SYSTEM = (
    "You keep a fixed-size memory ledger about the user. Each line is a slot "
    "[i,subject,predicate,value,previous,valid,born,last_write,uses]; [i] is a free slot. "
    "Read the new session and reply with only a JSON list of edits: "
    '{"op":"ADD","s":..,"p":..,"o":..} for a new fact (fills the lowest free slot); '
    '{"op":"UPDATE","i":..,"s":..,"p":..,"o":..} when a fact changed; '
    '{"op":"TOMBSTONE","i":..} when a fact is no longer true; '
    '{"op":"EVICT","i":..} to free a slot when none is free (fewest uses, then oldest last_write, '
    "then lowest i). Reply [] when nothing changes."
)
ANSWER_SYSTEM = (
    "Answer the question from the memory below only. If it was never mentioned, say "
    f'"{UNKNOWN_ANSWER}" If it stopped being true, say "{NEGATED_ANSWER}"'
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


def consolidate_messages(
    ledger_text: str, session_index: int, transcript: str, program_text: str | None = None
) -> list[dict[str, str]]:
    """Messages for the CONSOLIDATE task; with ``program_text`` the assistant turn is included (SFT)."""
    user = f"Session {session_index}.\nLedger:\n{ledger_text}\nTranscript:\n{transcript}"
    messages = [
        {"role": "system", "content": CONSOLIDATE_SYSTEM},
        {"role": "user", "content": user},
    ]
    if program_text is not None:
        messages.append({"role": "assistant", "content": program_text})
    return messages


def answer_messages(memory_text: str, question: str, answer: str | None = None) -> list[dict[str, str]]:
    """Messages for the ANSWER task over any memory view; with ``answer`` the assistant turn is included."""
    messages = [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": f"Memory:\n{memory_text}\nQuestion: {question}"},
    ]
    if answer is not None:
        messages.append({"role": "assistant", "content": answer})
    return messages
