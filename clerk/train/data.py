"""The training data and the loss: the SFT dataset, the supervised-positions LM loss and the
trainer class that computes it.

``clerk train`` reads a saved ``DatasetDict`` (``train`` and optional ``validation`` splits, a
``messages`` column; ``clerk build-sft`` writes it). TRL's ``SFTTrainer`` tokenises it, builds the
assistant masks and collates the batches; the loss head is :func:`sft_trainer_class`'s choice.

    python -m pytest tests/test_train.py -q -k supervised_lm_loss
"""

from __future__ import annotations

from pathlib import Path

from clerk.errors import UserError


def load_sft(path: str | Path):
    """Load the SFT ``DatasetDict`` (in memory, so no cache files land in the input directory).

    Returns:
        ``(train, validation_or_None)``, each with only the ``messages`` column.

    Raises:
        UserError: not a saved DatasetDict, no ``train`` split, or no ``messages`` column.
    """
    import datasets

    try:
        data = datasets.load_from_disk(str(path), keep_in_memory=True)
    except (FileNotFoundError, ValueError) as err:
        raise UserError(f"--sft must be a DatasetDict saved with save_to_disk, got {str(path)!r} ({err})") from None
    if not isinstance(data, datasets.DatasetDict) or "train" not in data:
        raise UserError(f"--sft must hold a DatasetDict with a 'train' split, got {str(path)!r} ({type(data).__name__})")
    out = []
    for split in ("train", "validation"):
        if split not in data or len(data[split]) == 0:
            out.append(None)
            continue
        if "messages" not in data[split].column_names:
            raise UserError(f"--sft split {split!r} needs a 'messages' column, got {data[split].column_names}")
        out.append(data[split].select_columns(["messages"]))
    if out[0] is None:
        raise UserError(f"--sft split 'train' is empty in {str(path)!r}")
    return out[0], out[1]


def supervised_lm_loss(model, inputs: dict, num_items_in_batch=None):
    """Next-token cross-entropy that runs the LM head only where a label is supervised.

    The same loss as the model's own cross-entropy over full logits (sum over supervised tokens,
    divided by ``num_items_in_batch`` when given, else by their count), but the vocabulary
    projection and the softmax are computed for the supervised positions only: with
    assistant-only loss that is about a tenth of the tokens of a CLERK example, and on CPU the
    full ``(batch, length, 49152)`` logits cost a quarter of the step and most of its memory.
    Uses the ``logits_to_keep`` boolean mask of transformers' causal LMs.
    """
    import torch
    import torch.nn.functional as F

    inputs = dict(inputs)
    labels = inputs.pop("labels")
    inputs.pop("num_items_in_batch", None)
    targets = labels[:, 1:]
    keep = torch.zeros_like(labels, dtype=torch.bool)
    keep[:, :-1] = targets != -100
    logits = model(**inputs, use_cache=False, logits_to_keep=keep).logits  # (n_supervised, vocab)
    loss = F.cross_entropy(logits.float(), targets[keep[:, :-1]], reduction="sum")
    denominator = num_items_in_batch if num_items_in_batch is not None else keep.sum().clamp(min=1)
    if isinstance(denominator, torch.Tensor):
        denominator = denominator.to(loss.device)
    return loss / denominator


def sft_trainer_class(loss_head: str):
    """The trainer class for a resolved ``loss_head`` (``full`` or ``fused``).

    TRL 1.x replaces the LM head by a chunked "fused" kernel that scores only the supervised
    positions without materialising the logits: a memory win on GPUs with large vocabularies,
    but on CPU its fp32 tiles cost more than the whole backbone step (SmolLM2, batch 4x400
    tokens: ~15 s of ~20 s per step) and cancel the bf16 speed-up. ``full`` keeps everything else
    of ``SFTTrainer`` (tokenisation, assistant masks, collator, loop) and takes the loss from the
    model's plain LM head, run at the supervised positions only (:func:`supervised_lm_loss`; the
    same value as the cross-entropy over full logits, computed under autocast, reduced in fp32).
    It skips TRL's entropy / token-accuracy metrics.
    """
    from trl import SFTTrainer

    if loss_head == "fused":
        return SFTTrainer

    class FullLogitsSFTTrainer(SFTTrainer):
        """SFTTrainer whose loss is the plain LM head's cross-entropy at supervised positions (see above)."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = supervised_lm_loss(model, inputs, num_items_in_batch)
            # Evaluation asks for outputs too; with prediction_loss_only only the loss is read.
            return (loss, {}) if return_outputs else loss

    return FullLogitsSFTTrainer
