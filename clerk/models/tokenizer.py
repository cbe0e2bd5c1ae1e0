"""Tokenizer training for the scratch model: a byte-level BPE on the pipeline's own timeline text.

    clerk generate --seed 1 --split train --personas 2 --out /tmp/train.jsonl
    python -c "from clerk.models.tokenizer import timeline_texts; print(len(timeline_texts('/tmp/train.jsonl')))"
"""

from __future__ import annotations

import json
from pathlib import Path

from clerk.errors import UserError
from clerk.prompts import (
    END_OF_TURN,
    SPECIAL_TOKENS,
    answer_messages,
    consolidate_messages,
    policy_transcript,
    reader_ledger,
    render_turns,
)


def timeline_texts(path: str | Path, split: str = "train") -> list[str]:
    """Every text a model of the pipeline reads or writes, from one split of a timelines file.

    Per session: the CONSOLIDATE prompt (ledger serialization + user lines) with its gold program,
    the whole transcript (the transcript views), and one ANSWER prompt per question over the
    reader's ledger view with its gold answer; all prompt text
    comes from :mod:`clerk.prompts`. Used as the scratch tokenizer's training corpus.

    Raises:
        UserError: the file is missing, not JSON lines, or holds no persona of ``split``.
    """
    from clerk.ledger import serialize
    from clerk.program import render_program

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"--timelines must be a readable timelines file, got {str(path)!r} ({err.strerror})") from None
    texts: list[str] = []
    splits: list[str] = []
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            persona = json.loads(line)
            if persona.get("split") not in splits:
                splits.append(persona.get("split"))
            if persona.get("split") != split:
                continue
            for session in persona["sessions"]:
                before = session["ledger_before"]
                program = render_program(before, session["gold_ops"], session["index"])
                messages = consolidate_messages(serialize(before), policy_transcript(session["turns"]), program)
                messages.append({"role": "user", "content": render_turns(session["turns"])})
                for q in session.get("questions", []):
                    messages += answer_messages(reader_ledger(before), q["question"], q["answer"])
                texts.append("\n".join(m["content"] for m in messages))
        except (ValueError, KeyError, TypeError) as err:
            raise UserError(f"--timelines line {n + 1} is not a timeline record: {err}") from None
    if not texts:
        raise UserError(f"--timelines {str(path)!r} holds no persona with split {split!r} (found splits: {splits})")
    return texts


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (deterministic) with :data:`SPECIAL_TOKENS` as ids 0.. .

    Returns:
        A transformers fast tokenizer: eos = ``<|im_end|>``, pad = ``<|endoftext|>``, no BOS.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    # Offsets must stay exact: assistant masks are computed from character offsets.
    core.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=END_OF_TURN,
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        model_max_length=8192,
    )
