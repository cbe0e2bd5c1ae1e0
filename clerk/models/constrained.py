"""Grammar-constrained greedy decoding with llguidance: a writer's output always parses.

Each prompt may carry a Lark grammar (``clerk.program.program_grammar``: the program language
against that prompt's ledger). At every decoding step llguidance computes, per row, the bitmask
of tokens that keep the text inside the grammar; disallowed logits are set to -inf before the
argmax, and the chosen token is fed back to the row's matcher. The end-of-turn token is allowed
exactly when the grammar accepts the text so far. Decoding stays greedy and deterministic.

The library does the grammar work (https://github.com/guidance-ai/llguidance); this module only
wires its matchers into :func:`clerk.models.decoding.greedy_generate`. The bitmask is applied
eagerly (:func:`mask_logits`) rather than by llguidance's ``torch.compile``-d kernel: the same
-inf entries, without a 15 s TorchInductor compile in every decoding process and without a
compiled-kernel cache whose entries depend on the CPU kernels a process dispatched to.

    python -m pytest tests/test_program.py -q -k constrained
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: llguidance tokenizers per HF tokenizer object (building one takes about a second).
_LL_TOKENIZERS: dict[int, Any] = {}


def ll_tokenizer(tokenizer: Any, stop_ids: Sequence[int]) -> Any:
    """The llguidance tokenizer of ``tokenizer``, whose end-of-sequence tokens are ``stop_ids``."""
    import llguidance.hf

    key = id(tokenizer)
    if key not in _LL_TOKENIZERS:
        _LL_TOKENIZERS[key] = llguidance.hf.from_tokenizer(tokenizer, eos_token=list(stop_ids))
    return _LL_TOKENIZERS[key]


def mask_logits(logits: Any, bitmask: Any) -> None:
    """Set ``logits[r, t]`` (rows x vocab, in place) to -inf where bit ``t`` of row ``r`` is 0.

    ``bitmask`` is llguidance's int32 layout: token ``t`` is bit ``t % 32`` of word ``t // 32``.
    """
    import torch

    bits = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    allowed = ((bitmask.unsqueeze(-1) >> bits) & 1).reshape(bitmask.shape[0], -1)
    logits.masked_fill_(allowed[:, : logits.shape[1]] == 0, float("-inf"))


class GrammarConstraint:
    """Per-row llguidance matchers over one decoding batch.

    Args:
        tokenizer: the model's (fast) tokenizer.
        grammars: one Lark grammar per row, or None for an unconstrained row.
        stop_ids: token ids that end a turn (the grammar's end of sequence).

    Raises:
        ValueError: a grammar does not compile (the message names the row and llguidance's error).
    """

    def __init__(self, tokenizer: Any, grammars: Sequence[str | None], stop_ids: Sequence[int]) -> None:
        import llguidance
        import llguidance.torch as lt

        self._lt = lt
        self.lltok = ll_tokenizer(tokenizer, stop_ids)
        self.matchers: list[Any] = []
        for row, grammar in enumerate(grammars):
            if grammar is None:
                self.matchers.append(None)
                continue
            matcher = llguidance.LLMatcher(self.lltok, llguidance.LLMatcher.grammar_from_lark(grammar))
            if matcher.is_error():
                raise ValueError(f"grammar of row {row} does not compile: {matcher.get_error()}")
            self.matchers.append(matcher)
        self.bitmask = lt.allocate_token_bitmask(len(grammars), self.lltok.vocab_size)

    def apply(self, logits: Any, done: Sequence[bool]) -> None:
        """Mask ``logits`` (rows x vocab, modified in place) to the tokens each live row may take."""
        import torch

        constrained = [r for r, m in enumerate(self.matchers) if m is not None and not done[r]]
        if not constrained:
            return
        for r in constrained:
            self._lt.fill_next_token_bitmask(self.matchers[r], self.bitmask, r)
        vocab = self.lltok.vocab_size
        rows = torch.tensor(constrained, device=logits.device)
        part = logits[rows, :vocab].float()
        mask_logits(part, self.bitmask[constrained].to(logits.device))
        logits[rows, :vocab] = part.to(logits.dtype)
        if logits.shape[1] > vocab:  # model rows past the tokenizer's vocabulary are never text
            logits[rows, vocab:] = float("-inf")

    def consume(self, tokens: Sequence[int], done: Sequence[bool]) -> None:
        """Feed each live row's chosen token to its matcher."""
        for r, matcher in enumerate(self.matchers):
            if matcher is not None and not done[r]:
                matcher.consume_token(int(tokens[r]))

    def keep_rows(self, rows: Sequence[int]) -> None:
        """Keep the matchers of ``rows`` only, in that order (the decode batch dropped the others)."""
        self.matchers = [self.matchers[r] for r in rows]
